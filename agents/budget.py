"""Hard budgets for one question: tool calls, model calls and a deadline, checked before each call.

`Budget` is the value object (what is allowed); `BudgetTracker` is one question's account of it
(what was used). Every tool call asks `check_tool` first: an identical repeat (same name, same
normalised arguments) is answered from the earlier result and costs nothing, and a call over the
total or per-tool cap never runs. Every model call asks `check_model` first (the model-call cap,
the token limits of agents/usage.py, the deadline); `budgeted_model_call` wraps one model request
with that check, the remaining deadline as its timeout, and retries with backoff, so every caller
(planner, answerer) gets the same guarantees; it records each request's tokens per model.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from citescope.agents.arms import PlanBudget
from citescope.agents.models import redact
from citescope.agents.usage import Usage, UsageLimits

log = logging.getLogger(__name__)


class Budget(BaseModel):
    """What one question may spend."""

    max_tool_calls: int = Field(default=4, ge=0)
    max_calls_per_tool: int = Field(default=2, ge=0)
    max_model_calls: int = Field(default=10, ge=0)  # every HTTP attempt counts, retries included
    deadline_s: float = Field(default=60.0, gt=0)
    max_input_tokens: int | None = Field(default=None, ge=0)  # over all of a question's requests; None: no limit
    max_output_tokens: int | None = Field(default=None, ge=0)

    def usage_limits(self) -> UsageLimits:
        """The limits checked before each model request (requests = every attempt)."""
        return UsageLimits(
            max_requests=self.max_model_calls,
            max_input_tokens=self.max_input_tokens,
            max_output_tokens=self.max_output_tokens,
        )

    def plan_budget(self) -> PlanBudget:
        """The caps the strategy policy plans under (agents/arms.py)."""
        return PlanBudget(max_calls=self.max_tool_calls, max_per_tool=self.max_calls_per_tool)


class Decision(BaseModel):
    kind: Literal["allowed", "repeated", "exhausted"]
    previous: Any = None  # the earlier result of an identical call ("repeated")
    reason: str = ""  # why not ("exhausted")

    @property
    def allowed(self) -> bool:
        return self.kind == "allowed"


class BudgetUsage(BaseModel):
    """What a question spent, for the result and the trace."""

    tool_calls: int
    per_tool: dict[str, int]
    cached_calls: int
    refused_calls: int
    model_calls: int
    elapsed_s: float
    limits: Budget


def normalise_args(args: Mapping[str, Any]) -> str:
    """A stable key for a call's arguments: no None values, trimmed text, 8.0 == 8, sorted keys."""

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return " ".join(value.split())
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, Mapping):
            return {str(k): clean(v) for k, v in value.items() if v is not None}
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        return value

    return json.dumps(clean(dict(args)), ensure_ascii=False, sort_keys=True, default=str)


class DeadlinePassed(Exception):
    """The question's deadline passed before a stage could start; the pipeline refuses
    (refusal_reason "deadline") instead of running on."""

    def __init__(self, stage: str, deadline_s: float):
        super().__init__(f"deadline of {deadline_s:g}s passed before the {stage} stage")
        self.stage = stage


class BudgetTracker:
    """One question's budget account. Not thread-safe: the planner runs tool calls one by one."""

    def __init__(self, budget: Budget | None = None, clock=time.monotonic, started: float | None = None):
        """started: when the question arrived, on `clock` (a service request that waited for a free
        slot has spent part of its deadline already); default now."""
        self.budget = budget or Budget()
        self._clock = clock
        self._started = clock() if started is None else started
        self._results: dict[tuple[str, str], Any] = {}
        self.per_tool: dict[str, int] = {}
        self.tool_calls = 0
        self.cached_calls = 0
        self.refused_calls = 0
        self.model_calls = 0
        self.model_usage: dict[str, Usage] = {}  # model name -> its requests and tokens

    # -- time ------------------------------------------------------------------------------
    def elapsed_s(self) -> float:
        return self._clock() - self._started

    def remaining_s(self) -> float:
        return max(0.0, self.budget.deadline_s - self.elapsed_s())

    @property
    def expired(self) -> bool:
        return self.remaining_s() <= 0

    def check_deadline(self, stage: str) -> None:
        """DeadlinePassed when the deadline has passed: `stage` must not start."""
        if self.expired:
            raise DeadlinePassed(stage, self.budget.deadline_s)

    # -- tools -----------------------------------------------------------------------------
    def check_tool(self, name: str, args: Mapping[str, Any]) -> Decision:
        """Allowed (and counted), repeated (the earlier result, not counted) or exhausted."""
        key = (name, normalise_args(args))
        if key in self._results:
            self.cached_calls += 1
            return Decision(kind="repeated", previous=self._results[key])
        reason = ""
        if self.tool_calls >= self.budget.max_tool_calls:
            reason = f"tool-call budget used up ({self.budget.max_tool_calls} calls)"
        elif self.per_tool.get(name, 0) >= self.budget.max_calls_per_tool:
            reason = f"{name} budget used up ({self.budget.max_calls_per_tool} calls per tool)"
        elif self.expired:
            reason = f"deadline of {self.budget.deadline_s:g}s passed"
        if reason:
            self.refused_calls += 1
            return Decision(kind="exhausted", reason=reason)
        self.tool_calls += 1
        self.per_tool[name] = self.per_tool.get(name, 0) + 1
        return Decision(kind="allowed")

    def record_tool(self, name: str, args: Mapping[str, Any], result: Any) -> None:
        """Keep an allowed call's result so an identical call later gets it back."""
        self._results[(name, normalise_args(args))] = result

    @property
    def tools_exhausted(self) -> bool:
        return self.tool_calls >= self.budget.max_tool_calls

    # -- models ----------------------------------------------------------------------------
    def check_model(self) -> Decision:
        """Allowed (and counted) or exhausted (model-call cap, token limits or deadline)."""
        spent = sum(self.model_usage.values(), Usage()).model_copy(update={"requests": self.model_calls})
        over = self.budget.usage_limits().check_before_request(spent)
        if over is not None:
            return Decision(kind="exhausted", reason=over)
        if self.expired:
            return Decision(kind="exhausted", reason=f"deadline of {self.budget.deadline_s:g}s passed")
        self.model_calls += 1
        return Decision(kind="allowed")

    def record_usage(self, model: str, usage: Usage) -> None:
        self.model_usage[model] = self.model_usage.get(model, Usage()) + usage

    def used(self) -> BudgetUsage:
        return BudgetUsage(
            tool_calls=self.tool_calls,
            per_tool=dict(self.per_tool),
            cached_calls=self.cached_calls,
            refused_calls=self.refused_calls,
            model_calls=self.model_calls,
            elapsed_s=round(self.elapsed_s(), 4),
            limits=self.budget,
        )


# ----------------------------------------------------------------------------- model calls


class ModelFailure(Exception):
    """A model stage failed for good (after retries): the pipeline falls back to the offline engine."""


class RetryPolicy(BaseModel):
    max_retries: int = Field(default=1, ge=0)
    backoff_s: float = Field(default=0.5, ge=0)  # doubled after each failed attempt
    call_timeout_s: float = Field(default=30.0, gt=0)  # one attempt; never beyond the question's deadline


def describe_failure(exc: BaseException) -> str:
    """A log-safe reason: exception type, HTTP status when there is one, a short message."""
    status = getattr(exc, "status_code", None) or getattr(getattr(exc, "response", None), "status_code", None)
    text = redact(str(exc).splitlines()[0][:160]) if str(exc).strip() else ""
    head = type(exc).__name__ + (f" (HTTP {status})" if status else "")
    return f"{head}: {text}" if text else head


async def collect_response(response: Any) -> Any:
    """A ChatResponse, or the last (accumulated) chunk of a streamed one."""
    if isinstance(response, AsyncGenerator):
        last = None
        async for chunk in response:
            last = chunk
        if last is None:
            raise ModelFailure("the model stream ended without a response")
        return last
    return response


async def budgeted_model_call(
    model: Any,
    messages: list[dict],
    tracker: BudgetTracker,
    retry: RetryPolicy,
    validate=None,
    may_retry: Callable[[], bool] | None = None,
    **kwargs: Any,
) -> Any:
    """Call `model(messages, **kwargs)` under the budget: each attempt is counted, timed out at
    min(call_timeout_s, remaining deadline), and checked by `validate(response)` (which raises
    ModelFailure for a reply that cannot be used). Failed attempts are retried with backoff while
    budget and deadline last, and while `may_retry()` says so (a streamed answer that has shown
    sentences cannot start over); then ModelFailure says what went wrong."""
    failures: list[str] = []
    name = str(getattr(model, "model_name", "?"))
    for attempt in range(retry.max_retries + 1):
        decision = tracker.check_model()
        if not decision.allowed:
            failures.append(decision.reason)
            break
        tracker.record_usage(name, Usage(requests=1))  # sent, whatever comes back
        timeout = min(retry.call_timeout_s, tracker.remaining_s())

        async def attempt_once() -> Any:
            response = await collect_response(await model(messages, **kwargs))
            tracker.record_usage(name, Usage.tokens_of(response))  # paid for, even if `validate` rejects it
            return response

        try:
            response = await asyncio.wait_for(attempt_once(), timeout)
            if validate is not None:
                validate(response)
            return response
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            failures.append(f"timed out after {timeout:.3g}s")
        except Exception as exc:  # 429/5xx, connection, bad JSON, invalid tool call: all retried alike
            failures.append(describe_failure(exc))
        log.warning("model %s attempt %d failed: %s", getattr(model, "model_name", "?"), attempt + 1, failures[-1])
        if may_retry is not None and not may_retry():
            break
        pause = retry.backoff_s * (2**attempt)
        if attempt < retry.max_retries and pause < tracker.remaining_s():
            await asyncio.sleep(pause)
    raise ModelFailure(_summarise(failures))


def _summarise(failures: list[str]) -> str:
    """Distinct reasons in order, a repeated one counted: "HTTP 500 (x2); timed out"."""
    counts = {reason: failures.count(reason) for reason in dict.fromkeys(failures)}
    return (
        "; ".join(f"{reason} (x{n})" if n > 1 else reason for reason, n in counts.items()) or "no attempt was allowed"
    )
