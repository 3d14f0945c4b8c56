"""Hard budgets for one question: tool calls, model calls and a deadline, checked before each call.

`Budget` is the value object (what is allowed); `BudgetTracker` is one question's account of it
(what was used). Every tool call asks `check_tool` first: an identical repeat (same name, same
normalised arguments) is answered from the earlier result and costs nothing, and a call over the
total or per-tool cap never runs. Every model call asks `check_model` first (the model-call cap,
the token limits of agents/usage.py, the deadline); `budgeted_model_call` wraps one model request
with that check, the remaining deadline as its timeout, the provider's circuit breaker and
concurrency limit (agents/circuit_breaker.py), and retries what is worth retrying
(agents/provider_errors.py), so every caller (planner, answerer) gets the same guarantees; it
records each request's tokens per model.
The last `offline_reserve_s` of the deadline is never given to a model: it is the offline
fallback's, so a stalled provider's question still answers from the offline engine in time.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from citescope.agents.arms import PlanBudget
from citescope.agents.circuit_breaker import guard_for
from citescope.agents.provider_errors import ProviderError, classify
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
    # the end of the deadline no model request may use: the offline fallback's time
    offline_reserve_s: float = Field(default=1.0, ge=0)

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
    """One question's budget account. Not thread-safe: the planner runs tool calls one by one.
    Tool calls are counted in totals (what the question spent) and per phase (what the caps
    check): the offline fallback starts a fresh phase, so the calls of a planner model that
    failed do not eat the fallback's budget (start_fallback)."""

    def __init__(self, budget: Budget | None = None, clock=time.monotonic, started: float | None = None):
        """started: when the question arrived, on `clock` (a service request that waited for a free
        slot has spent part of its deadline already); default now."""
        self.budget = budget or Budget()
        self._clock = clock
        self._started = clock() if started is None else started
        self._results: dict[tuple[str, str], Any] = {}
        self.per_tool: dict[str, int] = {}
        self.tool_calls = 0
        self._phase_per_tool: dict[str, int] = {}
        self._phase_calls = 0
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

    def model_remaining_s(self) -> float:
        """What a model request may still use: the remaining deadline less the offline fallback's reserve."""
        return max(0.0, self.remaining_s() - self.budget.offline_reserve_s)

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
        if self._phase_calls >= self.budget.max_tool_calls:
            reason = f"tool-call budget used up ({self.budget.max_tool_calls} calls)"
        elif self._phase_per_tool.get(name, 0) >= self.budget.max_calls_per_tool:
            reason = f"{name} budget used up ({self.budget.max_calls_per_tool} calls per tool)"
        elif self.expired:
            reason = f"deadline of {self.budget.deadline_s:g}s passed"
        if reason:
            self.refused_calls += 1
            return Decision(kind="exhausted", reason=reason)
        self.tool_calls += 1
        self.per_tool[name] = self.per_tool.get(name, 0) + 1
        self._phase_calls += 1
        self._phase_per_tool[name] = self._phase_per_tool.get(name, 0) + 1
        return Decision(kind="allowed")

    def start_fallback(self) -> None:
        """The offline fallback gets the whole tool budget again, whatever a failed planner model
        spent; identical calls are still answered from the earlier results."""
        self._phase_calls, self._phase_per_tool = 0, {}

    def record_tool(self, name: str, args: Mapping[str, Any], result: Any) -> None:
        """Keep an allowed call's result so an identical call later gets it back."""
        self._results[(name, normalise_args(args))] = result

    @property
    def tools_exhausted(self) -> bool:
        return self._phase_calls >= self.budget.max_tool_calls

    # -- models ----------------------------------------------------------------------------
    def check_model(self) -> Decision:
        """Allowed (and counted) or exhausted (model-call cap, token limits, deadline or the offline reserve)."""
        spent = sum(self.model_usage.values(), Usage()).model_copy(update={"requests": self.model_calls})
        over = self.budget.usage_limits().check_before_request(spent)
        if over is not None:
            return Decision(kind="exhausted", reason=over)
        if self.expired:
            return Decision(kind="exhausted", reason=f"deadline of {self.budget.deadline_s:g}s passed")
        if self.model_remaining_s() <= 0:
            reserve = self.budget.offline_reserve_s
            return Decision(
                kind="exhausted", reason=f"the last {reserve:g}s of the deadline are the offline fallback's"
            )
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


class CorrectableReply(ModelFailure):
    """A reply `validate` rejects in a way a blind retry would not fix (malformed tool arguments):
    budgeted_model_call raises it at once, and the caller tells the model what was wrong."""

    def __init__(self, reason: str, response: Any):
        super().__init__(reason)
        self.response = response


class RetryPolicy(BaseModel):
    max_retries: int = Field(default=1, ge=0)
    backoff_s: float = Field(default=0.5, ge=0)  # doubled after each failed attempt, jittered (x0.5-1)
    call_timeout_s: float = Field(default=30.0, gt=0)  # one attempt; never beyond the question's deadline
    # the provider's circuit breaker and concurrency limit (agents/circuit_breaker.py), process-wide;
    # the first use of a provider fixes them for the process
    breaker_failures: int = Field(default=3, ge=1)  # consecutive failed requests that open it
    breaker_cool_down_s: float = Field(default=30.0, gt=0)  # open this long, then one probe
    max_concurrent: int = Field(default=8, ge=1)  # requests in flight to one provider

    def pause_s(self, attempt: int, error: ProviderError) -> float:
        """Before attempt+2: the provider's Retry-After when it gave one, else jittered exponential
        backoff (a fleet of clients retrying in step would hit a recovering provider together)."""
        if error.retry_after_s is not None:
            return error.retry_after_s
        return self.backoff_s * (2**attempt) * random.uniform(0.5, 1.0)


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
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    **kwargs: Any,
) -> Any:
    """Call `model(messages, **kwargs)` under the budget: each attempt is counted, timed out at
    min(call_timeout_s, remaining deadline less the offline reserve), and checked by
    `validate(response)` (which raises ModelFailure for a reply that cannot be used, or
    CorrectableReply, raised on at once). An open circuit breaker fails the call without a
    request; a refused key or request (401/403/400/404/422) is not retried; a 429 waits its
    Retry-After when that fits the deadline; 5xx, timeouts, dropped connections and cut streams
    are retried with jittered backoff while budget and deadline last, and while `may_retry()` says
    so (a streamed answer that has shown sentences cannot start over). Then ModelFailure says what
    went wrong. sleep: how a pause is waited (tests pass a recorder)."""
    guard = guard_for(model, retry.breaker_failures, retry.breaker_cool_down_s, retry.max_concurrent)
    failures: list[str] = []
    name = str(getattr(model, "model_name", "?"))
    for attempt in range(retry.max_retries + 1):
        if not guard.breaker.allow():
            failures.append(f"circuit open for {guard.key} (next probe in {guard.breaker.retry_in_s():.3g}s)")
            break
        decision = tracker.check_model()
        if not decision.allowed:
            guard.breaker.release_probe()
            failures.append(decision.reason)
            break
        timeout = min(retry.call_timeout_s, tracker.model_remaining_s())
        waited = time.monotonic()
        if not await guard.slots.acquire(timeout):  # the provider is busy, not sick: not the breaker's business
            guard.breaker.release_probe()
            failures.append(f"no free request slot to {guard.key} within {timeout:.3g}s")
            break
        timeout -= time.monotonic() - waited
        tracker.record_usage(name, Usage(requests=1))  # sent, whatever comes back
        try:
            try:
                response = await asyncio.wait_for(_request(model, messages, kwargs, tracker, name), timeout)
            finally:
                guard.slots.release()
        except asyncio.CancelledError:
            guard.breaker.release_probe()
            raise
        except Exception as exc:
            error = (
                ProviderError("timeout", f"timed out after {timeout:.3g}s") if isinstance(exc, TimeoutError) else None
            )
            error = error or classify(exc)
            if error.counts_against_provider:
                guard.breaker.record_failure()
            else:
                guard.breaker.release_probe()
            failures.append(error.reason)
            log.warning("model %s attempt %d failed: %s", guard.key, attempt + 1, error.reason)
            if not error.retryable or attempt == retry.max_retries or (may_retry is not None and not may_retry()):
                break
            pause = retry.pause_s(attempt, error)
            if pause >= tracker.model_remaining_s():
                if error.retry_after_s is not None:
                    failures.append(f"Retry-After {error.retry_after_s:g}s does not fit the deadline")
                break
            await sleep(pause)
            continue
        guard.breaker.record_success()  # the provider answered; whether the reply is usable is ours to judge
        try:
            if validate is not None:
                validate(response)
            return response
        except CorrectableReply:
            raise
        except ModelFailure as exc:  # an unusable reply (no text, an unknown tool): asked again
            failures.append(str(exc))
            log.warning("model %s attempt %d rejected: %s", guard.key, attempt + 1, exc)
            if may_retry is not None and not may_retry():
                break
    raise ModelFailure(_summarise(failures))


async def _request(model: Any, messages: list[dict], kwargs: dict, tracker: BudgetTracker, name: str) -> Any:
    response = await collect_response(await model(messages, **kwargs))
    tracker.record_usage(name, Usage.tokens_of(response))  # paid for, even if `validate` rejects it
    return response


def _summarise(failures: list[str]) -> str:
    """Distinct reasons in order, a repeated one counted: "HTTP 500 (x2); timed out"."""
    counts = {reason: failures.count(reason) for reason in dict.fromkeys(failures)}
    return (
        "; ".join(f"{reason} (x{n})" if n > 1 else reason for reason, n in counts.items()) or "no attempt was allowed"
    )
