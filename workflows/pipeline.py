"""The QA pipeline: one question in, one QAResult out.

validate -> analyze -> policy -> planner (ReActAgent, hard budgets; every hit in one pool) ->
final calibrated rerank of the pool -> evidence top-N (count and characters) -> refusal gate
(weak best evidence: fixed refusal, nothing generated; it says the sources disagree when the
conflict check finds they do) -> conflicts -> answerer -> inspector ->
pass | one regeneration with the findings | extractive answer if it passes | refusal ->
sensitive-word filter on the answer, when configured (mask, or the refusal).

Guarantees live here, whatever a model writes: only answers that pass the inspector are
returned (so never one with an invalid citation id); any model failure falls back to the
offline engine for that stage and is reported (degraded + reason).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from datetime import date
from typing import Any

from citescope.agents import conflicts as conflict_check
from citescope.agents.answerer import ExtractiveAnswerer, LLMAnswerer, generate
from citescope.agents.arms import template_values
from citescope.agents.budget import BudgetTracker, DeadlinePassed, ModelFailure
from citescope.agents.citations import normalize_citations
from citescope.agents.evidence import RERANK_LEG, EvidencePool
from citescope.agents.inspector import InspectionReport, Inspector
from citescope.agents.models import make_chat_model
from citescope.agents.planner import RetrievalPlanner
from citescope.agents.policy import PolicyDecision, RulesPolicy
from citescope.agents.prompts import load_prompt
from citescope.agents.query_analysis import Entity, QueryAnalyzer, QueryFeatures
from citescope.agents.question_cues import asking_clauses
from citescope.agents.toolkit import build_toolkit
from citescope.knowledge.chinese_script import in_simplified, in_traditional, to_simplified, written_in_traditional
from citescope.knowledge.chinese_script import warm_up as warm_up_scripts
from citescope.knowledge.chunking import SKU_OVERVIEW_SECTION
from citescope.knowledge.crosslingual import document_query
from citescope.knowledge.filters import SearchFilters
from citescope.knowledge.kb import KnowledgeBase, metadata_columns
from citescope.knowledge.text import is_storable_text
from citescope.tools.base import EvidenceHit, LegScore, SkillContext
from citescope.tools.fusion import later_table_rows
from citescope.tools.products import SizeAdvice
from citescope.tools.registry import SkillRegistry
from citescope.tools.rerank import make_reranker
from citescope.workflows.compliance import SensitiveWordFilter
from citescope.workflows.pipeline_config import PipelineConfig
from citescope.workflows.priority_gate import PriorityGate
from citescope.workflows.result import Citation, ConflictOut, PolicySummary, QAResult, features_summary


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


class _Stopwatch:
    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self._start = self._last = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.timings[stage] = round(self.timings.get(stage, 0.0) + (now - self._last) * 1000, 2)
        self._last = now

    def total(self) -> None:
        self.timings["total"] = round((time.perf_counter() - self._start) * 1000, 2)


class QAPipeline:
    def __init__(
        self,
        kb: KnowledgeBase,
        config: PipelineConfig | None = None,
        registry: SkillRegistry | None = None,
        policy: Any | None = None,
    ):
        """policy: anything with `choose(features, plan_budget) -> PolicyDecision` (default rules)."""
        self.kb = kb
        self.config = config or PipelineConfig.load(kb.dir)
        self.registry = registry
        self.policy = policy or RulesPolicy()
        # long messages give way to usual questions between stages (workflows/priority_gate.py)
        self.priority = PriorityGate()
        self._warm = False

    # -- setup -----------------------------------------------------------------------------
    def warm_up(self) -> QAPipeline:
        """Load everything heavy once: KB indexes, reranker, entity index, skills, models."""
        if self._warm:
            return self
        config = self.config
        self.kb.warm_up()
        warm_up_scripts()
        self.reranker = make_reranker(config.reranker, kb=self.kb)
        self.reranker.warm_up()
        self.lexicon = self.kb.lexicon
        self.analyzer = QueryAnalyzer(self.kb, max_chars=config.retrieval_max_chars).warm_up()
        if self.registry is None:
            self.registry = SkillRegistry.from_config()
        self.registry.check_health(SkillContext(self.kb, reranker=self.reranker))
        self.toolkit_template = build_toolkit(self.registry, SkillContext(self.kb))
        self.inspector = Inspector(lexicon=self.lexicon)
        self.extractive = ExtractiveAnswerer(lexicon=self.lexicon, inspector=self.inspector)
        self.refusal_text = load_prompt("refusal").strip()
        # Said instead when the evidence disagrees with itself: the customer learns why, and no
        # side of the disagreement is asserted on evidence too weak (or too unsupported) to answer.
        self.conflict_refusal_text = load_prompt("refusal_conflict").strip()
        # Said when the question's deadline passes before an answer (a busy service): try again later.
        self.deadline_text = load_prompt("refusal_deadline").strip()
        # an English question is refused in English (prompts/*_en.md)
        self.english_refusals = {
            self.refusal_text: load_prompt("refusal_en").strip(),
            self.conflict_refusal_text: load_prompt("refusal_conflict_en").strip(),
            self.deadline_text: load_prompt("refusal_deadline_en").strip(),
        }
        # a question about a model of the shop's series that its catalogue lacks is refused by name
        self.unknown_model_texts = {
            False: load_prompt("refusal_unknown_model").strip(),
            True: load_prompt("refusal_unknown_model_en").strip(),
        }
        self.compliance = SensitiveWordFilter.for_config(config, self.kb.dir)  # None when off
        conflict_check.warm_up()
        self.planner_llm, self.planner_formatter = (None, None)
        if config.planner != "offline":
            self.planner_llm, self.planner_formatter = make_chat_model(config.model_config_for(config.planner))
        self.answerer: LLMAnswerer | ExtractiveAnswerer = self.extractive
        if config.answerer != "offline":
            model, formatter = make_chat_model(config.model_config_for(config.answerer))
            self.answerer = LLMAnswerer(model, formatter, config.retry())
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
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.arun(question, session_entity, filters, session_topic))
        raise RuntimeError("QAPipeline.run was called inside an event loop; await QAPipeline.arun instead")

    async def arun(
        self,
        question: str,
        session_entity: Entity | None = None,
        filters: SearchFilters | Mapping | None = None,
        session_topic: str | None = None,
        features: QueryFeatures | None = None,
        arrived: float | None = None,
        deadline_s: float | None = None,
    ) -> QAResult:
        """session_entity / session_topic: what a conversation carries into a follow-up (the
        product it is about; else its opening question), searched with it, never answered from.
        features: the analyzer's reading of this same question and context, when the caller
        already has it (the Assistant reads it to decide whether to ask back).
        arrived: time.monotonic() when the question arrived (a service request, before it waited
        for a free slot); the deadline counts from then, else from now. deadline_s: a shorter
        deadline than the config's for this question (the service's request_deadline_s)."""
        typed = self.validate(question)
        # a long message gives way to the usual questions computing beside it (workflows/priority_gate.py)
        with nullcontext() if self._cut(to_simplified(typed)) else self.priority.usual():
            return await self._arun(typed, session_entity, filters, session_topic, features, arrived, deadline_s)

    async def _arun(
        self,
        typed: str,
        session_entity: Entity | None,
        filters: SearchFilters | Mapping | None,
        session_topic: str | None,
        features: QueryFeatures | None,
        arrived: float | None,
        deadline_s: float | None,
    ) -> QAResult:
        whole = to_simplified(typed)  # 退貨運費誰承擔 is read as the shop's pages write it, 退货运费
        search_filters = parse_filters(filters)
        self.warm_up()
        clock = _Stopwatch()
        budget = self.config.budget()
        if deadline_s is not None:
            budget = budget.model_copy(update={"deadline_s": min(budget.deadline_s, deadline_s)})
        tracker = BudgetTracker(budget, started=arrived)

        if features is None:
            features = self.analyzer.run(whole, session_entity, session_topic)
        # Retrieval, rerank, the conflict check and the offline answerer read the question as it was
        # analysed: a long message by its asking sentences (retrieval_max_chars); an LLM answerer reads it whole.
        question = features.question
        clock.lap("analyze")
        decision = self.policy.choose(features, self.config.budget().plan_budget())
        clock.lap("policy")

        result = QAResult(
            question=typed,
            answer=self.refusal_text,
            features=features_summary(features),
            policy=PolicySummary(
                arm=decision.arm, scores=decision.scores, reason=decision.reason, source=decision.source
            ),
            plan=decision.plan,
            models=self._model_names(),
            as_of=search_filters.as_of if search_filters else None,  # as the caller wrote it
        )
        degradations: list[str] = []
        evidence: list[EvidenceHit] = []
        try:
            evidence = await self._retrieve_and_answer(
                result, question, whole, features, decision, search_filters, tracker, clock, degradations
            )
        except DeadlinePassed as passed:
            # Python cannot stop a stage midway: every stage starts only inside the deadline, and the
            # heavy ones read a bounded question, so the refusal comes at most one stage late.
            result.refused, result.refusal_reason, result.answer_source = True, "deadline", "refusal"
            result.answer, result.citations, result.conflicts = self.deadline_text, [], []
            degradations.append(str(passed))
            clock.lap(passed.stage)
        if self.compliance is not None and not result.refused:  # the settled answer, as the customer sees it
            screened = self.compliance.run(result.answer)
            result.compliance = screened.hits
            if screened.action == "refuse":
                result.refused, result.refusal_reason, result.answer_source = True, "sensitive", "refusal"
                result.answer, result.citations = self.refusal_text, []
            else:
                result.answer = screened.text
            clock.lap("compliance")

        if result.refused and self.extractive.asked_in_english(question, evidence):
            result.answer = self.english_refusals.get(result.answer, result.answer)
        if written_in_traditional(typed):  # answered in the script it was asked in
            result.answer = in_traditional(result.answer)
        elif written_in_traditional(result.answer):  # a traditional page quoted to a simplified question
            result.answer = in_simplified(result.answer)
        # a refusal for want of time is no verdict on the question: not cached, not learned from
        result.degradation_reasons = degradations
        result.degraded = bool(degradations)
        result.budget = tracker.used()
        clock.total()
        result.timings_ms = clock.timings
        return result

    async def _retrieve_and_answer(
        self,
        result: QAResult,
        question: str,
        whole: str,
        features: QueryFeatures,
        decision: PolicyDecision,
        search_filters: SearchFilters | None,
        tracker: BudgetTracker,
        clock: _Stopwatch,
        degradations: list[str],
    ) -> list[EvidenceHit]:
        """Planner, final rerank, refusal gate, conflicts, answer and inspection, written into `result`;
        the evidence shown. Raises DeadlinePassed when the deadline passes before a stage."""
        long = self._cut(whole)
        await self._stage("search", tracker, long)
        pool = EvidencePool()
        asked_time = result.as_of
        as_of = search_filters.reference_day() if search_filters else None
        planner = RetrievalPlanner(
            self.registry,
            SkillContext(self.kb, reranker=self.reranker, as_of=as_of),
            pool,
            tracker,
            decision,
            llm=self.planner_llm,
            formatter=self.planner_formatter,
            retry=self.config.retry(),
            filters=search_filters,
            toolkit_template=self.toolkit_template,
            reserve_model_calls=self._answerer_model_calls(),
        )
        outcome = await planner.run(with_asked_time(_planner_message(question, features), asked_time))
        clock.lap("planner")
        result.planner_source, result.tool_calls = outcome.source, planner.records
        degradations += list(outcome.degradations)
        degradations += [f"tool {r.name}: {reason}" for r in planner.records if r.degraded for reason in r.reasons]
        await self._stage("rerank", tracker, long)

        # Structured findings are shown with the rows they rest on: a size the size_recommend skill
        # worked out from the table, and the size-table rows of two or more sizes asked about.
        advice = SizeAdvice.of(planner.outputs.get("size_recommend"))
        pinned = advice.chunk_ids() if advice else []
        named_sizes = list(((planner.outputs.get("product_lookup") or {}).get("size_rows") or {}).values())
        pinned += named_sizes if len(named_sizes) > 1 else []
        # A question about what a product is like is answered by its page's opening section.
        overview = self._openings(pool, features) if features.asks_overview else []
        pinned += overview
        # a compound question's parts are queries too: a chunk is as relevant as to the part it answers
        parts = [None, *features.parts]
        if long:
            # A message cut to what it asks (retrieval_question.py) is scored as the one text the search
            # read, so its query embedding, most of what a long message costs, comes from the embedder's
            # cache: that text already carries the documents' words (with_document_words), and the
            # cut kept the asking sentences, so the other readings would say the same again (~0.3 s of CPU each).
            queries = [template_values(features, part=part)["query"] for part in parts]
            alternates = []
        else:
            queries = [template_values(features, part=part, bridged=False)["query"] for part in parts]
            # the question is also scored as the documents word it (an English question as a Chinese shop's
            # evidence does, 洗澡 as 淋浴: knowledge/crosslingual.py), and a chat message by what it asks without
            # what the shopper adds about themselves (… 平时不在家); the best of the readings counts
            worded = document_query(features.question)
            asking = asking_clauses(features.question)
            alternates = [a for a in (worded, asking, asking and document_query(asking)) if a]
        compared = [p.product_id for p in features.products] if len(features.products) > 1 else []
        # On a worker thread, as the skills run: its query embeddings release the GIL, so the loop goes
        # on with other questions' stages meanwhile (a service computes several on one loop).
        evidence, ranked, best, rerank_problem = await asyncio.to_thread(
            self._rank_evidence,
            pool,
            queries,
            search_filters,
            as_of,
            pinned=pinned,
            alternates=alternates,
            compared=compared,
            tracker=tracker,
            long=long,
        )
        if rerank_problem:
            degradations.append(rerank_problem)
        clock.lap("rerank")
        await self._stage("conflicts", tracker, long)
        evidence = self._with_conflicting(question, evidence, ranked, pinned, asked_time)
        clock.lap("conflicts")
        result.best_score = None if best is None else round(best, 4)
        result.evidence_ids = [h.chunk_id for h in evidence]
        await self._stage("answer", tracker, long)

        if features.unknown_models and not features.focus_products:
            # 火焰8 when the shop sells the 火焰7: its evidence is about another model, whatever it scores
            result.refused, result.refusal_reason = True, "unknown_model"
            english = self.extractive.asked_in_english(question, evidence)
            result.answer = self.unknown_model_texts[english].format(models="、".join(features.unknown_models))
        elif (
            best is None
            or best < self.config.refusal_threshold
            and not _read_off_tables(features, planner.outputs, advice)
        ):
            result.refused = True
            result.refusal_reason = "no_evidence" if best is None else "weak_evidence"
            if evidence:  # weak evidence that disagrees with itself is still worth saying so
                result.answer = self._refusal(self._conflicts(result, question, evidence, clock))
        else:
            await self._answer(result, question, whole, evidence, tracker, degradations, clock, advice, overview)
            if not result.refused and features.unknown_models:
                # 火焰7和火焰8: the 8 is said to be missing; not a phone model beside a power bank (its series is
                # the shop's phone cases, not what the question is about)
                series = self.analyzer.index.other_models(features.canonical)
                asked = {p.product_id for p in features.focus_products}
                missing = [
                    m for m in features.unknown_models if m not in result.answer and series.get(m, set()) & asked
                ]
                english = self.extractive.asked_in_english(question, evidence)
                result.answer = self.extractive.with_parts_not_found(result.answer, missing, english)
        return evidence

    # -- stages ----------------------------------------------------------------------------
    def _rank_evidence(
        self,
        pool: EvidencePool,
        queries: Sequence[str],
        filters: SearchFilters | None,
        as_of: date | None,
        pinned: Sequence[str] = (),
        alternates: Sequence[str] = (),
        compared: Sequence[str] = (),
        tracker: BudgetTracker | None = None,
        long: bool = False,
    ) -> tuple[list[EvidenceHit], list[EvidenceHit], float | None, str]:
        """The pool re-scored by the calibrated reranker for the question (each chunk's best score
        over `queries`: the question, then the parts of a compound one), filtered, cut to the
        shown evidence; plus the whole pool in that order, the score the gate reads (the best for
        the question, or the best its weakest part gets; None: no evidence) and a degradation, if any.
        pinned: chunk ids shown whatever their rank (what a structured skill's finding rests on),
        in place of the lowest-ranked others. alternates: other readings of the whole question (an
        English one's Chinese words, a chat message's asking clauses), scored as it is. compared: the
        products a question names two or more of, each shown the best chunk of its page. long: a long
        message, which gives way to the usual questions before each reading (workflows/priority_gate.py)."""
        # Score the text the answerer will see (hostile passages already cut), not the raw chunk.
        pairs = [
            (hit, chunk.model_copy(update={"text": hit.text, "title": hit.title}))
            for hit in pool.hits()
            if (chunk := self.kb.get(hit.chunk_id)) is not None
        ]
        if filters is not None and filters.restricts() and pairs:
            keep = filters.mask(metadata_columns([chunk for _, chunk in pairs]))
            pairs = [pair for pair, kept in zip(pairs, keep, strict=False) if kept]
        if not pairs:
            return [], [], None, ""
        problem = ""
        try:
            chunks = [chunk for _, chunk in pairs]

            def scored(query: str) -> list[float]:
                if tracker is not None:  # each reading of the question costs an embedding and a pass over the pool
                    if long:
                        self.priority.wait_for_usual(tracker.remaining_s())
                    tracker.check_deadline("rerank")
                return self.reranker.score(query, chunks, as_of=as_of)

            per_query = [scored(q) for q in queries]
            for alternate in alternates:  # the whole question, worded otherwise: its best score counts
                per_query[0] = [max(pair) for pair in zip(per_query[0], scored(alternate), strict=False)]
            scores = [max(column) for column in zip(*per_query, strict=False)]
            # the gate: the question's best chunk or, if higher, the best chunk of a compound question's
            # weakest part (a short part alone, 地址在哪, matches a passage about something else too well)
            gate = max(max(per_query[0]), min((max(part) for part in per_query[1:]), default=0.0))
        except DeadlinePassed:
            raise
        except Exception as exc:  # keep the skills' own calibrated scores; none -> nothing passes the gate
            problem = f"final rerank failed ({type(exc).__name__}); earlier rerank scores used"
            scores = [hit.legs[RERANK_LEG].score if RERANK_LEG in hit.legs else 0.0 for hit, _ in pairs]
            gate = max(scores)
        scores = _overviews_as_rows(pairs, scores)  # raises no score above the best, so not the gate
        # on a tie the overview goes first: it and its best row share the document's slots, not two rows
        order = sorted(
            range(len(pairs)),
            key=lambda i: (-scores[i], pairs[i][0].section != SKU_OVERVIEW_SECTION, pairs[i][0].chunk_id),
        )
        ranked = []
        for rank, i in enumerate(order, start=1):
            hit = pairs[i][0].model_copy(deep=True)
            hit.score = float(scores[i])
            hit.legs[RERANK_LEG] = LegScore(score=float(scores[i]), rank=rank)
            ranked.append(hit)
        # every product compared is shown what its page says best: its SKU rows and overview may
        # otherwise take its slots (轻羽Pro's 价格 row where 分别多重 asks its 材质 line's 198 克)
        best_page: dict[str, str] = {}
        for hit in ranked:
            if (
                hit.product_id in compared
                and hit.doc_type == "product"
                and hit.section not in ("SKU", SKU_OVERVIEW_SECTION)
            ):
                best_page.setdefault(hit.product_id, hit.chunk_id)
        pinned = [*pinned, *best_page.values()]
        varied, spare = _at_most_per_doc(ranked, self.config.evidence_per_doc)
        n, max_chars = self.config.evidence_top_n, self.config.evidence_max_chars
        shown = EvidencePool.from_hits(varied).top(n, max_chars)
        # The cap diversifies; it must not leave slots empty. Slots left over go first to a
        # section not shown yet (a product's 产地 before a third SKU row), then to the rest.
        for tier in _new_sections_first(spare, shown):
            if len(shown) >= n:
                break
            shown = EvidencePool.from_hits(tier).top(n, max_chars, after=shown)
        return _with_pinned(shown, ranked, pinned, n), ranked, float(gate), problem

    def _with_conflicting(
        self,
        question: str,
        shown: list[EvidenceHit],
        ranked: list[EvidenceHit],
        pinned: Sequence[str],
        as_of: str | None,
    ) -> list[EvidenceHit]:
        """The shown evidence plus the sources of any conflict among everything the skills gathered:
        a disagreement between a shown chunk and one ranked just below the cut is disclosed, not
        hidden by the cut. Each source takes the place of the lowest-ranked unpinned chunk. Below
        the cut only sources about one subject count (one product, one document title): there,
        two articles written alike about two cities are more often what the skills found."""
        scanned = ranked[: self.config.conflict_scan_top_n]
        if len(scanned) <= len(shown):
            return shown  # nothing beyond what is shown: the check on the evidence sees it all
        by_id = {hit.chunk_id: hit for hit in scanned}
        found = conflict_check.detect_conflicts(question, scanned, self.lexicon, as_of=as_of)
        sources = [
            value.chunk_id
            for conflict in found
            if conflict_check.one_subject([by_id[value.chunk_id] for value in conflict.values])
            for value in conflict.values
        ]
        if not sources:
            return shown
        return _with_pinned(shown, ranked, [*pinned, *sources], self.config.evidence_top_n)

    async def _answer(
        self,
        result: QAResult,
        question: str,
        whole: str,
        evidence: list[EvidenceHit],
        tracker: BudgetTracker,
        degradations: list[str],
        clock: _Stopwatch,
        advice: SizeAdvice | None = None,
        overview: Sequence[str] = (),
    ) -> None:
        """whole: the question as typed (simplified), which a model reads; the extractive answerer and
        the inspector read `question`, what retrieval read."""
        conflicts = self._conflicts(result, question, evidence, clock)

        answerer = self.answerer
        source = "llm" if isinstance(answerer, LLMAnswerer) else "extractive"

        async def attempt(feedback: InspectionReport | None) -> tuple[str, InspectionReport]:
            nonlocal answerer, source
            try:
                # a model reads the asked time; the extractive answerer matches the question's own words
                asked = with_asked_time(whole, result.as_of) if source == "llm" else question
                text = await generate(
                    answerer, asked, evidence, conflicts, feedback, budget=tracker, advice=advice, overview=overview
                )
            except ModelFailure as exc:
                degradations.append(f"answerer model failed ({exc}); extractive answer used")
                answerer, source = self.extractive, "extractive"
                text = self.extractive.run(question, evidence, conflicts, feedback, advice=advice, overview=overview)
            clock.lap("answer")
            report = self.inspector.run(text, evidence, conflicts, question)
            clock.lap("inspect")
            return text, report

        text, report = await attempt(None)
        if not report.passed:
            result.regenerated = True
            text, report = await attempt(report)
        if not report.passed and source == "llm":
            source = "extractive"
            text = self.extractive.run(question, evidence, conflicts, advice=advice, overview=overview)
            clock.lap("answer")
            report = self.inspector.run(text, evidence, conflicts, question)
            clock.lap("inspect")
        result.inspection = report
        if not report.passed or report.invalid_ids or self._is_refusal(text, report):
            result.refused, result.answer_source = True, "refusal"
            result.refusal_reason = "no_supported_answer"
            result.answer = self._refusal(conflicts)
            return
        by_id = {hit.chunk_id: hit for hit in evidence}
        result.answer = normalize_citations(text, known_ids=by_id.keys()).strip()
        result.citations = [Citation.of(by_id[i]) for i in report.cited_ids]
        result.answer_source = source

    def _conflicts(
        self, result: QAResult, question: str, evidence: list[EvidenceHit], clock: _Stopwatch
    ) -> list[conflict_check.Conflict]:
        """The conflict check over the shown evidence, recorded in the result."""
        conflicts = conflict_check.detect_conflicts(question, evidence, self.lexicon, as_of=result.as_of)
        result.conflicts = [ConflictOut.of(c) for c in conflicts]
        clock.lap("conflicts")
        return conflicts

    def _refusal(self, conflicts: list[conflict_check.Conflict]) -> str:
        return self.conflict_refusal_text if conflicts else self.refusal_text

    def _openings(self, pool: EvidencePool, features: QueryFeatures) -> list[str]:
        """The opening chunk (商品简介) of each asked product's page, where the pool holds it."""
        gathered = {hit.chunk_id: hit for hit in pool.hits()}
        pages = {
            hit.product_id: hit.doc_id for hit in gathered.values() if hit.doc_type == "product" and hit.product_id
        }
        openings = []
        for product in features.focus_products:
            chunks = self.kb.chunks_of(pages[product.product_id]) if product.product_id in pages else []
            if chunks and chunks[0].chunk_id in gathered:
                openings.append(chunks[0].chunk_id)
        return openings

    def _cut(self, whole: str) -> bool:
        """A long message: retrieval reads only what it asks (agents/retrieval_question.py)."""
        return len(whole) > self.config.retrieval_max_chars

    async def _stage(self, stage: str, tracker: BudgetTracker, long: bool) -> None:
        """Before a stage: a long message first gives way to the usual questions computing now, for
        at most what is left of its deadline (workflows/priority_gate.py); then DeadlinePassed if it has passed."""
        if long:
            await self.priority.give_way(tracker.remaining_s())
        tracker.check_deadline(stage)

    def _answerer_model_calls(self) -> int:
        """What an LLM answerer may need: an answer and one regeneration, each with its retries."""
        return 2 * (1 + self.config.max_retries) if isinstance(self.answerer, LLMAnswerer) else 0

    def _is_refusal(self, text: str, report: InspectionReport) -> bool:
        return not report.cited_ids and any(
            text.strip() == t or t in text
            for t in (self.refusal_text, self.conflict_refusal_text, *self.english_refusals.values())
        )

    def _model_names(self) -> dict[str, str]:
        return {
            "planner": self.planner_llm.model_name if self.planner_llm is not None else "policy-planner",
            "answerer": self.answerer.name if isinstance(self.answerer, LLMAnswerer) else "extractive",
            "reranker": getattr(self.reranker, "name", type(self.reranker).__name__),
        }


def with_asked_time(text: str, as_of: str | None) -> str:
    """A model's view of a question asked about a given time (SearchFilters.as_of)."""
    return f"{text}\n（问的是 {as_of} 时的情况：以最接近这个时间的资料为准）" if as_of else text


def _planner_message(question: str, features: QueryFeatures) -> str:
    """The planner's user message: the question, plus the product or topic a follow-up refers to."""
    carried = features.carried_entity
    if carried is not None and not features.products:
        return f"{question}\n（这是追问，指的是上一轮提到的商品「{carried.name}」）"
    if features.carried_topic and not features.products:
        return f"{question}\n（这是追问，对话开始时问的是「{features.carried_topic}」）"
    return question


def parse_filters(filters: SearchFilters | Mapping | None) -> SearchFilters | None:
    if filters is None or isinstance(filters, SearchFilters):
        return None if filters is None or filters.is_empty() else filters
    try:
        parsed = SearchFilters(**dict(filters))
    except Exception as exc:
        raise QuestionError(f"invalid filters: {exc}") from None
    return None if parsed.is_empty() else parsed


def _new_sections_first(
    spare: list[EvidenceHit], shown: list[EvidenceHit]
) -> tuple[list[EvidenceHit], list[EvidenceHit]]:
    """(the best spare hit of each (document, section) not shown yet, the other spare hits),
    order kept."""
    seen = {_section_key(hit) for hit in shown}
    fresh, rest = [], []
    for hit in spare:
        key = _section_key(hit)
        (rest if key in seen else fresh).append(hit)
        seen.add(key)
    return fresh, rest


def _with_pinned(
    shown: list[EvidenceHit], ranked: list[EvidenceHit], pinned: Sequence[str], n: int
) -> list[EvidenceHit]:
    """The shown evidence with every pinned hit of the ranking in it, each taking the place of the
    lowest-ranked unpinned one once all n slots are used; rank order kept."""
    missing = [hit for hit in ranked if hit.chunk_id in set(pinned) - {h.chunk_id for h in shown}]
    if not missing:
        return shown
    keep = list(shown)
    for hit in missing:
        if len(keep) >= n:
            drop = next((h for h in reversed(keep) if h.chunk_id not in pinned), None)
            if drop is None:
                break
            keep.remove(drop)
        keep.append(hit)
    order = {hit.chunk_id: i for i, hit in enumerate(ranked)}
    return sorted(keep, key=lambda h: order[h.chunk_id])


def _overviews_as_rows(pairs: list[tuple[EvidenceHit, Any]], scores: list[float]) -> list[float]:
    """A product's SKU overview states every fact any of its SKU rows states, so it ranks with the
    best of them, not below rows it summarises."""
    best_row: dict[str, float] = {}
    for (hit, _), score in zip(pairs, scores, strict=False):
        if hit.section == "SKU":
            best_row[hit.doc_id] = max(score, best_row.get(hit.doc_id, 0.0))
    return [
        max(score, best_row.get(hit.doc_id, 0.0)) if hit.section == SKU_OVERVIEW_SECTION else score
        for (hit, _), score in zip(pairs, scores, strict=False)
    ]


def _section_key(hit: EvidenceHit) -> tuple[str, str]:
    # A product's SKU overview restates its SKU rows: it is the rows' section, not a new one that
    # would take a slot from the page's own sections (重量 of 功能特点 for "单只耳朵有多重").
    return hit.doc_id, "SKU" if hit.section == SKU_OVERVIEW_SECTION else hit.section


def _at_most_per_doc(hits: list[EvidenceHit], limit: int) -> tuple[list[EvidenceHit], list[EvidenceHit]]:
    """(the best `limit` hits of each document, one row of a product page's table among them, the
    rest), order kept: one product's SKU rows or table rows or one policy's sections must not fill
    the evidence and push out a disagreeing source; the rest only fill slots no other document can
    (a question over two long documents)."""
    # A product page's table rows take one of its slots (防水：… below 尺码: 41); the rows a question
    # names or a skill worked out are pinned.
    later_rows = {id(hit) for hit in later_table_rows(hits)[1]}
    seen: dict[str, int] = {}
    kept, spare = [], []
    for hit in hits:
        if id(hit) in later_rows:
            spare.append(hit)
            continue
        seen[hit.doc_id] = seen.get(hit.doc_id, 0) + 1
        (kept if seen[hit.doc_id] <= limit else spare).append(hit)
    return kept, spare


def _read_off_tables(features: QueryFeatures, outputs: dict, advice: SizeAdvice | None) -> bool:
    """Is the answer a finding read off a named product's own tables: the size size_recommend worked
    out, or the price and stock of a product the question names (product_lookup found its SKUs)? Such
    evidence is relevant by construction, so the gate, which measures how well text matches the
    question ("身高183 体重85kg 峰刃穿什么码" scores 0.09 against the size table it is answered from),
    does not apply; what the answer says still has to pass the inspector."""
    if advice is not None:
        return True
    found = outputs.get("product_lookup") or {}
    named = {p.product_id for p in features.products}
    return features.asks_price_stock and bool(found.get("skus")) and found.get("product_id") in named
