"""The retrieval benchmark end to end on a small real slice: baoxianzhidao questions against a KB
of its first documents, every leg including both baselines. The slice is embedded here if the
cache lacks it (a fresh machine: about 150 short chunks); the bench itself skips such a set."""

from __future__ import annotations

import json

import pytest

from citescope.workflows.evaluation.bench.retrieval import (
    LEG_LABELS,
    LEGS,
    EvalSet,
    format_retrieval_report,
    run_retrieval_bench,
    run_scale_latency,
)

SLICE = EvalSet("bx", "baoxianzhidao slice", ("baoxianzhidao",), "baoxianzhidao")


@pytest.fixture(scope="module")
def result(datasets_dir, tmp_path_factory):
    return run_retrieval_bench(
        datasets_dir,
        limit=24,
        sets=[SLICE],
        max_docs=120,
        scale_sizes=(),
        kb_root=tmp_path_factory.mktemp("kbs"),
        allow_embedding=True,
    )


def test_every_leg_is_scored_in_range(result):
    bench = result["sets"]["bx"]
    assert bench["n_questions"] == 24 and bench["kb"]["docs"] == 120
    assert set(bench["legs"]) == {*LEGS, "bm25*", "hybrid*"}  # nothing fitted on the questions (#46)
    for scores in bench["legs"].values():
        assert scores["n"] == 24
        for key in ("recall@1", "recall@5", "recall@10", "mrr@10"):
            assert 0.0 <= scores[key] <= 1.0
        assert scores["recall@1"] <= scores["recall@5"] <= scores["recall@10"]
        assert scores["recall@1"] <= scores["mrr@10"] <= scores["recall@10"]


def test_hybrid_is_not_worse_than_both_of_its_legs(result):
    legs = result["sets"]["bx"]["legs"]
    assert legs["hybrid"]["recall@5"] >= min(legs["bm25"]["recall@5"], legs["dense"]["recall@5"])
    assert legs["bm25"]["recall@5"] > 0.5  # the slice's standard questions are findable at all


def test_latency_and_ablation_are_reported(result):
    bench = result["sets"]["bx"]
    assert {"bm25", "dense", "hybrid", "rerank", "rank_bm25", "agentscope"} <= set(bench["latency_ms"])
    assert bench["latency_ms"]["rerank"]["n"] == 24
    assert {"bm25, title_weight=2", "hybrid (skills.yaml)", "hybrid, weighted fusion"} <= set(bench["ablation"])
    assert "rerank_fit" not in result  # no weights are fitted on an evaluation set's questions (#46)
    json.dumps(result)  # the --json output


def test_report_has_a_table_row_per_leg(result):
    report = format_retrieval_report(result)
    assert "### (bx) baoxianzhidao slice" in report
    assert "| baseline: AgentScope SimpleKnowledge (Milvus Lite) |" in report
    assert "### Ablation" in report and "### Targets (Recall@5)" in report
    rows = {line.split(" | ")[0][2:] for line in report.splitlines() if line.startswith("| ")}
    for leg in result["sets"]["bx"]["legs"]:
        assert LEG_LABELS[leg] in rows
    held = result["sets"]["bx"]["held_out"]  # the questions `run.py calibrate` kept out of its weight fit
    assert 0 < held["n"] < 24 and held["hybrid+rerank"]["n"] == held["hybrid"]["n"] == held["n"]
    assert f"| hybrid 30 → rerank, only the {held['n']} questions calibration held out |" in report
    assert f"| hybrid, only the {held['n']} questions calibration held out |" in report


def test_scale_latency_on_a_small_replicated_kb(datasets_dir, tmp_path):
    scale = run_scale_latency(
        datasets_dir,
        [150],
        corpora=("baoxianzhidao",),
        folder=tmp_path,
        kb_root=tmp_path / "kbs",
        n_queries=5,
        allow_embedding=True,
    )
    row = scale[150]
    assert row["chunks"] >= 150 and row["queries"] == 5
    assert {row[step]["n"] for step in ("dense", "bm25", "hybrid", "rerank")} == {5}
    engines = row["vector_engines"]
    assert set(engines) == {"milvus_lite_flat", "numpy", "faiss_flat", "faiss_hnsw"}
    assert 0.9 <= engines["faiss_hnsw"]["recall@10"] <= 1.0  # HNSW is near exact on 150 vectors


def test_unknown_legs_are_refused(datasets_dir):
    with pytest.raises(ValueError, match="unknown legs"):
        run_retrieval_bench(datasets_dir, legs=["bm25", "bm99"], sets=[SLICE], scale_sizes=())
