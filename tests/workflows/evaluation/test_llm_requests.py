"""The model-requests benchmark (workflows/evaluation/bench/llm_requests.py) on a slice of the demo
questions: its scripted planner follows the rendered plan, and a one-turn plan costs fewer requests
than the same calls sent one per reply."""

from __future__ import annotations

from citescope.agents.arms import PlannedCall
from citescope.agents.planner import render_plan
from citescope.workflows.evaluation.bench.llm_requests import planned_calls, run_llm_requests_bench


def test_the_scripted_planner_reads_the_plan_as_the_prompt_renders_it():
    plan = [
        PlannedCall(skill="rewrite_query", args={"query": "充电宝能带上飞机吗"}),
        PlannedCall(
            skill="hybrid_search", args={"query": "充电宝", "top_k": 10}, bind={"query": "rewrite_query.queries[0]"}
        ),
    ]
    prompt = f"【建议计划】（按顺序执行）\n{render_plan(plan)}\n\n【各策略得分】\n- a: 1.00"
    assert planned_calls(prompt) == [
        ({"name": "rewrite_query", "arguments": {"query": "充电宝能带上飞机吗"}}, False),
        ({"name": "hybrid_search", "arguments": {"query": "充电宝", "top_k": 10}}, True),
    ]


def test_one_turn_plans_cost_fewer_requests_than_one_call_per_reply(demo_kb, registry):
    report = run_llm_requests_bench(demo_kb, limit=4, registry=registry)
    baseline = report["baseline_one_call_per_reply"]
    assert report["questions"] == 4 and report["llm_plans"] == baseline["llm_plans"] == 4
    assert report["planner_requests_per_question"] == 1.0  # every plan of the slice needs no earlier result
    assert report["model_requests_per_question"] < baseline["model_requests_per_question"]
    assert report["answerer_requests_per_question"] == baseline["answerer_requests_per_question"]
