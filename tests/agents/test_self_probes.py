"""Probes a KB makes of its own documents (agents/self_probes.py), on a tiny real KB: every kind is
made, a held-out probe really takes its document out, a sibling probe names a real sibling."""

from __future__ import annotations

import json

import pytest

from citescope.agents.self_probes import make_probes
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
    assert kinds == {"heading", "cloze", "held_out", "sibling"}
    assert any(p.kind == "heading" and p.question == "下单后多久发货？" for p in probes)  # an FAQ's title
    assert any(p.kind == "heading" and p.question == "远行 A1 双肩包的产地" for p in probes)  # title + heading
    for cloze in (p for p in probes if p.kind == "cloze"):
        assert cloze.doc_id == "note-1" and cloze.question == cloze.removed_sentence
        assert any(cloze.removed_sentence in c.text for c in tiny_kb.chunks_of("note-1"))
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
