"""A sick provider, over real HTTP: AgentScope's OpenAI and DashScope clients against the scripted
server on 127.0.0.1, through budgeted_model_call. What is retried and what fails fast, how long a
429 asks to wait (the sleep requested, recorded, never timed), cut streams, HTML error pages, the
circuit breaker and the per-provider concurrency limit."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime

import pytest
from agentscope.model import DashScopeChatModel

from citescope.agents.budget import Budget, BudgetTracker, ModelFailure, RetryPolicy, budgeted_model_call
from citescope.agents.circuit_breaker import CircuitBreaker, ProviderSlots, forget_providers
from citescope.agents.models import ModelConfig, close_model_sessions, make_chat_model
from citescope.agents.provider_errors import retry_after_s
from citescope.workflows.evaluation.scripted_server import ReplayServer

MESSAGES = [{"role": "user", "content": "你好"}]
HTML_502 = "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>"


@pytest.fixture
def server():
    forget_providers()
    with ReplayServer() as replay:
        yield replay


class Sleeps:
    """Records the pauses asked for and waits none of them."""

    def __init__(self) -> None:
        self.asked: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)


def client(server, provider="compatible", stream=True):
    if provider == "dashscope":
        config = ModelConfig(
            provider="dashscope", model="qwen-plus", base_url=server.dashscope_base_url, api_key="sk-replay-key-1"
        )
    else:
        config = ModelConfig.parse(f"compatible:replay@{server.base_url}")
    return make_chat_model(config.model_copy(update={"stream": stream, "timeout_s": 10}))[0]


def call(model, retry, sleeps=None, budget=None):
    tracker = BudgetTracker(budget or Budget())

    async def once():
        try:
            return await budgeted_model_call(model, MESSAGES, tracker, retry, sleep=sleeps or Sleeps())
        finally:
            if isinstance(model, DashScopeChatModel):  # the SDK's session on this loop, which asyncio.run ends
                await close_model_sessions(model)

    return asyncio.run(once()), tracker


def failure_of(model, retry, sleeps=None, budget=None) -> str:
    with pytest.raises(ModelFailure) as failed:
        call(model, retry, sleeps, budget)
    return str(failed.value)


@pytest.mark.parametrize("provider", ["compatible", "dashscope"])
@pytest.mark.parametrize("status", [401, 403, 400, 404, 422])
def test_a_refused_key_or_request_fails_fast_with_one_request(server, provider, status):
    server.default_step = {"status": status}
    reason = failure_of(client(server, provider), RetryPolicy(max_retries=3, backoff_s=0.01))
    assert reason.startswith(f"HTTP {status}") and "(x" not in reason
    assert len(server.chat_requests()) == 1


def test_a_rate_limit_waits_what_retry_after_asks_then_succeeds(server):
    server.push({"status": 429, "headers": {"Retry-After": "1"}}, {"content": "好了"})
    sleeps = Sleeps()
    response, tracker = call(client(server), RetryPolicy(max_retries=1, backoff_s=0.01), sleeps)
    assert response.content[0]["text"] == "好了" and tracker.model_calls == 2
    assert sleeps.asked == [1.0]


def test_a_retry_after_beyond_the_deadline_fails_now(server):
    server.default_step = {"status": 429, "headers": {"Retry-After": "120"}}
    sleeps = Sleeps()
    reason = failure_of(client(server), RetryPolicy(max_retries=3), sleeps, Budget(deadline_s=30))
    assert reason == "HTTP 429: replayed HTTP 429; Retry-After 120s does not fit the deadline"
    assert sleeps.asked == [] and len(server.chat_requests()) == 1


def test_retry_after_reads_seconds_and_http_dates():
    now = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_s("2", now) == 2.0
    assert retry_after_s("Sun, 01 Mar 2026 12:00:05 GMT", now) == 5.0
    assert retry_after_s("Sun, 01 Mar 2026 11:00:00 GMT", now) == 0.0  # in the past: go now
    assert retry_after_s("soon", now) is None and retry_after_s(None, now) is None


@pytest.mark.parametrize("provider", ["compatible", "dashscope"])
def test_a_server_error_is_retried_with_jittered_backoff(server, provider):
    server.push({"status": 500}, {"status": 503}, {"content": "好了"})
    sleeps = Sleeps()
    response, _ = call(client(server, provider), RetryPolicy(max_retries=2, backoff_s=0.4), sleeps)
    assert response.content[0]["text"] == "好了" and len(server.chat_requests()) == 3
    first, second = sleeps.asked
    assert 0.2 <= first <= 0.4 and 0.4 <= second <= 0.8  # backoff x2 per attempt, jittered to x0.5-1


@pytest.mark.parametrize("provider", ["compatible", "dashscope"])
@pytest.mark.parametrize("status", [502, 200])  # a gateway's error page, or a captive proxy's page as a 200
@pytest.mark.parametrize("stream", [True, False])
def test_an_html_error_page_is_named_as_one(server, provider, status, stream):
    server.default_step = {"status": status, "body": HTML_502, "content_type": "text/html"}
    reason = failure_of(client(server, provider, stream), RetryPolicy(max_retries=1, backoff_s=0))
    assert reason == f"HTTP {status} (HTML error page) (x2)"


@pytest.mark.parametrize("provider", ["compatible", "dashscope"])
@pytest.mark.parametrize("step", [{"content": "价格是 299元"}, {"tool_calls": [{"name": "search", "arguments": {}}]}])
def test_a_stream_cut_before_its_finish_reason_is_an_error_and_retried(server, provider, step):
    server.push({**step, "cut_stream": True}, {"content": "完整的回答"})
    response, _ = call(client(server, provider), RetryPolicy(max_retries=1, backoff_s=0))
    assert response.content[0]["text"] == "完整的回答" and len(server.chat_requests()) == 2

    server.default_step = {**step, "cut_stream": True}
    reason = failure_of(client(server, provider), RetryPolicy(max_retries=0))
    assert "ended without a finish reason" in reason


def test_the_breaker_opens_after_consecutive_failures_and_later_calls_send_nothing(server):
    server.default_step = {"status": 500}
    model, retry = client(server), RetryPolicy(max_retries=1, backoff_s=0, breaker_failures=3)
    failure_of(model, retry)  # two failures
    assert "circuit open" in failure_of(model, retry)  # the third opens it; its retry is not sent
    assert len(server.chat_requests()) == 3

    server.push({"content": "恢复了"})
    reason = failure_of(model, retry)
    assert reason.startswith("circuit open for StreamSafeOpenAIChatModel:replay@")
    assert len(server.chat_requests()) == 3 and server.remaining == 1  # nothing was sent


def test_the_breaker_half_opens_for_one_probe_after_its_cool_down():
    clock = [0.0]
    breaker = CircuitBreaker(failures=2, cool_down_s=10, clock=lambda: clock[0])
    breaker.record_failure()
    assert breaker.state == "closed" and breaker.allow()
    breaker.record_failure()
    assert breaker.state == "open" and not breaker.allow()
    clock[0] = 10.0
    assert breaker.state == "half_open" and breaker.allow() and not breaker.allow()  # one probe at a time
    breaker.record_failure()  # the probe failed: a whole cool-down again
    assert breaker.state == "open" and breaker.retry_in_s() == 10
    clock[0] = 20.0
    assert breaker.allow()
    breaker.record_success()
    assert breaker.state == "closed" and breaker.allow()


def test_a_refused_key_does_not_open_the_breaker(server):
    server.default_step = {"status": 401}
    model, retry = client(server), RetryPolicy(max_retries=0, breaker_failures=1)
    for _ in range(3):
        failure_of(model, retry)
    assert len(server.chat_requests()) == 3  # each call still reached the provider


def test_requests_to_one_provider_stay_within_its_concurrency_limit(server):
    in_flight, peak, lock = [0], [0], threading.Lock()

    def slow_reply(body):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        time.sleep(0.15)  # the handler thread holds the request open
        with lock:
            in_flight[0] -= 1
        return {"content": "好了"}

    server.default_step = slow_reply
    model, retry = client(server), RetryPolicy(max_retries=0, max_concurrent=2)

    async def five_at_once():
        return await asyncio.gather(*(budgeted_model_call(model, MESSAGES, BudgetTracker(), retry) for _ in range(5)))

    replies = asyncio.run(five_at_once())
    assert [r.content[0]["text"] for r in replies] == ["好了"] * 5
    assert peak[0] == 2


def test_a_slot_freed_on_another_thread_wakes_the_waiter_on_its_loop():
    slots = ProviderSlots(1)

    async def hold_then_wait():
        assert await slots.acquire(1)
        threading.Timer(0.05, slots.release).start()  # another thread frees it
        return await slots.acquire(5)

    assert asyncio.run(hold_then_wait()) and slots.in_use == 1
    assert not asyncio.run(slots.acquire(0.01))  # still held: no slot in time


def test_a_refused_connection_is_retried():
    forget_providers()
    with ReplayServer() as gone:
        config = ModelConfig.parse(f"compatible:replay@{gone.base_url}")
    model = make_chat_model(config)[0]  # nothing listens on that port any more
    sleeps = Sleeps()
    reason = failure_of(model, RetryPolicy(max_retries=1, backoff_s=0.2), sleeps)
    assert reason == "connection failed (APIConnectionError: Connection error.) (x2)" and len(sleeps.asked) == 1
