"""Budget and BudgetTracker: checked before every call; repeats are free; model calls retried
inside the deadline and counted."""

from __future__ import annotations

import asyncio

import pytest
from agentscope.model import ChatModelBase

from citescope.agents.budget import (
    Budget,
    BudgetTracker,
    ModelFailure,
    RetryPolicy,
    budgeted_model_call,
    normalise_args,
)
from citescope.agents.offline_models import FunctionModel, ScriptedModel, text_response

MESSAGES = [{"role": "user", "content": "你好"}]


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_defaults_and_the_plan_budget_for_the_policy():
    budget = Budget()
    assert (budget.max_tool_calls, budget.max_calls_per_tool) == (4, 2)
    plan_budget = Budget(max_tool_calls=3, max_calls_per_tool=1).plan_budget()
    assert (plan_budget.max_calls, plan_budget.max_per_tool) == (3, 1)
    with pytest.raises(ValueError):
        Budget(max_tool_calls=-1)


def test_total_and_per_tool_caps_refuse_before_the_call():
    tracker = BudgetTracker(Budget(max_tool_calls=3, max_calls_per_tool=2))
    assert tracker.check_tool("hybrid_search", {"query": "a"}).allowed
    assert tracker.check_tool("hybrid_search", {"query": "b"}).allowed
    third = tracker.check_tool("hybrid_search", {"query": "c"})
    assert third.kind == "exhausted" and "hybrid_search" in third.reason
    assert tracker.check_tool("rerank", {"query": "a"}).allowed
    over = tracker.check_tool("keyword_search", {"query": "a"})
    assert over.kind == "exhausted" and "3 calls" in over.reason
    used = tracker.used()
    assert used.tool_calls == 3 and used.per_tool == {"hybrid_search": 2, "rerank": 1}
    assert used.refused_calls == 2 and tracker.tools_exhausted


def test_an_identical_call_returns_the_earlier_result_and_costs_nothing():
    tracker = BudgetTracker(Budget(max_tool_calls=1))
    args = {"query": "XZ-3000  价格", "top_k": 8.0, "brand": None}
    assert tracker.check_tool("keyword_search", args).allowed
    tracker.record_tool("keyword_search", args, "first result")
    again = tracker.check_tool("keyword_search", {"top_k": 8, "query": " XZ-3000 价格 "})
    assert again.kind == "repeated" and again.previous == "first result"
    assert tracker.check_tool("keyword_search", {"query": "别的"}).kind == "exhausted"
    assert tracker.used().tool_calls == 1 and tracker.used().cached_calls == 1


def test_normalised_args_ignore_none_spacing_key_order_and_integral_floats():
    assert normalise_args({"b": 2.0, "a": "x  y", "c": None}) == normalise_args({"a": "x y", "b": 2})
    assert normalise_args({"a": "x"}) != normalise_args({"a": "y"})


def test_deadline_stops_tools_and_models():
    clock = FakeClock()
    tracker = BudgetTracker(Budget(deadline_s=5), clock=clock)
    assert tracker.remaining_s() == 5
    clock.now += 6
    assert tracker.expired
    assert "deadline" in tracker.check_tool("rerank", {"query": "q"}).reason
    assert "deadline" in tracker.check_model().reason


def test_model_calls_are_counted_and_capped():
    tracker = BudgetTracker(Budget(max_model_calls=2))
    assert tracker.check_model().allowed and tracker.check_model().allowed
    assert tracker.check_model().kind == "exhausted"
    assert tracker.used().model_calls == 2


def test_budgeted_call_returns_the_reply_and_collects_a_stream():
    model = ScriptedModel(["第一句"], stream=True)
    tracker = BudgetTracker()
    response = asyncio.run(budgeted_model_call(model, MESSAGES, tracker, RetryPolicy()))
    assert response.content[0]["text"] == "第一句"
    assert tracker.model_calls == 1 and model.calls[0].messages == MESSAGES


def test_failed_attempts_are_retried_then_reported():
    attempts = []

    def flaky(messages, tools):
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("server closed the connection")
        return "好了"

    tracker = BudgetTracker()
    response = asyncio.run(
        budgeted_model_call(FunctionModel(flaky), MESSAGES, tracker, RetryPolicy(max_retries=1, backoff_s=0))
    )
    assert response.content[0]["text"] == "好了" and tracker.model_calls == 2

    def broken(messages, tools):
        raise ConnectionError("still down")

    with pytest.raises(ModelFailure, match=r"^ConnectionError: still down \(x2\)$"):
        asyncio.run(
            budgeted_model_call(
                FunctionModel(broken), MESSAGES, BudgetTracker(), RetryPolicy(max_retries=1, backoff_s=0)
            )
        )


def test_a_reply_that_fails_validation_is_retried():
    model = ScriptedModel(["", "有内容"])

    def needs_text(response):
        if not response.content[0]["text"]:
            raise ModelFailure("empty reply")

    response = asyncio.run(
        budgeted_model_call(model, MESSAGES, BudgetTracker(), RetryPolicy(backoff_s=0), validate=needs_text)
    )
    assert response.content[0]["text"] == "有内容"


class SlowModel(ChatModelBase):
    """A real model class that takes longer than the caller will wait."""

    def __init__(self, delay_s: float):
        super().__init__("slow", stream=False)
        self.delay_s = delay_s

    async def __call__(self, messages, tools=None, tool_choice=None, **kwargs):
        await asyncio.sleep(self.delay_s)
        return text_response("太迟了")


def test_an_attempt_is_cut_at_its_timeout_and_the_budget_stops_retries():
    tracker = BudgetTracker(Budget(max_model_calls=2))
    with pytest.raises(ModelFailure) as failure:
        asyncio.run(
            budgeted_model_call(
                SlowModel(5), MESSAGES, tracker, RetryPolicy(max_retries=3, backoff_s=0, call_timeout_s=0.05)
            )
        )
    reasons = str(failure.value)
    assert reasons == "timed out after 0.05s (x2); model-call budget used up (2 calls)"
    assert tracker.model_calls == 2
