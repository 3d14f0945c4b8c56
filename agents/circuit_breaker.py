"""Per-provider protection shared by every question of the process: a circuit breaker and a
concurrency limit for each (provider, model, endpoint).

A hanging or failing endpoint would otherwise cost every question its whole deadline. After
`failures` consecutive failed requests (see ProviderError.counts_against_provider) the breaker
opens: requests fail at once, without touching the network, and the question goes straight to the
offline engine. After `cool_down_s` one request is let through as a probe (half-open): its success
closes the breaker, its failure opens it for another cool-down. Questions run on several event
loops and threads (the service, the batch runner, `QAPipeline.run`), so the state is guarded by a
threading lock and the concurrency slots wake waiters on their own loop.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from agentscope.model import DashScopeChatModel, OpenAIChatModel

BreakerState = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    def __init__(self, failures: int = 3, cool_down_s: float = 30.0, clock: Callable[[], float] = time.monotonic):
        self.failures = max(1, failures)
        self.cool_down_s = cool_down_s
        self._clock = clock
        self._lock = threading.Lock()
        self._consecutive = 0
        self._opened_at: float | None = None
        self._probing = False  # a half-open probe is in flight: others still fail fast

    @property
    def state(self) -> BreakerState:
        with self._lock:
            return self._state()

    def _state(self) -> BreakerState:
        if self._opened_at is None:
            return "closed"
        return "half_open" if self._clock() - self._opened_at >= self.cool_down_s else "open"

    def allow(self) -> bool:
        """Whether a request may go out now; in half-open, only the one probe."""
        with self._lock:
            state = self._state()
            if state == "closed":
                return True
            if state == "half_open" and not self._probing:
                self._probing = True
                return True
            return False

    def record_success(self) -> None:
        with self._lock:
            self._consecutive, self._opened_at, self._probing = 0, None, False

    def record_failure(self) -> None:
        with self._lock:
            self._consecutive += 1
            if self._probing or self._consecutive >= self.failures:
                self._opened_at = self._clock()  # (re)open: a failed probe waits a whole cool-down again
            self._probing = False

    def release_probe(self) -> None:
        """A probe that ended saying nothing about the provider (a refused key, a cancelled call):
        the next request may probe."""
        with self._lock:
            self._probing = False

    def retry_in_s(self) -> float:
        with self._lock:
            if self._opened_at is None:
                return 0.0
            return max(0.0, self.cool_down_s - (self._clock() - self._opened_at))


class ProviderSlots:
    """At most `limit` requests in flight to one provider, across threads and event loops; a waiter
    is woken on its own loop when a slot frees."""

    def __init__(self, limit: int):
        self.limit = max(1, limit)
        self._lock = threading.Lock()
        self._in_use = 0
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()

    @property
    def in_use(self) -> int:
        with self._lock:
            return self._in_use

    async def acquire(self, timeout_s: float) -> bool:
        """Take a slot within timeout_s; False when none freed in time."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._in_use < self.limit:
                self._in_use += 1
                return True
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, waiter))
        try:
            await asyncio.wait_for(waiter, max(0.0, timeout_s))
            return True  # the releaser handed its slot over
        except BaseException as exc:  # timed out or cancelled: leave the queue, or pass on a slot handed over
            with self._lock:
                queued = (loop, waiter) in self._waiters
                if queued:
                    self._waiters.remove((loop, waiter))
            if not queued:
                self.release()
            if isinstance(exc, TimeoutError):
                return False
            raise

    def release(self) -> None:
        with self._lock:
            while self._waiters:
                loop, waiter = self._waiters.popleft()
                if loop.is_closed():
                    continue
                loop.call_soon_threadsafe(_hand_over, waiter)
                return  # the slot passes to the waiter: in_use unchanged
            self._in_use -= 1


def _hand_over(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


@dataclass
class ProviderGuard:
    key: str  # "OpenAIChatModel:qwen-plus@http://host/v1"
    breaker: CircuitBreaker
    slots: ProviderSlots


_GUARDS: dict[str, ProviderGuard] = {}
# models that reach no provider (scripted, in-process): one guard per model object, never shared
_LOCAL_GUARDS: weakref.WeakKeyDictionary[Any, ProviderGuard] = weakref.WeakKeyDictionary()
_GUARDS_LOCK = threading.Lock()


def provider_key(model: Any) -> str | None:
    """Which provider endpoint and model a chat model talks to: its client's base URL (OpenAI) or
    its base_address (DashScope, "default" for its own), so two servers with one model name get
    two breakers; None for a model that talks to no provider."""
    if isinstance(model, OpenAIChatModel):
        where = str(model.client.base_url)
    elif isinstance(model, DashScopeChatModel):
        where = str((model.generate_kwargs or {}).get("base_address") or "default")
    else:
        return None
    return f"{type(model).__name__}:{model.model_name}@{where}"


def guard_for(model: Any, failures: int, cool_down_s: float, max_concurrent: int) -> ProviderGuard:
    """The process-wide guard of the model's provider, made on first use with these settings."""
    key = provider_key(model)
    with _GUARDS_LOCK:
        guard = _GUARDS.get(key) if key is not None else _LOCAL_GUARDS.get(model)
        if guard is None:
            made = ProviderGuard(
                key or f"{type(model).__name__}:{getattr(model, 'model_name', '?')}",
                CircuitBreaker(failures, cool_down_s),
                ProviderSlots(max_concurrent),
            )
            if key is not None:
                _GUARDS[key] = made
            else:
                _LOCAL_GUARDS[model] = made
            guard = made
        return guard


def forget_providers() -> None:
    """Drop every provider's guard (a test's server reuses a port an earlier one's breaker opened on)."""
    with _GUARDS_LOCK:
        _GUARDS.clear()
