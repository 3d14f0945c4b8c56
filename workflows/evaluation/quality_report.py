"""docs/quality.md: the eval suite on every dev set, with the targets it is held to.

    python -m citescope.workflows.evaluation.quality_report                  # the whole suite (`make eval`)
    python -m citescope.workflows.evaluation.quality_report --resume         # continue an interrupted suite
    python -m citescope.workflows.evaluation.quality_report --only rgb_zh    # one entry (others: saved results)
    python -m citescope.workflows.evaluation.quality_report --report-only    # re-render from saved results

The suite is data (suites.yaml beside this file, checked when it is read), and so is the report's
fixed text (quality_report.md). Each entry is one
`run.py eval` request; its result is saved under ~/.cache/citescope/eval/quality/<entry>.json and the
report is rendered from whatever is saved, naming the entries that have not run yet and the command
that runs them. The history of the numbers (what each session changed and measured) is in
docs/notes/quality-history.md, not here.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from citescope.agents.arms import load_arms
from citescope.tools.rerank import DEFAULT_WEIGHTS_PATH, load_weights
from citescope.workflows.evaluation.calibrate import format_calibration_report
from citescope.workflows.evaluation.evaluate import (
    DEFAULT_MAX_EMBED,
    POLICY,
    EvalError,
    EvalRequest,
    default_root,
    format_split,
    markdown_table,
    run_eval,
)

REPO = Path(__file__).resolve().parents[2]
DATASETS = REPO.parent / "shared" / "datasets"
DEMO = REPO / "knowledge" / "demo"
REPORT = REPO / "docs" / "quality.md"
SUITE_FILE = Path(__file__).with_name("suites.yaml")

PositiveInt = Annotated[int, Field(strict=True, gt=0)]


class SuiteError(ValueError):
    """A suites file that cannot be read or holds a bad entry; the message names the file and the entry."""


class SuiteEntry(BaseModel):
    """One `run.py eval` request of the suite (the keys are described at the top of suites.yaml)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    dataset: str = Field(min_length=1)  # "demo" (knowledge/demo), or a folder under ../shared/datasets
    title: str = Field(min_length=1)
    questions_file: str | None = None
    limit: PositiveInt | None = None
    per_qtype: PositiveInt | None = None
    seed: Annotated[int, Field(strict=True, ge=0)] = 0
    strategies: tuple[str, ...] = Field(default=(POLICY,), min_length=1)
    baseline: Annotated[bool, Field(strict=True)] = True
    concurrency: PositiveInt = 2

    @property
    def dataset_dir(self) -> Path:
        return DEMO if self.dataset == "demo" else DATASETS / self.dataset

    def command(self) -> str:
        """The `run.py eval` command line that runs this entry alone."""
        dataset = "knowledge/demo" if self.dataset == "demo" else f"../shared/datasets/{self.dataset}"
        parts = [f"python run.py eval --dataset {dataset}"]
        parts += [f"--questions {self.questions_file}"] if self.questions_file else []
        parts += [f"--limit {self.limit}"] if self.limit else []
        parts += [f"--per-qtype {self.per_qtype}"] if self.per_qtype else []
        parts += [f"--seed {self.seed}"] if self.seed else []
        parts += [f"--strategy {','.join(self.strategies)}"] if self.strategies != (POLICY,) else []
        parts += ["--no-baseline"] if not self.baseline else []
        parts += [f"--concurrency {self.concurrency}"] if self.concurrency != 1 else []
        return " ".join(parts)


def load_suite(path: Path = SUITE_FILE) -> tuple[SuiteEntry, ...]:
    """The suite's entries in file order; any problem is a SuiteError naming the file and the entry."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SuiteError(f"{path}: cannot read the suite ({exc.strerror or exc})") from exc
    except yaml.YAMLError as exc:
        raise SuiteError(f"{path}: not valid YAML ({exc})") from exc
    if not isinstance(raw, dict) or set(raw) != {"suite"} or not isinstance(raw["suite"], list) or not raw["suite"]:
        raise SuiteError(f"{path}: expected one top-level key 'suite' holding a list of entries")
    strategies = {POLICY, *load_arms()}
    entries: dict[str, SuiteEntry] = {}
    for number, item in enumerate(raw["suite"], start=1):
        label = item.get("name") if isinstance(item, dict) else None
        where = f"{path}: entry {number}" + (f" ({label!r})" if label else "")
        if not isinstance(item, dict):
            raise SuiteError(f"{where}: expected a mapping with name, dataset and title")
        try:
            entry = SuiteEntry(**item)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise SuiteError(f"{where}: {problems}") from None
        _check_entry(entry, where, strategies, entries)
        entries[entry.name] = entry
    return tuple(entries.values())


def _check_entry(entry: SuiteEntry, where: str, strategies: set[str], earlier: dict[str, SuiteEntry]) -> None:
    if entry.name in earlier:
        raise SuiteError(f"{where}: name {entry.name!r} is used by an earlier entry (it names the saved results)")
    if "/" in entry.name or "/" in entry.dataset or entry.dataset.startswith("."):
        raise SuiteError(f"{where}: name and dataset are plain names ('demo' or a folder of ../shared/datasets)")
    unknown = sorted(set(entry.strategies) - strategies)
    if unknown:
        raise SuiteError(f"{where}: unknown strategies {unknown} (known: {', '.join(sorted(strategies))})")
    # the demo ships with the code, so its questions file can be checked here; a dataset may be absent
    if entry.dataset == "demo" and entry.questions_file and not (DEMO / entry.questions_file).is_file():
        raise SuiteError(f"{where}: knowledge/demo has no questions file {entry.questions_file!r}")


SUITE = load_suite()


def results_dir() -> Path:
    return default_root() / "quality"


def run_entry(entry: SuiteEntry, resume: bool, progress: bool = True, max_embed: int = DEFAULT_MAX_EMBED) -> dict:
    request = EvalRequest(
        dataset_dir=entry.dataset_dir,
        questions_file=entry.questions_file,
        limit=entry.limit,
        per_qtype=entry.per_qtype,
        seed=entry.seed,
        strategies=list(entry.strategies),
        baseline=entry.baseline,
        concurrency=entry.concurrency,
        resume=resume,
        progress=progress,
        max_embed=max_embed,
    )
    started = time.perf_counter()
    result = run_eval(request)
    result.update(
        {
            "entry": entry.name,
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "seconds": round(time.perf_counter() - started, 1),
        }
    )
    path = results_dir() / f"{entry.name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    return result


def saved_results(suite: Sequence[SuiteEntry] | None = None) -> dict[str, dict]:
    out = {}
    for entry in SUITE if suite is None else suite:
        path = results_dir() / f"{entry.name}.json"
        if path.exists():
            out[entry.name] = json.loads(path.read_text(encoding="utf-8"))
    return out


# ----------------------------------------------------------------------------- targets


# RGB's targets read every dev question, not the 25-per-type sample that compares strategies
RGB_TARGETS = "rgb_zh-all"


def _all(
    results: dict, entry: str, split: str = "questions", strategy: str = POLICY, group: str = "all"
) -> dict | None:
    try:
        return results[entry]["splits"][split]["strategies"][strategy][group]
    except KeyError:
        return None


def _fmt(value) -> str:
    return "–" if value is None or value != value else f"{value:.3f}"


def targets(results: dict) -> list[list[str]]:
    """[target, measured, met] rows; a target whose data has not run says so."""
    rows: list[list[str]] = []
    policy_runs = [
        (name, split, s["strategies"][POLICY])
        for name, r in results.items()
        for split, s in r["splits"].items()
        if POLICY in s["strategies"]
    ]
    invalid = sum(g["all"]["operations"]["invalid_ids"] for _, _, g in policy_runs)
    over = sum(g["all"]["operations"]["budget_exceeded"] for name, _, g in policy_runs)
    errors = sum(g["all"]["operations"]["errors"] for name, _, g in policy_runs)
    n = sum(g["all"]["answers"]["n"] for _, _, g in policy_runs)
    rows.append(["invalid citation ids = 0", f"{invalid} over {n:,} answers of every run", _met(invalid == 0)])
    for name in ("demo", "cmrc2018_dev", "baoxianzhidao", "domainrag", RGB_TARGETS):
        scores = _all(results, name)
        value = scores["answers"]["citation_precision"] if scores else None
        rows.append(
            [f"citation precision ≥ 0.95 — {name}", _fmt(value), _met(value is not None and value >= 0.95, value)]
        )
    for name, split, group, answerable in (
        ("cmrc2018_dev", "questions_holdout", "unanswerable_kb_removed", "all"),
        ("baoxianzhidao", "questions_holdout", "unanswerable_kb_removed", "all"),
        (RGB_TARGETS, "questions", "negative_rejection", "all"),
    ):
        refusal = _all(results, name, split, group=group)
        overall = _all(results, name, split, group=answerable)
        recall = refusal["answers"]["refusal_recall"] if refusal else None
        false = overall["answers"]["false_refusal_rate"] if overall else None
        rows.append(
            [
                f"refusal recall ≥ 0.90 at ≤ 5% false refusals — {name} ({group})",
                f"recall {_fmt(recall)}, false refusals {_fmt(false)}",
                _met(recall is not None and false is not None and recall >= 0.9 and false <= 0.05, recall),
            ]
        )
    for name in (RGB_TARGETS, "domainrag"):
        conflict = _all(results, name, group="conflicting_evidence")
        rate = conflict["answers"]["conflict_flag_rate"] if conflict else None
        fake = conflict["answers"]["fake_answer_asserted"] if conflict else None
        rows.append(
            [
                f"conflicts flagged ≥ 80% — {name} conflicting_evidence",
                _fmt(rate),
                _met(rate is not None and rate >= 0.8, rate),
            ]
        )
        rows.append(
            [
                f"fake answer never asserted — {name} conflicting_evidence",
                _fmt(fake),
                _met(fake is not None and fake == 0, fake),
            ]
        )
    flags = [(g["all"]["answers"]["false_flag_rate"], g["all"]["answers"]["n"]) for _, _, g in policy_runs]
    false_flags = sum(rate * count for rate, count in flags if rate == rate) / max(
        1, sum(c for r, c in flags if r == r)
    )
    rows.append(
        [
            "false conflict flags ≤ 5% (questions not expecting a conflict, every run)",
            _fmt(false_flags),
            _met(false_flags <= 0.05),
        ]
    )
    demo = _all(results, "demo")
    p50 = demo["operations"]["latency_ms"]["p50"] if demo else None
    rows.append(
        [
            "end-to-end p50 ≤ 300 ms offline on the demo KB",
            "–" if p50 is None else f"{p50:.0f} ms",
            _met(p50 is not None and p50 <= 300, p50),
        ]
    )
    rows.append(["tool budgets never exceeded", f"{over} questions over budget, {errors} errors", _met(over == 0)])
    for name in ("demo", "cmrc2018_dev", "baoxianzhidao", "domainrag", RGB_TARGETS):
        scores = _all(results, name)
        if scores:
            a = scores["answers"]
            rows.append(
                [
                    f"answer hit rate — {name} (report only)",
                    f"{_fmt(a['answer_hit'])} of answered, {_fmt(a['answer_hit_all_answerable'])} of answerable",
                    "–",
                ]
            )
    return rows


def _met(ok: bool, value=0.0) -> str:
    if value is None:
        return "not run"
    return "**met**" if ok else "not met"


# ----------------------------------------------------------------------------- report

# The report's fixed text (what it is, the method in short, how to reproduce), with {minutes} to fill in
FRAME_FILE = Path(__file__).with_name("quality_report.md")


def render(results: dict, calibration: dict | None, suite: Sequence[SuiteEntry] | None = None) -> str:
    suite = SUITE if suite is None else suite
    weights = load_weights(DEFAULT_WEIGHTS_PATH)
    minutes = sum(r.get("seconds", 0) for r in results.values()) / 60
    lines = [FRAME_FILE.read_text(encoding="utf-8").format(minutes=minutes)]
    lines += ["## Targets (issue 5)", ""]
    lines += markdown_table(["target", "measured", "status"], targets(results))
    for entry in suite:
        lines += ["", f"## {entry.title}", "", f"`{entry.command()}`", ""]
        result = results.get(entry.name)
        if result is None:
            lines.append(
                "Not run yet: run the command above (or `python -m citescope.workflows.evaluation.quality_report "
                f"--only {entry.name}`)."
            )
            continue
        lines.append(f"Finished {result['finished_at']}, {result['seconds'] / 60:.1f} min.")
        for split, summary in result["splits"].items():
            lines += ["", f"### {split} ({Path(summary['questions_file']).name} on {_corpus_names(summary)})", ""]
            lines += _rebuilt_note(summary)
            lines += format_split(summary, by_qtype_for=[POLICY])
    if calibration:
        lines += ["", "## Calibration (`python run.py calibrate`)", "", calibration_summary(calibration)]
        if calibration.get("plot"):
            lines += ["", f"![refusal calibration]({Path(calibration['plot']).name})"]
    lines += [
        "",
        "## Environment",
        "",
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.platform()}; reranker weights: "
        f"intercept {weights['intercept']:+.2f}, "
        + ", ".join(f"{k} {v:+.2f}" for k, v in weights["weights"].items())
        + ".",
    ]
    return "\n".join(lines) + "\n"


def _corpus_names(summary: dict) -> str:
    return ", ".join(Path(c).name for c in summary["corpus"])


def _rebuilt_note(summary: dict) -> list[str]:
    """A line on the counterfactual docs rebuilt for this split (DomainRAG's are missing from the corpus)."""
    extra = []
    if summary.get("rebuilt_counterfactuals"):
        extra.append(
            f"{summary['rebuilt_counterfactuals']} counterfactual candidate docs rebuilt from their "
            "gold doc (missing from the shared corpus)"
        )
    if summary.get("not_rebuilt_counterfactuals"):
        extra.append(f"not rebuildable: {', '.join(summary['not_rebuilt_counterfactuals'])}")
    return ["; ".join(extra) + ".", ""] if extra else []


def calibration_summary(calibration: dict) -> str:
    return format_calibration_report(calibration).replace(str(REPO) + "/", "").replace(str(Path.home()), "~")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--resume", action="store_true", help="continue runs (skip questions already answered)")
    parser.add_argument("--only", action="append", help="run only these entries (repeat); others: saved results")
    parser.add_argument("--report-only", action="store_true", help="re-render docs/quality.md from saved results")
    parser.add_argument("--out", type=Path, default=REPORT)
    parser.add_argument("--suite", type=Path, default=SUITE_FILE, help="the suites file (default: suites.yaml)")
    parser.add_argument(
        "--max-embed",
        type=int,
        default=DEFAULT_MAX_EMBED,
        help="embed up to this many texts per KB that the cache lacks (a new machine: 100000, ~2 h)",
    )
    parser.add_argument(
        "--allow-missing",
        action="store_true",
        help="write the report even if entries it shows have no saved results here (they become 'not run')",
    )
    args = parser.parse_args(argv)
    try:
        suite = SUITE if args.suite == SUITE_FILE else load_suite(args.suite)
    except SuiteError as exc:
        print(exc)
        return 2
    unknown = sorted(set(args.only or ()) - {entry.name for entry in suite})
    if unknown:
        print(f"unknown entries {unknown} (the suite's: {', '.join(entry.name for entry in suite)})")
        return 2
    if not args.report_only:
        for entry in suite:
            if args.only and entry.name not in args.only:
                continue
            try:
                run_entry(entry, args.resume, max_embed=args.max_embed)
            except EvalError as exc:  # e.g. a corpus not embedded yet: the report says it has not run
                print(f"{entry.name}: {exc}")
    calibration_path = default_root() / "calibration.json"
    calibration = json.loads(calibration_path.read_text(encoding="utf-8")) if calibration_path.exists() else None
    results = saved_results(suite)
    lost = entries_it_would_drop(args.out, results, suite)
    if lost and not args.allow_missing:
        print(
            f"not writing {args.out}: it reports {', '.join(lost)}, whose results are not on this machine "
            f"(under {results_dir()}); run them too (--only NAME, or make eval), or pass --allow-missing"
        )
        return 2
    args.out.write_text(render(results, calibration, suite), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


def entries_it_would_drop(report: Path, results: dict, suite: Sequence[SuiteEntry] | None = None) -> list[str]:
    """Entries the existing report shows as run but that have no saved results here: rewriting
    it would turn their tables into "not run yet"."""
    if not report.exists():
        return []
    text = report.read_text(encoding="utf-8")
    shown = [
        e.name for e in (SUITE if suite is None else suite) if f"## {e.title}\n\n`{e.command()}`\n\nFinished " in text
    ]
    return [name for name in shown if name not in results]


if __name__ == "__main__":
    raise SystemExit(main())
