"""What a sick provider costs a question (#42): `stalled_provider_s` and `open_breaker_s`.

Both run the demo shop's answerable questions through a QAPipeline whose planner and answerer are
an OpenAI-compatible model on an endpoint that accepts every connection and never sends a byte
(what the scripted server's "hang" step does in the tests; a bare listening socket is all a stall
needs). Each time is the wall clock of `QAPipeline.run` for one
question, after warm-up.

- stalled_provider_s: the slowest question while the provider stalls and no breaker has opened
  (a fresh breaker per question): the model stages stop `offline_reserve_s` before the deadline
  and the offline engine answers. Target: within the deadline plus 1 s, answered, not refused.
- open_breaker_s: the slowest question once the breaker is open (it opens on the first
  questions' timeouts): the model stages fail at once, without a request. Target: <= 1 s.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any

from citescope.agents.circuit_breaker import forget_providers
from citescope.knowledge.kb import KnowledgeBase
from citescope.workflows.pipeline import QAPipeline
from citescope.workflows.pipeline_config import PipelineConfig
from citescope.workflows.result import QAResult

DEMO_DIR = Path(__file__).resolve().parents[3] / "knowledge" / "demo"
STALL_DEADLINE_S = 6.0  # the 60 s deadline with 30 s requests, scaled down so the bench takes seconds


class StalledEndpoint:
    """A provider that hangs: it accepts connections on 127.0.0.1 and holds them, silent."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="stalled-endpoint", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"

    @property
    def connections(self) -> int:
        """Requests that reached it: a hung request keeps its connection, so each retry opens a new one."""
        return len(self._held)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            self._held.append(connection)

    def __enter__(self) -> StalledEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for connection in [*self._held, self._listener]:
            connection.close()


def _pipeline(kb: KnowledgeBase, base_url: str, **settings: Any) -> QAPipeline:
    spec = f"compatible:stalled@{base_url}"
    config = PipelineConfig.load(kb.dir, environ={}, planner=spec, answerer=spec, **settings)
    return QAPipeline(kb, config).warm_up()


def _timed(pipeline: QAPipeline, question: str) -> tuple[float, QAResult]:
    started = time.perf_counter()
    result = pipeline.run(question)
    return time.perf_counter() - started, result


def fault_metrics(kb: KnowledgeBase, questions: list[str], deadline_s: float = STALL_DEADLINE_S) -> dict:
    """stalled_provider_s and open_breaker_s, with what they were measured under."""
    with StalledEndpoint() as server:
        stalled = _pipeline(
            kb, server.base_url, deadline_s=deadline_s, model_timeout_s=30, max_retries=1, breaker_failures=1000
        )
        stalls = []
        for question in questions:
            forget_providers()  # no breaker: every question meets the stall itself
            stalls.append(_timed(stalled, question))
        stalled.close()

        forget_providers()
        breaking = _pipeline(
            kb,
            server.base_url,
            deadline_s=deadline_s,
            model_timeout_s=deadline_s / 6,
            max_retries=1,
            breaker_failures=2,
        )
        _timed(breaking, questions[0])  # its planner's two timeouts open the breaker
        sent = server.connections
        opened = [_timed(breaking, question) for question in questions]
        breaking.close()
        unsent = server.connections - sent

    def answered(runs: list[tuple[float, QAResult]]) -> int:
        return sum(not result.refused and result.answer_source == "extractive" for _, result in runs)

    return {
        "stalled_provider_s": round(max(seconds for seconds, _ in stalls), 3),
        "stalled_provider_deadline_s": deadline_s,
        "stalled_provider_answered": f"{answered(stalls)}/{len(stalls)}",
        "open_breaker_s": round(max(seconds for seconds, _ in opened), 3),
        "open_breaker_requests": unsent,
        "open_breaker_answered": f"{answered(opened)}/{len(opened)}",
    }
