"""Strategy arms (config, templates, budgets) and the rules policy over real query features."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from citescope.agents.arms import Arm, ArmsConfigError, PlanBudget, PlannedCall, Step, load_arms
from citescope.agents.policy import PolicyDecision, Rule, RulesPolicy
from citescope.agents.query_analysis import Entity, analyze
from tests.conftest import REPO

ARM_NAMES = {
    "keyword_filter",
    "dense_rerank",
    "hybrid_rerank",
    "product_lookup_hybrid",
    "rewrite_hybrid_rerank",
    "size_advice",
}
JIGUANG700 = Entity(name="北极驿 极光700 连帽羽绒服", product_id="p-bjy-jiguang700", brand="北极驿", category="外套")
QUESTIONS = [
    "XZ-3000 多少钱",
    "XZ-2000和XZ-3000两款充电宝各卖多少钱？",
    "身高175cm体重70kg，峰刃冲锋衣穿什么码",
    "积分怎么抵现？",
    "北极驿极光700穿着体验怎么样？",
    "风驰轻羽3跑鞋的跟差是多少？",
    "你好",
    "我想问一下就是我买的东西到了以后发现有点问题但是已经拆了还能不能弄",
    "星择充电宝多少钱",
    "风驰轻羽3和跃动轻羽Pro哪双更轻？",
]


def skill_names() -> set[str]:
    config = yaml.safe_load((REPO / "tools" / "skills.yaml").read_text(encoding="utf-8"))
    return {entry["name"] for entry in config["skills"]}


@pytest.fixture(scope="module")
def arms() -> dict[str, Arm]:
    return load_arms(skills=skill_names())


@pytest.fixture(scope="module")
def policy(arms) -> RulesPolicy:
    return RulesPolicy(arms)


def calls(plan: list[PlannedCall]) -> list[tuple[str, dict]]:
    return [(c.skill, c.args) for c in plan]


# --------------------------------------------------------------------------- arms


def test_shipped_arms_load_and_use_only_registered_skills(arms):
    assert set(arms) == ARM_NAMES
    assert all(arm.description for arm in arms.values())


@pytest.mark.parametrize("max_calls, max_per_tool", [(0, 2), (1, 1), (2, 1), (3, 2), (4, 2), (4, 1), (6, 3)])
def test_every_plan_respects_the_budget(demo_kb, arms, max_calls, max_per_tool):
    for question in QUESTIONS:
        features = analyze(question, demo_kb)
        for arm in arms.values():
            plan = arm.plan(features, max_calls=max_calls, max_per_tool=max_per_tool)
            assert len(plan) <= max_calls, (arm.name, question)
            assert max(Counter(c.skill for c in plan).values(), default=0) <= max_per_tool, (arm.name, question)
            assert all("{" not in str(v) for c in plan for v in c.args.values()), calls(plan)


def test_default_budget_is_four_calls_two_per_tool(demo_kb, arms):
    features = analyze("XZ-2000和XZ-3000两款充电宝各卖多少钱？", demo_kb)
    plan = arms["rewrite_hybrid_rerank"].plan(features)
    assert [c.skill for c in plan] == ["rewrite_query", "hybrid_search", "hybrid_search", "rerank"]
    plan = arms["rewrite_hybrid_rerank"].plan(features, max_per_tool=1)
    assert [c.skill for c in plan] == ["rewrite_query", "hybrid_search", "rerank"]  # later steps still run
    plan = arms["product_lookup_hybrid"].plan(features, max_calls=2)
    assert calls(plan) == [("product_lookup", {"product": "p-xz2000"}), ("product_lookup", {"product": "p-xz3000"})]


def test_templates_fill_typed_values_and_drop_missing_optional_args(demo_kb, arms):
    size = arms["size_advice"]
    plan = size.plan(analyze("身高175cm体重70kg，峰刃冲锋衣穿什么码", demo_kb))
    assert calls(plan)[:2] == [
        ("product_lookup", {"product": "p-sy-fengren"}),
        ("size_recommend", {"product": "p-sy-fengren", "height_cm": 175.0, "weight_kg": 70.0}),
    ]
    assert plan[2].args == {
        "query": "身高175cm体重70kg，峰刃冲锋衣穿什么码 尺码表",
        "top_k": 8,
        "product_id": "p-sy-fengren",
    }
    # No body facts: size_recommend is still called, so the skill can ask for them.
    plan = size.plan(analyze("峰刃冲锋衣选哪个码", demo_kb))
    assert ("size_recommend", {"product": "p-sy-fengren"}) in calls(plan)
    # No product: steps that need one are skipped, the size-table search remains.
    plan = size.plan(analyze("一米七五穿什么码", demo_kb))
    assert [c.skill for c in plan] == ["hybrid_search", "rerank"]
    assert "product_id" not in plan[0].args


def test_for_each_product_searches_each_product(demo_kb, arms):
    plan = arms["hybrid_rerank"].plan(analyze("风驰轻羽3和跃动轻羽Pro哪双更轻？", demo_kb))
    assert [(c.skill, c.args.get("product_id")) for c in plan] == [
        ("hybrid_search", "p-fc-qingyu3"),
        ("hybrid_search", "p-yd-qingyu-pro"),
        ("rerank", None),
    ]


def test_for_each_part_searches_each_part_of_a_compound_question(demo_kb, arms):
    question = "北京冬奥会和冬残奥会的开幕日期分别是什么时候？"
    plan = arms["hybrid_rerank"].plan(analyze(question, demo_kb))
    assert [(c.skill, c.args["query"]) for c in plan] == [
        ("hybrid_search", "北京冬奥会的开幕日期是什么时候？"),
        ("hybrid_search", "北京冬残奥会的开幕日期是什么时候？"),
        ("rerank", question),
    ]  # the evidence of both parts is ranked against the whole question
    # two products: one search each, whatever else the question is made of
    assert len(arms["hybrid_rerank"].plan(analyze("风驰轻羽3和跃动轻羽Pro哪双更轻？", demo_kb))) == 3
    # one question asked: one search
    assert [c.skill for c in arms["hybrid_rerank"].plan(analyze("北京冬奥会的开幕日期", demo_kb))] == [
        "hybrid_search",
        "rerank",
    ]


def test_follow_up_query_names_the_carried_product(demo_kb, arms):
    plan = arms["product_lookup_hybrid"].plan(analyze("它多少钱？", demo_kb, JIGUANG700))
    assert plan[0].args == {"product": "p-bjy-jiguang700"}
    assert plan[1].args["query"] == "北极驿 极光700 连帽羽绒服 它多少钱？"
    assert plan[1].args["product_id"] == "p-bjy-jiguang700"


def test_policy_questions_filter_by_document_type_not_by_product(demo_kb, arms):
    plan = arms["keyword_filter"].plan(analyze("XZ-3000能无理由退货吗？", demo_kb))
    assert plan[0].skill == "keyword_search"
    assert plan[0].args["doc_type"] == "policy,faq" and "product_id" not in plan[0].args


def test_bindings_take_earlier_results_or_keep_the_template():
    call = PlannedCall(
        skill="hybrid_search", args={"query": "原问题", "top_k": 10}, bind={"query": "rewrite_query.queries[1]"}
    )
    assert call.resolve({"rewrite_query": {"queries": ["改写一", "改写二"]}}).args == {"query": "改写二", "top_k": 10}
    assert call.resolve({"rewrite_query": {"queries": ["改写一"]}}).args["query"] == "原问题"
    assert call.resolve({}).args["query"] == "原问题"
    assert call.resolve({}).bind == {}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "arms.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "body, words",
    [
        (
            "arms:\n  bad_arm:\n    steps:\n      - skill: hybrid_search\n        args: {query: '{nope}'}\n",
            ["bad_arm", "step 1", "nope"],
        ),
        ("arms:\n  bad_arm:\n    steps:\n      - skill: hybrid_search\n        colour: red\n", ["bad_arm", "colour"]),
        ("arms:\n  bad_arm:\n    steps: []\n", ["bad_arm", "steps"]),
        ("arms:\n  bad_arm:\n    steps:\n      - skill: teleport\n", ["bad_arm", "teleport", "unknown skill"]),
        (
            "arms:\n  bad_arm:\n    steps:\n      - skill: hybrid_search\n"
            "        bind: {query: 'rewrite_query.queries[0]'}\n",
            ["bad_arm", "rewrite_query", "earlier step"],
        ),
        (
            "arms:\n  bad_arm:\n    steps:\n      - skill: rewrite_query\n      - skill: hybrid_search\n"
            "        bind: {query: 'queries'}\n",
            ["bad_arm", "step 2", "queries"],
        ),
        ("arms:\n  bad_arm: [1, 2]\n", ["bad_arm"]),
        ("arms: {}\n", ["arms"]),
        ("arms:\n  a: {steps: [{skill: rerank}]}\nextra: 1\n", ["extra"]),
        ("arms: [unclosed\n", ["YAML"]),
    ],
)
def test_config_errors_name_the_file_and_the_arm(tmp_path, body, words):
    path = write(tmp_path, body)
    with pytest.raises(ArmsConfigError) as caught:
        load_arms(path, skills=skill_names())
    message = str(caught.value)
    assert str(path) in message
    for word in words:
        assert word in message, message


def test_missing_arms_file_names_the_file(tmp_path):
    with pytest.raises(ArmsConfigError, match="missing.yaml"):
        load_arms(tmp_path / "missing.yaml")


# --------------------------------------------------------------------------- rules policy


@pytest.mark.parametrize(
    "question, session, arm, first_call",
    [
        ("XZ-3000 多少钱", None, "product_lookup_hybrid", ("product_lookup", {"product": "p-xz3000"})),
        ("星择XZ-3000充电宝多少钱？", None, "product_lookup_hybrid", ("product_lookup", {"product": "p-xz3000"})),
        ("AJ1L-WR-42 还有货吗", None, "product_lookup_hybrid", ("product_lookup", {"product": "p-aj1-low"})),
        (
            "身高170厘米、体重62公斤，北极驿极光700应该选哪个码？",
            None,
            "size_advice",
            ("product_lookup", {"product": "p-bjy-jiguang700"}),
        ),
        ("风驰轻羽3和跃动轻羽Pro哪双更轻？", None, "hybrid_rerank", None),
        (
            "XZ-2000和XZ-3000两款充电宝各卖多少钱？",
            None,
            "product_lookup_hybrid",
            ("product_lookup", {"product": "p-xz2000"}),
        ),
        ("积分怎么抵现？多少积分抵1块钱？", None, "keyword_filter", None),
        ("北极驿极光700穿着体验怎么样？", None, "dense_rerank", None),
        ("风驰轻羽3跑鞋的跟差是多少？", None, "hybrid_rerank", None),
        ("我想问一下就是我买的东西到了以后发现有点问题但是已经拆了还能不能弄", None, "rewrite_hybrid_rerank", None),
        ("星择XZ-4000充电宝什么时候上市？", None, "keyword_filter", None),
        ("它多少钱？", JIGUANG700, "product_lookup_hybrid", ("product_lookup", {"product": "p-bjy-jiguang700"})),
        # the sizes a question names go to product_lookup, which returns their size-table rows first
        (
            "那M码适合多高的人？",
            JIGUANG700,
            "product_lookup_hybrid",
            ("product_lookup", {"product": "p-bjy-jiguang700", "sizes": ["M"]}),
        ),
        ("你好", None, "keyword_filter", None),
    ],
)
def test_rules_choose_the_expected_arm(demo_kb, policy, question, session, arm, first_call):
    decision = policy.choose(analyze(question, demo_kb, session))
    assert decision.arm == arm, decision.reason
    assert decision.source == "rules"
    assert decision.plan, decision
    if first_call is not None:
        assert calls(decision.plan)[0] == first_call


def test_comparison_plan_covers_both_products(demo_kb, policy):
    decision = policy.choose(analyze("北极驿极光700和雪域极光Pro的含绒量分别是多少？", demo_kb))
    searched = [c.args.get("product_id") for c in decision.plan if c.skill == "hybrid_search"]
    assert searched == ["p-bjy-jiguang700", "p-xy-jiguangpro"]
    assert "北极驿 极光700 连帽羽绒服" in decision.reason and "雪域 极光Pro 长款羽绒服" in decision.reason


def test_policy_plan_filters_policy_documents(demo_kb, policy):
    decision = policy.choose(analyze("无理由退货的运费是谁承担？", demo_kb))
    assert decision.plan[0].skill == "keyword_search" and decision.plan[0].args["doc_type"] == "policy,faq"


def test_every_arm_is_scored_and_the_winner_scores_highest(demo_kb, policy):
    for question in QUESTIONS:
        features = analyze(question, demo_kb)
        decision = policy.choose(features)
        assert set(decision.scores) == ARM_NAMES
        assert all(0.0 <= s <= 1.0 for s in decision.scores.values())
        assert decision.scores[decision.arm] == max(decision.scores.values())
        assert decision.scores == policy.prior_scores(features)


def test_reason_is_one_chinese_sentence(demo_kb, policy):
    for question, session in [(q, None) for q in QUESTIONS] + [("它多少钱？", JIGUANG700)]:
        reason = policy.choose(analyze(question, demo_kb, session)).reason
        assert reason.endswith("。") and reason.count("。") == 1, reason
        assert any("\u4e00" <= ch <= "\u9fff" for ch in reason)
    reason = policy.choose(analyze("它多少钱？", demo_kb, JIGUANG700)).reason
    assert reason.startswith("这是追问") and "北极驿 极光700 连帽羽绒服" in reason


def test_budget_is_passed_to_the_plan(demo_kb, policy):
    features = analyze("身高175cm体重70kg，峰刃冲锋衣穿什么码", demo_kb)
    assert len(policy.choose(features).plan) == 4
    decision = policy.choose(features, PlanBudget(max_calls=2, max_per_tool=1))
    assert [c.skill for c in decision.plan] == ["product_lookup", "size_recommend"]


def test_an_arm_with_nothing_to_call_gives_way(demo_kb):
    needs_product = Arm(name="lookup_only", steps=[Step(skill="product_lookup", args={"product": "{product_ref}"})])
    fallback = Arm(
        name="hybrid_rerank", description="混合检索。", steps=[Step(skill="hybrid_search", args={"query": "{query}"})]
    )
    always = Rule("lookup_only", 0.99, lambda f: True, lambda f: "总是先查商品表")
    policy = RulesPolicy({"lookup_only": needs_product, "hybrid_rerank": fallback}, rules=(always,))
    assert policy.choose(analyze("XZ-3000 多少钱", demo_kb)).arm == "lookup_only"
    decision = policy.choose(analyze("一般多久发货？", demo_kb))
    assert decision.arm == "hybrid_rerank"
    assert calls(decision.plan) == [("hybrid_search", {"query": "一般多久发货？ 发货时效"})]  # with the glossary's word
    assert decision.reason.endswith("。") and decision.reason.count("。") == 1


def test_decision_serialises_for_the_trace(demo_kb, policy):
    decision = policy.choose(analyze("XZ-3000 多少钱", demo_kb))
    again = PolicyDecision.model_validate_json(decision.model_dump_json())
    assert again == decision


def test_a_compound_question_is_searched_part_by_part(demo_kb, policy):
    # a policy question would get keyword_filter, which searches the whole question once
    decision = policy.choose(analyze("发票和保修分别怎么申请？", demo_kb))
    searched = [c.args["query"] for c in decision.plan if c.skill == "hybrid_search"]
    assert decision.arm == "hybrid_rerank" and searched == ["发票怎么申请？", "保修怎么申请？"], decision
    # a price question of two parts keeps the product tables
    assert policy.choose(analyze("XZ-3000多少钱？有货吗？", demo_kb)).arm == "product_lookup_hybrid"
