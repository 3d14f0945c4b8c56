"""Stage answer: a draft answer over the shown evidence, each fact cited by its chunk id. The
configured LLM answerer reads the question whole (with the time it asks about); the extractive
answerer reads what retrieval read and quotes the evidence. A model that fails for good is
replaced by the extractive answerer for this draft and reported (the degradation)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from citescope.agents.answerer import ExtractiveAnswerer, LLMAnswerer, generate
from citescope.agents.budget import BudgetTracker, ModelFailure
from citescope.agents.conflicts import Conflict
from citescope.agents.inspector import InspectionReport
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


@dataclass(frozen=True)
class Draft:
    text: str
    source: Literal["llm", "extractive"]
    degradation: str = ""  # why a model's draft was replaced, if it was


class Answer:
    def __init__(self, extractive: ExtractiveAnswerer, model: LLMAnswerer | None = None):
        self.extractive = extractive
        self.model = model

    async def run(self, given: AnswerInput, budget: BudgetTracker) -> Draft:
        analysis = given.analysis
        if given.by_model and self.model is not None:
            try:
                # a model reads the question whole, and the time it asks about
                text = await generate(
                    self.model,
                    with_asked_time(analysis.whole, given.as_of),
                    given.evidence,
                    given.conflicts,
                    given.feedback,
                    budget=budget,
                    advice=given.advice,
                    overview=given.overview,
                )
                return Draft(text, "llm")
            except ModelFailure as exc:
                failed = f"answerer model failed ({exc}); extractive answer used"
        else:
            failed = ""
        # the extractive answerer matches the question's own words, as retrieval read them
        text = self.extractive.run(
            analysis.question,
            given.evidence,
            given.conflicts,
            given.feedback,
            advice=given.advice,
            overview=given.overview,
        )
        return Draft(text, "extractive", failed)
