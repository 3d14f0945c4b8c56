"""Usage, limits and prices (agents/usage.py), and what budgeted_model_call records of real
replies: AgentScope's OpenAI and DashScope clients, streamed and not, over HTTP on 127.0.0.1
against a server that reports usage as each provider does."""

from __future__ import annotations

import asyncio

import dashscope
import pytest

from citescope.agents.budget import Budget, BudgetTracker, ModelFailure, RetryPolicy, budgeted_model_call
from citescope.agents.models import ModelConfig, make_chat_model
from citescope.agents.usage import ModelPrice, Usage, UsageLimits, UsageReport
from citescope.workflows.evaluation.scripted_server import ReplayServer

MESSAGES = [{"role": "user", "content": "XZ-3000 充电宝多少钱？"}]
QWEN = ModelPrice(currency="CNY", input_per_1k=0.8, output_per_1k=2.0, cached_input_per_1k=0.2)
GPT = ModelPrice(currency="USD", input_per_1k=0.15, output_per_1k=0.6)


def test_usage_adds_up_and_cached_input_is_priced_at_its_own_rate():
    total = Usage(requests=1, input_tokens=1200, output_tokens=100, cached_tokens=1000) + Usage(
        requests=1, input_tokens=800, output_tokens=50
    )
    assert total == Usage(requests=2, input_tokens=2000, output_tokens=150, cached_tokens=1000)
    assert total.total_tokens == 2150
    # 1000 uncached x 0.8 + 1000 cached x 0.2 + 150 out x 2.0, per 1000 tokens
    assert QWEN.cost(total) == pytest.approx(1.3)
    # no cached price: a cached token costs what any input token does
    assert GPT.cost(total) == pytest.approx((2000 * 0.15 + 150 * 0.6) / 1000)


def test_an_unpriced_model_has_no_cost_and_nothing_used_costs_zero():
    used = {"qwen-plus": Usage(requests=1, input_tokens=1000), "my-local-model": Usage(requests=2, input_tokens=10)}
    report = UsageReport.of(used, {"qwen-plus": QWEN})
    assert report.requests == 3 and report.input_tokens == 1010
    assert report.by_model["qwen-plus"].cost == pytest.approx(0.8) and report.by_model["qwen-plus"].currency == "CNY"
    assert report.by_model["my-local-model"].cost is None and report.cost is None  # unknown, not 0
    both_priced = UsageReport.of(
        {"qwen-plus": Usage(input_tokens=1000), "gpt-4o-mini": Usage(input_tokens=1000)},
        {"qwen-plus": QWEN, "gpt-4o-mini": GPT},
    )
    assert both_priced.cost is None and both_priced.currency is None  # CNY + USD make no one number
    nothing = UsageReport.of({}, {"qwen-plus": QWEN})
    assert (nothing.requests, nothing.input_tokens, nothing.cost) == (0, 0, 0.0)


def test_reports_combine_model_by_model():
    first = UsageReport.of({"qwen-plus": Usage(requests=2, input_tokens=3000, output_tokens=200)}, {"qwen-plus": QWEN})
    second = UsageReport.of({"qwen-plus": Usage(requests=1, input_tokens=1000, cached_tokens=500)}, {"qwen-plus": QWEN})
    total = UsageReport.combine([first, UsageReport(), second])
    assert (total.requests, total.input_tokens, total.output_tokens, total.cached_tokens) == (3, 4000, 200, 500)
    assert total.cost == pytest.approx(first.cost + second.cost) and total.currency == "CNY"
    assert UsageReport.read({"requests": "many"}) == UsageReport() == UsageReport.read(None)


def test_limits_refuse_the_next_request_and_name_the_limit():
    limits = UsageLimits(max_requests=3, max_input_tokens=1000, max_output_tokens=200)
    assert limits.check_before_request(Usage(requests=2, input_tokens=999, output_tokens=199)) is None
    assert limits.check_before_request(Usage(requests=3)) == "model-call budget used up (3 calls)"
    assert "max_input_tokens 1000" in limits.check_before_request(Usage(input_tokens=1200))
    assert "max_output_tokens 200" in limits.check_before_request(Usage(output_tokens=200))
    assert UsageLimits().check_before_request(Usage(requests=10**6, input_tokens=10**9)) is None


def _model(server: ReplayServer, provider: str, stream: bool):
    base_url = server.base_url if provider == "compatible" else server.dashscope_base_url
    model, _ = make_chat_model(ModelConfig(provider=provider, model="qwen-plus", base_url=base_url, stream=stream))
    return model


async def _calls(model, tracker: BudgetTracker, times: int) -> list:
    outcomes: list = []
    try:
        for _ in range(times):
            try:
                outcomes.append(await budgeted_model_call(model, MESSAGES, tracker, RetryPolicy(max_retries=0)))
            except ModelFailure as failure:
                outcomes.append(failure)
    finally:
        await dashscope.close_shared_aio_session()  # the SDK keeps one aiohttp session per loop
    return outcomes


@pytest.mark.parametrize("provider", ["compatible", "dashscope"])
@pytest.mark.parametrize("stream", [True, False])
def test_each_reply_s_tokens_are_recorded_per_model(monkeypatch, provider, stream):
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-replay-usage-0123456789")
    script = [
        {"content": "您好，XZ-3000 的价格是 299元。", "usage": {"input_tokens": 1234, "output_tokens": 56}},
        {"status": 500},  # sent and counted, no tokens reported
        {"content": "还有别的问题吗？", "usage": {"input_tokens": 2000, "output_tokens": 7, "cached_tokens": 1536}},
    ]
    tracker = BudgetTracker()
    with ReplayServer(script) as server:
        outcomes = asyncio.run(_calls(_model(server, provider, stream), tracker, 3))
        sent = server.chat_requests()
    assert isinstance(outcomes[1], ModelFailure) and len(sent) == 3
    if provider == "compatible" and stream:  # AgentScope asks OpenAI for the final usage chunk
        assert sent[0].body["stream_options"] == {"include_usage": True}
    assert tracker.model_usage == {
        "qwen-plus": Usage(requests=3, input_tokens=3234, output_tokens=63, cached_tokens=1536)
    }
    assert tracker.model_calls == 3


def test_a_reached_token_limit_sends_no_request_and_says_which(monkeypatch):
    script = [{"content": "第一次回答", "usage": {"input_tokens": 1500, "output_tokens": 20}}]
    tracker = BudgetTracker(Budget(max_input_tokens=1000))
    with ReplayServer(script, default_step={"content": "不应发送"}) as server:
        first, second = asyncio.run(_calls(_model(server, "compatible", True), tracker, 2))
        sent = len(server.requests)
    assert first.content[0]["text"] == "第一次回答"  # the request that crossed the limit is kept: it is paid for
    assert (
        isinstance(second, ModelFailure) and str(second) == "input-token limit reached (1500 of max_input_tokens 1000)"
    )
    assert sent == 1 and tracker.model_calls == 1
    assert tracker.model_usage["qwen-plus"] == Usage(requests=1, input_tokens=1500, output_tokens=20)
