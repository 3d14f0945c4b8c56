"""Evaluation metrics on hand-made cases whose right values are worked out by hand."""

from __future__ import annotations

import math

import pytest

from citescope.workflows.evaluation.datasets import Question
from citescope.workflows.metrics import (
    Outcome,
    answer_hit,
    answer_scores,
    answer_scores_by_qtype,
    citation_scores,
    group_by,
    latency_summary,
    ranked_doc_ids,
    recall_at_k,
    reciprocal_rank,
    retrieval_scores,
    roc_auc,
    states_any,
)


def test_ranked_doc_ids_keep_each_doc_at_its_best_rank():
    assert ranked_doc_ids(["d2", "d1", "d2", "d3", "d1"]) == ["d2", "d1", "d3"]


def test_recall_at_k_is_a_hit_when_any_gold_doc_is_in_the_first_k():
    ranked = ["a", "b", "c", "d"]
    assert recall_at_k(ranked, ["c"], 2) == 0.0
    assert recall_at_k(ranked, ["c"], 3) == 1.0
    assert recall_at_k(ranked, ["x", "b"], 2) == 1.0  # one of several gold docs is enough
    assert recall_at_k(ranked, [], 4) == 0.0


def test_reciprocal_rank_uses_the_first_gold_doc_within_k():
    ranked = ["a", "b", "c"]
    assert reciprocal_rank(ranked, ["c", "b"]) == pytest.approx(0.5)
    assert reciprocal_rank(ranked, ["c"], k=2) == 0.0
    assert reciprocal_rank(ranked, ["z"]) == 0.0


def test_retrieval_scores_average_over_questions_at_doc_level():
    # chunk hits -> docs first: q1 gold at doc rank 2, q2 gold at rank 1, q3 missed
    q1 = ranked_doc_ids(["d1", "d1", "d2"])
    runs = [(q1, ["d2"]), (["g"], ["g"]), (["x", "y"], ["g"])]
    scores = retrieval_scores(runs, ks=(1, 2), mrr_k=10)
    assert scores == {
        "recall@1": pytest.approx(1 / 3),
        "recall@2": pytest.approx(2 / 3),
        "mrr@10": pytest.approx((0.5 + 1.0 + 0.0) / 3),
        "n": 3,
    }


def test_answer_hit_ignores_citations_and_whitespace():
    answer = "截止时间是 2021年12月20日 11:00【drag-589565755a#body-0】。"
    assert answer_hit(answer, [["2021年12月20日11:00"]])
    assert not answer_hit(answer, [["2021年12月19日11:00"]])


def test_answer_hit_needs_every_group_and_any_string_inside_one():
    answer = "用汉语、法语和英语教学【drag-e36db8fabc】"
    assert answer_hit(answer, [["汉语"], ["法语"], ["英语", "English"]])
    assert not answer_hit(answer, [["汉语"], ["德语"]])
    assert not answer_hit(answer, [])  # an unanswerable question has nothing to hit


def test_answer_hit_reads_gold_and_answer_without_markup_debris():
    # the gold span kept the empty brackets of the page; the answer quotes it without them
    assert answer_hit(
        "由JR东日本委托子公司JR神奈川企画开发营运【cmrc-DEV_9#body-0】。",
        [["由JR东日本委托子公司JR神奈川企画开发（）营运"]],
    )
    assert not answer_hit("由JR东日本营运【cmrc-DEV_9#body-0】。", [["由JR东日本委托子公司JR神奈川企画开发（）营运"]])


def test_answer_hit_does_not_count_the_citation_id_itself():
    # the gold string only occurs inside the citation marker
    assert not answer_hit("见来源【cmrc-DEV_0】", [["DEV_0"]])


def test_citation_scores_on_doc_ids_with_invalid_ids_counted_wrong():
    evidence = {"d1#body-0": "d1", "d1#body-1": "d1", "d2#body-0": "d2"}
    # two chunks of gold d1, one of non-gold d2, one id never shown -> 2 of 4 right; d1 of {d1, d3} cited
    precision, recall = citation_scores(["d1#body-0", "d1#body-1", "d2#body-0", "made-up#x"], ["d1", "d3"], evidence)
    assert precision == pytest.approx(2 / 4)
    assert recall == pytest.approx(1 / 2)
    assert citation_scores([], ["d1"], evidence) == (0.0, 0.0)
    assert citation_scores(["d1#body-0", "d1#body-0"], ["d1"], evidence) == (1.0, 1.0)  # repeats count once


def test_states_any_finds_a_fake_answer_despite_spacing():
    assert states_any("报名截止 2021年12月19日 11:00【x-1】", ["2021年12月19日11:00"])
    assert not states_any("报名截止 2021年12月20日", ["2021年12月19日"])
    assert not states_any("任何回答", [""])


def test_latency_summary_percentiles():
    summary = latency_summary([10, 20, 30, 40, 100])
    assert summary["p50"] == 30
    assert summary["p95"] == pytest.approx(88.0)  # linear interpolation between 40 and 100
    assert summary["n"] == 5
    assert math.isnan(latency_summary([])["p50"])


def test_group_by_keeps_first_seen_order():
    assert group_by(["b1", "a1", "b2"], lambda s: s[0]) == {"b": ["b1", "b2"], "a": ["a1"]}


def _q(qid, qtype, answerable=True, answers=("A",), gold=("d1",), **extra) -> Question:
    return Question(
        qid=qid,
        question="?",
        qtype=qtype,
        answerable=answerable,
        answers=list(answers) if answerable else [],
        gold_doc_ids=list(gold),
        **extra,
    )


def test_answer_scores_refusal_conflict_and_fake_answers():
    questions = [
        _q("ok", "extractive"),  # answered right with a gold citation
        _q("wrong", "extractive"),  # answered wrong, cites a non-gold doc
        _q("over", "extractive"),  # refused although answerable
        _q("none", "negative", answerable=False, gold=()),  # refused correctly
        _q("none2", "negative", answerable=False, gold=()),  # answered although unanswerable
        _q("cf1", "conflict", answers=("20日",), expect_conflict=True, fake_answers=["19日"]),
        _q("cf2", "conflict", answers=("20日",), expect_conflict=True, fake_answers=["19日"]),
        _q("cf3", "counterfactual", answers=("20日",), gold=(), expect_conflict=True, fake_answers=["19日"]),
    ]
    shown = {"d1#0": "d1", "d9#0": "d9"}
    outcomes = {
        o.qid: o
        for o in [
            Outcome(qid="ok", answer="是A【d1#0】", cited_ids=["d1#0"], evidence=shown, latency_ms=10),
            Outcome(qid="wrong", answer="是B【d9#0】", cited_ids=["d9#0"], evidence=shown, latency_ms=20),
            Outcome(qid="over", refused=True, latency_ms=30),
            Outcome(qid="none", refused=True),
            Outcome(qid="none2", answer="瞎说"),
            Outcome(
                qid="cf1",
                answer="资料不一致：20日或19日【d1#0】",
                cited_ids=["d1#0"],
                evidence=shown,
                conflict_flagged=True,
            ),
            Outcome(qid="cf2", answer="截止19日【d1#0】", cited_ids=["d1#0"], evidence=shown),  # fake stated as fact
            # no gold doc: its citations are not scored (nothing it cites could be right)
            Outcome(qid="cf3", answer="截止19日【d9#0】", cited_ids=["d9#0"], evidence=shown, conflict_flagged=True),
        ]
    }
    scores = answer_scores(questions, outcomes)
    assert scores["n"] == 8
    # answered answerable: ok (hit), wrong (miss), cf1 (hit), cf2 (miss), cf3 (miss)
    assert scores["answer_hit"] == pytest.approx(2 / 5)
    assert scores["answer_hit_all_answerable"] == pytest.approx(2 / 6)
    assert scores["citation_precision"] == pytest.approx(3 / 4)
    assert scores["citation_recall"] == pytest.approx(3 / 4)
    assert scores["refusal_recall"] == pytest.approx(1 / 2)
    assert scores["false_refusal_rate"] == pytest.approx(1 / 6)
    assert scores["conflict_flag_rate"] == pytest.approx(2 / 3)
    assert scores["false_flag_rate"] == 0.0
    assert scores["fake_answer_asserted"] == pytest.approx(1 / 3)
    assert scores["latency_ms"]["n"] == 3

    by_type = answer_scores_by_qtype(questions, outcomes)
    assert set(by_type) == {"all", "extractive", "negative", "conflict", "counterfactual"}
    assert by_type["negative"]["refusal_recall"] == pytest.approx(1 / 2)
    assert math.isnan(by_type["negative"]["answer_hit"])  # nothing answerable there


def test_roc_auc_is_the_share_of_positive_negative_pairs_ordered_right():
    assert roc_auc([0.9, 0.8], [0.1, 0.2]) == 1.0 and roc_auc([0.1], [0.9]) == 0.0
    assert roc_auc([0.5], [0.5]) == 0.5  # a tie counts half
    assert roc_auc([0.9, 0.3], [0.5, 0.1]) == 0.75 and roc_auc([], [0.1]) is None
