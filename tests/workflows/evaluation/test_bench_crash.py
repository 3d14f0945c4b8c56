"""Random-moment SIGKILL trials (workflows/evaluation/bench/crash.py): ingest, ingest --prune and delete
each killed once at a seeded random moment; no document half-present, reruns converge."""

from __future__ import annotations

from citescope.workflows.evaluation.bench.crash import format_crash_report, run_crash_trials


def test_random_kills_leave_no_violations_and_reruns_converge(tmp_path):
    result = run_crash_trials(trials=3, seed=0, workdir=tmp_path, measure_runs=1)

    assert result["by_kind"] == {"ingest": 1, "prune": 1, "delete": 1}
    assert result["violations"] == 0, format_crash_report(result)
    assert result["rerun_converged"] == 3
    # every trial checked every document: 14 documents across v1 and v2, 12 for delete
    assert sum(sum(r["states"].values()) for r in result["records"]) == 14 + 14 + 12
