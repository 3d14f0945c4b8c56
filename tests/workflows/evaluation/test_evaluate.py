"""The evaluation harness and the calibration maths: splits, question choice, forced strategies,
one real eval run (real KBs built from cached baoxianzhidao docs, the real pipeline, the AgentScope
baseline) with its records, scores and resume; the refusal-threshold choice and config writing."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from citescope.agents.query_analysis import QueryAnalyzer
from citescope.tools.rerank import DEFAULT_WEIGHTS_PATH, FEATURES
from citescope.workflows.cli import app
from citescope.workflows.evaluation.calibrate import (
    GRID,
    CalibrationRequest,
    choose_threshold,
    fit_reranker,
    format_calibration_report,
    refusal_curve,
    run_calibration,
    score_weights,
    write_default_threshold,
)
from citescope.workflows.evaluation.datasets import Question, load_questions
from citescope.workflows.evaluation.evaluate import (
    AGENTSCOPE,
    POLICY,
    EvalError,
    EvalRequest,
    FixedArmPolicy,
    choose_questions,
    find_splits,
    forget_dev_fitted_threshold,
    format_eval_report,
    model_digest,
    run_dir_for,
    run_eval,
    summarize,
)
from citescope.workflows.evaluation.scripted_server import ReplayServer
from citescope.workflows.pipeline_config import DEFAULTS_PATH, PipelineConfig, update_kb_config
from tests.conftest import DEMO_DIR
from tests.support.claim_model import constant_claim_model

CORPUS_DOCS = 12  # the first baoxianzhidao docs; their questions are the even-numbered ones
FAKE = "终身免交全部保费"


@pytest.fixture(scope="module")
def mini_dataset(datasets_dir, tmp_path_factory):
    """A dataset folder in the shared format: 12 FAQ docs; 6 answerable questions, 2 whose doc is
    not in the corpus, and 1 candidate-protocol conflict question whose counterfactual doc is
    missing (so the harness must rebuild it)."""
    folder = tmp_path_factory.mktemp("mini") / "mini_bx"
    folder.mkdir()
    source = datasets_dir / "baoxianzhidao"
    lines = (source / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:CORPUS_DOCS]
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    docs = {d["doc_id"]: d for d in map(json.loads, lines)}
    questions = load_questions(source / "questions.jsonl", limit=40)
    answerable = [q for q in questions if q.gold_doc_ids[0] in docs][:6]
    outside = [q for q in questions if q.gold_doc_ids[0] not in docs][:2]
    rows = [q.model_dump(exclude_none=True) for q in answerable]
    rows += [
        {
            **q.model_dump(exclude_none=True),
            "qid": q.qid + "-gone",
            "answers": [],
            "gold_doc_ids": [],
            "answerable": False,
            "qtype": "unanswerable_kb_removed",
        }
        for q in outside
    ]
    gold = docs["bx-00000"]
    rows.append(
        {
            "qid": "mini-conflict",
            "question": gold["title"],
            "answers": ["多次赔付"],
            "fake_answers": [FAKE],
            "gold_doc_ids": ["bx-00000"],
            "answerable": True,
            "qtype": "conflicting_evidence",
            "expect_conflict": True,
            "candidate_doc_ids": ["bx-00000", "minicf-0"],
        }
    )
    (folder / "questions.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    return folder


@pytest.fixture(scope="module")
def eval_root(tmp_path_factory):
    return tmp_path_factory.mktemp("eval-root")


@pytest.fixture(scope="module")
def first_run(mini_dataset, eval_root):
    request = EvalRequest(
        dataset_dir=mini_dataset, strategies=[POLICY, "keyword_filter"], root=eval_root, progress=False, concurrency=2
    )
    return request, run_eval(request)


def test_each_question_file_is_paired_with_its_corpus(datasets_dir):
    splits = {s.name: s for s in find_splits(datasets_dir / "cmrc2018_dev")}
    assert set(splits) == {"questions", "questions_holdout"}
    assert splits["questions_holdout"].corpus[0].name == "corpus_holdout.jsonl"
    assert splits["questions"].corpus[0].name == "corpus.jsonl"
    assert splits["questions_holdout"].label == "cmrc2018_dev-holdout"
    demo = {s.name: s for s in find_splits(DEMO_DIR)}
    assert demo["questions"].corpus == (DEMO_DIR,) and demo["questions"].label == "demo-main"
    assert demo["questions_customer"].corpus == (DEMO_DIR,) and demo["questions_customer"].label == "demo-customer"
    (only,) = find_splits(datasets_dir / "baoxianzhidao", "questions_holdout.jsonl")
    assert only.name == "questions_holdout"
    with pytest.raises(EvalError, match="no question file"):
        find_splits(DEMO_DIR, "nope.jsonl")


def test_questions_are_chosen_per_type_or_stratified():
    questions = [Question(qid=f"q{i}", question="?", qtype="big" if i % 5 else "small") for i in range(100)]
    per_type = choose_questions(questions, None, 3, seed=1)
    assert Counter(q.qtype for q in per_type) == {"big": 3, "small": 3}
    assert [q.qid for q in per_type] == [q.qid for q in questions if q in per_type]  # file order kept
    assert Counter(q.qtype for q in choose_questions(questions, 10, None, seed=1)) == {"big": 8, "small": 2}
    assert choose_questions(questions, None, None, seed=1) == questions


def test_a_fixed_arm_policy_plans_that_arm_for_every_question():
    features = QueryAnalyzer(None).warm_up().run("退货运费谁出？")
    decision = FixedArmPolicy("dense_rerank").choose(features)
    assert decision.arm == "dense_rerank"
    assert [call.skill for call in decision.plan] == ["semantic_search", "rerank"]
    with pytest.raises(EvalError, match="unknown strategy"):
        FixedArmPolicy("no_such_arm")


def test_every_question_and_strategy_is_recorded_and_scored(first_run, mini_dataset):
    _, result = first_run
    summary = result["splits"]["questions"]
    records = [json.loads(line) for line in open(f"{summary['run_dir']}/results.jsonl", encoding="utf-8")]
    assert Counter(r["strategy"] for r in records) == {AGENTSCOPE: 9, POLICY: 9, "keyword_filter": 9}
    assert not [r for r in records if r.get("error")]
    forced = [r for r in records if r["strategy"] == "keyword_filter"]
    assert {r["arm"] for r in forced} == {"keyword_filter"}
    scores = summary["strategies"]
    assert set(scores[POLICY]) == {"all", "faq_title", "unanswerable_kb_removed", "conflicting_evidence"}
    everything = scores[POLICY]["all"]
    assert everything["operations"]["invalid_ids"] == 0 and everything["operations"]["budget_exceeded"] == 0
    assert everything["operations"]["usage"]["requests"] == 0  # offline: no model tokens
    assert everything["retrieval"]["n"] == 7  # answerable questions with gold docs
    assert 0.0 <= everything["answers"]["refusal_recall"] <= 1.0
    assert scores[AGENTSCOPE]["all"]["retrieval"]["recall@5"] > 0.5  # FAQ titles are the questions
    assert "answers" not in scores[AGENTSCOPE]["all"]
    report = format_eval_report(result)
    assert "| agentscope |" in report and "By question type, keyword_filter" in report


def test_candidate_questions_see_only_their_docs_and_a_missing_one_is_rebuilt(first_run):
    _, result = first_run
    summary = result["splits"]["questions"]
    assert summary["rebuilt_counterfactuals"] == 1 and not summary["not_rebuilt_counterfactuals"]
    records = [json.loads(line) for line in open(f"{summary['run_dir']}/results.jsonl", encoding="utf-8")]
    conflict = [r for r in records if r["qid"] == "mini-conflict"]
    for record in conflict:
        assert {doc for _, doc in record["evidence"]} <= {"bx-00000", "minicf-0"}
        assert set(record.get("pool_docs", [])) <= {"bx-00000", "minicf-0"}
    assert "candidates" in summary["kb_dirs"]["candidates"]


def test_a_resumed_run_skips_what_is_done_and_a_new_run_starts_over(first_run):
    request, result = first_run
    path = f"{result['splits']['questions']['run_dir']}/results.jsonl"
    before = open(path, encoding="utf-8").read()
    again = run_eval(request.model_copy(update={"resume": True}))
    assert open(path, encoding="utf-8").read() == before
    assert json.dumps(again["splits"]["questions"]["strategies"], sort_keys=True) == json.dumps(
        result["splits"]["questions"]["strategies"], sort_keys=True
    )
    small = request.model_copy(update={"strategies": ["hybrid_rerank"], "baseline": False, "limit": 3})
    for _ in range(2):  # the second run replaces the first one's results
        one = run_eval(small)
        lines = open(f"{one['splits']['questions']['run_dir']}/results.jsonl", encoding="utf-8").read().splitlines()
        assert len(lines) == 3 and all(json.loads(line)["strategy"] == "hybrid_rerank" for line in lines)
    assert one["splits"]["questions"]["run_dir"] != result["splits"]["questions"]["run_dir"]


def test_unknown_strategies_are_refused_before_anything_runs(mini_dataset, eval_root):
    with pytest.raises(EvalError, match="unknown strategies"):
        run_eval(EvalRequest(dataset_dir=mini_dataset, strategies=["fastest"], root=eval_root, progress=False))


def test_scores_follow_the_readme_conventions():
    questions = [
        Question(qid="a", question="?", answers=["15天"], gold_doc_ids=["d1"], qtype="t"),
        Question(qid="b", question="?", answerable=False, qtype="u"),
        Question(qid="c", question="?", answers=["x"], gold_doc_ids=["d9"], qtype="t"),
    ]
    records = [
        {
            "strategy": POLICY,
            "qid": "a",
            "answer": "退货期是15天【c1】【bad】。",
            "refused": False,
            "evidence": [["c2", "d2"], ["c1", "d1"]],
            "pool_docs": ["d2", "d1"],
            "cited_ids": ["c1", "bad"],
            "invalid_ids": ["bad"],
            "conflicts": [],
            "tool_calls": 3,
            "within_budget": True,
            "latency_ms": 10.0,
        },
        {
            "strategy": POLICY,
            "qid": "b",
            "answer": "",
            "refused": True,
            "evidence": [],
            "pool_docs": [],
            "cited_ids": [],
            "invalid_ids": [],
            "conflicts": [],
            "tool_calls": 1,
            "within_budget": True,
            "latency_ms": 30.0,
        },
        {
            "strategy": POLICY,
            "qid": "c",
            "answer": "",
            "refused": True,
            "evidence": [["c3", "d3"]],
            "pool_docs": ["d3", "d9"],
            "cited_ids": [],
            "invalid_ids": [],
            "conflicts": [],
            "tool_calls": 5,
            "within_budget": False,
            "latency_ms": 20.0,
        },
    ]
    scores = summarize(questions, records, [POLICY])["strategies"][POLICY]["all"]
    assert scores["retrieval"]["recall@1"] == 0.0 and scores["retrieval"]["recall@5"] == 0.5
    assert scores["retrieval"]["mrr@10"] == 0.25 and scores["retrieval"]["pool_recall"] == 1.0
    assert scores["answers"]["answer_hit"] == 1.0 and scores["answers"]["citation_precision"] == 0.5
    assert scores["answers"]["refusal_recall"] == 1.0 and scores["answers"]["false_refusal_rate"] == 0.5
    ops = scores["operations"]
    assert (ops["invalid_ids"], ops["answers_with_invalid_ids"], ops["budget_exceeded"], ops["tool_calls_max"]) == (
        1,
        1,
        1,
        5,
    )
    assert ops["latency_ms"]["p50"] == 20.0


def _rows(answerable_best, unanswerable_best, anyway=()):
    rows = [
        {"qid": f"a{i}", "answerable": True, "best": b, "refused_anyway": i in anyway}
        for i, b in enumerate(answerable_best)
    ]
    return rows + [
        {"qid": f"u{i}", "answerable": False, "best": b, "refused_anyway": False}
        for i, b in enumerate(unanswerable_best)
    ]


def test_the_threshold_maximises_refusal_recall_within_five_percent_false_refusals():
    answerable = list(np.linspace(0.30, 0.99, 40))
    unanswerable = [0.05, 0.1, 0.2, 0.25, 0.31, 0.5]
    chosen = choose_threshold(refusal_curve(_rows(answerable, unanswerable)))
    assert chosen["rule"] == "false refusals ≤ 5%"
    # the lowest threshold with the best recall: refuses 0.31 (and the answerable 0.30), keeps the rest
    assert answerable[0] < chosen["threshold"] <= answerable[1]
    curve = refusal_curve(_rows(answerable, unanswerable))
    assert curve["refusal_recall"][chosen["index"]] == pytest.approx(5 / 6)
    assert curve["false_refusal"][chosen["index"]] == pytest.approx(1 / 40)


def test_when_the_answer_stage_refuses_too_much_the_gate_may_add_five_points():
    answerable = list(np.linspace(0.30, 0.99, 20))
    chosen = choose_threshold(refusal_curve(_rows(answerable, [0.1, 0.2], anyway={5, 6, 7})))
    assert chosen["rule"].startswith("false refusals added by the gate")
    assert 0.2 < chosen["threshold"] <= answerable[1]
    assert GRID[0] == 0.0 and GRID[-1] == 1.0


def test_the_kb_threshold_keeps_other_settings_and_the_default_keeps_comments(tmp_path):
    kb_dir = tmp_path / "kb"
    kb_dir.mkdir()
    (kb_dir / "config.yaml").write_text("evidence_top_n: 4\nsomething_else: 1\n", encoding="utf-8")
    update_kb_config(kb_dir, {"refusal_threshold": 0.2345})
    assert yaml.safe_load((kb_dir / "config.yaml").read_text()) == {
        "evidence_top_n": 4,
        "something_else": 1,
        "refusal_threshold": 0.2345,
    }
    assert PipelineConfig.load(kb_dir, environ={}).refusal_threshold == 0.2345
    defaults = tmp_path / "pipeline.yaml"
    defaults.write_text(DEFAULTS_PATH.read_text(encoding="utf-8"), encoding="utf-8")
    write_default_threshold(0.17, defaults)
    text = defaults.read_text(encoding="utf-8")
    assert "refusal_threshold: 0.17\n" in text and "# Refusal gate" in text
    assert PipelineConfig.load(None, environ={}, defaults_path=defaults).refusal_threshold == 0.17


def test_an_eval_kb_forgets_a_dev_fitted_threshold_but_keeps_one_it_chose_itself(tmp_path):
    fitted, own, labelled = (tmp_path / name for name in ("fitted", "self", "labelled"))
    for kb_dir, extra in ((fitted, {}), (own, {"self_calibration": {"probes": 80}}), (labelled, {})):
        kb_dir.mkdir()
        update_kb_config(kb_dir, {"refusal_threshold": 0.105, "rule_packs": ["encyclopedia"], **extra})
    update_kb_config(labelled, {"labelled_calibration": {"questions": 40}})
    for kb_dir in (fitted, own, labelled):
        forget_dev_fitted_threshold(kb_dir)
    assert yaml.safe_load((fitted / "config.yaml").read_text()) == {"rule_packs": ["encyclopedia"]}
    assert (
        PipelineConfig.load(fitted, environ={}).refusal_threshold
        == PipelineConfig.load(None, environ={}).refusal_threshold
    )
    assert PipelineConfig.load(own, environ={}).refusal_threshold == 0.105
    assert PipelineConfig.load(labelled, environ={}).refusal_threshold == 0.105


def test_calibration_refuses_an_evaluation_set(datasets_dir, tmp_path):
    for dataset in (datasets_dir / "cmrc2018_dev", DEMO_DIR):
        with pytest.raises(ValueError, match="never fitted on"):
            run_calibration(CalibrationRequest(datasets=[dataset], dry_run=True, root=tmp_path, progress=False))
    shown = CliRunner().invoke(app, ["calibrate", "--dry-run", "--dataset", str(DEMO_DIR)])
    assert shown.exit_code != 0 and "never fitted on" in shown.output


def test_a_reranker_fit_that_loses_held_out_is_not_written_unless_the_current_weights_saw_no_training_set(tmp_path):
    # Two sets where a gold chunk is the one with the higher dense feature; the current weights
    # already rank it first, so a fit cannot beat them: nothing is written over weights fitted on
    # training sets, while weights fitted elsewhere (the dev sets, until issue #46) are replaced.
    def example(qid, gold_first):
        features = np.zeros((2, len(FEATURES)))
        features[0 if gold_first else 1, 0] = 1.0
        return {
            "qid": qid,
            "docs": ["g", "o"] if gold_first else ["o", "g"],
            "gold": ["g"],
            "features": features,
            "labels": np.array([1, 0] if gold_first else [0, 1]),
        }

    examples = {"s": [example(f"q{i}", i % 2 == 0) for i in range(40)]}
    report = fit_reranker(examples, write=False)
    assert report["current"]["mrr@10"] == 1.0 and not report["fitted_wins"] and not report["written"]
    assert score_weights(report["fitted_weights"], examples["s"])["recall@1"] == 1.0
    weights = tmp_path / "rerank_weights.json"
    incumbent = json.loads(DEFAULT_WEIGHTS_PATH.read_text(encoding="utf-8"))
    for from_training in (True, False):
        weights.write_text(json.dumps({**incumbent, "training_sets": ["t"] if from_training else []}), "utf-8")
        before = weights.read_text(encoding="utf-8")
        report = fit_reranker(examples, path=weights)
        assert report["written"] is not from_training and not report["fitted_wins"]
        assert (weights.read_text(encoding="utf-8") == before) is from_training
    assert json.loads(weights.read_text(encoding="utf-8"))["training_sets"] == ["s"]


def test_the_eval_command_prints_json_and_rejects_bad_input(mini_dataset, eval_root, first_run):
    runner = CliRunner()
    ok = runner.invoke(
        app,
        ["eval", "--dataset", str(mini_dataset), "--limit", "3", "--no-baseline", "--json", "--root", str(eval_root)],
    )
    assert ok.exit_code == 0, ok.output
    parsed = json.loads(ok.stdout)
    assert parsed["splits"]["questions"]["n_questions"] == 3
    bad = runner.invoke(
        app, ["eval", "--dataset", str(mini_dataset), "--strategy", "policy,fastest", "--root", str(eval_root)]
    )
    assert bad.exit_code == 2 and "unknown strategies" in bad.output


def test_llm_mode_runs_the_model_path_and_needs_a_model(mini_dataset, eval_root):
    # An answerer that never cites: the inspector rejects it twice and the pipeline falls back to
    # the extractive answer, so a question past the refusal gate costs two model calls (one
    # refused at the gate costs none) and every answer stays valid.
    with ReplayServer(default_step={"content": "保险的事情可以问客服。"}) as server:
        request = EvalRequest(
            dataset_dir=mini_dataset,
            mode="llm",
            answerer=f"compatible:test@{server.base_url}",
            limit=3,
            baseline=False,
            root=eval_root,
            progress=False,
            overrides={"max_retries": 0, "model_timeout_s": 10},
        )
        summary = run_eval(request)["splits"]["questions"]
        records = [json.loads(line) for line in open(f"{summary['run_dir']}/results.jsonl", encoding="utf-8")]
        assert server.chat_requests()
    assert len(records) == 3 and not [r for r in records if r.get("error")]
    assert {r["model_calls"] for r in records} <= {0, 2} and any(r["model_calls"] == 2 for r in records)
    assert all(not r["invalid_ids"] and r["answer_source"] in ("extractive", "refusal") for r in records)
    # every request reported the server's default usage (10 in, 5 out); the eval report sums it
    assert all(
        r["usage"]["requests"] == r["model_calls"] and r["usage"]["input_tokens"] == 10 * r["model_calls"]
        for r in records
    )
    used = summary["strategies"][POLICY]["all"]["operations"]["usage"]
    assert used["requests"] == sum(r["model_calls"] for r in records) and used["output_tokens"] == 5 * used["requests"]
    assert used["cost"] is None  # the model "test" has no price: unknown, not 0
    with pytest.raises(EvalError, match="needs a model"):
        run_eval(
            EvalRequest(dataset_dir=mini_dataset, mode="llm", limit=1, baseline=False, root=eval_root, progress=False)
        )


def test_a_dry_calibration_run_reports_both_steps_and_writes_nothing(mini_dataset, eval_root, first_run):
    weights = DEFAULT_WEIGHTS_PATH.read_bytes()
    result = run_calibration(
        CalibrationRequest(datasets=[mini_dataset], per_set=20, dry_run=True, root=eval_root, progress=False)
    )
    fit = result["reranker"]
    assert set(fit["sets"]) == {"mini_bx"} and fit["train_rows"] > 0 and not fit["written"]
    thresholds = result["threshold"]
    assert thresholds["sets"]["mini_bx"]["n_unanswerable"] + thresholds["sets"]["mini_bx"]["n_answerable"] > 0
    assert "pooled" in thresholds and thresholds["written"] == []
    assert DEFAULT_WEIGHTS_PATH.read_bytes() == weights
    assert not list(eval_root.glob("kbs/*/config.yaml")) and not (eval_root / "calibration.json").exists()
    assert "### Refusal threshold" in format_calibration_report(result)


def test_a_model_retrained_into_the_same_folder_is_another_run(tmp_path):
    folder = constant_claim_model(tmp_path / "model", "supported")
    first = model_digest(folder)
    assert first == model_digest(folder) and model_digest(None) is None
    constant_claim_model(folder, "contradicted")  # the same path, another head
    assert model_digest(folder) != first


def test_a_run_with_a_model_folder_is_another_run(mini_dataset, eval_root, tmp_path):
    request = EvalRequest(dataset_dir=mini_dataset, root=eval_root)
    split = find_splits(mini_dataset)[0]
    plain = PipelineConfig.load(None, environ={})
    folder = constant_claim_model(tmp_path / "model", "supported")
    with_model = plain.model_copy(update={"pair_model": folder})
    keys = {run_dir_for(request, split, {"policy": c}).name for c in (plain, with_model)}
    assert len(keys) == 2
