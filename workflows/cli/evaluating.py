"""`run.py eval` and `run.py calibrate`: a dataset through the real pipeline, and the fit of the
reranker and the refusal threshold on the dev sets."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape

from citescope.workflows.cli.common import REPO, err, fail, open_kb, valid_or_exit


def _names(values: list[str] | None) -> list[str]:
    """Repeated options and comma-separated values alike: --strategy a --strategy b,c."""
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


EVAL_OPTIONS = {
    "dataset_dir": "--dataset",
    "questions_file": "--questions",
    "limit": "--limit",
    "per_qtype": "--per-qtype",
    "mode": "--mode",
    "planner": "--planner",
    "answerer": "--answerer",
    "strategies": "--strategy",
    "concurrency": "--concurrency",
    "seed": "--seed",
    "run_dir": "--run-dir",
    "max_embed": "--max-embed",
    "root": "--root",
}


def eval_command(
    dataset: Path = typer.Option(..., "--dataset", help="a dataset folder: ../shared/datasets/NAME or knowledge/demo"),
    questions: str = typer.Option(
        None, "--questions", help="one question file of the set (default: every questions*.jsonl)"
    ),
    limit: int = typer.Option(None, "--limit", help="questions per file, stratified by qtype (seeded)"),
    per_qtype: int = typer.Option(None, "--per-qtype", help="or: this many questions of each qtype"),
    mode: str = typer.Option("offline", "--mode", help="offline | llm"),
    planner: str = typer.Option(None, "--planner", help="llm mode: planner model spec (e.g. dashscope:qwen-plus)"),
    answerer: str = typer.Option(None, "--answerer", help="llm mode: answerer model spec"),
    strategy: list[str] = typer.Option(
        None,
        "--strategy",
        help="policy and/or arm names of agents/arms.yaml, "
        "compared side by side (repeat or comma-separate; default: policy)",
    ),
    baseline: bool = typer.Option(True, help="AgentScope SimpleKnowledge retrieval row"),
    as_json: bool = typer.Option(False, "--json", help="print the scores as JSON"),
    concurrency: int = typer.Option(1, "--concurrency", help="questions in flight (latency is measured under it)"),
    resume: bool = typer.Option(False, "--resume", help="continue the run: skip questions already in its results"),
    seed: int = typer.Option(0, "--seed"),
    run_dir: Path = typer.Option(
        None,
        "--run-dir",
        help="where results.jsonl and summary.json go (default: ~/.cache/citescope/eval/runs/<dataset>-<split>-<hash>)",
    ),
    max_embed: int = typer.Option(2000, "--max-embed", help="refuse KBs that would embed more texts than this"),
    root: Path = typer.Option(None, "--root", help="eval KBs and runs (default: ~/.cache/citescope/eval)"),
) -> None:
    """Run a dataset's questions through the real pipeline: retrieval, answers, citations, refusal,
    conflicts, tool calls and latency, by question type and strategy."""
    from citescope.workflows.evaluation.evaluate import EvalError, EvalRequest, format_eval_report, run_eval

    request = valid_or_exit(
        EvalRequest,
        EVAL_OPTIONS,
        dataset_dir=dataset,
        questions_file=questions,
        limit=limit,
        per_qtype=per_qtype,
        mode=mode,
        planner=planner,
        answerer=answerer,
        strategies=_names(strategy) or ["policy"],
        baseline=baseline,
        concurrency=concurrency,
        resume=resume,
        seed=seed,
        run_dir=run_dir,
        max_embed=max_embed,
        progress=not as_json,
        **({"root": root} if root else {}),
    )
    try:
        result = run_eval(request)
    except (EvalError, ValueError) as exc:
        fail(exc)
    print(json.dumps(result, ensure_ascii=False, indent=1) if as_json else format_eval_report(result))


def calibrate_command(
    dataset: list[Path] = typer.Option(
        None,
        "--dataset",
        help="training-made dataset folders (repeat; default: cmrc2018_train and pawsx_zh made from "
        "../shared/training); an evaluation set is refused",
    ),
    per_set: int = typer.Option(1000, "--per-set", help="questions per set for the reranker fit and the threshold"),
    fit_reranker: bool = typer.Option(True, help="refit tools/rerank_weights.json (written only if it wins held out)"),
    threshold: bool = typer.Option(True, help="calibrate the refusal threshold"),
    write_default: bool = typer.Option(False, help="also write the pooled threshold to workflows/pipeline.yaml"),
    dry_run: bool = typer.Option(False, "--dry-run", help="report only: write no weights, configs or plot"),
    plot: Path = typer.Option(REPO / "docs" / "calibration_refusal.png", help="precision/recall curve PNG"),
    as_json: bool = typer.Option(False, "--json"),
    seed: int = typer.Option(0, "--seed"),
    max_embed: int = typer.Option(2000, "--max-embed", help="refuse KBs that would embed more texts than this"),
    self_probes: bool = typer.Option(
        False, "--self", help="calibrate --kb's threshold from probes made of its own documents (no dataset)"
    ),
    kb: Path = typer.Option(None, "--kb", help="--self or --questions: the knowledge base folder"),
    questions: Path = typer.Option(
        None,
        "--questions",
        help="with --kb: choose its threshold on the shop's own labelled questions (JSON lines: question, "
        "answerable), which override the probes",
    ),
    max_probes: int = typer.Option(200, "--max-probes", help="--self: probes made of the KB's documents, at most"),
    hedging_band: bool = typer.Option(
        False, "--hedging-band", help="--self: also refuse hedged guesses below the band the probes choose"
    ),
) -> None:
    """Fit the offline reranker on training data and choose the default refusal threshold (≤ 5% false refusals);
    with --self, choose one KB's threshold from its own documents (≤ 10% false refusals on its probes)."""
    if questions is not None:  # runtime code only, as --self: a shop's KB on its own labelled questions
        if kb is None:
            fail("--questions: name the knowledge base with --kb DIR")
        from citescope.workflows.self_calibration import (
            QuestionFileError,
            SelfCalibrationError,
            calibrate_from_questions,
            format_labelled,
        )

        base = open_kb(kb)
        try:
            figures = calibrate_from_questions(base, questions, write=not dry_run)
        except (QuestionFileError, SelfCalibrationError) as exc:
            fail(exc)
        finally:
            base.close()
        print(json.dumps(figures, ensure_ascii=False, indent=1) if as_json else format_labelled(figures))
        return
    if self_probes:  # runtime code only: a shop's KB calibrates itself without workflows.evaluation
        if kb is None:
            fail("--self: name the knowledge base with --kb DIR")
        if max_probes < 1:
            fail(f"--max-probes: must be at least 1 (got {max_probes})")
        from citescope.workflows.self_calibration import format_self_calibration

        figures = self_calibrate_kb(kb, seed=seed, dry_run=dry_run, max_probes=max_probes, hedging_band=hedging_band)
        figures = figures or {}
        print(json.dumps(figures, ensure_ascii=False, indent=1) if as_json else format_self_calibration(figures))
        return
    from citescope.workflows.evaluation.calibrate import CalibrationRequest, format_calibration_report, run_calibration

    request = CalibrationRequest(
        datasets=list(dataset or []),
        per_set=per_set,
        fit_reranker=fit_reranker,
        threshold=threshold,
        write_default=write_default,
        dry_run=dry_run,
        plot=plot,
        seed=seed,
        max_embed=max_embed,
        progress=not as_json,
    )
    try:
        result = run_calibration(request)
    except ValueError as exc:  # an evaluation set named with --dataset, a training file that cannot be read
        fail(exc)
    print(json.dumps(result, ensure_ascii=False, indent=1) if as_json else format_calibration_report(result))


def self_calibrate_kb(
    kb_dir: Path,
    seed: int = 0,
    dry_run: bool = False,
    strict: bool = True,
    max_probes: int = 200,
    hedging_band: bool = False,
) -> dict | None:
    """Self-calibrate a KB (workflows/self_calibration.py): its figures. When it cannot (too few
    probes): strict, one line and exit 2; else a warning and None (an ingest that worked stays a success)."""
    from citescope.workflows.self_calibration import SelfCalibrationError, self_calibrate

    base = open_kb(kb_dir)  # a folder that is no KB: one line naming it and exit 2
    try:
        return self_calibrate(base, seed=seed, max_probes=max_probes, write=not dry_run, hedging_band=hedging_band)
    except SelfCalibrationError as exc:
        if strict:
            fail(exc)
        err.print(f"[yellow]not self-calibrated[/yellow] {escape(str(exc))}", highlight=False)
        return None
    finally:
        base.close()
