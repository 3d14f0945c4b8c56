"""The strategy-learning simulation: real rewards for a couple of demo questions, and a tiny
hand-made reward table on which the bandit must overrule a wrong rule."""

from __future__ import annotations

from citescope.agents.arms import load_arms
from citescope.agents.policy import RulesPolicy
from citescope.agents.query_analysis import analyze
from citescope.workflows.evaluation.bench.simulate_policy import (
    POLICIES,
    RewardRow,
    best_fixed_arms,
    build_reward_table,
    format_policy_report,
    plot_learning,
    simulate,
)
from citescope.workflows.evaluation.datasets import load_questions
from tests.conftest import DEMO_DIR

# Policy questions (rules: keyword_filter) where keyword_filter fails and hybrid_rerank works,
# and long colloquial questions (rules: rewrite_hybrid_rerank) where the rules are right.
POLICY_QUESTIONS = ["积分怎么抵现？", "发票怎么开？", "运费谁出？", "会员有什么权益？"]
LONG_QUESTIONS = [
    "我想问一下就是我买的东西到了以后发现有点问题但是已经拆了还能不能弄",
    "我想问一下这个东西的盒子里面是不是会有说明书啊我好像没找到呢",
    "请问我就是想知道这个充电线的接口到底是哪一种啊我家里的线能不能用呢",
]


def tiny_table() -> list[RewardRow]:
    arms = list(load_arms())
    rows = []
    for i, question in enumerate(POLICY_QUESTIONS):
        rewards = {arm: 0.2 for arm in arms} | {"keyword_filter": 0.0, "hybrid_rerank": 1.0}
        rows.append(
            RewardRow(
                qid=f"p{i}", kb="shop", qtype="policy", question=question, features=analyze(question), rewards=rewards
            )
        )
    for i, question in enumerate(LONG_QUESTIONS):
        rewards = {arm: 0.0 for arm in arms} | {"rewrite_hybrid_rerank": 1.0}
        rows.append(
            RewardRow(
                qid=f"l{i}", kb="shop", qtype="fact", question=question, features=analyze(question), rewards=rewards
            )
        )
    return rows


def test_tiny_table_the_bandit_overrules_the_wrong_rule(tmp_path):
    rows = tiny_table()
    rules = RulesPolicy()
    assert {rules.choose(r.features).arm for r in rows[:4]} == {"keyword_filter"}
    assert {rules.choose(r.features).arm for r in rows[4:]} == {"rewrite_hybrid_rerank"}
    assert set(best_fixed_arms(rows, list(rules.arms)).values()) == {"hybrid_rerank", "rewrite_hybrid_rerank"}

    report = simulate(rows, rounds=300, seed=0, repeats=2)
    assert set(report["mean_reward"]) == set(POLICIES)
    mean = report["mean_reward"]
    assert mean["oracle_per_intent"] == 1.0
    assert mean["rules"] < mean["bandit"] <= mean["oracle_per_intent"]
    assert report["last_fifth_mean_reward"]["bandit"] > 0.95  # it has learned, not just got lucky
    assert report["wins_over_rules"]["bandit"] == 2 and report["gap_closed"]["bandit"] > 0.5
    assert report["held_out"]["bandit_greedy"] > report["held_out"]["rules"]
    assert len(report["curves"]["bandit"]) == 300

    text = format_policy_report(report)
    assert "| policy |" in text and "LinUCB" in text and "shop/policy" in text
    plot = tmp_path / "learning.png"
    plot_learning(report, plot)
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_reward_table_from_real_retrieval(demo_kb, tmp_path):
    questions = [q for q in load_questions(DEMO_DIR / "questions.jsonl") if q.qid in ("demo-001", "demo-016")]
    embedder = demo_kb.embedder
    rows = build_reward_table([("demo", demo_kb, questions)], cache_dir=tmp_path)
    assert demo_kb.embedder is embedder  # the shared KB is left as it was
    assert [r.qid for r in rows] == ["demo-001", "demo-016"]
    arms = set(load_arms())
    for row in rows:
        assert set(row.rewards) == arms
        assert all(value in (0.0, 1.0) for value in row.rewards.values())
    assert rows[0].rewards["hybrid_rerank"] == 1.0  # a plain fact question about a named product
    cached = list((tmp_path / "bench").glob("policy-rewards-*.json"))
    assert len(cached) == 1
    assert build_reward_table([("demo", demo_kb, questions)], cache_dir=tmp_path) == rows
