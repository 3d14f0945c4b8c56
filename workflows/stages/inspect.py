"""Stage inspect: the inspector (agents/inspector.py) checks a draft against the evidence it was
written from: every citation id is one of the shown chunks, every factual sentence is cited and
supported by what it cites, and every disagreement found is disclosed. Only a draft that passes
is ever said."""

from __future__ import annotations

from dataclasses import dataclass

from citescope.agents.conflicts import Conflict
from citescope.agents.inspector import InspectionReport, Inspector
from citescope.tools.base import EvidenceHit


@dataclass(frozen=True)
class InspectInput:
    text: str  # the draft
    evidence: list[EvidenceHit]  # what it was written from
    conflicts: list[Conflict]  # what it must disclose
    question: str  # what retrieval read


class Inspect:
    def __init__(self, inspector: Inspector):
        self.inspector = inspector

    def run(self, given: InspectInput) -> InspectionReport:
        return self.inspector.run(given.text, given.evidence, given.conflicts, given.question)
