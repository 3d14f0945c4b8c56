"""Fitting the offline reranker: logistic regression and the ranking fit (coordinate ascent +
Platt scaling), on synthetic data whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from citescope.tools.rerank import FEATURES, load_weights
from citescope.tools.rerank_fit import (
    RankGroup,
    first_gold_rank,
    fit_offline_reranker,
    fit_ranking_weights,
    ranking_quality,
)

COLUMN = {name: i for i, name in enumerate(FEATURES)}


def test_fitting_recovers_the_sign_of_informative_features():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(600, len(FEATURES)))
    logits = 3.0 * x[:, 0] - 2.0 * x[:, 3] + 0.5
    y = (rng.random(600) < 1 / (1 + np.exp(-logits))).astype(int)
    fitted = fit_offline_reranker(zip(x, y, strict=False), l2=1.0)
    weights = fitted["weights"]
    assert weights[FEATURES[0]] > 1.5 and weights[FEATURES[3]] < -1.0
    noise = [abs(weights[name]) for i, name in enumerate(FEATURES) if i not in (0, 3)]
    assert max(noise) < 0.5 * min(abs(weights[FEATURES[0]]), abs(weights[FEATURES[3]]))
    assert fitted["fitted_on"] == 600


def test_fitting_rejects_rows_of_the_wrong_width():
    with pytest.raises(ValueError):
        fit_offline_reranker([([1.0, 2.0], 1)])
    with pytest.raises(ValueError):
        fit_offline_reranker([])


def _groups(rng, n: int, informative: str, decoy: str, lift: float = 0.6) -> list[RankGroup]:
    """Questions of 24 candidates in 12 docs; the gold doc's chunks stand out on `informative`,
    while `decoy` is noise that the start weights trust."""
    groups = []
    for q in range(n):
        x = rng.random((24, len(FEATURES)))
        docs = [f"q{q}-d{i // 2}" for i in range(24)]
        gold = int(rng.integers(12))
        x[2 * gold : 2 * gold + 2, COLUMN[informative]] += lift
        groups.append(RankGroup(x, docs, frozenset({f"q{q}-d{gold}"})))
    return groups


def test_the_ranking_fit_finds_the_feature_that_ranks_gold_first_and_stays_calibrated():
    rng = np.random.default_rng(3)
    start = {"intercept": -1.0, "weights": {name: 0.0 for name in FEATURES} | {"authority": 3.0}}
    train = {
        "one": _groups(rng, 60, "body_coverage", "authority"),
        "two": _groups(rng, 60, "body_coverage", "authority"),
    }
    fitted = fit_ranking_weights(train, start)
    weights = np.array([fitted["weights"][name] for name in FEATURES])
    held_out = _groups(np.random.default_rng(4), 80, "body_coverage", "authority")
    before = ranking_quality(held_out, np.array([start["weights"][name] for name in FEATURES]))
    after = ranking_quality(held_out, weights)
    assert after[0] > before[0] + 0.3 and after[1] > before[1] + 0.3
    assert weights[COLUMN["body_coverage"]] > abs(weights[COLUMN["authority"]])
    # Platt scaling: the mean probability over all candidates is close to the share of gold rows.
    x = np.concatenate([g.features for groups in train.values() for g in groups])
    p = 1 / (1 + np.exp(-(x @ weights + fitted["intercept"])))
    assert abs(p.mean() - 2 / 24) < 0.02
    assert fitted["fitted_on"] == 120 * 24


def test_the_ranking_fit_keeps_weights_that_already_rank_best():
    rng = np.random.default_rng(5)
    groups = {"s": _groups(rng, 40, "dense", "authority", lift=2.0)}  # gold always first: nothing to gain
    start = {"intercept": 0.0, "weights": {name: 0.0 for name in FEATURES} | {"dense": 50.0}}
    fitted = fit_ranking_weights(groups, start)
    scale = fitted["weights"]["dense"] / 50.0  # only Platt's positive rescaling
    assert scale > 0
    assert all(abs(fitted["weights"][n] - scale * start["weights"][n]) < 1e-6 for n in FEATURES)


def test_first_gold_rank_counts_a_document_once():
    group = RankGroup(np.zeros((4, len(FEATURES))), ["a", "a", "b", "g"], frozenset({"g"}))
    assert first_gold_rank(group, np.array([4.0, 3.0, 2.0, 1.0])) == 3
    assert first_gold_rank(group, np.array([4.0, 3.0, 2.0, 1.0]), depth=2) is None


def test_the_ranking_fit_rejects_empty_input_and_the_wrong_width():
    start = load_weights()
    with pytest.raises(ValueError):
        fit_ranking_weights({}, start)
    with pytest.raises(ValueError):
        fit_ranking_weights({"s": [RankGroup(np.zeros((2, 3)), ["a", "b"], frozenset({"a"}))]}, start)
