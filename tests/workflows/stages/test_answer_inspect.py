"""The answer and inspect stages alone: a draft from the shown evidence, the inspector rejecting
an invented citation, and a model that fails replaced by the extractive answerer (real HTTP to a
scripted server on 127.0.0.1)."""

from __future__ import annotations

import asyncio

import pytest

from citescope.agents.answerer import LLMAnswerer
from citescope.agents.budget import BudgetTracker, RetryPolicy
from citescope.agents.models import make_chat_model
from citescope.workflows.evaluation.scripted_server import ReplayServer
from citescope.workflows.stages.answer import Answer, AnswerInput
from citescope.workflows.stages.inspect import InspectInput
from tests.workflows.stages.conftest import analysed, ranked, retrieved

PRICE_QUESTION = "XZ-3000 充电宝多少钱？"


@pytest.fixture(scope="module")
def price(pipeline) -> AnswerInput:
    analysis = analysed(pipeline, PRICE_QUESTION)
    return AnswerInput(analysis, ranked(pipeline, analysis, retrieved(pipeline, analysis)).shown, conflicts=[])


def inspected(pipeline, given: AnswerInput, text: str):
    return pipeline.inspect.run(InspectInput(text, given.evidence, given.conflicts, given.analysis.question))


def test_the_extractive_draft_cites_the_shown_evidence_and_passes(pipeline, price):
    draft = asyncio.run(pipeline.answer.run(price, BudgetTracker(pipeline.config.budget())))
    assert draft.source == "extractive" and draft.degradation == ""
    report = inspected(pipeline, price, draft.text)
    assert report.passed and report.cited_ids
    assert set(report.cited_ids) <= {hit.chunk_id for hit in price.evidence}


def test_an_invented_citation_is_rejected(pipeline, price):
    sku = next(hit for hit in price.evidence if hit.chunk_id.startswith("sku-p-xz3000#sku-"))
    invented = "sku-p-xz3000#sku-XZ3000-GOLD"
    assert invented not in {hit.chunk_id for hit in price.evidence}
    rejected = inspected(pipeline, price, f"星择 XZ-3000 充电宝的价格是 299元【{invented}】。")
    assert not rejected.passed and rejected.invalid_ids == [invented]
    shown = inspected(pipeline, price, f"星择 XZ-3000 充电宝的价格是 299元【{sku.chunk_id}】。")
    assert shown.invalid_ids == []  # the same sentence citing a shown chunk: no invented id


def test_a_failing_model_is_replaced_by_the_extractive_answer_and_reported(pipeline, price):
    with ReplayServer() as server:
        server.push({"status": 500})
        model, formatter = make_chat_model(f"compatible:test@{server.base_url}")
        answer = Answer(pipeline.answer.extractive, LLMAnswerer(model, formatter, RetryPolicy(max_retries=0)))
        draft = asyncio.run(answer.run(price, BudgetTracker(pipeline.config.budget())))
        assert draft.source == "extractive" and draft.degradation.startswith("answerer model failed")
        assert len(server.chat_requests()) == 1
        # by_model=False: the extractive answerer writes it, the model is not asked
        extractive_only = AnswerInput(price.analysis, price.evidence, [], by_model=False)
        kept = asyncio.run(answer.run(extractive_only, BudgetTracker(pipeline.config.budget())))
        assert kept.source == "extractive" and kept.degradation == "" and len(server.chat_requests()) == 1


def test_a_model_draft_is_the_models_text(pipeline, price):
    with ReplayServer() as server:
        server.push({"content": "价格见资料。"})
        model, formatter = make_chat_model(f"compatible:test@{server.base_url}")
        answer = Answer(pipeline.answer.extractive, LLMAnswerer(model, formatter, RetryPolicy(max_retries=0)))
        draft = asyncio.run(answer.run(price, BudgetTracker(pipeline.config.budget())))
    assert draft.source == "llm" and draft.text == "价格见资料。" and draft.degradation == ""
