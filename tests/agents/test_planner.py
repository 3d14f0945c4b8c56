"""The retrieval planner: a real ReActAgent over the real skills of the demo KB, driven by the
policy's plan (offline) or by a model that misbehaves; budgets hold whatever the model does."""

from __future__ import annotations

import asyncio
import itertools

from agentscope.message import ToolUseBlock
from agentscope.model import ChatResponse

from citescope.agents.arms import PlannedCall, load_arms
from citescope.agents.budget import Budget, BudgetTracker, RetryPolicy
from citescope.agents.evidence import EvidencePool
from citescope.agents.offline_models import FunctionModel, tool_calls_response
from citescope.agents.planner import BUDGET_EXHAUSTED_TEXT, NOT_RUN_TEXT, RetrievalPlanner, render_plan
from citescope.agents.policy import PolicyDecision, RulesPolicy
from citescope.agents.policy_planner_model import DONE_TEXT, PolicyPlannerModel, tool_results_seen
from citescope.agents.query_analysis import analyze
from citescope.knowledge.filters import SearchFilters
from citescope.tools.base import SkillContext, SkillResult

NO_RETRY = RetryPolicy(max_retries=0, backoff_s=0)


def make_planner(registry, kb, question, llm=None, budget=None, filters=None, decision=None, reserve=0):
    budget = budget or Budget()
    tracker = BudgetTracker(budget)
    decision = decision or RulesPolicy().choose(analyze(question, kb), budget.plan_budget())
    planner = RetrievalPlanner(
        registry,
        SkillContext(kb),
        EvidencePool(),
        tracker,
        decision,
        llm=llm,
        retry=NO_RETRY,
        filters=filters,
        reserve_model_calls=reserve,
    )
    return planner, tracker


def run(planner, question):
    return asyncio.run(planner.run(question))


def test_offline_planner_plays_the_policy_plan_as_tool_calls(registry, demo_kb):
    question = "XZ-3000 充电宝多少钱？"
    planner, tracker = make_planner(registry, demo_kb, question)
    plan = planner.decision.plan
    assert [c.skill for c in plan] == ["product_lookup", "hybrid_search", "rerank"]

    outcome = run(planner, question)

    assert outcome.source == "offline" and outcome.reply == DONE_TEXT and not outcome.degradations
    assert [(r.name, r.arguments, r.outcome) for r in planner.records] == [(c.skill, c.args, "ran") for c in plan]
    assert tracker.used().tool_calls == len(plan)
    found = {i for r in planner.records for i in r.hit_ids}
    assert "sku-p-xz3000#sku-XZ3000-GRY" in found and found <= {h.chunk_id for h in planner.pool.hits()}
    assert planner.ctx.pool.keys() == {h.chunk_id for h in planner.pool.hits()}  # rerank reads ctx.pool
    assert planner.outputs["product_lookup"]["product_id"] == "p-xz3000"


def test_a_bound_argument_is_filled_from_an_earlier_result(registry, demo_kb):
    question = "我想问下那个充电宝能不能带上飞机啊"
    features = analyze(question, demo_kb)
    plan = load_arms()["rewrite_hybrid_rerank"].plan(features)
    decision = PolicyDecision(arm="rewrite_hybrid_rerank", reason="测试", plan=plan)
    planner, _ = make_planner(registry, demo_kb, question, decision=decision)

    run(planner, question)

    queries = planner.outputs["rewrite_query"]["queries"]
    searches = [r for r in planner.records if r.name == "hybrid_search"]
    assert searches[0].arguments["query"] == queries[0]
    # queries[1] when rewrite made one; otherwise the template value, an identical call answered from cache
    expected = queries[1] if len(queries) > 1 else plan[2].args["query"]
    assert searches[1].arguments["query"] == expected


def test_a_model_that_never_stops_calling_tools_stays_inside_every_budget(registry, demo_kb):
    counter = itertools.count()
    tools = ["hybrid_search", "keyword_search", "semantic_search"]

    def greedy(messages, offered):  # two fresh calls in every reply, forever
        return [{"name": tools[n % 3], "arguments": {"query": f"退货政策 {n}"}} for n in (next(counter), next(counter))]

    model = FunctionModel(greedy)
    budget = Budget(max_tool_calls=4, max_calls_per_tool=2)
    planner, tracker = make_planner(registry, demo_kb, "退货政策是什么？", llm=model, budget=budget)

    outcome = run(planner, "退货政策是什么？")

    assert outcome.source == "llm" and not outcome.degradations
    ran = [r for r in planner.records if r.outcome == "ran"]
    assert len(ran) == 4 and tracker.tool_calls == 4
    assert all(sum(r.name == tool for r in ran) <= 2 for tool in tools)
    refused = [r for r in planner.records if r.outcome == "over_budget"]
    assert refused and len(planner.records) == 2 * len(model.calls)
    assert len(model.calls) == budget.max_tool_calls + 1  # max_iters; the closing summary is answered locally
    told = [m["content"] for m in model.calls[-1].messages if m["role"] == "tool"]
    assert any(BUDGET_EXHAUSTED_TEXT in str(content) for content in told)


def test_the_planner_leaves_the_reserved_model_calls_to_the_answerer(registry, demo_kb):
    counter = itertools.count()
    model = FunctionModel(
        lambda messages, tools: [{"name": "keyword_search", "arguments": {"query": f"发票 {next(counter)}"}}]
    )
    planner, tracker = make_planner(
        registry, demo_kb, "发票怎么开？", llm=model, budget=Budget(max_model_calls=3), reserve=1
    )

    outcome = run(planner, "发票怎么开？")

    assert outcome.source == "llm" and len(model.calls) == tracker.model_calls == 2
    assert [r.outcome for r in planner.records] == ["ran", "ran"]


def test_an_identical_repeated_call_is_answered_from_cache(registry, demo_kb):
    call = {"name": "keyword_search", "arguments": {"query": "发票怎么开", "top_k": 5}}
    replies = iter([[call], [dict(call)], [call], "检索完成"])
    model = FunctionModel(lambda messages, tools: next(replies))
    planner, tracker = make_planner(registry, demo_kb, "发票怎么开？", llm=model)

    run(planner, "发票怎么开？")

    assert [r.outcome for r in planner.records] == ["ran", "cached", "cached"]
    assert planner.records[1].hit_ids == planner.records[0].hit_ids != []
    assert tracker.used().tool_calls == 1 and tracker.used().cached_calls == 2


def test_an_unknown_tool_falls_back_to_the_offline_plan(registry, demo_kb):
    model = FunctionModel(lambda messages, tools: [{"name": "web_search", "arguments": {"query": "退货"}}])
    planner, _ = make_planner(registry, demo_kb, "退货政策是什么？", llm=model)

    outcome = run(planner, "退货政策是什么？")

    assert outcome.source == "offline"
    assert "unknown tool 'web_search'" in outcome.degradations[0]
    assert [r.name for r in planner.records] == [c.skill for c in planner.decision.plan]


def test_a_malformed_tool_call_falls_back_to_the_offline_plan(registry, demo_kb):
    # What AgentScope makes of arguments that are not JSON: the raw text, and {} as input.
    broken = ChatResponse(
        content=[ToolUseBlock(type="tool_use", id="bad-1", name="hybrid_search", input={}, raw_input="这不是JSON {")]
    )
    model = FunctionModel(lambda messages, tools: broken)
    planner, tracker = make_planner(registry, demo_kb, "退货政策是什么？", llm=model)

    outcome = run(planner, "退货政策是什么？")

    assert outcome.source == "offline" and "malformed tool call: hybrid_search" in outcome.degradations[0]
    assert "the correction was malformed too" in outcome.degradations[0]
    assert all(r.outcome == "ran" for r in planner.records)  # the broken call never ran
    assert tracker.model_calls == 2  # the call, and one correction turn
    correction = model.calls[1].messages[-2:]
    assert correction[0]["tool_calls"][0]["function"]["arguments"] == "这不是JSON {"  # as sent, not repaired
    assert correction[1]["role"] == "tool" and "工具调用失败" in correction[1]["content"]


def test_a_repaired_looking_call_is_sent_back_and_the_correction_runs(registry, demo_kb):
    # `{query: …, top_k: 5` parses (repaired) as {"query": …, "top_k": 5}: it must not run as that.
    replies = iter(
        [
            ChatResponse(
                content=[
                    ToolUseBlock(
                        type="tool_use",
                        id="bad-1",
                        name="hybrid_search",
                        input={"query": "退货政策", "top_k": 5},
                        raw_input='{query: "退货政策", top_k: 5',
                    )
                ]
            ),
            [{"name": "hybrid_search", "arguments": {"query": "退货政策", "top_k": 5}}],
            "检索完成",
        ]
    )
    model = FunctionModel(lambda messages, tools: next(replies))
    planner, tracker = make_planner(registry, demo_kb, "退货政策是什么？", llm=model)

    outcome = run(planner, "退货政策是什么？")

    assert outcome.source == "llm" and outcome.degradations == []
    assert [(r.name, r.arguments) for r in planner.records] == [("hybrid_search", {"query": "退货政策", "top_k": 5})]
    assert tracker.model_calls == 3


def test_the_offline_fallback_gets_its_own_tool_budget(registry, demo_kb):
    # the model spends the whole tool budget, then fails: the offline plan still runs in full
    calls = itertools.count()

    def spend_then_fail(messages, tools):
        n = next(calls)
        if n < 2:
            return [{"name": "keyword_search", "arguments": {"query": f"退货 {n}"}}]
        raise ConnectionError("provider went away")

    model = FunctionModel(spend_then_fail)
    budget = Budget(max_tool_calls=2, max_calls_per_tool=2)
    planner, tracker = make_planner(registry, demo_kb, "退货政策是什么？", llm=model, budget=budget)

    outcome = run(planner, "退货政策是什么？")

    assert outcome.source == "offline" and "provider went away" in outcome.degradations[0]
    fallback = planner.records[2:]
    assert [r.name for r in fallback] == [c.skill for c in planner.decision.plan][: len(fallback)]
    assert fallback and all(r.outcome in ("ran", "cached") for r in fallback)
    assert tracker.used().tool_calls == 2 + sum(r.outcome == "ran" for r in fallback)


def test_a_model_that_gathers_nothing_is_backed_by_the_offline_plan(registry, demo_kb):
    model = FunctionModel(lambda messages, tools: "检索完成")
    planner, _ = make_planner(registry, demo_kb, "发票怎么开？", llm=model)

    outcome = run(planner, "发票怎么开？")

    assert outcome.source == "offline" and outcome.degradations == [
        "planner model gathered no evidence; offline plan used"
    ]
    assert len(model.calls) == 1 and len(planner.pool) > 0


def test_caller_filters_override_the_models_arguments(registry, demo_kb):
    replies = iter(
        [[{"name": "keyword_search", "arguments": {"query": "退货 运费", "doc_type": "review"}}], "检索完成"]
    )
    model = FunctionModel(lambda messages, tools: next(replies))
    planner, _ = make_planner(
        registry, demo_kb, "退货运费谁出？", llm=model, filters=SearchFilters(doc_type=["policy"])
    )

    run(planner, "退货运费谁出？")

    [record] = planner.records
    assert record.arguments["doc_type"] == "policy" and record.hit_ids
    assert {h.doc_type for h in planner.pool.hits()} == {"policy"}


def test_policy_model_counts_tool_results_and_stops_with_text():
    plan = [
        PlannedCall(skill="rewrite_query", args={"query": "q"}),
        PlannedCall(skill="hybrid_search", args={"query": "q"}, bind={"query": "rewrite_query.queries[0]"}),
    ]
    outputs: dict = {}
    model = PolicyPlannerModel(plan, outputs)
    tools = [
        {"type": "function", "function": {"name": name, "parameters": {}}}
        for name in ("rewrite_query", "hybrid_search")
    ]
    user = {"role": "user", "content": "q"}
    tool_result = {"role": "tool", "tool_call_id": "x", "content": "…"}

    first = asyncio.run(model([user], tools=tools))
    assert first.content[0]["name"] == "rewrite_query"
    outputs["rewrite_query"] = {"queries": ["改写后的检索式"]}
    second = asyncio.run(model([user, tool_result], tools=tools))
    assert second.content[0]["name"] == "hybrid_search" and second.content[0]["input"] == {"query": "改写后的检索式"}
    done = asyncio.run(model([user, tool_result, tool_result], tools=tools))
    assert done.content[0]["text"] == DONE_TEXT
    # a skill the toolkit does not offer is skipped
    only_search = asyncio.run(model([user], tools=tools[1:]))
    assert only_search.content[0]["name"] == "hybrid_search"
    assert tool_results_seen([user, tool_result, user, tool_result]) == 1


def test_the_plan_is_rendered_for_the_llm_prompt():
    text = render_plan(
        [
            PlannedCall(
                skill="hybrid_search",
                args={"query": "XZ-3000", "top_k": 10},
                bind={"query": "rewrite_query.queries[0]"},
            )
        ]
    )
    assert text == "1. hybrid_search(query='XZ-3000', top_k=10)  # query 取自 rewrite_query.queries[0]"


# -- one-turn plans and concurrent calls ------------------------------------------------------


def _meeting_registry(barrier):
    """keyword_search under two names, each waiting at `barrier` for the other: two calls that meet
    there ran at the same time (sequential calls break the barrier at its timeout: degraded results)."""
    import threading

    from citescope.tools.registry import SkillRegistry, SkillSpec
    from citescope.tools.rerank import rerank
    from citescope.tools.search import keyword_search

    met: list[str] = []

    def waiting(name):
        def skill(query: str, *, ctx: SkillContext) -> SkillResult:
            """关键词检索，等另一个检索一起开始。

            Args:
                query (str): 检索式。
            """
            barrier.wait()
            met.append(name)
            return keyword_search(query, ctx=ctx)

        return skill

    registry = SkillRegistry(
        [
            SkillSpec(name="left_search", function=waiting("left_search"), timeout_s=60),
            SkillSpec(name="right_search", function=waiting("right_search"), timeout_s=60),
            SkillSpec(name="rerank", function=rerank, timeout_s=60),
        ]
    )
    assert isinstance(barrier, threading.Barrier)
    return registry, met


def test_a_whole_plan_in_one_reply_runs_concurrently_and_costs_one_request(demo_kb):
    import threading

    barrier = threading.Barrier(2, timeout=30)
    registry, met = _meeting_registry(barrier)
    calls = [
        {"name": "rerank", "arguments": {"query": "发票怎么开？"}},  # listed first, still runs after the searches
        {"name": "left_search", "arguments": {"query": "发票"}},
        {"name": "right_search", "arguments": {"query": "开票"}},
    ]
    replies = iter([tool_calls_response(calls, text=DONE_TEXT)])
    model = FunctionModel(lambda messages, tools: next(replies))
    planner, tracker = make_planner(registry, demo_kb, "发票怎么开？", llm=model)

    outcome = run(planner, "发票怎么开？")

    assert outcome.source == "llm" and len(model.calls) == tracker.model_calls == 1
    assert [(r.name, r.outcome, r.degraded) for r in planner.records] == [
        ("rerank", "ran", False),
        ("left_search", "ran", False),
        ("right_search", "ran", False),
    ]
    assert not barrier.broken and sorted(met) == ["left_search", "right_search"]
    searched = set(planner.records[1].hit_ids) | set(planner.records[2].hit_ids)
    assert searched and set(planner.records[0].hit_ids) == searched  # rerank read what both gathered
    assert [s.outcome for s in planner.steps] == ["gathered evidence"]


def test_a_complete_plan_that_found_nothing_goes_back_to_the_model(registry, demo_kb):
    replies = iter(
        [
            tool_calls_response([{"name": "keyword_search", "arguments": {"query": "zzqqxx"}}], text=DONE_TEXT),
            [{"name": "keyword_search", "arguments": {"query": "发票"}}],
            DONE_TEXT,
        ]
    )
    model = FunctionModel(lambda messages, tools: next(replies))
    planner, _ = make_planner(registry, demo_kb, "发票怎么开？", llm=model)

    outcome = run(planner, "发票怎么开？")

    assert outcome.source == "llm" and len(model.calls) == 3  # the empty round was not taken as enough
    assert [r.arguments["query"] for r in planner.records] == ["zzqqxx", "发票"]


def test_one_call_sent_twice_in_a_reply_runs_once(registry, demo_kb):
    twice = [{"name": "keyword_search", "arguments": {"query": "发票怎么开"}}] * 2
    replies = iter([tool_calls_response(twice, text=DONE_TEXT)])
    model = FunctionModel(lambda messages, tools: next(replies))
    planner, tracker = make_planner(registry, demo_kb, "发票怎么开？", llm=model)

    run(planner, "发票怎么开？")

    assert [r.outcome for r in planner.records] == ["ran", "cached"] and tracker.tool_calls == 1
    assert planner.records[0].hit_ids == planner.records[1].hit_ids != []


def test_a_failed_planner_model_hands_over_to_the_next_of_its_route(registry, demo_kb):
    from citescope.agents.planner import PlannerChoice

    broken = FunctionModel(lambda messages, tools: [{"name": "web_search", "arguments": {}}], "cheap")
    replies = iter([tool_calls_response([{"name": "keyword_search", "arguments": {"query": "发票"}}], text=DONE_TEXT)])
    strong = FunctionModel(lambda messages, tools: next(replies), "strong")
    planner, _ = make_planner(registry, demo_kb, "发票怎么开？")
    planner.route = [
        PlannerChoice("x:cheap", broken, planner.formatter),
        PlannerChoice("x:strong", strong, planner.formatter),
    ]

    outcome = run(planner, "发票怎么开？")

    assert outcome.source == "llm" and len(broken.calls) == len(strong.calls) == 1
    assert [(s.model, s.reason, s.outcome.split(":")[0]) for s in planner.steps] == [
        ("x:cheap", "first model of the route", "failed"),
        ("x:strong", "x:cheap failed", "gathered evidence"),
    ]
    assert outcome.degradations[0].endswith("; model x:strong used")


def test_a_correction_turn_answers_every_call_of_the_rejected_reply(registry, demo_kb):
    replies = iter(
        [
            ChatResponse(
                content=[
                    ToolUseBlock(type="tool_use", id="ok-1", name="keyword_search", input={"query": "退货"}),
                    ToolUseBlock(
                        type="tool_use", id="bad-1", name="hybrid_search", input={}, raw_input='{"query": "退货政'
                    ),
                ]
            ),
            [{"name": "hybrid_search", "arguments": {"query": "退货政策"}}],
            "检索完成",
        ]
    )
    model = FunctionModel(lambda messages, tools: next(replies))
    planner, _ = make_planner(registry, demo_kb, "退货政策是什么？", llm=model)

    outcome = run(planner, "退货政策是什么？")

    assert outcome.source == "llm" and [r.name for r in planner.records] == ["hybrid_search"]
    asked, ok_result, bad_result = model.calls[1].messages[-3:]
    assert [c["id"] for c in asked["tool_calls"]] == ["ok-1", "bad-1"]
    assert asked["tool_calls"][1]["function"]["arguments"] == '{"query": "退货政'
    assert ok_result["tool_call_id"] == "ok-1" and ok_result["content"] == NOT_RUN_TEXT
    assert bad_result["tool_call_id"] == "bad-1" and "工具调用失败" in bad_result["content"]
