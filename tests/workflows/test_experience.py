"""The experience store and the learning loop: rounds and feedback round-trip through SQLite, the
learned state survives a new instance and a new process, 👎 lowers the arm for the same question,
concurrent writers lose nothing, and the reward weights are as documented."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from citescope.agents.inspector import InspectionReport
from citescope.agents.planner import ToolCallRecord
from citescope.agents.policy import PolicyDecision
from citescope.agents.query_analysis import QueryFeatures, analyze
from citescope.workflows.bandit import LinUCBPolicy
from citescope.workflows.experience import FILE_NAME, ExperienceLearner, ExperienceRound, ExperienceStore
from citescope.workflows.result import PolicySummary, QAResult
from citescope.workflows.rewards import RewardSignals, implicit_reward, parse_rating, reward
from tests.conftest import REPO

# Two products, price: the rules give product_lookup_hybrid 0.92 and hybrid_rerank 0.85.
CLOSE_CALL = "XZ-2000和XZ-3000两款充电宝各卖多少钱？"


def result_for(
    features: QueryFeatures,
    decision: PolicyDecision,
    passed: bool = True,
    refused: bool = False,
    trace_id: str | None = None,
    skills: tuple[str, ...] = ("product_lookup",),
) -> QAResult:
    """What the pipeline returns for one round (an answered or refused question)."""
    extra = {"trace_id": trace_id} if trace_id else {}
    return QAResult(
        question=features.question,
        answer="XZ-2000 售价 199 元【sku-p-xz2000#0】。",
        refused=refused,
        refusal_reason="weak_evidence" if refused else "",
        inspection=None
        if refused
        else InspectionReport(
            passed=passed,
            coverage=1.0 if passed else 0.5,
            sentences=1,
            factual_sentences=1,
            cited_ids=["sku-p-xz2000#0"],
        ),
        policy=PolicySummary(arm=decision.arm, scores=decision.scores, reason=decision.reason, source=decision.source),
        plan=decision.plan,
        tool_calls=[ToolCallRecord(name=skill, arguments={"product": "p-xz2000"}) for skill in skills],
        evidence_ids=["sku-p-xz2000#0", "prod-xz2000#1"],
        timings_ms={"total": 42.5},
        **extra,
    )


@pytest.fixture()
def store(tmp_path):
    store = ExperienceStore.for_kb(tmp_path)
    yield store
    store.close()


def test_round_and_feedback_round_trip(demo_kb, store):
    learner = ExperienceLearner(store).warm_up()
    features = analyze(CLOSE_CALL, demo_kb)
    decision = learner.choose(features)
    result = result_for(features, decision)
    logged = learner.record(result, features, session_id="s-1")
    assert store.path.name == FILE_NAME and len(store) == 1
    loaded = store.get(result.trace_id)
    assert loaded.model_dump(exclude={"created_at"}) == logged.model_dump(exclude={"created_at"})
    assert loaded.arm == decision.arm and loaded.policy_source == "bandit" and loaded.session_id == "s-1"
    assert loaded.features["products"][0]["product_id"] == "p-xz2000"
    assert loaded.vector_for(QueryFeatures.feature_names()).tolist() == features.vector().tolist()
    assert loaded.evidence_ids == ["sku-p-xz2000#0", "prod-xz2000#1"] and loaded.latency_ms == 42.5
    assert loaded.tool_calls[0]["name"] == "product_lookup" and loaded.inspection["passed"] is True
    assert loaded.reward == loaded.applied_reward == loaded.implicit_reward == 1.0
    assert loaded.rating is None

    rated = learner.feedback(result.trace_id, -1, "价格不对")
    again = store.get(result.trace_id)
    assert (again.rating, again.comment) == (-1, "价格不对") and again.feedback_at is not None
    assert again.reward == rated.reward == pytest.approx(0.3)
    assert [r.trace_id for r in store.rounds(session_id="s-1")] == [result.trace_id]
    with pytest.raises(KeyError, match="no round"):
        learner.feedback("no-such-trace", 1)
    with pytest.raises(ValueError, match="rating"):
        store.add_feedback(result.trace_id, 0)


def test_thumbs_down_lowers_the_arm_and_changes_the_next_choice(demo_kb, store):
    learner = ExperienceLearner(store).warm_up()
    features = analyze(CLOSE_CALL, demo_kb)
    first = learner.choose(features)
    assert first.arm == "product_lookup_hybrid"
    result = result_for(features, first)
    learner.record(result, features)
    after_answer = learner.choose(features)
    assert after_answer.arm == "product_lookup_hybrid"  # the answer passed: the arm keeps its place
    learner.feedback(result.trace_id, -1)
    after_thumbs_down = learner.choose(features)
    assert after_thumbs_down.scores["product_lookup_hybrid"] < after_answer.scores["product_lookup_hybrid"]
    assert after_thumbs_down.arm == "hybrid_rerank"
    # The correction replaced the reward; it did not count the round twice.
    assert learner.policy.count["product_lookup_hybrid"] == 1


def test_feedback_is_a_delta_update_of_the_same_round(demo_kb, store):
    learner = ExperienceLearner(store).warm_up()
    features = analyze(CLOSE_CALL, demo_kb)
    result = result_for(features, learner.choose(features))
    learner.record(result, features)
    learner.feedback(result.trace_id, 1)
    learner.feedback(result.trace_id, -1)  # a changed mind: the latest feedback counts
    direct = LinUCBPolicy()
    direct.update(features.vector(), result.policy.arm, 0.3)
    mine, theirs = learner.policy.estimates(features), direct.estimates(features)
    assert all(mine[a].mean == pytest.approx(theirs[a].mean) for a in mine)


def test_learned_state_survives_a_new_instance_and_a_new_process(demo_kb, tmp_path):
    features = analyze(CLOSE_CALL, demo_kb)
    store = ExperienceStore.for_kb(tmp_path)
    learner = ExperienceLearner(store).warm_up()
    result = result_for(features, learner.choose(features))
    learner.record(result, features)
    store.close()

    reopened = ExperienceLearner(ExperienceStore.for_kb(tmp_path)).warm_up()
    assert reopened.policy.count == learner.policy.count
    assert reopened.choose(features).scores == learner.policy.choose(features).scores

    # Another process (the CLI) gives 👎; this learner picks it up before its next choice.
    done = subprocess.run(
        [sys.executable, "run.py", "feedback", result.trace_id, "down", "--comment", "不对", "--kb", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr
    assert "product_lookup_hybrid" in done.stdout and "0.30" in done.stdout
    assert reopened.choose(features).arm == "hybrid_rerank"
    assert reopened.store.get(result.trace_id).comment == "不对"
    missing = subprocess.run(
        [sys.executable, "run.py", "feedback", "nope", "up", "--kb", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert missing.returncode == 2 and "nope" in missing.stderr
    reopened.store.close()


def test_concurrent_rounds_are_all_learned(demo_kb, store):
    learners = [ExperienceLearner(store), ExperienceLearner(ExperienceStore(store.path))]  # two "processes"
    features = analyze(CLOSE_CALL, demo_kb)

    def answer(learner: ExperienceLearner) -> None:
        for _ in range(10):
            learner.record(result_for(features, learner.choose(features)), features)

    threads = [threading.Thread(target=answer, args=(learners[i % 2],)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(store) == 60
    fresh = ExperienceLearner(ExperienceStore(store.path)).warm_up()
    assert fresh.policy.rounds == 60 and store.state_version() == 60
    learners[1].store.close()
    fresh.store.close()


def test_reward_weights_as_documented():
    assert implicit_reward(RewardSignals(passed=True, coverage=1.0)) == pytest.approx(1.0)
    assert implicit_reward(RewardSignals(passed=False, coverage=0.5)) == pytest.approx(0.35)
    assert implicit_reward(RewardSignals(refused=True)) == 0.0
    assert implicit_reward(RewardSignals(refused=True, refusal_expected=True)) == pytest.approx(0.2)
    assert implicit_reward(RewardSignals(passed=True, coverage=1.0, degraded=True)) == pytest.approx(0.9)
    assert implicit_reward(RewardSignals(passed=True, coverage=1.0, skill_missed=True)) == pytest.approx(0.7)
    assert reward(RewardSignals(passed=True, coverage=1.0, rating=-1)) == pytest.approx(0.3)
    assert reward(RewardSignals(refused=True, rating=1)) == pytest.approx(0.7)
    # Feedback dominates: 👍 on a refusal outranks 👎 on a perfect answer.
    assert reward(RewardSignals(refused=True, rating=1)) > reward(RewardSignals(passed=True, coverage=1.0, rating=-1))
    assert [parse_rating(v) for v in ("up", "👎", "-1", "+1")] == [1, -1, -1, 1]
    with pytest.raises(ValueError):
        parse_rating("meh")


def test_a_size_question_answered_without_size_recommend_earns_less(demo_kb, store):
    """A size-table row quoted instead of the size worked out passes the inspector just as well;
    only the missed skill tells the learner the arm did not answer what was asked."""
    learner = ExperienceLearner(store).warm_up()
    features = analyze("身高175厘米、体重70公斤，山野峰刃冲锋衣穿什么码？", demo_kb)
    assert features.asks_size_advice
    decision = learner.choose(features)
    quoted = learner.record(
        result_for(features, decision, skills=("product_lookup", "hybrid_search", "rerank")), features
    )
    worked_out = learner.record(result_for(features, decision, skills=("product_lookup", "size_recommend")), features)
    over_budget = result_for(features, decision, skills=("product_lookup", "size_recommend"))
    over_budget.tool_calls[1].outcome = "over_budget"  # asked for, never ran
    assert quoted.signals().skill_missed and not worked_out.signals().skill_missed
    assert quoted.implicit_reward == pytest.approx(worked_out.implicit_reward - 0.3)
    assert learner.record(over_budget, features).signals().skill_missed
    # A question that needs no particular skill is not penalised for the skills it skipped.
    plain = analyze(CLOSE_CALL, demo_kb)
    assert not learner.record(result_for(plain, learner.choose(plain)), plain).signals().skill_missed


def test_refusing_a_model_the_shop_lacks_is_the_expected_outcome(demo_kb, store):
    features = analyze("烈驹火焰8多少钱？", demo_kb)
    decision = ExperienceLearner(store).warm_up().choose(features)
    refused = result_for(features, decision, refused=True)
    assert not ExperienceRound.from_result(refused, features).signals().refusal_expected  # weak evidence
    refused.refusal_reason = "unknown_model"
    assert ExperienceRound.from_result(refused, features).signals().refusal_expected
