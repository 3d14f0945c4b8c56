"""A KB's query tokens (knowledge/kb.py `query_tokens`): a run jieba glued around a name it does not know
is cut again into the words the KB's own documents use, so keyword search finds them."""

from __future__ import annotations

import json

from tests.conftest import ingested_kb


def test_a_glued_name_in_a_question_finds_the_documents_that_use_it(tmp_path):
    records = [
        {
            "doc_id": "faq-sf",
            "title": "默认发什么快递？",
            "text": "默认中通发货。如需顺丰快递，请选择“顺丰配送”，需另付 12 元。",
            "doc_type": "faq",
        },
        {"doc_id": "faq-inv", "title": "可以开发票吗？", "text": "可以，下单时填写抬头。", "doc_type": "faq"},
        {"doc_id": "faq-ret", "title": "怎么退货？", "text": "签收后 7 天内在订单页申请退货。", "doc_type": "faq"},
        {"doc_id": "faq-pay", "title": "支持哪些付款方式？", "text": "支持微信、支付宝和银行卡。", "doc_type": "faq"},
    ]  # a few entries: with two, a word in one of them has no BM25 weight
    corpus = tmp_path / "faq.jsonl"
    corpus.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records), encoding="utf-8")
    kb, _ = ingested_kb(tmp_path / "kb", [corpus])
    try:
        question = "想发顺丰要加钱吗"
        tokens = kb.query_tokens(question)
        assert "顺丰" in tokens and "加钱" in tokens  # 顺丰 out of jieba's glued 发顺 / 丰要; 加钱 kept
        assert [hit.chunk_id for hit in kb.search_keyword(question, k=1)] == ["faq-sf#body-0"]
    finally:
        kb.close()
