"""The retrieve stage (a real ReActAgent replaying the policy's plan through the budgeted toolkit)
and the rank stage (the calibrated rerank cut to the evidence shown), each alone."""

from __future__ import annotations

import asyncio

import pytest

from citescope.agents.budget import BudgetTracker
from citescope.agents.pair_scorer import PairScorer
from citescope.agents.query_analysis import Entity
from citescope.knowledge.filters import SearchFilters
from citescope.workflows.stages.analyse import AnalyseInput
from citescope.workflows.stages.plan import PlanInput
from citescope.workflows.stages.rank import EvidenceLimits, Rank, RankInput
from citescope.workflows.stages.retrieve import RetrieveInput, planner_message
from tests.support.claim_model import constant_pair_model
from tests.workflows.stages.conftest import analysed, question_run, ranked, retrieved


def test_offline_the_agent_plays_the_policys_plan_call_by_call(pipeline):
    analysis = analysed(pipeline, "XZ-3000 充电宝多少钱？")
    found = retrieved(pipeline, analysis)
    assert found.source == "offline" and found.degradations == []
    assert [call.name for call in found.tool_calls] == ["product_lookup", "hybrid_search", "rerank"]
    assert all(call.outcome == "ran" for call in found.tool_calls)
    assert {hit_id for call in found.tool_calls for hit_id in call.hit_ids} <= {
        hit.chunk_id for hit in found.pool.hits()
    }
    assert found.outputs["product_lookup"]["product_id"] == "p-xz3000"


def test_a_size_worked_out_is_pinned_with_the_rows_it_rests_on(pipeline):
    found = retrieved(pipeline, analysed(pipeline, "我身高182，体重85公斤，北极驿冰原派克棉服选哪个尺码？"))
    assert found.advice is not None and found.advice.size == "XL"
    assert found.pinned == found.advice.chunk_ids() and found.pinned


def test_the_budget_caps_the_plan(pipeline):
    analysis = analysed(pipeline, "XZ-3000 充电宝多少钱？")
    decision = pipeline.plan.run(PlanInput(analysis.features, pipeline.config.budget().plan_budget()))
    one_call = pipeline.config.budget().model_copy(update={"max_tool_calls": 1})
    given = RetrieveInput(analysis, decision, None, pipeline.config.retry())
    found = asyncio.run(pipeline.retrieve.run(given, BudgetTracker(one_call)))
    outcomes = [call.outcome for call in found.tool_calls]
    assert outcomes[0] == "ran" and outcomes[1:] and set(outcomes[1:]) == {"over_budget"}


def test_a_follow_up_tells_the_planner_what_it_refers_to(pipeline):
    jiguang = Entity(name="北极驿 极光700 连帽羽绒服", product_id="p-bjy-jiguang700")
    follow_up = pipeline.analyse.run(AnalyseInput("它多少钱？", session_entity=jiguang))
    assert "北极驿 极光700 连帽羽绒服" in planner_message(follow_up.question, follow_up.features)


def test_the_rank_shows_the_best_evidence_within_the_limits(pipeline):
    analysis = analysed(pipeline, "AJ1 Retro 的鞋面是真皮吗？")
    ranking = ranked(pipeline, analysis, retrieved(pipeline, analysis))
    scores = [hit.score for hit in ranking.ranked]
    assert scores == sorted(scores, reverse=True) and len(ranking.ranked) == len(retrieved(pipeline, analysis).pool)
    assert 0 < len(ranking.shown) <= pipeline.config.evidence_top_n
    assert ranking.best_score == scores[0]  # one reading, no parts: the gate reads the best chunk
    order = [hit.chunk_id for hit in ranking.ranked]
    assert [order.index(hit.chunk_id) for hit in ranking.shown] == sorted(
        order.index(h.chunk_id) for h in ranking.shown
    )
    assert "prod-aj1-retro#材质-0" in [hit.chunk_id for hit in ranking.shown]


def test_the_callers_filters_bound_what_is_ranked(pipeline):
    analysis = analysed(pipeline, "退货运费谁承担？")
    policies = SearchFilters(doc_type=["policy"])
    ranking = ranked(pipeline, analysis, retrieved(pipeline, analysis), policies)
    assert ranking.shown and {pipeline.kb.get(hit.chunk_id).doc_type for hit in ranking.ranked} == {"policy"}
    nothing = ranked(pipeline, analysis, retrieved(pipeline, analysis), SearchFilters(product_id="p-none"))
    assert nothing.shown == [] and nothing.best_score is None


def test_the_pair_scorer_reads_the_rerankers_best_chunks_for_the_gate_and_leaves_the_order(pipeline, tmp_path):
    analysis = analysed(pipeline, "AJ1 Retro 的鞋面是真皮吗？")
    found = retrieved(pipeline, analysis)
    plain = ranked(pipeline, analysis, found)
    scorer = PairScorer(constant_pair_model(tmp_path / "pairs", 0.02), tmp_path / "cache").warm_up()
    reading = Rank(pipeline.kb, pipeline.reranker, scorer, pair_top_n=2)
    given = RankInput(analysis, found.pool, found.pinned, None, EvidenceLimits.of(pipeline.config))
    blended = asyncio.run(reading.run(given, question_run(pipeline)))
    # the order and the scores shown are the reranker's; the gate reads the best two halfway to 0.02
    assert [(h.chunk_id, h.score) for h in blended.ranked] == [(h.chunk_id, h.score) for h in plain.ranked]
    scores = [hit.score for hit in plain.ranked]
    expected = max((scores[0] + 0.02) / 2, (scores[1] + 0.02) / 2, *scores[2:])
    assert blended.best_score == pytest.approx(expected, abs=1e-4) and blended.best_score < plain.best_score
