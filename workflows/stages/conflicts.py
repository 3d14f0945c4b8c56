"""The conflict check (agents/conflicts/) as the pipeline uses it, twice: after the rank, the
sources of a disagreement just below the evidence cut are brought into what is shown
(`with_sources`); before the answer, the disagreements among the shown evidence are found
(`run`), which the answerer must disclose, the inspector checks are disclosed, and a refusal names."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from citescope.agents import conflicts as conflict_check
from citescope.agents.conflicts import Conflict
from citescope.knowledge.lexicon import Lexicon
from citescope.tools.base import EvidenceHit
from citescope.workflows.stages.rank import EvidenceLimits, Ranking, with_pinned


@dataclass(frozen=True)
class ConflictInput:
    question: str  # what retrieval read
    evidence: list[EvidenceHit]
    as_of: str | None = None  # the time the question asks about: its values lead nearest that time


@dataclass(frozen=True)
class SourcesInput:
    question: str
    ranking: Ranking  # the evidence shown, and everything the skills gathered in rank order
    pinned: Sequence[str]  # chunk ids that keep their place
    limits: EvidenceLimits
    as_of: str | None = None


class CheckConflicts:
    def __init__(self, lexicon: Lexicon):
        self.lexicon = lexicon

    def run(self, given: ConflictInput) -> list[Conflict]:
        """The disagreements among the evidence that bear on the question ([] when none)."""
        return conflict_check.detect_conflicts(given.question, given.evidence, self.lexicon, as_of=given.as_of)

    def with_sources(self, given: SourcesInput) -> list[EvidenceHit]:
        """The shown evidence plus the sources of any conflict among everything the skills gathered:
        a disagreement between a shown chunk and one ranked just below the cut is disclosed, not
        hidden by the cut. Each source takes the place of the lowest-ranked unpinned chunk. Below
        the cut only sources about one subject count (one product, one document title): there,
        two articles written alike about two cities are more often what the skills found."""
        shown, ranked = given.ranking.shown, given.ranking.ranked
        scanned = ranked[: given.limits.conflict_scan_top_n]
        if len(scanned) <= len(shown):
            return shown  # nothing beyond what is shown: the check on the evidence sees it all
        by_id = {hit.chunk_id: hit for hit in scanned}
        found = conflict_check.detect_conflicts(given.question, scanned, self.lexicon, as_of=given.as_of)
        sources = [
            value.chunk_id
            for conflict in found
            if conflict_check.one_subject([by_id[value.chunk_id] for value in conflict.values])
            for value in conflict.values
        ]
        if not sources:
            return shown
        return with_pinned(shown, ranked, [*given.pinned, *sources], given.limits.top_n)
