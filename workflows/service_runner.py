"""AssistantLoop: the Assistant on its own thread and event loop, so the pipeline's CPU work between
awaits never stalls the server's loop (health checks included). A question first takes a slot of
its admission lane (workflows/admission.py): at most max_running_questions compute and
max_queued_questions wait; beyond, Saturated (the service's 503)."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

from fastapi import HTTPException

from citescope.knowledge.filters import SearchFilters
from citescope.workflows.admission import Admission
from citescope.workflows.answer_events import Listener
from citescope.workflows.result import QAResult
from citescope.workflows.tenants import DEFAULT_TENANT

log = logging.getLogger("citescope.service")


class AssistantLoop:
    """Runs an Assistant's warm-up and every call on one background thread and event loop.
    Calls are coroutines awaited from the server loop; session and feedback calls go through the
    same loop, so the Assistant never sees two threads. Questions take a slot of `admission`
    first (workflows/admission.py): a bounded number compute at once, a bounded number wait. A
    question longer than `long_chars` (what retrieval reads of it is cut: it costs several usual
    ones) takes a slot of `long_lane` before that, so long messages never hold every slot and a
    usual question arriving behind them is computed at once."""

    def __init__(
        self,
        assistant: Any,
        admission: Admission | None = None,
        long_lane: Admission | None = None,
        long_chars: int | None = None,
    ):
        self.assistant = assistant
        self.admission = admission or Admission(max_running=4, max_queued=64)
        self.long_lane, self.long_chars = long_lane, long_chars
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.error: str | None = None
        self._warmed: Future = Future()
        self._thread = threading.Thread(target=self._run, name="assistant-loop", daemon=True)

    def start(self) -> AssistantLoop:
        self._thread.start()
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.assistant.warm_up()
        except Exception as exc:  # reported by /readyz and every ask; the process stays up for health checks
            self.error = f"{type(exc).__name__}: {exc}"
            log.error("warm-up failed: %s", self.error)
        self.ready.set()
        self._warmed.set_result(None)
        self.loop.run_forever()
        try:  # the model clients' connections were opened on this loop: close them before it
            self.loop.run_until_complete(self.assistant.pipeline.aclose_models())
        except Exception as exc:
            log.warning("closing the model clients failed: %s", type(exc).__name__)
        self.loop.close()  # after stop(): questions still in flight are dropped with it

    async def _ready(self) -> None:
        await asyncio.wrap_future(self._warmed)
        if self.error is not None:
            raise HTTPException(503, f"the assistant could not start: {self.error}")

    async def ask(
        self,
        question: str,
        session_id: str | None,
        filters: SearchFilters | Mapping[str, Any] | None,
        tenant: str = DEFAULT_TENANT,
        arrived: float | None = None,
        deadline_s: float | None = None,
        listener: Listener | None = None,
    ) -> QAResult:
        """arrived: time.monotonic() when the request came in; the question's deadline (deadline_s,
        or the pipeline's if shorter) counts from then, time spent waiting for a slot included.
        listener: told each streamed sentence, on the Assistant's thread (Assistant.ask).
        Saturated when no slot is free and the queue is full."""
        long = self.long_chars is not None and len(question) > self.long_chars
        lanes = [self.long_lane, self.admission] if long and self.long_lane is not None else [self.admission]
        entered: list[Admission] = []
        try:
            for lane in lanes:
                await lane.enter()
                entered.append(lane)
            await self._ready()
            coroutine = self.assistant.ask(
                question,
                session_id=session_id,
                filters=filters,
                tenant=tenant,
                arrived=arrived,
                deadline_s=deadline_s,
                listener=listener,
            )
            running = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        except BaseException:
            for lane in entered:
                lane.leave()
            raise
        # The slots are held until the question is done, not until its client stops waiting: a
        # question still computing for a client that hung up still uses the Assistant thread.
        server_loop = asyncio.get_running_loop()

        def leave(_: Future) -> None:
            try:
                for lane in entered:
                    server_loop.call_soon_threadsafe(lane.leave)
            except RuntimeError:  # the server loop is closed: shut down, nobody left to count
                pass

        running.add_done_callback(leave)
        # Shielded: a client that hangs up mid-stream must not cancel the question. AgentScope
        # agents turn a cancellation into an "interrupted" reply, and that cut-short answer would
        # be stored in the session and taught to the strategy policy.
        return await asyncio.shield(asyncio.wrap_future(running))

    async def call(self, function: Callable, *args: Any) -> Any:
        """A quick sync Assistant method (session, feedback, trace) run on the Assistant's loop."""
        await self._ready()

        async def run() -> Any:
            return function(*args)

        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(run(), self.loop))

    def stop(self) -> None:
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)
        self.assistant.close()
