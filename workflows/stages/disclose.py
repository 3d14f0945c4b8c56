"""Stage disclose: what the customer is told, and in what words. An answer that passed the
inspector is said with its citations (and, for a model the shop lacks beside one it sells, that
the missing one was not found); anything else is a fixed refusal, never generated: the plain one,
the one that says the sources disagree when the conflict check found they do, the deadline one,
or the one naming a model the shop lacks. Then the sensitive-word filter, when configured (mask,
or the refusal), and the question's own language (an English refusal) and script (traditional
or simplified Chinese)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from citescope.agents.citations import SentenceCutter, normalize_citations
from citescope.agents.conflicts import Conflict
from citescope.agents.extractive import ExtractiveAnswerer
from citescope.agents.inspector import InspectionReport
from citescope.agents.prompts import load_prompt
from citescope.agents.query_analysis import QueryAnalyzer
from citescope.knowledge.chinese_script import in_simplified, in_traditional, written_in_traditional
from citescope.knowledge.markup import strip_markup
from citescope.tools.base import EvidenceHit
from citescope.workflows.compliance import SensitiveWordFilter
from citescope.workflows.result import Citation
from citescope.workflows.stages.analyse import Analysis
from citescope.workflows.stages.answer import Draft
from citescope.workflows.stages.stream import Said
from citescope.workflows.traces import StageClock


@dataclass(frozen=True)
class RefusalTexts:
    """The fixed refusals (prompts/refusal*.md), loaded once at warm-up."""

    plain: str
    conflict: str  # the evidence disagrees with itself: the customer learns why, no side is asserted
    deadline: str  # the question's deadline passed before an answer (a busy service): try again later
    english: Mapping[str, str]  # each Chinese refusal's English version (prompts/*_en.md)
    unknown_model: Mapping[bool, str]  # English? -> the refusal naming models the shop's series lacks

    @classmethod
    def load(cls) -> RefusalTexts:
        plain, conflict, deadline = (
            load_prompt(name).strip() for name in ("refusal", "refusal_conflict", "refusal_deadline")
        )
        return cls(
            plain=plain,
            conflict=conflict,
            deadline=deadline,
            english={
                plain: load_prompt("refusal_en").strip(),
                conflict: load_prompt("refusal_conflict_en").strip(),
                deadline: load_prompt("refusal_deadline_en").strip(),
            },
            unknown_model={
                False: load_prompt("refusal_unknown_model").strip(),
                True: load_prompt("refusal_unknown_model_en").strip(),
            },
        )

    def for_conflicts(self, conflicts: Sequence[Conflict]) -> str:
        return self.conflict if conflicts else self.plain

    def is_refusal(self, text: str, report: InspectionReport) -> bool:
        """A draft that only says one of the refusals (an answerer may write one itself)."""
        return not report.cited_ids and any(
            text.strip() == t or t in text for t in (self.plain, self.conflict, *self.english.values())
        )


@dataclass(frozen=True)
class DiscloseInput:
    typed: str  # the question as asked, in its own script
    analysis: Analysis
    evidence: list[EvidenceHit]  # the evidence shown ([] when the deadline passed first)
    conflicts: list[Conflict]  # the disagreements found among it
    refusal: str | None = None  # why no answer was written: "deadline", or the gate's refusal
    draft: Draft | None = None  # the last draft, when one was written
    report: InspectionReport | None = None  # the inspector's report on it
    said: Said | None = None  # what a streamed draft already showed the customer (workflows/stages/stream.py)


class Disclosure(BaseModel):
    """What the customer is told. Every assignment passes strip_markup, as QAResult.answer does."""

    model_config = ConfigDict(validate_assignment=True)

    answer: str
    refused: bool = False
    refusal_reason: str = ""
    answer_source: Literal["llm", "extractive", "refusal"] = "refusal"
    citations: list[Citation] = Field(default_factory=list)
    compliance: list[str] = Field(default_factory=list)  # sensitive words the answer had

    @field_validator("answer")
    @classmethod
    def _answer_without_markup(cls, answer: str) -> str:
        return strip_markup(answer)


class Disclose:
    def __init__(
        self,
        texts: RefusalTexts,
        extractive: ExtractiveAnswerer,
        analyzer: QueryAnalyzer,
        compliance: SensitiveWordFilter | None = None,
    ):
        """extractive: what tells an English question and says which parts were not found.
        analyzer: its entity index knows the shop's model series. compliance: None when off."""
        self.texts = texts
        self.extractive = extractive
        self.analyzer = analyzer
        self.compliance = compliance

    def run(self, given: DiscloseInput, clock: StageClock) -> Disclosure:
        if given.said is not None:  # already shown, screened and in its script: only what follows is added
            return self._streamed(given, given.said)
        told = self._settled(given)
        if self.compliance is not None and not told.refused:  # the settled answer, as the customer sees it
            with clock.span("compliance"):
                screened = self.compliance.run(told.answer)
                told.compliance = screened.hits
                if screened.action == "refuse":
                    told = Disclosure(
                        answer=self.texts.plain, refused=True, refusal_reason="sensitive", compliance=screened.hits
                    )
                else:
                    told.answer = screened.text
        if told.refused and self.extractive.asked_in_english(given.analysis.question, given.evidence):
            told.answer = self.texts.english.get(told.answer, told.answer)
        if written_in_traditional(given.typed):  # answered in the script it was asked in
            told.answer = in_traditional(told.answer)
        elif written_in_traditional(told.answer):  # a traditional page quoted to a simplified question
            told.answer = in_simplified(told.answer)
        return told

    def _settled(self, given: DiscloseInput) -> Disclosure:
        """The answer or the refusal, before the filter, language and script."""
        question, features = given.analysis.question, given.analysis.features
        if given.refusal == "deadline":
            return Disclosure(answer=self.texts.deadline, refused=True, refusal_reason="deadline")
        if given.refusal == "unknown_model":
            english = self.extractive.asked_in_english(question, given.evidence)
            named = self.texts.unknown_model[english].format(models="、".join(features.unknown_models))
            return Disclosure(answer=named, refused=True, refusal_reason="unknown_model")
        if given.refusal is not None:  # the gate's: weak evidence that disagrees with itself still says so
            return Disclosure(
                answer=self.texts.for_conflicts(given.conflicts), refused=True, refusal_reason=given.refusal
            )
        draft, report = given.draft, given.report
        if draft is None or report is None or not report.passed or report.invalid_ids:
            return self._unsupported(given.conflicts)
        if self.texts.is_refusal(draft.text, report):
            return self._unsupported(given.conflicts)
        by_id = {hit.chunk_id: hit for hit in given.evidence}
        told = Disclosure(
            answer=normalize_citations(draft.text, known_ids=by_id.keys()).strip(),
            answer_source=draft.source,
            citations=[Citation.of(by_id[i]) for i in report.cited_ids],
        )
        told.answer = self._parts_not_found(given, told.answer)
        return told

    def say(self, sentence: str, typed: str, known_ids: Collection[str] = ()) -> tuple[str, list[str]] | None:
        """One sentence of a streamed answer as the customer reads it: citations canonical, no
        markup, sensitive words masked, in the question's script; with the words the filter found.
        None: the filter refuses it (it is withheld; what was shown before it stands)."""
        text, hits = strip_markup(normalize_citations(sentence, known_ids=known_ids)), []
        if self.compliance is not None:
            screened = self.compliance.run(text)
            if screened.action == "refuse":
                return None
            text, hits = screened.text, screened.hits
        if written_in_traditional(typed):
            text = in_traditional(text)
        elif written_in_traditional(text):
            text = in_simplified(text)
        return text, hits

    def _streamed(self, given: DiscloseInput, said: Said) -> Disclosure:
        """A streamed answer: what was shown, then a sentence for each model the shop lacks."""
        assert given.draft is not None and given.report is not None, "a streamed answer has a draft"
        by_id = {hit.chunk_id: hit for hit in given.evidence}
        told = Disclosure(
            answer=said.text,
            answer_source=given.draft.source,
            citations=[Citation.of(by_id[i]) for i in given.report.cited_ids],
            compliance=list(said.compliance),
        )
        added = self._parts_not_found(given, told.answer)[len(told.answer) :]
        for sentence in SentenceCutter().finish(added):
            shown = self.say(sentence, given.typed)
            if shown is not None:
                told.answer += shown[0]
                told.compliance += [hit for hit in shown[1] if hit not in told.compliance]
        return told

    def _parts_not_found(self, given: DiscloseInput, answer: str) -> str:
        """The answer, and that a model the question names and the shop's series lacks was not found."""
        features = given.analysis.features
        if not features.unknown_models:
            return answer
        # 火焰7和火焰8: the 8 is said to be missing; not a phone model beside a power bank (its series is
        # the shop's phone cases, not what the question is about)
        series = self.analyzer.index.other_models(features.canonical)
        asked = {p.product_id for p in features.focus_products}
        missing = [m for m in features.unknown_models if m not in answer and series.get(m, set()) & asked]
        english = self.extractive.asked_in_english(given.analysis.question, given.evidence)
        return self.extractive.with_parts_not_found(answer, missing, english)

    def _unsupported(self, conflicts: Sequence[Conflict]) -> Disclosure:
        """No draft passed the inspector: the refusal, nothing generated is said."""
        return Disclosure(
            answer=self.texts.for_conflicts(conflicts), refused=True, refusal_reason="no_supported_answer"
        )
