"""`run.py train claims`: the reader's claim checker (agents/claim_reader.py), trained on CMRC passages.

A cross-encoder (workflows/training/cross_encoder_training.py) reads `claim_reader.pair_text(claim,
evidence)` and a three-way head gives supported / contradicted / not enough info. Validation:
accuracy and how often each gold label is called "contradicted", on the valid articles' examples
(the same ones every run), in torch at every checkpoint and through the engine at the end, where
the card's threshold is chosen (`choose_reject_above`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from citescope.agents.claim_reader import LABELS, pair_text
from citescope.workflows.training.claim_data import SOURCE, ClaimExample, claim_examples, read_passages, read_questions
from citescope.workflows.training.cross_encoder_training import (
    CrossEncoderSettings,
    CrossEncoderTask,
    train_cross_encoder,
)
from citescope.workflows.training.pair_data import LabelledText

CONTRADICTED = LABELS.index("contradicted")


@dataclass
class ClaimTrainingSettings(CrossEncoderSettings):
    data_dir: Path = Path()
    generator_seeds: int = 3  # each seed draws other sentences of the passages
    # the threshold stored in the card: at most this share of valid non-contradictions rejected
    max_false_rejections: float = 0.03


def rejection_rates(probabilities: np.ndarray, gold: list[int]) -> dict[str, Any]:
    """Accuracy, and per gold label the share predicted "contradicted" (what the inspector rejects)."""
    predicted = [int(row.argmax()) for row in probabilities]
    out: dict[str, Any] = {"accuracy": round(float(np.mean([p == g for p, g in zip(predicted, gold, strict=True)])), 4)}
    for index, label in enumerate(LABELS):
        chosen = [p == CONTRADICTED for p, g in zip(predicted, gold, strict=True) if g == index]
        out[f"{label}_rejected"] = round(float(np.mean(chosen)), 4) if chosen else None
    return out


def claims_task(settings: ClaimTrainingSettings) -> CrossEncoderTask:
    passages, counts = read_passages(settings.data_dir)
    questions = read_questions(settings.data_dir)

    def texts(examples: list[ClaimExample]) -> list[LabelledText]:
        return [LabelledText(pair_text(e.claim, e.evidence), e.label) for e in examples]

    return CrossEncoderTask(
        kind="claims",
        task="claim check: supported / contradicted / not_enough_info (agents/claim_reader.py)",
        labels=LABELS,
        train=texts(claim_examples(passages["train"], list(range(settings.generator_seeds)), questions)),
        valid=texts(claim_examples(passages["valid"], [0], questions)),
        data={
            "source": {"name": SOURCE.name, "licence": SOURCE.licence, "passages": counts},
            "held_out": "the claim benchmark's articles (reader_holdout.is_reader_bench_title) and families "
            "(perturbations.HELD_OUT_FAMILIES); valid articles by pair_data.split_of_title",
        },
        metrics=rejection_rates,
        choose=lambda p, gold: {
            "reject_above": choose_reject_above(p[:, CONTRADICTED].tolist(), gold, settings.max_false_rejections)
        },
    )


def train_claims(settings: ClaimTrainingSettings) -> dict[str, Any]:
    """Run (or resume) a claim-checker run; returns the last log record."""
    return train_cross_encoder(settings, claims_task(settings))


def choose_reject_above(contradicted: list[float], gold: list[int], max_false: float) -> dict[str, Any]:
    """The lowest P(contradicted) threshold at which at most `max_false` of the valid claims that
    are not contradictions (supported, not enough info) would be rejected, and what it catches:
    chosen on the training data's valid articles, never on a benchmark's items."""
    others = sorted((p for p, g in zip(contradicted, gold, strict=True) if g != CONTRADICTED), reverse=True)
    caught = [p for p, g in zip(contradicted, gold, strict=True) if g == CONTRADICTED]
    allowed = int(max_false * len(others))
    threshold = others[allowed] if allowed < len(others) else 0.0
    return {
        "threshold": round(float(threshold), 4),
        "max_false_rejections": max_false,
        "false_rejections": round(sum(p > threshold for p in others) / len(others), 4) if others else None,
        "contradictions_rejected": round(sum(p > threshold for p in caught) / len(caught), 4) if caught else None,
        "valid_examples": len(gold),
    }
