"""One matching form (#43): a KB written in traditional characters is tokenised, scored and compared
in simplified, while what is stored, quoted and cited stays as written."""

from __future__ import annotations

import numpy as np
import pytest

from citescope.knowledge.chinese_script import in_simplified, matching_form, to_simplified
from citescope.knowledge.lexicon import Lexicon
from citescope.knowledge.schema import Chunk
from citescope.knowledge.text import tokenize
from citescope.tools.rerank import OfflineReranker
from tests.conftest import ingested_kb
from tests.support.traditional_shop import FAQ, write_traditional_shop


def test_traditional_text_is_matched_in_simplified_and_simplified_text_as_it_is():
    assert matching_form("退貨運費由誰負擔？") == "退货运费由谁负担？"
    # OpenCC's t2s changes a few characters of simplified text (店舖, 於是, 綝 of a name); it keeps them
    for simplified in (
        "卓綝是三国时期东吴的一位将军",
        "这家老字号的美食店舖开在南京路上",
        "於是他把这本书还给了图书馆",
    ):
        assert to_simplified(simplified) != simplified and matching_form(simplified) == simplified
    assert tokenize("退貨運費由誰負擔") == tokenize("退货运费由谁负担")


def test_a_traditional_alias_matches_in_either_script():
    lexicon = Lexicon(aliases={"蘋果手機": "iPhone 15"}, terms=["溫控壺"])
    assert lexicon.canonicalize("我想買蘋果手機") == lexicon.canonicalize("我想买苹果手机") == "我想买iPhone 15"
    assert "温控壶" in tokenize("這個溫控壺好用嗎", lexicon) and "温控壶" in tokenize("这个温控壶好用吗", lexicon)


def test_a_quoted_traditional_answer_reads_simplified_with_its_ids_as_written():
    assert in_simplified("退貨運費由本店負擔【tw-faq-1#退貨-0】。") == "退货运费由本店负担【tw-faq-1#退貨-0】。"


@pytest.fixture(scope="module")
def traditional_kb(tmp_path_factory):
    shop = write_traditional_shop(tmp_path_factory.mktemp("tw-shop"))
    kb, _ = ingested_kb(tmp_path_factory.mktemp("tw-kb"), [shop])
    yield kb
    kb.close()


@pytest.mark.parametrize("question", ["退货运费由谁负担？", "退貨運費由誰負擔？"])
def test_a_question_in_either_script_finds_the_traditional_faq_by_keywords(traditional_kb, question):
    hits = traditional_kb.search_keyword(question, k=3)
    assert hits and traditional_kb.get(hits[0].chunk_id).doc_id == "tw-faq-1"


def test_the_stored_chunks_keep_their_traditional_text_and_ids(traditional_kb):
    chunk = traditional_kb.chunks_of("tw-faq-1")[0]
    assert FAQ[0]["text"] in chunk.text and chunk.title == FAQ[0]["title"]
    assert all(c.chunk_id.startswith("tw-prod-kettle") for c in traditional_kb.chunks_of("tw-prod-kettle"))


def test_reranker_features_are_the_same_for_a_chunk_in_either_script(traditional_kb):
    reranker = OfflineReranker(traditional_kb)
    written = traditional_kb.chunks_of("tw-faq-1")[0]
    converted = Chunk(
        **{**written.model_dump(), "text": to_simplified(written.text), "title": to_simplified(written.title)}
    )
    for question in ("退货运费由谁负担？", "退貨運費由誰負擔？"):
        features = reranker.features(question, [written, converted])
        assert np.allclose(features[0], features[1]), features
        assert features[0][2] > 0.5  # most of the question's words are found in the chunk


def test_a_simplified_lexicon_adds_each_word_to_the_tokenizer_once():
    # jieba's add_word adds to its frequency total each time: a word added twice (as written and
    # "in matching form") would change how every text of a simplified shop is cut
    import jieba

    from citescope.knowledge.text import _tokenizer_for

    lexicon = Lexicon(aliases={"AJ1": "Air Jordan 1"}, terms=["大半码", "溫控壺"])
    plain = jieba.Tokenizer()
    plain.initialize()
    words = {w.lower() for w in lexicon.all_terms()} | {"温控壶"}
    assert _tokenizer_for(lexicon).total == plain.total + 200000 * len(words)


def test_a_simplified_pattern_finds_a_traditional_page_by_mentions(traditional_kb):
    import re

    assert traditional_kb.mentions(re.compile("电热水壶\\s?K2"), "K2")
    assert not traditional_kb.mentions(re.compile("电热水壶\\s?K3"), "K3")
