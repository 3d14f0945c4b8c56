"""Fitting the offline reranker's weights on labelled questions (tools/rerank_weights.json; `run.py
calibrate` fits them on training sets only, workflows/evaluation/training_sets.py).

Two fits, one layout ({"intercept", "weights": {feature: w}}):
- fit_offline_reranker: L2 logistic regression of "this chunk answers" on the features. It
  calibrates well but optimises each chunk on its own, and on paraphrased FAQ questions its
  ranking lost to the hand-set weights.
- fit_ranking_weights: coordinate ascent on what the reranker is for, the rank of the first gold
  document (MRR@10, each set weighted alike), then Platt scaling of that score so it is again a
  calibrated probability (a positive scale and a shift keep every ranking).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from citescope.tools.rerank import FEATURES, sigmoid

# Coordinate ascent tries these changes to one weight at a time and keeps any that raises the
# objective; a few rounds settle (each round is a pass over every feature). Small steps from the
# current weights: on the calibration sample, steps of up to ±2 (and Recall@5 in the objective)
# won more on the fitted sets and lost more held out on the small ones (demo, RGB).
STEPS = (-0.5, -0.25, 0.25, 0.5)
MAX_ROUNDS = 4
RECALL_AT = 5
MRR_AT = 10


@dataclass(frozen=True)
class RankGroup:
    """One question's candidates: feature rows (FEATURES order), their doc ids, the gold doc ids."""

    features: np.ndarray
    docs: Sequence[str]
    gold: frozenset[str]


def logistic_irls(x: np.ndarray, y: np.ndarray, l2: float = 1.0, iterations: int = 50) -> np.ndarray:
    """L2-regularised logistic regression by IRLS (Newton steps); [intercept, *weights], the
    intercept not penalised."""
    design = np.hstack([np.ones((len(x), 1)), x])
    penalty = np.full(design.shape[1], float(l2))
    penalty[0] = 0.0
    beta = np.zeros(design.shape[1])
    for _ in range(iterations):
        p = sigmoid(design @ beta)
        gradient = design.T @ (p - y) + penalty * beta
        hessian = (design * (p * (1 - p))[:, None]).T @ design + np.diag(penalty) + 1e-9 * np.eye(len(beta))
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return beta


def _layout(intercept: float, weights: np.ndarray, fitted_on: int) -> dict:
    return {
        "intercept": round(float(intercept), 6),
        "weights": {name: round(float(w), 6) for name, w in zip(FEATURES, weights, strict=False)},
        "fitted_on": fitted_on,
    }


def fit_offline_reranker(
    examples: Iterable[tuple[Sequence[float], int]], l2: float = 1.0, iterations: int = 50
) -> dict:
    """examples: (feature row in FEATURES order, label 1 = the chunk answers the question, else 0).
    Returns weights in the JSON layout of tools/rerank_weights.json (save with save_weights)."""
    rows = [(list(map(float, x)), int(y)) for x, y in examples]
    if not rows:
        raise ValueError("fit_offline_reranker: no examples")
    x = np.array([r for r, _ in rows])
    if x.shape[1] != len(FEATURES):
        raise ValueError(f"fit_offline_reranker: rows need {len(FEATURES)} features {FEATURES}, got {x.shape[1]}")
    beta = logistic_irls(x, np.array([label for _, label in rows], dtype=np.float64), l2, iterations)
    return _layout(beta[0], beta[1:], len(rows))


def first_gold_rank(group: RankGroup, scores: np.ndarray, depth: int = MRR_AT) -> int | None:
    """1-based rank of the first gold document when candidates are ordered by score (a document
    counts once, at its best chunk; ties keep candidate order); None if not in the top `depth`."""
    seen: set[str] = set()
    for i in np.argsort(-scores, kind="stable"):
        doc = group.docs[i]
        if doc in seen:
            continue
        seen.add(doc)
        if doc in group.gold:
            return len(seen)
        if len(seen) >= depth:
            return None
    return None


def ranking_quality(groups: Sequence[RankGroup], weights: np.ndarray) -> tuple[float, float]:
    """(Recall@5, MRR@10) of the groups' candidates reordered by features . weights."""
    if not groups:
        return 0.0, 0.0
    ranks = [first_gold_rank(g, g.features @ weights) for g in groups]
    recall = sum(1 for r in ranks if r is not None and r <= RECALL_AT) / len(ranks)
    return recall, sum(1.0 / r for r in ranks if r is not None) / len(ranks)


def _objective(sets: Sequence[Sequence[RankGroup]], weights: np.ndarray) -> float:
    return float(np.mean([ranking_quality(groups, weights)[1] for groups in sets]))


def fit_ranking_weights(
    groups_by_set: Mapping[str, Sequence[RankGroup]],
    start: Mapping,
    features: Sequence[str] = FEATURES,
    steps: Sequence[float] = STEPS,
    max_rounds: int = MAX_ROUNDS,
) -> dict:
    """Coordinate ascent from `start` (a weights layout) on MRR@10 averaged over the sets,
    changing only the weights of `features`, then Platt scaling on every candidate so the score
    is a probability again."""
    sets = [list(groups) for groups in groups_by_set.values() if groups]
    if not sets:
        raise ValueError("fit_ranking_weights: no questions")
    if any(g.features.shape[1:] != (len(FEATURES),) for groups in sets for g in groups):
        raise ValueError(f"fit_ranking_weights: feature rows need {len(FEATURES)} columns {FEATURES}")
    unknown = set(features) - set(FEATURES)
    if unknown:
        raise ValueError(f"fit_ranking_weights: unknown features {sorted(unknown)}")
    weights = np.array([float(start["weights"][name]) for name in FEATURES])
    best = _objective(sets, weights)
    for _ in range(max_rounds):
        improved = False
        for j in (FEATURES.index(name) for name in features):
            for step in steps:
                trial = weights.copy()
                trial[j] += step
                value = _objective(sets, trial)
                if value > best + 1e-12:
                    best, weights, improved = value, trial, True
        if not improved:
            break
    x = np.concatenate([g.features for groups in sets for g in groups])
    y = np.concatenate([[float(d in g.gold) for d in g.docs] for groups in sets for g in groups])
    if 0 < y.sum() < len(y):
        scale, shift = _platt(x @ weights, y)
    else:  # one class only: nothing to calibrate against, keep the scale
        scale, shift = 1.0, float(start["intercept"])
    return {**_layout(shift, scale * weights, len(y)), "objective": round(best, 6)}


def _platt(logits: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(a, b) with sigmoid(a * logit + b) calibrated on the labels; a stays positive so the
    ranking the ascent found is kept."""
    intercept, slope = logistic_irls(logits[:, None], labels, l2=1e-6)
    if slope > 0:
        return float(slope), float(intercept)
    rate = float(np.clip(labels.mean(), 1e-6, 1 - 1e-6))  # no usable slope: match the base rate
    return 1.0, float(np.log(rate / (1 - rate)) - np.median(logits))
