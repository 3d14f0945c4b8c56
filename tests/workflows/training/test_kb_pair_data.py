"""Training pairs made from a shop's own KB (workflows/training/kb_pair_data.py): what each kind
pairs, that question files beside the documents never reach them, that an answer rated up pairs its
question with the chunk it cited (and one rated down does not), that a document's pairs stay on one
side of the split, and that a folder without a KB is named. A real KB, a real offline answer; no torch."""

from __future__ import annotations

import json

import pytest

from citescope.knowledge.ingest import embedding_text
from citescope.workflows.assistant import Assistant
from citescope.workflows.experience import ExperienceStore
from citescope.workflows.training.kb_pair_data import KB_SOURCE, kb_pairs
from citescope.workflows.training.pair_data import split_of_title
from tests.conftest import ingested_kb

FAQ = [
    {"doc_id": "faq-ship", "title": "下单后多久发货？", "text": "当天16点前付款的订单当天发货，其余次日发货。"},
    {"doc_id": "faq-sf", "title": "可以发顺丰吗？", "text": "可以，下单时选择顺丰配送，需另付12元运费。"},
]
PAGE = """---
doc_id: page-bag
title: 云迹S5胸包
doc_type: product
---
## 防水性能
面料为500D涂层尼龙，接缝压胶处理，可抵御中雨，暴雨中请套上防雨罩。

## 容量
主仓容量为3升，可放下一台7英寸平板电脑和一只充电宝。
"""
EVAL_QUESTION = "云迹S5胸包下大雨能背吗？"


@pytest.fixture(scope="module")
def shop_kb(tmp_path_factory):
    """A three-document shop with an evaluation file beside its documents, ingested."""
    docs = tmp_path_factory.mktemp("shop-docs")
    (docs / "faq.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in FAQ), encoding="utf-8")
    (docs / "bag.md").write_text(PAGE, encoding="utf-8")
    (docs / "questions.jsonl").write_text(
        json.dumps({"question": EVAL_QUESTION, "gold_doc_ids": ["page-bag"]}, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    kb_dir = tmp_path_factory.mktemp("shop-kb")
    kb, _ = ingested_kb(kb_dir, [docs])
    chunks = {c.chunk_id: c for c in kb.all_chunks()}
    lexicon = kb.lexicon
    kb.close()
    return kb_dir, chunks, lexicon


def test_each_kind_pairs_a_query_with_what_answers_it(shop_kb):
    kb_dir, chunks, lexicon = shop_kb
    split, counts = kb_pairs(kb_dir, seed=0)
    pairs = split["train"] + split["valid"]
    assert {p.source for p in pairs} == {KB_SOURCE} and not any(p.positive_is_query for p in pairs)
    assert counts["documents"] == 3 and counts["faq"] == 2 and counts["heading"] == 2 and counts["rated"] == 0
    assert counts["train"] + counts["valid"] == len(pairs) == counts["faq"] + counts["heading"] + counts["masked"]
    by_anchor = {p.anchor: p.positive for p in pairs}
    # an FAQ title with its reply alone: with the title in it the pair would be a copy
    assert by_anchor["可以发顺丰吗？"] == FAQ[1]["text"]
    assert by_anchor["云迹S5胸包 防水性能"].startswith("面料为500D涂层尼龙")
    # a masked sentence points at the chunk as the KB embeds it
    embedded = {embedding_text(c, lexicon) for c in chunks.values()}
    masked = [p for p in pairs if p.anchor not in ("下单后多久发货？", "可以发顺丰吗？") and " " not in p.anchor]
    assert len(masked) == counts["masked"] > 0
    assert all(p.positive in embedded and p.anchor.endswith("？") for p in masked)
    assert EVAL_QUESTION not in by_anchor  # the question file beside the documents is never ingested


def test_an_answer_rated_up_pairs_its_question_with_the_chunk_it_cited(shop_kb, tmp_path):
    kb_dir, chunks, lexicon = shop_kb
    with Assistant(kb_dir) as assistant:
        liked = assistant.ask_sync("可以发顺丰吗")
        disliked = assistant.ask_sync("下单后多久发货")
        assert not liked.refused and not disliked.refused, (liked.answer, disliked.answer)
        assistant.feedback(liked.trace_id, 1)
        assistant.feedback(disliked.trace_id, -1)
    try:
        split, counts = kb_pairs(kb_dir, seed=0)
        cited = chunks[liked.citations[0].id]
        rated = [p for p in split["train"] + split["valid"] if p.anchor in ("可以发顺丰吗", "下单后多久发货")]
        assert counts["rated"] == 1 and [(p.anchor, p.positive) for p in rated] == [
            ("可以发顺丰吗", embedding_text(cited, lexicon))
        ]
        assert rated[0] in split[split_of_title(cited.doc_id)]
    finally:  # the module's KB serves the other test without these rounds
        (kb_dir / "experience.sqlite").unlink()
        for extra in kb_dir.glob("experience.sqlite-*"):
            extra.unlink()


def test_a_rounds_citations_are_kept_and_an_older_store_gains_the_column(tmp_path):
    store = ExperienceStore.for_kb(tmp_path)
    store._conn.execute("ALTER TABLE rounds DROP COLUMN cited_ids")  # a store written before citations were kept
    store.close()
    reopened = ExperienceStore.for_kb(tmp_path)
    try:
        columns = [row[1] for row in reopened._conn.execute("PRAGMA table_info(rounds)")]
        assert "cited_ids" in columns
    finally:
        reopened.close()


def test_a_documents_pairs_stay_on_one_side_and_a_folder_without_a_kb_is_named(tmp_path):
    shares = [split_of_title(f"faq-{i}") for i in range(2000)]
    assert 0.02 < shares.count("valid") / len(shares) < 0.08
    with pytest.raises(ValueError, match=f"no knowledge base at {tmp_path}"):
        kb_pairs(tmp_path)
