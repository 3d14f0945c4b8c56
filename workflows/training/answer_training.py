"""`run.py train answers`: the reader's pair scorer (agents/pair_scorer.py) on CMRC 2018 and PAWS-X.

A cross-encoder (workflows/training/cross_encoder_training.py) reads `pair_scorer.pair_text(question,
candidate)` and a two-way head gives answers / does not answer (workflows/training/answer_data.py
makes the examples). Validation on the valid articles and PAWS-X's valid rows: accuracy, ROC AUC of
P(answers), and at the end, through the engine, the P(answers) below which at most 5% of the valid
answering windows fall (`answers_above` in the card: a reference point; a KB's refusal threshold is
its own, from self-calibration).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from citescope.agents.pair_scorer import ANSWERS, LABELS
from citescope.workflows.metrics import roc_auc
from citescope.workflows.training.answer_data import USED_SOURCES, answer_examples, read_answer_data
from citescope.workflows.training.cross_encoder_training import (
    CrossEncoderSettings,
    CrossEncoderTask,
    train_cross_encoder,
)
from citescope.workflows.training.kb_answer_data import (
    KB_LICENCE,
    KB_SHARE,
    KB_SOURCE,
    frozen_kb_answer_examples,
    repeated_to_share,
)

MISSED_ANSWERS = 0.05  # answers_above: the share of valid answering windows scored below it


@dataclass
class AnswerTrainingSettings(CrossEncoderSettings):
    data_dir: Path = Path()
    max_tokens: int = 128
    sentences: bool = False  # also teach which sentence of a passage answers (answer_data.answer_examples)
    replies: bool = False  # also FAQ-shaped entries: a sibling question's reply does not answer (answer_data)
    yes_no: bool = False  # also each factoid question asked as a yes/no one (answer_data.yes_no_question)
    kb: Path | None = None  # a shop's KB: examples made of its own documents (kb_answer_data)


KB_EXAMPLES_NAME = "kb-answers.jsonl"  # the KB's examples as the run first made them, read back on resume


def answer_metrics(probabilities: np.ndarray, gold: list[int]) -> dict[str, Any]:
    answers = probabilities[:, ANSWERS] if len(probabilities) else np.zeros(0)
    predicted = [ANSWERS if p >= 0.5 else 1 - ANSWERS for p in answers]
    positive = [float(p) for p, g in zip(answers, gold, strict=True) if g == ANSWERS]
    negative = [float(p) for p, g in zip(answers, gold, strict=True) if g != ANSWERS]
    return {
        "accuracy": round(float(np.mean([p == g for p, g in zip(predicted, gold, strict=True)])), 4) if gold else None,
        "auc": roc_auc(positive, negative),
        "answers_missed": round(float(np.mean([p < 0.5 for p in positive])), 4) if positive else None,
        "non_answers_passed": round(float(np.mean([p >= 0.5 for p in negative])), 4) if negative else None,
    }


def choose_answers_above(probabilities: np.ndarray, gold: list[int]) -> dict[str, Any]:
    positive = sorted(float(p) for p, g in zip(probabilities[:, ANSWERS], gold, strict=True) if g == ANSWERS)
    negative = [float(p) for p, g in zip(probabilities[:, ANSWERS], gold, strict=True) if g != ANSWERS]
    threshold = positive[int(MISSED_ANSWERS * len(positive))] if positive else 0.0
    return {
        "answers_above": {
            "threshold": round(threshold, 4),
            "answers_missed": MISSED_ANSWERS,
            "non_answers_refused": round(float(np.mean([p < threshold for p in negative])), 4) if negative else None,
            "valid_examples": len(gold),
        }
    }


def answers_task(settings: AnswerTrainingSettings) -> CrossEncoderTask:
    questions, pairs, counts = read_answer_data(settings.data_dir)
    train = answer_examples(
        questions["train"], pairs["train"], settings.seed, settings.sentences, settings.replies, settings.yes_no
    )
    valid = answer_examples(
        questions["valid"], pairs["valid"], 0, settings.sentences, settings.replies, settings.yes_no
    )
    sources: dict[str, Any] = {s.name: {"licence": s.licence, **counts[s.name]} for s in USED_SOURCES}
    if settings.kb is not None:
        Path(settings.out_dir).mkdir(parents=True, exist_ok=True)
        saved = Path(settings.out_dir) / KB_EXAMPLES_NAME
        kb_split, kb_counts = frozen_kb_answer_examples(settings.kb, saved, settings.seed, settings.resume)
        repeated = repeated_to_share(kb_split["train"], len(train))
        train = train + repeated
        random.Random(f"answers-kb:{settings.seed}").shuffle(train)
        valid = valid + kb_split["valid"]
        sources[KB_SOURCE] = {
            "licence": KB_LICENCE,
            "commercial": True,
            "kb": str(settings.kb),
            "repeated": len(repeated) // max(1, len(kb_split["train"])),
            "share": KB_SHARE,
            **kb_counts,
        }
    return CrossEncoderTask(
        kind="answers",
        task="pair scorer: does the candidate answer the question (agents/pair_scorer.py)",
        labels=LABELS,
        train=train,
        valid=valid,
        data={
            "sources": sources,
            "build": "commercial (default)",
            "candidates": ", ".join(
                ["passage windows"]
                + (["single sentences"] if settings.sentences else [])
                + (["FAQ-shaped entries with sibling questions' replies"] if settings.replies else [])
                + (["factoid questions asked as yes/no ones"] if settings.yes_no else [])
            ),
            "held_out": "the claim benchmark's articles (reader_holdout.is_reader_bench_title); valid articles by "
            "pair_data.split_of_title, PAWS-X by its own split",
        },
        metrics=answer_metrics,
        choose=choose_answers_above,
    )


def train_answers(settings: AnswerTrainingSettings) -> dict[str, Any]:
    """Run (or resume) a pair-scorer run; returns the last log record."""
    return train_cross_encoder(settings, answers_task(settings))
