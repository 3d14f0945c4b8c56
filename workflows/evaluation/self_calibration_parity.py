"""Benchmark: a KB's self-calibrated refusal threshold against one fitted on the set's own questions
(issue #44: "on the dev sets, self-calibrated thresholds within 5 points of false refusals of the fitted
ones"). The fitted one is calibrate's rule (the highest refusal recall at ≤ 5% false refusals, on the 70%
of questions it fits on) applied here as a reference only: since issue #46 nothing fitted on an
evaluation set ships. A set with fewer than MIN_PER_CLASS questions of a kind is read at the default.

For each dev set: its questions are answered with the gate off (calibrate's `refusal_rows`, resumable
runs under the eval root), so every question has the score the gate reads; the set's main KB chooses
its own threshold from its documents alone (workflows/self_calibration.py, nothing written); both
thresholds are then read against the same scores: false refusals of the answerable questions and
refusal recall of the unanswerable ones (the holdout split's removed documents).

    python -m citescope.workflows.evaluation.self_calibration_parity [--dataset DIR ...] [--per-set N]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from citescope.knowledge.kb import KnowledgeBase
from citescope.workflows.evaluation.calibrate import (
    CANDIDATE_PER_QTYPE,
    CalibrationRequest,
    at_threshold,
    calibrate_thresholds,
    refusal_rows,
)
from citescope.workflows.evaluation.evaluate import default_root
from citescope.workflows.evaluation.training_sets import EVALUATION_DIRS
from citescope.workflows.metrics import roc_auc
from citescope.workflows.pipeline_config import DEFAULTS_PATH, PipelineConfig
from citescope.workflows.self_calibration import self_calibrate

PARITY_POINTS = 0.05  # issue #44: self-calibrated false refusals within 5 points of the fitted threshold's
DEFAULT_SETS = ("cmrc2018_dev", "rgb_zh")
DATASETS = EVALUATION_DIRS[0]


def parity(
    dataset: Path,
    per_set: int = 300,
    seed: int = 0,
    max_probes: int = 200,
    per_qtype: int = CANDIDATE_PER_QTYPE,
    max_embed: int = 2000,
    root: Path | None = None,
) -> dict:
    """{dataset, kb, fitted: {threshold, false_refusal, refusal_recall}, self: {...}, points, within}.
    per_qtype: questions per qtype of a candidate-protocol set (rgb_zh), as calibrate reads them.
    root: the eval KBs and runs (default: the eval root; another one while an eval holds those KBs)."""
    request = CalibrationRequest(
        datasets=[dataset],
        per_set=per_set,
        candidate_per_qtype=per_qtype,
        seed=seed,
        max_embed=max_embed,
        progress=False,
        root=root or default_root(),
    )
    rows = refusal_rows(dataset, request)
    main = [r for r in rows if r["split"] == "questions"]
    kb_dir = Path(next(iter(main[0]["kb_dirs"].values())))  # {"corpus" or "candidates": the main KB}
    default = PipelineConfig.load(None, environ={}, defaults_path=DEFAULTS_PATH).refusal_threshold
    fitted = float(calibrate_thresholds({dataset.name: rows})["sets"][dataset.name].get("threshold", default))
    kb = KnowledgeBase(kb_dir).warm_up()
    try:
        figures = self_calibrate(kb, seed=seed, max_probes=max_probes, write=False)
    finally:
        kb.close()
    return {
        "dataset": dataset.name,
        "kb": kb_dir.name,
        "pair_model": str(PipelineConfig.load(kb_dir).pair_model or "") or None,
        "separation": separation(rows),
        **compare(rows, fitted, figures["threshold"]),
        "probes": {k: figures[k] for k in ("answerable", "unanswerable", "false_refusal_rate", "refusal_recall")},
        "by_kind": figures["by_kind"],
    }


def separation(rows: list[dict]) -> float | None:
    """ROC AUC of the score the gate reads, answerable against unanswerable questions (a question
    the answer stage refuses anyway scores 0): how well any threshold can tell them apart."""
    score = [0.0 if r["refused_anyway"] or r["best"] is None else float(r["best"]) for r in rows]
    answerable = [s for s, r in zip(score, rows, strict=True) if r["answerable"]]
    unanswerable = [s for s, r in zip(score, rows, strict=True) if not r["answerable"]]
    return roc_auc(answerable, unanswerable)


def compare(rows: list[dict], fitted: float, self_threshold: float) -> dict:
    """Both thresholds read against the same rows (calibrate's `refusal_rows`): false refusals,
    refusal recall, and how many points of false refusals the self-calibrated one adds."""
    at = {
        name: {"threshold": threshold, **at_threshold(rows, threshold)}
        for name, threshold in (("fitted", fitted), ("self", self_threshold))
    }
    points = at["self"]["false_refusal"] - at["fitted"]["false_refusal"]
    return {**at, "points": round(points, 4), "within": abs(points) <= PARITY_POINTS + 1e-9}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--dataset", type=Path, action="append", help="a dev set folder (default: cmrc2018_dev, rgb_zh)"
    )
    parser.add_argument("--per-set", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-probes", type=int, default=200)
    parser.add_argument("--per-qtype", type=int, default=CANDIDATE_PER_QTYPE, help="rgb_zh: questions per qtype")
    parser.add_argument("--max-embed", type=int, default=2000, help="refuse KBs that would embed more texts than this")
    parser.add_argument("--root", type=Path, help="eval KBs and runs (default: ~/.cache/citescope/eval)")
    args = parser.parse_args()
    datasets = args.dataset or [DATASETS / name for name in DEFAULT_SETS]
    report = [
        parity(d, args.per_set, args.seed, args.max_probes, args.per_qtype, args.max_embed, args.root) for d in datasets
    ]
    print(json.dumps(report, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
