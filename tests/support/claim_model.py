"""Cross-encoder model folders without training (no torch): the stock encoder as an empty delta
and a head given by the test, so the runtime's loading, scoring and wiring of the claim checker and
the pair scorer can be tested in CI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from citescope.agents import pair_scorer
from citescope.agents.claim_reader import LABELS
from citescope.knowledge.e5_delta import save_delta
from citescope.knowledge.e5_model_file import E5ModelFile, bundled_model_path


def write_claim_model(folder: Path, weight: np.ndarray, bias: np.ndarray, labels: tuple[str, ...] = LABELS) -> Path:
    """weight [labels, 384], bias [labels]: the head over the stock encoder's unit vector x LOGIT_SCALE."""
    folder.mkdir(parents=True, exist_ok=True)
    base = bundled_model_path("enpt")  # the small bundled file: quick to rebuild
    save_delta(E5ModelFile.read(base), base, folder / "encoder-delta.npz")
    with (folder / "head.npz").open("wb") as handle:
        np.savez(handle, weight=weight.astype(np.float32), bias=bias.astype(np.float32))
    card = {"labels": list(labels), "base_variant": "enpt", "task": "test: stock encoder, a given head"}
    (folder / "card.json").write_text(json.dumps(card), encoding="utf-8")
    return folder


def constant_claim_model(folder: Path, label: str) -> Path:
    """A head that answers `label` whatever it reads (a zero weight, a bias for that label)."""
    bias = np.full(len(LABELS), -5.0)
    bias[LABELS.index(label)] = 5.0
    return write_claim_model(folder, np.zeros((len(LABELS), 384)), bias)


def constant_pair_model(folder: Path, answers: float) -> Path:
    """A pair scorer that gives P(answers) = `answers` whatever it reads."""
    logit = float(np.log(answers / (1 - answers)))
    bias = np.array([logit, 0.0]) if pair_scorer.LABELS[0] == "answers" else np.array([0.0, logit])
    return write_claim_model(folder, np.zeros((2, 384)), bias, pair_scorer.LABELS)
