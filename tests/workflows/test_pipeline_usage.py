"""A question's model usage and cost through the real pipeline, over real HTTP: AgentScope's
OpenAI and DashScope clients (streaming) against the scripted server reporting usage as each
provider does; the result, the stored trace, the usage limits, and zeros offline."""

from __future__ import annotations

import asyncio

import dashscope
import pytest
from rich.console import Console

from citescope.agents.usage import Usage, UsageReport
from citescope.workflows.evaluation.scripted_server import ReplayServer
from citescope.workflows.pipeline import QAPipeline
from citescope.workflows.pipeline_config import PipelineConfig
from citescope.workflows.traces import TraceStore, render_trace
from tests.workflows.test_pipeline_llm import PRICE_QUESTION, valid_price_answer

PRICE = {"currency": "CNY", "input_per_1k": 0.8, "output_per_1k": 2.0, "cached_input_per_1k": 0.2}


def pipeline_for(kb, registry, planner: str = "offline", answerer: str = "offline", **overrides) -> QAPipeline:
    settings = {"max_retries": 0, "backoff_s": 0.01, "model_timeout_s": 10, **overrides}
    config = PipelineConfig.load(kb.dir, environ={}, planner=planner, answerer=answerer, **settings)
    return QAPipeline(kb, config, registry=registry).warm_up()


def answer_with(usage: dict):
    """A valid answer reporting `usage`; DashScope's native body holds the messages under "input"."""
    return lambda body: {**valid_price_answer(body.get("input", body)), "usage": usage}


def test_planner_and_answerer_tokens_reach_the_result_and_the_trace(demo_kb, registry, tmp_path):
    script = [
        {
            "tool_calls": [{"name": "product_lookup", "arguments": {"product": "XZ-3000"}}],
            "usage": {"input_tokens": 2100, "output_tokens": 30, "cached_tokens": 1024},
        },
        {"content": "检索完成", "usage": {"input_tokens": 2600, "output_tokens": 8, "cached_tokens": 2048}},
        answer_with({"input_tokens": 1800, "output_tokens": 60}),
    ]
    with ReplayServer(script) as server:
        spec = f"compatible:test@{server.base_url}"
        pipeline = pipeline_for(demo_kb, registry, spec, spec, prices={"test": PRICE})
        result = pipeline.run(PRICE_QUESTION)
        requests = len(server.chat_requests())

    assert not result.degraded and result.answer_source == "llm", result.degradation_reasons
    used = Usage(requests=3, input_tokens=6500, output_tokens=98, cached_tokens=3072)
    assert requests == result.budget.model_calls == 3
    expected_cost = ((6500 - 3072) * 0.8 + 3072 * 0.2 + 98 * 2.0) / 1000
    assert result.usage.by_model["test"].usage == used
    assert (result.usage.requests, result.usage.input_tokens, result.usage.output_tokens) == (3, 6500, 98)
    assert result.usage.cached_tokens == 3072 and result.usage.currency == "CNY"
    assert result.usage.cost == pytest.approx(expected_cost)

    store = TraceStore(tmp_path / "traces.sqlite")
    store.record(result, demo_kb)
    trace = store.get(result.trace_id)
    store.close()
    assert UsageReport.model_validate(trace["usage"]) == result.usage
    console = Console(record=True, width=200)
    console.print(render_trace(trace))
    assert "3 model requests, 6500 input tokens (3072 cached), 98 output tokens" in console.export_text()


def test_dashscope_usage_is_priced_from_the_default_table(demo_kb, registry, monkeypatch):
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-replay-usage-0123456789")
    with ReplayServer([answer_with({"input_tokens": 3000, "output_tokens": 80, "cached_tokens": 1000})]) as server:
        pipeline = pipeline_for(demo_kb, registry, answerer=f"dashscope:qwen-plus@{server.dashscope_base_url}")

        async def ask():
            try:
                return await pipeline.arun(PRICE_QUESTION)
            finally:
                await dashscope.close_shared_aio_session()

        result = asyncio.run(ask())
        sent = server.chat_requests()
    assert sent[0].headers.get("x-dashscope-sse") == "enable"  # streamed, as the pipeline asks
    assert result.answer_source == "llm" and not result.degraded, result.degradation_reasons
    used = Usage(requests=1, input_tokens=3000, output_tokens=80, cached_tokens=1000)
    price = pipeline.config.prices["qwen-plus"]  # the example price in workflows/pipeline.yaml
    assert result.usage.by_model["qwen-plus"].usage == used
    assert result.usage.cost == pytest.approx(price.cost(used)) and result.usage.currency == "CNY"


def test_a_reached_token_limit_sends_nothing_more_and_degrades_with_its_reason(demo_kb, registry):
    script = [
        {
            "tool_calls": [{"name": "product_lookup", "arguments": {"product": "XZ-3000"}}],
            "usage": {"input_tokens": 2500, "output_tokens": 20},
        }
    ]
    with ReplayServer(script, default_step={"content": "不应发送"}) as server:
        spec = f"compatible:test@{server.base_url}"
        result = pipeline_for(demo_kb, registry, spec, spec, max_input_tokens=2000).run(PRICE_QUESTION)
        requests = len(server.chat_requests())

    assert requests == 1 and result.budget.model_calls == 1  # the limit was checked before each later call
    limit = "input-token limit reached (2500 of max_input_tokens 2000)"
    assert result.degraded and result.degradation_reasons == [
        f"planner model failed ({limit}); offline plan used",
        f"answerer model failed ({limit}); extractive answer used",
    ]
    assert result.answer_source == "extractive" and not result.refused and result.citations
    assert result.usage.by_model["test"].usage == Usage(requests=1, input_tokens=2500, output_tokens=20)
    assert result.usage.cost is None  # "test" has no price: unknown, not 0
    assert result.budget.limits.max_input_tokens == 2000


def test_offline_usage_is_zeros(demo_kb, registry):
    result = pipeline_for(demo_kb, registry).run(PRICE_QUESTION)
    assert result.usage == UsageReport() and result.usage.cost == 0.0
    assert result.model_dump(mode="json")["usage"] == {
        "requests": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cached_tokens": 0,
        "cost": 0.0,
        "currency": None,
        "by_model": {},
    }
