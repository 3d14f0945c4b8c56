"""Pair-scorer examples made from a shop's own KB (workflows/training/kb_answer_data.py): an FAQ
entry's minimal pair (the reply decides, not the title), a page's sections against each other and
against a sibling page's same section, what is left out (reviews, question files beside the
documents), the split by document, the share the KB's examples take, and a run's frozen copy.
A real KB; no torch."""

from __future__ import annotations

import json

import pytest

from citescope.workflows.training.kb_answer_data import (
    ANSWERS,
    DOES_NOT,
    frozen_kb_answer_examples,
    kb_answer_examples,
    repeated_to_share,
)
from citescope.workflows.training.pair_data import LabelledText, split_of_title
from tests.conftest import ingested_kb

FAQ = [
    {"doc_id": "faq-ship", "title": "下单后多久发货？", "text": "当天16点前付款的订单当天发货，其余次日发货。"},
    {"doc_id": "faq-sf", "title": "可以发顺丰快递吗？", "text": "可以，下单时选择顺丰配送，需另付12元运费。"},
    {"doc_id": "faq-return", "title": "退货运费谁出？", "text": "质量问题由店铺承担运费，无理由退货由买家承担。"},
]
REVIEW = {"doc_id": "rev-1", "title": "背着很舒服", "text": "胸包背了一个月，下雨天也没渗水。", "doc_type": "review"}


def _page(doc_id: str, title: str, fabric: str, size: str) -> str:
    return f"""---
doc_id: {doc_id}
title: {title}
doc_type: product
category: 箱包
---
## 材质
面料为{fabric}，接缝做了压胶处理，日常小雨可以放心使用。

## 容量
主仓容量为{size}，可放下一台平板电脑和一只充电宝。
"""


@pytest.fixture(scope="module")
def shop_kb(tmp_path_factory):
    docs = tmp_path_factory.mktemp("shop-docs")
    (docs / "faq.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in FAQ), encoding="utf-8")
    (docs / "reviews.jsonl").write_text(json.dumps(REVIEW, ensure_ascii=False) + "\n", encoding="utf-8")
    (docs / "s5.md").write_text(_page("page-s5", "云迹S5胸包", "500D涂层尼龙", "3升"), encoding="utf-8")
    (docs / "b15.md").write_text(_page("page-b15", "云迹B15双肩包", "900D牛津布", "25升"), encoding="utf-8")
    (docs / "questions.jsonl").write_text(
        json.dumps({"question": "云迹S5胸包下大雨能背吗？", "gold_doc_ids": ["page-s5"]}, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    kb_dir = tmp_path_factory.mktemp("shop-kb")
    kb, _ = ingested_kb(kb_dir, [docs])
    kb.close()
    return kb_dir


def _by_question(examples: list[LabelledText]) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for e in examples:
        question, candidate = e.text.split("\n", 1)
        table.setdefault(question, {})[candidate] = e.label
    return table


def test_an_faq_entrys_minimal_pair_lets_the_reply_decide(shop_kb):
    split, counts = kb_answer_examples(shop_kb)
    asked = _by_question(split["train"] + split["valid"])["可以发顺丰快递吗？"]
    reply = "可以，下单时选择顺丰配送，需另付12元运费。"
    own = [label for candidate, label in asked.items() if candidate.endswith(reply)]
    assert own and set(own) == {ANSWERS}  # its reply answers, under its own title and a neighbour's
    others = [label for candidate, label in asked.items() if not candidate.endswith(reply)]
    assert others == [DOES_NOT]  # the most alike entry's reply: on the topic, another fact
    assert counts["faq"] == 3 * 3


def test_a_sections_question_is_answered_by_it_not_by_another_section_or_a_sibling_pages_same_section(shop_kb):
    split, counts = kb_answer_examples(shop_kb)
    asked = _by_question(split["train"] + split["valid"])["云迹S5胸包 材质"]
    assert [label for c, label in asked.items() if "500D涂层尼龙" in c] == [ANSWERS]
    assert [label for c, label in asked.items() if "900D牛津布" in c] == [DOES_NOT]  # B15's 材质: another product
    assert [label for c, label in asked.items() if "3升" in c] == [DOES_NOT]  # S5's 容量: another section
    masked = [
        q
        for q in _by_question(split["train"] + split["valid"])
        if q.startswith("云迹S5胸包 ") and q != "云迹S5胸包 材质"
    ]
    assert masked and counts["masked"] > 0  # sentences asked about one of their words, the page's title first


def test_reviews_and_question_files_are_not_made_into_examples_and_a_document_stays_on_one_side(shop_kb):
    split, counts = kb_answer_examples(shop_kb)
    texts = [e.text for part in split.values() for e in part]
    assert not [t for t in texts if "渗水" in t or "背着很舒服" in t or "下大雨能背吗" in t]
    assert counts["documents"] == 5  # three FAQ entries, two pages; the review left out
    for part, examples in split.items():
        for e in examples:
            if "500D涂层尼龙" in e.text.split("\n", 1)[1] and e.label == ANSWERS:
                assert split_of_title("page-s5") == part


def test_the_kbs_examples_take_their_share_and_a_resumed_run_reads_what_the_first_made(shop_kb, tmp_path):
    kb_examples = [LabelledText(f"q{i}\nc", ANSWERS) for i in range(10)]
    assert len(repeated_to_share(kb_examples, 90, share=0.25)) == 30  # 30 of 120: a quarter
    assert len(repeated_to_share(kb_examples, 3, share=0.25)) == 10  # each at least once
    saved = tmp_path / "kb-answers.jsonl"
    made, counts = frozen_kb_answer_examples(shop_kb, saved, seed=0, resume=False)
    saved.write_text(saved.read_text(encoding="utf-8").replace("500D涂层尼龙", "改过的面料"), encoding="utf-8")
    again, counts_again = frozen_kb_answer_examples(shop_kb, saved, seed=0, resume=True)
    assert counts_again == counts and sum(map(len, again.values())) == sum(map(len, made.values()))
    assert any("改过的面料" in e.text for part in again.values() for e in part)  # read back, not made again


def test_a_folder_that_is_no_kb_is_named(tmp_path):
    with pytest.raises(ValueError, match=str(tmp_path)):
        kb_answer_examples(tmp_path)
