"""Assistant: the QA pipeline as a conversation partner for a service, a batch runner or a chat.

One question's path around the pipeline:
  session (carried product, pending clarification) -> the reply completes a pending task? (merge
  the facts into the waiting question) -> analysis -> clarifying question needed? (ask, do not
  guess) -> result cache (same question, product and KB version) -> QAPipeline -> decision trace
  (<kb>/traces.sqlite) + experience round (<kb>/experience.sqlite: logged, implicit reward
  learned) -> session turn (<kb>/sessions.sqlite).

policy "bandit" (default) chooses arms with the LinUCB learner warm-started from the rules;
"rules" chooses with the rules alone (rounds are still logged and learned from, so the
bandit is warm when switched on). Feedback re-learns the rated round at once; the learned state
lives in the experience store, so it survives restarts.

Every session, trace, round and rating is owned by a tenant (workflows.tenants; the Python API
and the CLI act as the default tenant): another tenant's ids read as unknown. One session's turns
run one at a time, in the order they arrived (a reply to a clarifying question must see the turn
before it); different sessions run concurrently. Every answer has its own trace id, also when it
comes from the result cache: the cache shares the answer, never another request's identity.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator, Mapping
from concurrent.futures import Future
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from citescope.agents.conversation import PastTurn
from citescope.agents.models import redact
from citescope.agents.planner import ToolCallRecord
from citescope.agents.policy import RulesPolicy
from citescope.agents.query_analysis import Entity, QueryFeatures
from citescope.knowledge.chinese_script import in_traditional, written_in_traditional
from citescope.knowledge.filters import SearchFilters
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.settings import get_settings
from citescope.knowledge.text import is_storable_text
from citescope.workflows.answer_events import Listener
from citescope.workflows.experience import ExperienceLearner, ExperienceStore
from citescope.workflows.pipeline import QAPipeline, parse_filters
from citescope.workflows.pipeline_config import PipelineConfig
from citescope.workflows.result import QAResult, features_summary, new_trace_id
from citescope.workflows.result_cache import ResultCache
from citescope.workflows.sessions import (
    Clarification,
    Clarifier,
    PendingTask,
    SessionState,
    SessionStore,
    Turn,
    check_session_id,
)
from citescope.workflows.tenants import DEFAULT_TENANT
from citescope.workflows.traces import TraceStore, attach_outcome

POLICIES = ("bandit", "rules")

log = logging.getLogger(__name__)


class Assistant:
    def __init__(
        self, kb_dir: Path | str, *, config: PipelineConfig | None = None, policy: str = "bandit", **overrides: Any
    ):
        """overrides: PipelineConfig fields (e.g. planner="dashscope"), applied over `config` or
        over the layered config of this KB."""
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
        self.kb_dir = Path(kb_dir)
        if config is None:
            config = PipelineConfig.load(self.kb_dir, **overrides)
        elif overrides:
            config = PipelineConfig.load(None, environ={}, **{**config.model_dump(), **overrides})
        self.config = config
        self.policy_name = policy
        self.kb = KnowledgeBase(self.kb_dir, get_settings(kb_dir=self.kb_dir))
        self.experience = ExperienceStore.for_kb(self.kb_dir)
        self.learner = ExperienceLearner(self.experience)
        self.pipeline = QAPipeline(self.kb, config, policy=self.learner if policy == "bandit" else RulesPolicy())
        self.sessions = SessionStore.for_kb(self.kb_dir)
        self.traces = TraceStore.for_kb(self.kb_dir)
        self.cache = ResultCache()
        self.clarifier: Clarifier | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._loop_lock = threading.Lock()
        # (tenant, session id) -> [lock, callers holding or waiting]; dropped when nobody is
        self._session_turns: dict[tuple[str, str], list] = {}

    def warm_up(self) -> Assistant:
        if self.clarifier is None:
            self.pipeline.warm_up()
            self.learner.warm_up()
            self.clarifier = Clarifier(self.kb, self.pipeline.analyzer)
        return self

    # -- questions ---------------------------------------------------------------------------
    async def ask(
        self,
        question: str,
        session_id: str | None = None,
        filters: SearchFilters | Mapping[str, Any] | None = None,
        tenant: str = DEFAULT_TENANT,
        arrived: float | None = None,
        deadline_s: float | None = None,
        listener: Listener | None = None,
    ) -> QAResult:
        """Answer (or ask back) one turn; with a session id the turn joins that conversation of
        `tenant` (created on first use) and result.session_id is set. Turns of one session wait
        for the ones that arrived before them. arrived / deadline_s: when the question arrived
        (time.monotonic(), a service request) and a deadline shorter than the config's; the
        pipeline's deadline counts from then (QAPipeline.arun). listener: told each sentence of a
        model's answer as it passes the inspector (QAPipeline.arun; workflows/answer_events.py)."""
        question = self.pipeline.validate(question)
        # before the cache: an invalid filter fails even when the question is cached
        search_filters = parse_filters(filters)
        session_id = check_session_id(session_id) if session_id is not None else None
        self.warm_up()
        # nothing above awaits, so callers take their turn in the order they called
        async with self._session_turn(tenant, session_id):
            return await self._ask(question, session_id, search_filters, tenant, arrived, deadline_s, listener)

    @asynccontextmanager
    async def _session_turn(self, tenant: str, session_id: str | None) -> AsyncIterator[None]:
        """Holds the session's turn: asyncio.Lock wakes its waiters first come, first served."""
        if session_id is None:
            yield
            return
        key = (tenant, session_id)
        entry = self._session_turns.setdefault(key, [asyncio.Lock(), 0])
        entry[1] += 1
        try:
            async with entry[0]:
                yield
        finally:
            entry[1] -= 1
            if entry[1] == 0:
                del self._session_turns[key]

    async def _ask(
        self,
        question: str,
        session_id: str | None,
        filters: SearchFilters | None,
        tenant: str,
        arrived: float | None = None,
        deadline_s: float | None = None,
        listener: Listener | None = None,
    ) -> QAResult:
        started = time.perf_counter()
        state = self.sessions.get(session_id, tenant) if session_id is not None else None
        entity = state.entity if state else None
        # the opening question: the analyzer carries it into a follow-up when there is no product to carry
        topic = state.turns[0].question if state and state.turns else None
        asked, asked_entity = question, entity
        clarifier = self.clarifier
        assert clarifier is not None  # ask() warmed up
        if state is not None and state.pending is not None:
            completed = clarifier.complete(state.pending, question)
            if completed is not None:
                asked, asked_entity = completed
                asked = self.pipeline.validate(asked)
        elif state is not None:  # "那M码呢？" keeps the colour the last turn asked about
            asked = self.pipeline.validate(clarifier.carry_variant(state, question))
        features = self.pipeline.analyzer.run(asked, asked_entity, topic)
        clarification = clarifier.check(features)

        if clarification is not None:
            result = self._ask_back(asked, features, clarification, started)
            result.session_id = session_id
            self._record(result, features, tenant)
        else:
            kb_version = self.kb.version  # read once: an ingest while answering must not file this under the new one
            cached = self.cache.get(asked, features.carried_entity, kb_version, filters, features.carried_topic)
            if cached is not None:
                result = cached
                # this request's own identity: the cached answer's trace belongs to whoever asked first
                result.trace_id, result.question, result.session_id = new_trace_id(), asked, session_id
                result.timings_ms["total"] = _ms_since(started)
                self._record(result, features, tenant, learn=False)
            else:
                history = [PastTurn(turn.question, turn.answer) for turn in state.turns] if state else []
                result = await self.pipeline.arun(
                    asked,
                    asked_entity,
                    filters,
                    topic,
                    features,
                    arrived=arrived,
                    deadline_s=deadline_s,
                    history=history,
                    listener=listener,
                )
                result.session_id = session_id
                self._record(result, features, tenant)
                if not result.degraded:  # a model outage must not be served again once it is over
                    self.cache.put(asked, features.carried_entity, kb_version, result, filters, features.carried_topic)
        if session_id is not None:
            self._remember(session_id, question, result, features, clarification, entity, tenant)
        return result

    def ask_sync(
        self,
        question: str,
        session_id: str | None = None,
        filters: SearchFilters | Mapping[str, Any] | None = None,
        tenant: str = DEFAULT_TENANT,
    ) -> QAResult:
        """ask() from synchronous code. Every call runs on this Assistant's own event loop (one
        background thread), so model clients bound to a loop keep working across calls."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            future: Future = asyncio.run_coroutine_threadsafe(
                self.ask(question, session_id, filters, tenant), self._sync_loop()
            )
            return future.result()
        raise RuntimeError("Assistant.ask_sync was called inside an event loop; await Assistant.ask instead")

    def _sync_loop(self) -> asyncio.AbstractEventLoop:
        with self._loop_lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._loop_thread = threading.Thread(target=self._loop.run_forever, name="assistant-loop", daemon=True)
                self._loop_thread.start()
            return self._loop

    def _ask_back(
        self, question: str, features: QueryFeatures, clarification: Clarification, started: float
    ) -> QAResult:
        """A reply that asks for the missing facts; nothing retrieved, nothing guessed."""
        calls = (
            [
                ToolCallRecord(
                    name=clarification.skill, arguments=clarification.arguments, elapsed_ms=clarification.elapsed_ms
                )
            ]
            if clarification.skill
            else []
        )
        text = in_traditional(clarification.text) if written_in_traditional(question) else clarification.text
        return QAResult(
            question=question,
            answer=text,
            features=features_summary(features),
            tool_calls=calls,
            clarification=clarification.model_dump(mode="json"),
            timings_ms={"clarify": _ms_since(started), "total": _ms_since(started)},
        )

    def _record(self, result: QAResult, features: QueryFeatures, tenant: str, learn: bool = True) -> None:
        """Store the decision trace and log the round (its implicit reward is learned at once;
        a clarifying reply has no arm, so it is logged but teaches the policy nothing)."""
        self.traces.record(result, self.kb, tenant)
        self.learner.record(result, features, result.session_id, tenant, learn=learn)

    def _remember(
        self,
        session_id: str,
        question: str,
        result: QAResult,
        features: QueryFeatures,
        clarification: Clarification | None,
        entity: Entity | None,
        tenant: str,
    ) -> None:
        pending = None
        if clarification is not None:
            entity = clarification.product or entity
            pending = PendingTask(
                kind=clarification.kind,
                need=clarification.need,
                question=result.question,
                entity=clarification.product,
                options=clarification.options,
                trace_id=result.trace_id,
            )
        elif features.product is not None:
            entity = features.product
        turn = Turn(
            question=redact(question),
            answer=redact(result.answer),
            trace_id=result.trace_id,
            refused=result.refused,
            at=datetime.now(UTC),
            clarification=result.clarification,
        )
        self.sessions.add_turn(session_id, turn, entity, pending, tenant)

    # -- feedback, sessions, traces ------------------------------------------------------------
    def feedback(self, trace_id: str, rating: int, comment: str | None = None, tenant: str = DEFAULT_TENANT) -> None:
        """👍 (+1) / 👎 (-1) on an answer of `tenant`: the policy re-learns that round at once.
        KeyError for an unknown trace id (another tenant's included), ValueError for a bad rating
        or a comment that is not valid Unicode."""
        if not is_storable_text(trace_id):
            raise KeyError(f"no round with trace id {trace_id!r}")
        if comment and not is_storable_text(comment):
            raise ValueError("the feedback comment must be text without unpaired surrogates")
        self.learner.feedback(trace_id, rating, comment or "", tenant)

    def session(self, session_id: str, tenant: str = DEFAULT_TENANT) -> SessionState | None:
        """The tenant's session; None for an unknown id or another tenant's."""
        return self.sessions.get(session_id, tenant) if is_storable_text(session_id) else None

    def trace(self, trace_id: str, tenant: str = DEFAULT_TENANT) -> dict | None:
        """The tenant's decision trace, with the round's reward and latest feedback ("outcome")."""
        trace = self.traces.get(trace_id, tenant) if is_storable_text(trace_id) else None
        return attach_outcome(trace, self.experience, tenant) if trace is not None else None

    def close(self) -> None:
        with self._loop_lock:
            if self._loop is not None:
                # ask_sync's loop: the model clients' connections (and dashscope's per-loop session) close on it
                closing = asyncio.run_coroutine_threadsafe(self.pipeline.aclose_models(), self._loop)
                try:
                    closing.result(timeout=10)
                except Exception as exc:  # a client that fails to close must not keep the stores open
                    log.warning("closing the model clients failed: %s", type(exc).__name__)
                self._loop.call_soon_threadsafe(self._loop.stop)
                assert self._loop_thread is not None  # started with the loop
                self._loop_thread.join(timeout=10)
                self._loop.close()
                self._loop = self._loop_thread = None
        self.traces.close()
        self.sessions.close()
        self.experience.close()
        self.kb.close()

    def __enter__(self) -> Assistant:
        return self.warm_up()

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)
