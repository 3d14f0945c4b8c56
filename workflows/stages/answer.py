"""Stage answer: a draft answer over the shown evidence, each fact cited by its chunk id. The
configured LLM answerer reads the question whole (with the time it asks about); the extractive
answerer reads what retrieval read and quotes the evidence. The models are the answerer's route
(agents/routing.py), cheapest first: the draft is asked of the model at `position`; a model that
fails for good hands it to the next one, and after the last to the extractive answerer, each
failure reported (the degradation) and kept as a step of the route."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from citescope.agents.answerer import ExtractiveAnswerer, LLMAnswerer, TextReader, generate
from citescope.agents.budget import BudgetTracker, ModelFailure
from citescope.agents.conflicts import Conflict
from citescope.agents.conversation import NONE_TEXT
from citescope.agents.inspector import InspectionReport
from citescope.agents.routing import RouteStep
from citescope.tools.base import EvidenceHit
from citescope.tools.products import SizeAdvice
from citescope.workflows.stages.analyse import Analysis, with_asked_time


@dataclass(frozen=True)
class AnswerInput:
    analysis: Analysis
    evidence: list[EvidenceHit]
    conflicts: list[Conflict]  # disagreements the answer must disclose
    as_of: str | None = None  # the time the question asks about, which a model is told
    advice: SizeAdvice | None = None  # a size the size_recommend skill worked out
    overview: Sequence[str] = ()  # the page openings that answer "what is it like"
    feedback: InspectionReport | None = None  # the inspector's findings on the previous draft
    by_model: bool = True  # False: the extractive answerer writes it even when a model is configured
    position: int = 0  # the model of the route asked first
    reason: str = "first model of the route"  # why that model (the route's trace)
    conversation: str = NONE_TEXT  # the 【对话上下文】 a model reads (agents/conversation.py)
    doubtful: bool = False  # the gate's score is in the hedging band: the extractive answerer does not hedge there
    # evidence about a sibling of the entity asked: never the extractive answer; marked so in a model's prompt
    siblings: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Draft:
    text: str
    source: Literal["llm", "extractive"]
    degradation: str = ""  # why a model's draft was replaced, if it was
    position: int = -1  # the model of the route that wrote it (-1: the extractive answerer)
    steps: list[RouteStep] = field(default_factory=list)  # the models asked, the last one's outcome open
    rules_fired: list[str] = field(default_factory=list)  # the question rules the extractive answerer applied


class Answer:
    def __init__(
        self, extractive: ExtractiveAnswerer, model: LLMAnswerer | None = None, stronger: Sequence[LLMAnswerer] = ()
    ):
        """model: the first (cheapest) model of the answerer's route; stronger: the rest, in order."""
        self.extractive = extractive
        self.models = [model, *stronger] if model is not None else []

    @property
    def model(self) -> LLMAnswerer | None:
        return self.models[0] if self.models else None

    async def run(self, given: AnswerInput, budget: BudgetTracker, reader: TextReader | None = None) -> Draft:
        """reader: reads each model's reply while it is streamed (workflows/stages/stream.py); once it
        has shown sentences, a model that fails is not replaced: ModelFailure (what was shown stands)."""
        analysis = given.analysis
        failures: list[str] = []
        steps: list[RouteStep] = []
        reason = given.reason
        first = given.position if given.by_model else len(self.models)
        for position in range(first, len(self.models)):
            model = self.models[position]
            step = RouteStep(role="answerer", model=model.name, reason=reason)
            steps.append(step)
            try:
                # a model reads the question whole, and the time it asks about
                text = await generate(
                    model,
                    with_asked_time(analysis.whole, given.as_of),
                    given.evidence,
                    given.conflicts,
                    given.feedback,
                    budget=budget,
                    advice=given.advice,
                    overview=given.overview,
                    conversation=given.conversation,
                    reader=reader,
                    siblings=given.siblings,
                )
                return Draft(text, "llm", "; ".join(failures), position, steps)
            except ModelFailure as exc:
                if reader is not None and not reader.may_retry():
                    step.outcome = f"failed: {exc}"
                    raise
                step.outcome = f"failed: {exc}"
                stronger = position + 1 < len(self.models)
                fallback = f"model {self.models[position + 1].name} used" if stronger else "extractive answer used"
                failures.append(f"answerer model failed ({exc}); {fallback}")
                reason = f"{model.name} failed"
        failed = "; ".join(failures)
        # the extractive answerer matches the question's own words, as retrieval read them
        text = self.extractive.run(
            analysis.question,
            given.evidence,
            given.conflicts,
            given.feedback,
            advice=given.advice,
            overview=given.overview,
            doubtful=given.doubtful,
            siblings=given.siblings,
            shop_rule=analysis.features.intent == "policy" and not analysis.features.focus_products,
        )
        fired = self.extractive.rules_fired(analysis.question, given.evidence)
        return Draft(text, "extractive", failed, steps=steps, rules_fired=fired)
