"""A shop that writes in traditional characters (#43), answered end to end from questions in
either script: found, answered with citations of the KB's own ids, in the customer's script."""

from __future__ import annotations

import pytest

from citescope.knowledge.chinese_script import written_in_traditional
from citescope.workflows.pipeline import QAPipeline
from citescope.workflows.pipeline_config import PipelineConfig
from tests.conftest import ingested_kb
from tests.support.traditional_shop import write_traditional_shop


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    shop = write_traditional_shop(tmp_path_factory.mktemp("tw-shop"))
    kb, _ = ingested_kb(tmp_path_factory.mktemp("tw-kb"), [shop])
    yield QAPipeline(kb, PipelineConfig.load(kb.dir, environ={})).warm_up()
    kb.close()


@pytest.mark.parametrize(
    "simplified, traditional, cited_doc, said",
    [
        ("退货运费由谁负担？", "退貨運費由誰負擔？", "tw-faq-1", "80"),
        ("K2电热水壶容量多大？", "K2電熱水壺容量多大？", "tw-prod-kettle", "1.2"),
    ],
)
def test_a_traditional_kb_answers_questions_in_either_script(pipeline, simplified, traditional, cited_doc, said):
    plain, typed = pipeline.run(simplified), pipeline.run(traditional)
    for result in (plain, typed):
        assert not result.refused and result.inspection.passed, (result.refusal_reason, result.answer)
        assert said in result.answer
        assert result.citations and all(c.id.startswith(cited_doc) for c in result.citations), result.citations
        assert all(f"【{c.id}】" in result.answer for c in result.citations)  # the ids as the KB has them
    assert plain.evidence_ids == typed.evidence_ids
    assert written_in_traditional(typed.answer) and not written_in_traditional(plain.answer)


@pytest.mark.parametrize("question", ["K2电热水壶雾面黑多少钱？", "K2電熱水壺霧面黑多少錢？"])
def test_a_colour_named_in_either_script_finds_its_traditional_sku_row(pipeline, question):
    result = pipeline.run(question)
    assert not result.refused and "1680" in result.answer and "1580" not in result.answer, result.answer
    assert any("K2-BLK" in c.id for c in result.citations), result.citations


def test_a_question_the_traditional_kb_cannot_answer_is_refused(pipeline):
    assert pipeline.run("你们有实体店吗？").refused and pipeline.run("你們有實體店嗎？").refused


def test_the_traditional_demo_shop_loads_cleanly_and_its_questions_name_its_documents(tmp_path):
    import json
    from pathlib import Path

    shop = Path(__file__).resolve().parents[2] / "knowledge" / "demo_tw"
    kb, summary = ingested_kb(tmp_path / "kb", [shop])  # no load issue allowed
    try:
        doc_ids = {chunk.doc_id for chunk in kb.all_chunks()}
        questions = [json.loads(line) for line in (shop / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
        assert questions and all(set(q["gold_doc_ids"]) <= doc_ids for q in questions)
        assert all(written_in_traditional(q["question"]) for q in questions)
        assert all(
            written_in_traditional(chunk.text) for chunk in kb.all_chunks() if not chunk.doc_id.startswith("sku-")
        )
    finally:
        kb.close()


@pytest.fixture(scope="module")
def mixed_pipeline(tmp_path_factory):
    """The traditional shop beside a page written in simplified characters: one KB, two scripts."""
    import json

    shop = write_traditional_shop(tmp_path_factory.mktemp("mixed-shop"))
    (shop / "faq_simplified.jsonl").write_text(
        json.dumps(
            {
                "doc_id": "cn-faq-1",
                "title": "支持哪些付款方式？",
                "doc_type": "faq",
                "authority": "official",
                "text": "支持支付宝、微信支付和银行卡付款，暂不支持货到付款。",
            },
            ensure_ascii=False,
        )
        + "\n",
        encoding="utf-8",
    )
    kb, _ = ingested_kb(tmp_path_factory.mktemp("mixed-kb"), [shop])
    yield QAPipeline(kb, PipelineConfig.load(kb.dir, environ={})).warm_up()
    kb.close()


@pytest.mark.parametrize(
    "question, cited_doc, said",
    [
        ("退货运费由谁负担？", "tw-faq-1", "80"),  # simplified question, traditional page
        ("退貨運費由誰負擔？", "tw-faq-1", "80"),  # traditional question, traditional page
        ("支持哪些付款方式？", "cn-faq-1", "微信"),  # simplified question, simplified page
        ("可以貨到付款嗎？", "cn-faq-1", "貨到付款"),  # traditional question, simplified page
    ],
)
def test_a_kb_mixing_both_scripts_answers_each_page_in_the_question_s_script(mixed_pipeline, question, cited_doc, said):
    result = mixed_pipeline.run(question)
    assert not result.refused and result.inspection.passed, (result.refusal_reason, result.answer)
    assert said in result.answer and all(c.id.startswith(cited_doc) for c in result.citations), result.answer
    assert written_in_traditional(result.answer) == written_in_traditional(question)
