"""LinUCB warm-started from the rules: round 0 is the rules, it learns the better arm per context,
its state survives a JSON round trip, and Thompson sampling is reproducible from its seed."""

from __future__ import annotations

import json

import numpy as np
import pytest

from citescope.agents.arms import Arm, PlanBudget, Step
from citescope.agents.policy import Rule, RulesPolicy
from citescope.agents.query_analysis import FEATURE_NAMES, analyze
from citescope.workflows.bandit import LinearThompsonPolicy, LinUCBPolicy

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
    "一米七五穿什么码",
    "AJ1 的鞋面是什么材质？",
]
SHORT, LONG = "积分怎么抵现？", "我想问一下就是我买的东西到了以后发现有点问题但是已经拆了还能不能弄"


def two_arm_rules() -> RulesPolicy:
    """Two arms; the rules prefer `exact` for every question."""
    step = [Step(skill="keyword_search", args={"query": "{query}"})]
    arms = {"exact": Arm(name="exact", steps=step), "semantic": Arm(name="semantic", steps=step)}
    rules = (
        Rule("exact", 0.7, lambda f: True, lambda f: "规则偏好精确匹配"),
        Rule("semantic", 0.5, lambda f: True, lambda f: "语义检索备选"),
    )
    return RulesPolicy(arms, rules)


def test_round_zero_is_the_rules_choice(demo_kb):
    rules, bandit = RulesPolicy(), LinUCBPolicy()
    for budget in (PlanBudget(), PlanBudget(max_calls=2, max_per_tool=1)):
        for question in QUESTIONS:
            features = analyze(question, demo_kb)
            expected, decision = rules.choose(features, budget), bandit.choose(features, budget)
            assert (decision.arm, decision.plan) == (expected.arm, expected.plan), question
            assert decision.source == "bandit" and set(decision.scores) == set(rules.arms)
            assert "规则" in decision.reason and decision.reason.endswith("。")


def test_learns_the_better_arm_per_context():
    """Context SHORT: `exact` pays 0.8, `semantic` 0.3; context LONG: the reverse. The rules say
    `exact` everywhere, so in LONG the bandit must learn to overrule them."""
    policy = LinUCBPolicy(rules=two_arm_rules(), alpha=0.3, prior_weight=4.0)
    contexts = {SHORT: analyze(SHORT), LONG: analyze(LONG)}
    assert not np.array_equal(contexts[SHORT].vector(), contexts[LONG].vector())
    pays = {SHORT: {"exact": 0.8, "semantic": 0.3}, LONG: {"exact": 0.3, "semantic": 0.8}}
    rng = np.random.default_rng(7)
    picks = {SHORT: [], LONG: []}
    for _ in range(300):
        question = SHORT if rng.random() < 0.5 else LONG
        arm = policy.choose(contexts[question]).arm
        policy.update(contexts[question].vector(), arm, float(rng.random() < pays[question][arm]))
        picks[question].append(arm)
    assert policy.choose(contexts[SHORT]).arm == "exact"
    decision = policy.choose(contexts[LONG])
    assert decision.arm == "semantic" and "经验改变了选择" in decision.reason
    assert picks[LONG][-50:].count("semantic") >= 45
    assert picks[SHORT][-50:].count("exact") >= 45
    assert policy.estimates(contexts[LONG])["semantic"].experience > 50


def test_experience_fades_the_prior():
    policy = LinUCBPolicy(rules=two_arm_rules(), prior_weight=4.0)
    features = analyze(SHORT)
    assert policy.estimates(features)["exact"].mean == pytest.approx(0.7)
    for _ in range(4):
        policy.update(features.vector(), "exact", 0.0)
    halfway = policy.estimates(features)["exact"]
    assert halfway.experience == pytest.approx(4.0)
    assert halfway.mean == pytest.approx(0.35, abs=0.01)  # 4 pseudo- and 4 real observations
    for _ in range(96):
        policy.update(features.vector(), "exact", 0.0)
    assert policy.estimates(features)["exact"].mean < 0.03


def test_state_survives_a_json_round_trip():
    policy = LinUCBPolicy(rules=two_arm_rules())
    rng = np.random.default_rng(1)
    for question in [SHORT, LONG] * 20:
        features = analyze(question)
        policy.update(features.vector(), policy.choose(features).arm, float(rng.random()))
    state = json.loads(json.dumps(policy.state_dict()))
    restored = LinUCBPolicy(rules=two_arm_rules())
    restored.load_state_dict(state)
    for question in (SHORT, LONG, "你好"):
        features = analyze(question)
        assert restored.choose(features).scores == policy.choose(features).scores
    assert restored.count == policy.count and restored.rounds == 40


def test_state_of_another_feature_set_maps_by_name():
    policy = LinUCBPolicy(rules=two_arm_rules())
    features = analyze(LONG)
    for _ in range(10):
        policy.update(features.vector(), "semantic", 1.0)
    state = policy.state_dict()
    fewer = LinUCBPolicy(rules=two_arm_rules(), feature_names=tuple(n for n in FEATURE_NAMES if n != "colloquial"))
    fewer.load_state_dict(state)
    kept = [FEATURE_NAMES.index(n) for n in fewer.feature_names]
    assert np.allclose(fewer.gram["semantic"], policy.gram["semantic"][np.ix_(kept, kept)])
    assert np.allclose(fewer.b["semantic"], policy.b["semantic"][kept])
    with pytest.raises(ValueError, match="version"):
        fewer.load_state_dict({**state, "version": 99})


def test_update_rejects_unknown_arms_and_wrong_vectors():
    policy = LinUCBPolicy(rules=two_arm_rules())
    with pytest.raises(KeyError, match="teleport"):
        policy.update(analyze(SHORT).vector(), "teleport", 1.0)
    with pytest.raises(ValueError, match="entries"):
        policy.update(np.ones(3), "exact", 1.0)


def test_delayed_reward_correction_equals_the_corrected_observation():
    features = analyze(SHORT)
    corrected, direct = LinUCBPolicy(rules=two_arm_rules()), LinUCBPolicy(rules=two_arm_rules())
    corrected.update(features.vector(), "exact", 1.0)
    corrected.update(features.vector(), "exact", 0.3 - 1.0, count=False)
    direct.update(features.vector(), "exact", 0.3)
    assert corrected.count == direct.count
    assert corrected.estimates(features)["exact"].mean == pytest.approx(direct.estimates(features)["exact"].mean)


def test_thompson_sampling_is_reproducible_from_its_seed():
    def run(seed: int) -> list[str]:
        policy = LinearThompsonPolicy(rules=two_arm_rules(), alpha=1.0, seed=seed)
        chosen = []
        for question in [SHORT, LONG] * 15:
            features = analyze(question)
            arm = policy.choose(features).arm
            policy.update(features.vector(), arm, 1.0 if (arm == "exact") == (question == SHORT) else 0.0)
            chosen.append(arm)
        return chosen

    assert run(3) == run(3)
    assert any(run(3) != run(seed) for seed in range(4, 10))
