"""Probes a KB makes of its own documents (agents/self_probes.py), on a tiny real KB: every kind is
made, a held-out probe really takes its document out, a sibling probe names a real sibling."""

from __future__ import annotations

import json
import re

import pytest

from citescope.agents.self_probes import make_probes
from citescope.knowledge.chunking import chunk_document
from citescope.knowledge.schema import Document
from tests.conftest import ingested_kb

PAGE = """---
doc_id: {doc_id}
title: {title}
doc_type: product
product_id: {pid}
category: 背包
---
## 材质
{material}

## 产地
{origin}
"""


@pytest.fixture(scope="module")
def tiny_kb(tmp_path_factory):
    corpus = tmp_path_factory.mktemp("tiny-corpus")
    (corpus / "a.md").write_text(
        PAGE.format(doc_id="prod-a", title="远行 A1 双肩包", pid="p-a", material="尼龙面料。", origin="福建泉州"),
        encoding="utf-8",
    )
    (corpus / "b.md").write_text(
        PAGE.format(
            doc_id="prod-b", title="远行 B2 登山包", pid="p-b", material="涤纶面料。", origin="广东东莞"
        ).replace("## 产地\n广东东莞\n", ""),  # the sibling has no 产地: a question about its 产地 has no answer
        encoding="utf-8",
    )
    records = [
        {"doc_id": "faq-1", "title": "下单后多久发货？", "text": "付款后 48 小时内发货。", "doc_type": "faq"},
        {
            "doc_id": "note-1",
            "title": "",
            "text": "背包洗涤前请先取出背板。可以用温水和中性洗涤剂轻轻刷洗表面。洗后放在阴凉处自然晾干，不要暴晒。",
            "doc_type": "doc",
        },
    ]
    (corpus / "more.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records), encoding="utf-8")
    kb, _ = ingested_kb(tmp_path_factory.mktemp("tiny-kb"), [corpus])
    yield kb
    kb.close()


def test_every_kind_of_probe_is_made_from_the_kbs_own_documents(tiny_kb):
    chunks = tiny_kb.all_chunks()
    probes = make_probes(chunks, seed=3)
    kinds = {p.kind for p in probes}
    assert kinds == {"masked", "held_out", "sibling"}
    masked = [p for p in probes if p.kind == "masked"]
    assert {p.doc_id for p in masked} >= {"note-1", "faq-1"}  # every kind of document is asked about
    for probe in masked:  # a sentence of its document, one word of two or more asked for
        text = "".join(c.text for c in tiny_kb.chunks_of(probe.doc_id))
        assert probe.answerable and probe.question.endswith("？")
        asked = next(w for w in ("什么时候", "多少", "谁", "哪里", "什么") if w in probe.question)
        before, after = probe.question[:-1].split(asked, 1)
        assert re.search(re.escape(before) + ".{2,}?" + re.escape(after), text)
    assert make_probes(chunks, seed=3) == probes  # seeded
    assert len(make_probes(chunks, seed=3, max_probes=4)) <= 4


def test_a_held_out_probe_takes_its_whole_document_out(tiny_kb):
    probes = make_probes(tiny_kb.all_chunks(), seed=0)
    answerable = [p for p in probes if p.answerable]
    held_out = [p for p in probes if p.kind == "held_out"]
    assert [p.question for p in held_out] == [p.question for p in answerable]
    for probe in held_out:
        assert not probe.answerable
        own = tiny_kb.chunks_of(probe.doc_id)
        assert own and all(probe.excludes(c.doc_id, c.section) for c in own)
        others = [c for c in tiny_kb.all_chunks() if c.title != own[0].title or not c.title]
        assert not any(probe.excludes(c.doc_id, c.section) for c in others if c.doc_id != probe.doc_id)


def test_a_sibling_probe_names_a_real_sibling_whose_fact_is_not_there(tiny_kb):
    probes = make_probes(tiny_kb.all_chunks(), seed=0)
    siblings = [p for p in probes if p.kind == "sibling"]
    assert siblings
    titles = {c.doc_id: c.title for c in tiny_kb.all_chunks()}
    for probe in siblings:
        assert not probe.answerable and probe.named in titles.values() and probe.named != titles[probe.doc_id]
        assert probe.named in probe.question and titles[probe.doc_id] not in probe.question
    origin = next(p for p in siblings if p.question == "远行 B2 登山包的产地")
    assert origin.doc_id == "prod-a"  # made from A's 产地, which B's page lacks
    assert all(p.question.endswith(("的产地", "的材质")) for p in siblings)  # a section the page has


def test_a_sibling_probe_asks_a_field_label_only_of_a_sibling_without_that_field(tmp_path):
    records = [
        {"doc_id": "r1", "title": "韩艳的住院病历", "text": "患者韩艳，女，46岁。\n科室：心内科\n过敏史：青霉素过敏"},
        {"doc_id": "r2", "title": "姚美静的住院病历", "text": "患者姚美静，女，54岁。\n科室：骨科"},
        {"doc_id": "r3", "title": "唐霞的住院病历", "text": "患者唐霞，女，52岁。\n科室：消化内科\n过敏史：无"},
    ]
    corpus = tmp_path / "records.jsonl"
    corpus.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records), encoding="utf-8")
    kb, _ = ingested_kb(tmp_path / "kb", [corpus])
    try:
        siblings = [p for seed in range(8) for p in make_probes(kb.all_chunks(), seed=seed) if p.kind == "sibling"]
    finally:
        kb.close()
    assert siblings
    for probe in siblings:
        assert not probe.answerable and not probe.excluded  # a field nobody holds out: the sibling has none
        assert probe.question.endswith("的过敏史") and probe.named == "姚美静的住院病历"  # the one without it


def test_a_masked_question_asks_for_one_word_of_its_clause():
    import random

    from citescope.agents.self_probes import masked_question

    sentence = "陈黄穗自1985年5月1日出任消费者委员会总干事，直到2007年退休，由刘燕卿接任。"
    asked = {masked_question(sentence, random.Random(seed)) for seed in range(12)}
    assert None not in asked and len(asked) > 1  # the word asked for is the seed's choice
    for question in asked:
        assert question is not None and question.endswith("？") and len(question) < len(sentence)
        assert any(w in question for w in ("什么时候", "多少", "谁", "哪里", "什么"))
    assert masked_question("好的。", random.Random(0)) is None  # nothing to ask for


def test_no_held_out_twin_for_a_sentence_another_document_states_too():
    """News reported twice: with one report out of the KB the other still answers, so a probe made of a
    sentence both state gets no unanswerable twin; a sentence only its own document states does."""
    shared = "星海公司于2019年在杭州成立，创始人是林晓。"
    documents = [
        Document(doc_id="news-1", title="星海公司成立", text=shared + "公司首款产品是一台扫地机器人，售价1999元。"),
        Document(doc_id="news-2", title="扫地机器人市场", text="据报道，" + shared + "\n它的竞争对手来自深圳。"),
        Document(doc_id="news-3", title="杭州科技园", text="杭州科技园占地三百亩，园区内有一座图书馆和两家医院。"),
    ]
    chunks = [c for d in documents for c in chunk_document(d)]
    probes = make_probes(chunks, seed=1)
    twins = {(p.doc_id, p.question) for p in probes if p.kind == "held_out"}
    masked = [p for p in probes if p.kind == "masked"]

    def stated_by_both(question: str) -> bool:  # its words on both sides of the asking word are in the shared sentence
        asked = next(w for w in ("什么时候", "多少", "谁", "哪里", "什么") if w in question)
        return all(part in shared for part in question.rstrip("？").split(asked, 1) if part)

    from_shared = [p for p in masked if p.doc_id != "news-3" and stated_by_both(p.question)]
    own = [p for p in masked if p.doc_id == "news-3"]
    assert from_shared and own
    assert not any((p.doc_id, p.question) in twins for p in from_shared)
    assert all((p.doc_id, p.question) in twins for p in own)
