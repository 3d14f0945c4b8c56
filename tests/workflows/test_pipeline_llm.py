"""The LLM paths of the pipeline over real HTTP: AgentScope's OpenAI client (streaming) talking to
a scripted OpenAI-compatible server on 127.0.0.1. Planner tool calls, the inspector rejecting an
invented citation, one regeneration, a model that never stops, and every kind of failure."""

from __future__ import annotations

import re

import pytest

from citescope.agents.circuit_breaker import forget_providers
from citescope.workflows.evaluation.scripted_server import ReplayServer, prompt_text
from citescope.workflows.pipeline import QAPipeline
from citescope.workflows.pipeline_config import PipelineConfig
from tests.support.spec_sheets import spec_sheet_kb

PRICE_QUESTION = "XZ-3000 充电宝多少钱？"
_SKU_LINE = re.compile(r"【(sku-p-xz3000#[^】]+)】[^\n]*?价格: ([\d.]+)元")


@pytest.fixture
def server():
    forget_providers()  # a breaker opened on an earlier test's port must not carry over
    with ReplayServer() as replay:
        yield replay


def make_pipeline(kb, registry, server, planner=False, answerer=False, **overrides) -> QAPipeline:
    spec = f"compatible:test@{server.base_url}"
    settings = {"max_retries": 0, "backoff_s": 0.01, "model_timeout_s": 10, **overrides}
    config = PipelineConfig.load(
        kb.dir, environ={}, planner=spec if planner else "offline", answerer=spec if answerer else "offline", **settings
    )
    return QAPipeline(kb, config, registry=registry).warm_up()


def valid_price_answer(body: dict) -> dict:
    """A correct answer built from the evidence the server was shown (whatever its order)."""
    chunk_id, price = _SKU_LINE.search(prompt_text(body)).groups()
    return {"content": f"星择 XZ-3000 充电宝的价格是 {price}元【{chunk_id}】。"}


def test_llm_planner_tool_calls_run_through_the_budgeted_toolkit(demo_kb, registry, server):
    server.push(
        {"tool_calls": [{"name": "product_lookup", "arguments": {"product": "XZ-3000"}}]},
        {
            "tool_calls": [
                {"name": "hybrid_search", "arguments": {"query": "XZ-3000 充电宝 价格", "product_id": "p-xz3000"}},
                {"name": "rerank", "arguments": {"query": PRICE_QUESTION}},
            ]
        },
        {"content": "检索完成"},
    )
    result = make_pipeline(demo_kb, registry, server, planner=True).run(PRICE_QUESTION)

    assert result.planner_source == "llm" and not result.degraded, result.degradation_reasons
    assert [(c.name, c.outcome) for c in result.tool_calls] == [
        ("product_lookup", "ran"),
        ("hybrid_search", "ran"),
        ("rerank", "ran"),
    ]
    assert result.tool_calls[1].arguments["product_id"] == "p-xz3000"
    assert not result.refused and any(c.id.startswith("sku-p-xz3000#") for c in result.citations)
    assert result.budget.model_calls == 3 and result.models["planner"] == "test"
    first = server.chat_requests()[0].body
    assert first["stream"] is True and "rerank" in {t["function"]["name"] for t in first["tools"]}
    assert "【建议计划】" in prompt_text(first) and "product_lookup(product='p-xz3000')" in prompt_text(first)
    later = prompt_text(server.chat_requests()[2].body)
    assert "星择 XZ-3000" in later  # the model saw the tool results


def test_an_invented_citation_is_rejected_and_the_regeneration_passes(demo_kb, registry, server):
    server.push({"content": "XZ-3000 的价格是 299元【sku-p-xz3000#sku-XZ3000-GOLD】。"}, valid_price_answer)
    result = make_pipeline(demo_kb, registry, server, answerer=True).run(PRICE_QUESTION)

    assert result.regenerated and result.answer_source == "llm" and not result.refused and not result.degraded
    assert result.inspection.passed and "GOLD" not in result.answer
    assert [c.id for c in result.citations] == re.findall(r"【([^】]+)】", result.answer)
    assert set(result.evidence_ids) >= {c.id for c in result.citations}
    first, retry = server.chat_requests()
    assert "【审核意见】" not in prompt_text(first.body)
    assert "【审核意见】" in prompt_text(retry.body) and "sku-p-xz3000#sku-XZ3000-GOLD" in prompt_text(retry.body)
    assert result.budget.model_calls == 2


def test_the_models_are_told_the_time_the_question_is_about(demo_kb, registry, server):
    server.push(
        {"tool_calls": [{"name": "hybrid_search", "arguments": {"query": "XZ-3000 充电宝 价格"}}]},
        {"content": "检索完成"},
        valid_price_answer,
    )
    result = make_pipeline(demo_kb, registry, server, planner=True, answerer=True).run(
        PRICE_QUESTION, filters={"as_of": "2026-03"}
    )

    assert result.as_of == "2026-03" and not result.refused and not result.degraded, result.degradation_reasons
    planner_first, _, answerer_first = server.chat_requests()
    for request in (planner_first, answerer_first):
        assert "问的是 2026-03 时的情况" in prompt_text(request.body)
    assert "2026-03" not in result.question  # the result keeps the customer's own words


def test_two_failed_answers_fall_back_to_the_extractive_answer(demo_kb, registry, server):
    invented = {"content": "XZ-3000 的价格是 1元【made-up#x-1】。"}
    server.push(invented, invented)
    result = make_pipeline(demo_kb, registry, server, answerer=True).run(PRICE_QUESTION)

    assert result.regenerated and result.answer_source == "extractive" and result.inspection.passed
    assert "made-up" not in result.answer and not result.refused and result.citations
    assert result.degraded and result.degradation_reasons == [
        "both model answers failed inspection (1 invalid citation id, 1 uncited sentence); extractive answer used"
    ]


def test_a_planner_that_never_stops_calling_tools(demo_kb, registry, server):
    server.default_step = lambda body: {
        "tool_calls": [
            {"name": "hybrid_search", "arguments": {"query": f"退货运费 {len(body['messages'])}"}},
            {"name": "keyword_search", "arguments": {"query": f"运费险 {len(body['messages'])}"}},
        ]
    }
    pipeline = make_pipeline(demo_kb, registry, server, planner=True)
    result = pipeline.run("无理由退货的运费是谁承担？")

    used, limits = result.budget, result.budget.limits
    assert used.tool_calls <= limits.max_tool_calls and max(used.per_tool.values()) <= limits.max_calls_per_tool
    assert sum(c.outcome == "over_budget" for c in result.tool_calls) >= 1
    assert len(server.chat_requests()) == limits.max_tool_calls + 1  # max_iters; no request after that
    assert result.planner_source == "llm" and not result.degraded
    assert result.answer and (result.refused or result.inspection.passed)


@pytest.mark.parametrize(
    "failure, reason",
    [
        ({"status": 500}, "HTTP 500"),
        ({"status": 429, "body": {"error": {"message": "rate limited"}}}, "HTTP 429"),
        ({"raw": "not json at all"}, "JSONDecodeError"),
    ],
)
def test_model_failures_degrade_to_the_offline_engine(demo_kb, registry, server, failure, reason):
    server.default_step = failure
    pipeline = make_pipeline(demo_kb, registry, server, planner=True, answerer=True, max_retries=1)
    result = pipeline.run(PRICE_QUESTION)

    assert result.degraded and result.planner_source == "offline" and result.answer_source == "extractive"
    planner_reason, answerer_reason = result.degradation_reasons
    assert planner_reason.startswith("planner model failed") and answerer_reason.startswith("answerer model failed")
    assert f"{reason}" in planner_reason and "(x2)" in planner_reason and reason in answerer_reason
    assert "circuit open" in answerer_reason  # the third failure in a row opened the provider's breaker
    assert not result.refused and result.citations and result.inspection.passed
    assert len(server.chat_requests()) == result.budget.model_calls == 3


def test_a_retry_after_a_rate_limit_succeeds(demo_kb, registry, server):
    server.push(
        {"status": 429},
        {"tool_calls": [{"name": "product_lookup", "arguments": {"product": "XZ-3000"}}]},
        {"content": "检索完成"},
    )
    result = make_pipeline(demo_kb, registry, server, planner=True, max_retries=1).run(PRICE_QUESTION)
    assert result.planner_source == "llm" and not result.degraded and result.budget.model_calls == 3
    assert [c.name for c in result.tool_calls] == ["product_lookup"] and result.citations


def test_a_slow_model_times_out_and_degrades(demo_kb, registry, server):
    server.push({"delay_s": 5, "content": "检索完成"})
    result = make_pipeline(demo_kb, registry, server, planner=True, model_timeout_s=0.3).run(PRICE_QUESTION)
    assert result.degraded and "timed out" in result.degradation_reasons[0]
    assert result.planner_source == "offline" and not result.refused and result.citations


@pytest.mark.parametrize(
    "step, reason",
    [
        ({"malformed_tool_args": True, "name": "hybrid_search"}, "malformed tool call: hybrid_search"),
        ({"tool_calls": [{"name": "web_search", "arguments": {"query": "XZ-3000"}}]}, "unknown tool 'web_search'"),
    ],
)
def test_a_bad_tool_call_degrades_to_the_offline_plan(demo_kb, registry, server, step, reason):
    server.push(step)
    result = make_pipeline(demo_kb, registry, server, planner=True).run(PRICE_QUESTION)
    assert result.degraded and reason in result.degradation_reasons[0]
    assert result.planner_source == "offline" and all(c.outcome == "ran" for c in result.tool_calls)
    assert [c.name for c in result.tool_calls] == [c.skill for c in result.plan]
    assert not result.refused and result.citations


def test_a_model_answer_stating_a_siblings_fact_as_the_answer_is_rejected(tmp_path, registry, server):
    """风行 逐光X3's sheet has no battery capacity; a model answering it from 极岚 听澜X3's sheet, without saying
    whose it is, fails inspection twice (entity.sibling) and the extractive answer, which quotes no sibling, refuses."""
    kb = spec_sheet_kb(tmp_path)
    stray = {"content": "电池容量为 320mAh【spec-2#body-0】。"}
    server.push(stray, stray)
    try:
        result = make_pipeline(kb, registry, server, answerer=True, refusal_threshold=0.0).run(
            "风行 逐光X3的电池容量是多少？"
        )
    finally:
        kb.close()
    assert result.refused and "320mAh" not in result.answer, result.answer
    # the stray sentence is supported word for word by the chunk it cites: only entity.sibling rejects it
    # (tests/agents/test_inspector.py shows it passing without the rank stage's siblings)
    assert result.degradation_reasons == [
        "both model answers failed inspection (1 unsupported sentence); extractive answer used"
    ]


def test_the_model_is_told_which_evidence_is_a_siblings(tmp_path, registry, server):
    """The prompt marks 极岚 听澜X3's sheet, which the rank stage found to be a sibling of the 风行 逐光X3 asked, and
    not the asked sheet: the model is told before it answers what the inspector would reject after."""
    kb = spec_sheet_kb(tmp_path)
    server.push({"content": "风行 逐光X3 的续航为 26小时【spec-1#body-0】。"})
    try:
        make_pipeline(kb, registry, server, answerer=True, refusal_threshold=0.0).run("风行 逐光X3的电池容量是多少？")
    finally:
        kb.close()
    [request] = server.chat_requests()
    lines = prompt_text(request.body).split("\n【证据】", 1)[1].split("\n【冲突】", 1)[0].splitlines()
    ids = {line.split("】", 1)[0] + "】": "〔另一对象〕" in line for line in lines if line.startswith("【")}
    assert ids.get("【spec-2#body-0】") is True and ids.get("【spec-1#body-0】") is False, lines
