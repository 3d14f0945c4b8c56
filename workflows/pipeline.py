"""The QA pipeline: one question in, one QAResult out, through typed stages (workflows/stages/):

validate -> analyse -> plan (the policy picks an arm) -> retrieve (a ReActAgent runs the plan
through the skill toolkit, hard budgets; every hit in one pool) -> rank (the final calibrated
rerank, cut to the evidence shown, with the sources of a disagreement just below the cut) ->
gate (weak best evidence: a fixed refusal, nothing generated; it says the sources disagree when
the conflict check finds they do) -> answer <-> inspect (pass | one regeneration with the
findings | the extractive answer if it passes | refusal) -> disclose (the answer or the refusal,
the sensitive-word filter when configured, the question's language and script).

Guarantees live here, whatever a model writes: only answers that pass the inspector are
returned (so never one with an invalid citation id); any model failure falls back to the
offline engine for that stage and is reported (degraded + reason); a question whose deadline
passes is refused at the next stage. Streamed (astream), a model's answer is sent sentence by
sentence as each passes the inspector, and what was sent is the answer (workflows/stages/stream.py).
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Coroutine, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import replace
from functools import partial
from typing import Any

from citescope.agents import conflicts as conflict_check
from citescope.agents.answerer import ExtractiveAnswerer, LLMAnswerer
from citescope.agents.aspect_reading import AspectReading
from citescope.agents.aspects import KBAspects, field_sheets, kb_aspects
from citescope.agents.budget import BudgetTracker, DeadlinePassed
from citescope.agents.claim_reader import ClaimReader
from citescope.agents.conflicts import Conflict
from citescope.agents.conversation import Conversation, PastTurn
from citescope.agents.inspector import InspectionReport, Inspector
from citescope.agents.inspector_judge import ModelJudge
from citescope.agents.models import close_model_sessions, make_chat_model
from citescope.agents.pair_scorer import PairScorer
from citescope.agents.policy import PolicyDecision, RulesPolicy
from citescope.agents.query_analysis import Entity, QueryAnalyzer, QueryFeatures
from citescope.agents.question_rules import question_rules
from citescope.agents.routing import ROLES, ModelRoute, Role, build_route, question_signals
from citescope.agents.toolkit import build_toolkit
from citescope.agents.usage import UsageReport
from citescope.agents.value_kinds import asked_kind
from citescope.knowledge.chinese_script import to_simplified
from citescope.knowledge.chinese_script import warm_up as warm_up_scripts
from citescope.knowledge.filters import SearchFilters
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.settings import get_settings
from citescope.knowledge.text import is_storable_text
from citescope.tools.base import EvidenceHit, SkillContext
from citescope.tools.registry import SkillRegistry
from citescope.tools.rerank import make_reranker
from citescope.workflows.answer_events import AnswerEvent, Listener, SentenceEvent, relay_answer
from citescope.workflows.compliance import SensitiveWordFilter
from citescope.workflows.pipeline_config import PipelineConfig
from citescope.workflows.priority_gate import PriorityGate
from citescope.workflows.result import ConflictOut, PolicySummary, QAResult, features_summary
from citescope.workflows.stages.analyse import Analyse, AnalyseInput, Analysis
from citescope.workflows.stages.answer import Answer, AnswerInput, Draft
from citescope.workflows.stages.conflicts import CheckConflicts, ConflictInput, SourcesInput
from citescope.workflows.stages.context import QuestionRun
from citescope.workflows.stages.disclose import Disclose, DiscloseInput, Disclosure, RefusalTexts
from citescope.workflows.stages.gate import Gate, GateInput
from citescope.workflows.stages.inspect import Inspect, InspectInput
from citescope.workflows.stages.plan import Plan, PlanInput, StrategyPolicy
from citescope.workflows.stages.rank import EvidenceLimits, Rank, RankInput
from citescope.workflows.stages.retrieve import Retrieve, RetrieveInput
from citescope.workflows.stages.stream import StreamAnswer, Streaming


class QuestionError(ValueError):
    """A question the pipeline will not take (empty, too long, not text); the message says why."""


def validate_question(question: Any, max_chars: int) -> str:
    """The question stripped; QuestionError when it is not text, empty, or longer than max_chars."""
    if not isinstance(question, str):
        raise QuestionError(f"the question must be text, got {type(question).__name__}")
    question = question.strip()
    if not question:
        raise QuestionError("the question is empty: ask something, e.g. “XZ-3000 充电宝多少钱？”")
    if len(question) > max_chars:
        raise QuestionError(
            f"the question is {len(question)} characters long; the limit is {max_chars} (max_question_chars)"
        )
    if not is_storable_text(question):
        raise QuestionError("the question is not valid Unicode text (it contains an unpaired surrogate)")
    return question


def parse_filters(filters: SearchFilters | Mapping | None) -> SearchFilters | None:
    if filters is None or isinstance(filters, SearchFilters):
        return None if filters is None or filters.is_empty() else filters
    try:
        parsed = SearchFilters(**dict(filters))
    except Exception as exc:
        raise QuestionError(f"invalid filters: {exc}") from None
    return None if parsed.is_empty() else parsed


def _failed_checks(report: InspectionReport) -> str:
    """What an inspection failed on, in a few words: "1 invalid citation id, 2 unsupported sentences"."""
    counts = {
        "invalid citation id": len(report.invalid_ids),
        "uncited sentence": len(report.uncited),
        "unsupported sentence": len(report.unsupported),
        "undisclosed conflict": len(report.missing_conflicts),
    }
    failed = [f"{n} {what}{'s' if n > 1 else ''}" for what, n in counts.items() if n]
    return ", ".join(failed) or "the judge rejected it"


class _OwnLoop:
    """An event loop made on first use and kept for every later question."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None

    def run(self, coroutine: Coroutine[Any, Any, QAResult]) -> QAResult:
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
        return self.loop.run_until_complete(coroutine)

    def close(self) -> None:
        """Finish the async generators a cut stream left pending, then close the loop; bare when
        another loop runs on this thread (the pipeline was collected inside it)."""
        loop, self.loop = self.loop, None
        if loop is None or loop.is_closed():
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()
        else:
            loop.close()


class QAPipeline:
    def __init__(
        self,
        kb: KnowledgeBase,
        config: PipelineConfig | None = None,
        registry: SkillRegistry | None = None,
        policy: StrategyPolicy | None = None,
        routes: Mapping[Role, ModelRoute | None] | None = None,
    ):
        """policy: anything with `choose(features, plan_budget) -> PolicyDecision` (default rules).
        routes: role -> its models, built by the caller (a benchmark's scripted models) instead of
        from the config's specs; a role left out is built from the config."""
        self.kb = kb
        self.config = config or PipelineConfig.load(kb.dir)
        self.registry = registry
        self.policy: StrategyPolicy = policy or RulesPolicy()
        self.routes: dict[Role, ModelRoute | None] = dict(routes or {})
        # long messages give way to usual questions between stages (workflows/priority_gate.py)
        self.priority = PriorityGate()
        self._warm = False
        # run()'s one event loop: the model clients' connections (httpx's pool, the aiohttp session
        # dashscope keeps per loop) belong to the loop that opened them, so a loop per question
        # would reuse dead connections ("Event loop is closed") and leak a session each time. A
        # pipeline never closed still closes it at exit, finishing what its streams left pending.
        self._loop = _OwnLoop()
        weakref.finalize(self, self._loop.close)
        self._loop_lock = threading.Lock()

    # -- setup -----------------------------------------------------------------------------
    def warm_up(self) -> QAPipeline:
        """Load everything heavy once (KB indexes, reranker, entity index, skills, models) and
        build the stages from it."""
        if self._warm:
            return self
        config, kb = self.config, self.kb
        kb.warm_up()
        warm_up_scripts()
        self.reranker = make_reranker(config.reranker, kb=kb)
        self.reranker.warm_up()
        self.analyzer = QueryAnalyzer(kb, max_chars=config.retrieval_max_chars).warm_up()
        if self.registry is None:
            self.registry = SkillRegistry.from_config()
        self.registry.check_health(SkillContext(kb, reranker=self.reranker))
        toolkit_template = build_toolkit(self.registry, SkillContext(kb))  # the tools' schemas, parsed once
        lexicon = kb.lexicon  # read from the catalog: once, shared by the stages
        claim_reader = None
        if config.claims_model is not None:  # opt-in: the reader's trained claim checker (docs/models.md)
            claim_reader = ClaimReader(config.claims_model, get_settings().cache_dir).warm_up()
        pair_scorer = None
        if config.pair_model is not None:  # opt-in: the reader's trained pair scorer (docs/models.md)
            pair_scorer = PairScorer(config.pair_model, get_settings().cache_dir).warm_up()
        inspector = Inspector(
            lexicon=lexicon,
            entities=lambda: self.analyzer.index,
            claim_reader=claim_reader,
            claim_reject_above=config.claims_reject_above,
        )
        sentence_reader = None
        if config.sentence_model is not None:  # opt-in: the reader chooses the answer's first sentence
            sentence_reader = PairScorer(config.sentence_model, get_settings().cache_dir).warm_up().score
        extractive = ExtractiveAnswerer(
            lexicon=lexicon,
            inspector=inspector,
            shop=kb.shop,
            rule_packs=config.rule_packs,
            aspects=KBAspects(kb, kb_aspects),
            sentence_reader=sentence_reader,
        )
        self.refusals = RefusalTexts.load()
        compliance = SensitiveWordFilter.for_config(config, kb.dir)  # None when off
        conflict_check.warm_up()
        for role in ROLES:  # each role's models, cheapest first (agents/routing.py)
            if role not in self.routes:
                self.routes[role] = build_route(role, config.model_configs(role), config.model_routes)
        planner_route, answerer_route = self.routes["planner"], self.routes["answerer"]
        answerers = [
            LLMAnswerer(
                m.model, m.formatter, config.retry(), shop=kb.shop, language=config.answer_language, name=m.name
            )
            for m in (answerer_route.models if answerer_route is not None else [])
        ]
        self.answerer: LLMAnswerer | None = answerers[0] if answerers else None
        judge_model, judge_formatter = make_chat_model(config.model_config_for(config.judge))  # offline: None
        judge = ModelJudge(judge_model, judge_formatter, config.retry()) if judge_model is not None else None
        self.models = {
            "planner": planner_route.models[0].model.model_name if planner_route is not None else "policy-planner",
            "answerer": self.answerer.model.model_name if self.answerer is not None else "extractive",
            "reranker": getattr(self.reranker, "name", type(self.reranker).__name__),
        }
        if judge is not None:
            self.models["judge"] = judge.name

        sheets = KBAspects(kb, field_sheets)  # the labels and their kinds of value, read once per KB version
        aspects = AspectReading(
            kb.embedder,
            lambda: sheets().labels,
            kinds=lambda: sheets().kinds,
            asked=partial(asked_kind, rules=question_rules(frozenset(config.rule_packs))),
        )
        self.analyse = Analyse(self.analyzer, aspects.warm_up())
        self.plan = Plan(self.policy)
        self.retrieve = Retrieve(kb, self.registry, self.reranker, toolkit_template, planner_route, extractive)
        self.rank = Rank(kb, self.reranker, pair_scorer, config.pair_top_n)
        self.check_conflicts = CheckConflicts(lexicon)
        self.gate = Gate()
        self.answer = Answer(extractive, self.answerer, answerers[1:])
        self.inspect = Inspect(inspector, judge)
        self.disclose = Disclose(self.refusals, extractive, self.analyzer, compliance)
        self.stream = StreamAnswer(self.answer, inspector, self.disclose.say) if self.answerer is not None else None
        self._warm = True
        return self

    def validate(self, question: Any) -> str:
        return validate_question(question, self.config.max_question_chars)

    # -- entry points ----------------------------------------------------------------------
    def run(
        self,
        question: str,
        session_entity: Entity | None = None,
        filters: SearchFilters | Mapping | None = None,
        session_topic: str | None = None,
    ) -> QAResult:
        """arun() on the pipeline's own event loop, the same for every call (close() ends it)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            with self._loop_lock:
                return self._loop.run(self.arun(question, session_entity, filters, session_topic))
        raise RuntimeError("QAPipeline.run was called inside an event loop; await QAPipeline.arun instead")

    def _route_models(self) -> list[Any]:
        """Every model client the pipeline built: the routes' and the inspector judge's."""
        inspect = getattr(self, "inspect", None)  # built by warm_up
        judge = [inspect.judge.model] if inspect is not None and inspect.judge is not None else []
        return [routed.model for route in self.routes.values() if route is not None for routed in route.models] + judge

    async def aclose_models(self) -> None:
        """Close the model clients' connections on the running loop: what a caller of arun() on its
        own loop (the Assistant, the service) does before that loop closes."""
        await close_model_sessions(*self._route_models())

    def close(self) -> None:
        """Close run()'s event loop and the model clients' connections on it (a caller of arun()
        closes them on its own loop: aclose_models). The KB stays open; the pipeline asks no model
        after this."""
        with self._loop_lock:
            if self._loop.loop is not None:
                self._loop.loop.run_until_complete(close_model_sessions(*self._route_models()))
            self._loop.close()  # a later run() (offline) opens a new one

    async def arun(
        self,
        question: str,
        session_entity: Entity | None = None,
        filters: SearchFilters | Mapping | None = None,
        session_topic: str | None = None,
        features: QueryFeatures | None = None,
        arrived: float | None = None,
        deadline_s: float | None = None,
        history: Sequence[PastTurn] = (),
        listener: Listener | None = None,
    ) -> QAResult:
        """session_entity / session_topic: what a conversation carries into a follow-up (the
        product it is about; else its opening question), searched with it, never answered from.
        features: the analyzer's reading of this same question and context, when the caller
        already has it (the Assistant reads it to decide whether to ask back).
        arrived: time.monotonic() when the question arrived (a service request, before it waited
        for a free slot); the deadline counts from then, else from now. deadline_s: a shorter
        deadline than the config's for this question (the service's request_deadline_s). history:
        the session's earlier turns, oldest first; the models read the last few (conversation_turns,
        within conversation_max_tokens) beside the product the session resolved. listener: told
        each sentence of a model's answer the moment it has passed the inspector (astream; the
        answer is then those sentences, never withdrawn: workflows/stages/stream.py)."""
        typed = self.validate(question)
        whole = to_simplified(typed)  # 退貨運費誰承擔 is read as the shop's pages write it, 退货运费
        long = self._cut(whole)
        # a long message gives way to the usual questions computing beside it (workflows/priority_gate.py)
        with nullcontext() if long else self.priority.usual():
            search_filters = parse_filters(filters)
            self.warm_up()
            run = QuestionRun(self._tracker(arrived, deadline_s), self.priority, long)
            if listener is not None and self.stream is not None:  # only a model's answer streams as it is written
                run.streaming = Streaming(listener, typed)
            asked = AnalyseInput(whole, session_entity, session_topic, features)
            return await self._answer_question(typed, asked, search_filters, run, history)

    async def astream(
        self,
        question: str,
        session_entity: Entity | None = None,
        filters: SearchFilters | Mapping | None = None,
        session_topic: str | None = None,
        features: QueryFeatures | None = None,
        arrived: float | None = None,
        deadline_s: float | None = None,
        history: Sequence[PastTurn] = (),
    ) -> AsyncIterator[SentenceEvent | AnswerEvent]:
        """arun, streamed: a SentenceEvent for each sentence of the answer, a model's sent the
        moment it has passed the inspector (an extractive answer or a refusal sentence by sentence
        once it is done), then an AnswerEvent with the QAResult, whose answer the sentences
        joined are (workflows/answer_events.py)."""

        def answer(listener: Listener) -> Awaitable[QAResult]:
            return self.arun(
                question,
                session_entity,
                filters,
                session_topic,
                features,
                arrived,
                deadline_s,
                history=history,
                listener=listener,
            )

        async for event in relay_answer(answer):
            yield event

    async def _answer_question(
        self,
        typed: str,
        asked: AnalyseInput,
        filters: SearchFilters | None,
        run: QuestionRun,
        history: Sequence[PastTurn] = (),
    ) -> QAResult:
        """The stages in order. Each stage's output is written into the result as it comes, so a
        refusal for want of time keeps what was done before it; the deadline is checked before
        each stage from the search on (run.checkpoint)."""
        config, limits = self.config, EvidenceLimits.of(self.config)
        with run.clock.span("analyze"):
            analysis = self.analyse.run(asked)
        with run.clock.span("policy"):
            decision = self.plan.run(PlanInput(analysis.features, config.budget().plan_budget()))
        result = self._new_result(typed, analysis, decision, filters)
        if run.streaming is not None:  # the streamed sentences carry the result's trace id
            run.streaming.trace_id = result.trace_id
        conversation = self._conversation(analysis.features, history)
        try:
            async with run.stage("planner", deadline="search"):
                wanted = RetrieveInput(
                    analysis, decision, filters, config.retry(), self._answer_model_calls(), conversation
                )
                retrieved = await self.retrieve.run(wanted, run.tracker)
            result.planner_source, result.tool_calls = retrieved.source, retrieved.tool_calls
            result.route += retrieved.route
            run.degradations += retrieved.degradations
            async with run.stage("rerank"):
                ranking = await self.rank.run(
                    RankInput(analysis, retrieved.pool, retrieved.pinned, filters, limits), run
                )
            run.degradations += ranking.degradations
            async with run.stage("conflicts"):  # a disagreement just below the cut is shown, not hidden by it
                shown = SourcesInput(analysis.question, ranking, retrieved.pinned, limits, result.as_of)
                evidence = self.check_conflicts.with_sources(shown)
            result.best_score = None if ranking.best_score is None else round(ranking.best_score, 4)
            result.evidence_ids = [hit.chunk_id for hit in evidence]
            await run.checkpoint("answer")
            verdict = self.gate.run(
                GateInput(
                    analysis.features,
                    ranking.best_score,
                    config.refusal_threshold,
                    retrieved.outputs,
                    retrieved.advice,
                    config.hedge_threshold,
                )
            )
            # the disagreements among the evidence: an answer discloses them, a refusal says the sources disagree
            conflicts = self._conflicts(analysis, evidence, result, run) if evidence and verdict.about_evidence else []
            draft = None
            if verdict.passed:
                answering = AnswerInput(
                    analysis,
                    evidence,
                    conflicts,
                    result.as_of,
                    retrieved.advice,
                    retrieved.overview,
                    conversation=conversation,
                    doubtful=verdict.doubtful,
                    siblings=ranking.siblings,
                )
                draft = await self._answer_and_inspect(answering, result, run)
            said = run.streaming.said if run.streaming is not None else None
            settled = DiscloseInput(
                typed, analysis, evidence, conflicts, verdict.refusal, draft, result.inspection, said
            )
        except DeadlinePassed as passed:
            run.degradations.append(str(passed))
            run.clock.lap(passed.stage)
            settled = DiscloseInput(typed, analysis, [], [], "deadline")
        return self._told(result, self.disclose.run(settled, run.clock), run)

    # -- the steps between stages ------------------------------------------------------------
    async def _answer_and_inspect(self, given: AnswerInput, result: QAResult, run: QuestionRun) -> Draft:
        """The answerer's draft; if the inspector rejects it, one regeneration with its findings, by the
        next model of the answerer's route (the same model when it is the last); if a model's second
        draft fails too, the extractive answer. The question starts on the model its signals pick
        (agents/routing.py). The last draft and its report are returned and recorded; disclose says it
        only if it passed."""
        route = self.routes["answerer"]
        if route is not None:
            signals = question_signals(given.analysis.features, disputed=bool(given.conflicts))
            position, reason = route.start(signals)
            given = replace(given, position=position, reason=reason)
        draft, report = await self._draft(given, run, result)
        if not report.passed and not self._shown(run):  # a streamed answer that showed sentences stands
            result.regenerated = True
            after = route.next_after(draft.position) if route is not None and draft.position >= 0 else None
            rewriter = after if after is not None else max(draft.position, 0)
            why = f"the inspector rejected {draft.steps[-1].model}'s draft" if draft.steps else given.reason
            retry = replace(given, feedback=report, by_model=draft.source == "llm", position=rewriter, reason=why)
            draft, report = await self._draft(retry, run, result)
        if not report.passed and draft.source == "llm" and not self._shown(run):
            # the customer still gets an answer that passed, but not the model's: that is a degradation
            run.degradations.append(
                f"both model answers failed inspection ({_failed_checks(report)}); extractive answer used"
            )
            draft, report = await self._draft(replace(given, feedback=None, by_model=False), run, result)
        result.inspection = report
        return draft

    async def _draft(
        self, given: AnswerInput, run: QuestionRun, result: QAResult | None = None
    ) -> tuple[Draft, InspectionReport]:
        # a judged draft is sent once judged: the judge reads the whole draft, and a streamed sentence
        # cannot be taken back (docs/llm.md "Semantic inspection")
        if run.streaming is not None and given.by_model and self.inspect.judge is None:
            draft, report = await self._streamed_draft(given, run, run.streaming)
        else:
            with run.clock.span("answer"):
                draft = await self.answer.run(given, run.tracker)
            if draft.degradation:
                run.degradations.append(draft.degradation)
            with run.clock.span("inspect"):
                inspecting = InspectInput(
                    draft.text, given.evidence, given.conflicts, given.analysis.question, given.siblings
                )
                report = self.inspect.run(inspecting)
                skipped = await self.inspect.judged(inspecting, report, run.tracker)
            if skipped:
                run.degradations.append(skipped)
        if draft.source == "llm" and draft.steps:
            draft.steps[-1].outcome = "passed the inspector" if report.passed else "rejected by the inspector"
        if result is not None:
            result.route += draft.steps
            result.rules_fired = draft.rules_fired
        return draft, report

    async def _streamed_draft(
        self, given: AnswerInput, run: QuestionRun, streaming: Streaming
    ) -> tuple[Draft, InspectionReport]:
        """A model's draft, each sentence shown as it passes (workflows/stages/stream.py); the
        answer and inspect spans are one span here, "answer", as they run interleaved."""
        assert self.stream is not None  # run.streaming is set only with an answerer model
        with run.clock.span("answer"):
            streamed = await self.stream.run(given, run.tracker, streaming)
        if streamed.degradation:
            run.degradations.append(streamed.degradation)
        streaming.said = streamed.said
        return streamed.draft, streamed.report

    def _conversation(self, features: QueryFeatures, history: Sequence[PastTurn]) -> str:
        """The 【对话上下文】 both models read: the product the session resolved a follow-up to (or
        the conversation's opening question), and the last turns within the token bound."""
        carried = [features.carried_entity] if features.carried_entity is not None else []
        products = (features.products or carried) if (carried or history) else []
        topic = features.carried_topic if not products else None
        talk = Conversation.of(products, topic, history, self.config.conversation_turns)
        return talk.render(self.config.conversation_max_tokens)

    def _conflicts(
        self, analysis: Analysis, evidence: list[EvidenceHit], result: QAResult, run: QuestionRun
    ) -> list[Conflict]:
        """The conflict check over the shown evidence, recorded in the result."""
        with run.clock.span("conflicts"):
            conflicts = self.check_conflicts.run(ConflictInput(analysis.question, evidence, result.as_of))
            result.conflicts = [ConflictOut.of(c) for c in conflicts]
        return conflicts

    def _told(self, result: QAResult, told: Disclosure, run: QuestionRun) -> QAResult:
        """The result with what the customer is told, the degradations met, the budget used and the spans."""
        result.answer, result.citations, result.compliance = told.answer, told.citations, told.compliance
        result.refused, result.refusal_reason = told.refused, told.refusal_reason
        result.answer_source = told.answer_source
        # a refusal for want of time is no verdict on the question: not cached, not learned from
        result.degradation_reasons = run.degradations
        result.degraded = bool(run.degradations)
        result.budget = run.tracker.used()
        result.usage = UsageReport.of(run.tracker.model_usage, self.config.prices)
        result.timings_ms = run.clock.total()
        return result

    def _new_result(
        self, typed: str, analysis: Analysis, decision: PolicyDecision, filters: SearchFilters | None
    ) -> QAResult:
        """The result before retrieval: the question, its analysis and plan; a refusal until answered."""
        return QAResult(
            question=typed,
            answer=self.refusals.plain,
            features=features_summary(analysis.features),
            policy=PolicySummary(
                arm=decision.arm, scores=decision.scores, reason=decision.reason, source=decision.source
            ),
            plan=decision.plan,
            models=dict(self.models),
            as_of=filters.as_of if filters else None,  # as the caller wrote it
        )

    @staticmethod
    def _shown(run: QuestionRun) -> bool:
        """A streamed answer has shown sentences: it is the answer (never withdrawn, never redone)."""
        return run.streaming is not None and run.streaming.said is not None

    def _tracker(self, arrived: float | None, deadline_s: float | None) -> BudgetTracker:
        """The question's budget: the config's, with the caller's shorter deadline."""
        budget = self.config.budget()
        if deadline_s is not None:
            budget = budget.model_copy(update={"deadline_s": min(budget.deadline_s, deadline_s)})
        return BudgetTracker(budget, started=arrived)

    def _cut(self, whole: str) -> bool:
        """A long message: retrieval reads only what it asks (agents/retrieval_question.py)."""
        return len(whole) > self.config.retrieval_max_chars

    def _answer_model_calls(self) -> int:
        """What the answer stage may need: per draft (an answer and one regeneration) an LLM
        answerer's request and the judge's, each with its retries."""
        per_draft = (self.answerer is not None) + (self.inspect.judge is not None)  # answer, judge
        return 2 * per_draft * (1 + self.config.max_retries)
