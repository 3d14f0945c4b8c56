"""Stage inspect: the inspector (agents/inspector.py) checks a draft against the evidence it was
written from: every citation id is one of the shown chunks, every factual sentence is cited,
supported by what it cites and not contradicted by it (agents/claim_rules.py), and every
disagreement found is disclosed. With a model judge configured (agents/inspector_judge.py), a draft
the offline checks passed is also put to it, under the question's budget. Only a draft that passes
is ever said."""

from __future__ import annotations

from dataclasses import dataclass

from citescope.agents.budget import BudgetTracker
from citescope.agents.conflicts import Conflict
from citescope.agents.inspector import InspectionReport, Inspector
from citescope.agents.inspector_judge import ModelJudge
from citescope.tools.base import EvidenceHit


@dataclass(frozen=True)
class InspectInput:
    text: str  # the draft
    evidence: list[EvidenceHit]  # what it was written from
    conflicts: list[Conflict]  # what it must disclose
    question: str  # what retrieval read
    siblings: frozenset[str] = frozenset()  # evidence about a sibling of the entity asked (Ranking.siblings)


class Inspect:
    def __init__(self, inspector: Inspector, judge: ModelJudge | None = None):
        self.inspector = inspector
        self.judge = judge

    def run(self, given: InspectInput) -> InspectionReport:
        """The offline checks (fast, no model)."""
        return self.inspector.run(given.text, given.evidence, given.conflicts, given.question, given.siblings)

    async def judged(self, given: InspectInput, report: InspectionReport, tracker: BudgetTracker) -> str | None:
        """The model judge on a draft the offline checks passed (none configured, or a draft already
        rejected: no call); the report gains its verdicts. Returns why it was skipped, if it was."""
        if self.judge is None or not report.passed:
            return None
        return await self.judge.judge(report, self.inspector.cited_claims(given.text, given.evidence), tracker)
