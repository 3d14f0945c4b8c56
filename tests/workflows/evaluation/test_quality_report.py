"""The quality report: its suite is data checked on load, it renders saved results into docs/quality.md,
and it never drops entries it cannot rerun here (rewriting docs/quality.md from this machine's saved
results must not turn another machine's measured tables into "not run")."""

from __future__ import annotations

import json
import re

import pytest

from citescope.workflows.evaluation.datasets import Question
from citescope.workflows.evaluation.evaluate import POLICY, summarize
from citescope.workflows.evaluation.quality_report import (
    FRAME_FILE,
    REPO,
    SUITE,
    SuiteError,
    entries_it_would_drop,
    load_suite,
    main,
)


def _section(entry) -> str:
    return f"## {entry.title}\n\n`{entry.command()}`\n\nFinished 2026-12-01T00:00:00+00:00, 1.0 min.\n"


def test_entries_shown_as_run_without_saved_results_would_be_dropped(tmp_path):
    first, second, third = SUITE[:3]
    report = tmp_path / "quality.md"
    report.write_text(
        "# Quality\n\n"
        + _section(first)
        + _section(second)
        + f"## {third.title}\n\n`{third.command()}`\n\nNot run yet.\n",
        encoding="utf-8",
    )
    assert entries_it_would_drop(report, {first.name: {}}) == [second.name]
    assert entries_it_would_drop(report, {first.name: {}, second.name: {}}) == []
    assert entries_it_would_drop(tmp_path / "absent.md", {}) == []


def test_the_report_is_not_rewritten_when_it_would_drop_entries(tmp_path, monkeypatch):
    monkeypatch.setenv("CITESCOPE_CACHE_DIR", str(tmp_path / "cache"))  # no saved results at all
    report = tmp_path / "quality.md"
    before = "# Quality\n\n" + _section(SUITE[0])
    report.write_text(before, encoding="utf-8")
    assert main(["--report-only", "--out", str(report)]) == 2
    assert report.read_text(encoding="utf-8") == before
    assert main(["--report-only", "--out", str(report), "--allow-missing"]) == 0
    assert "Not run yet" in report.read_text(encoding="utf-8")


# ----------------------------------------------------------------------------- the suite is data

GOOD_ENTRY = (
    "  - name: demo\n    dataset: demo\n    title: Demo\n    questions_file: questions.jsonl\n    concurrency: 1\n"
)


def _suite_file(tmp_path, body: str):
    path = tmp_path / "suites.yaml"
    path.write_text(body, encoding="utf-8")
    return path


def test_the_suite_file_reads_back_as_the_entries_the_report_runs():
    names = [entry.name for entry in load_suite()]
    assert names == [entry.name for entry in SUITE]
    assert len(set(names)) == len(names)
    rgb = next(entry for entry in SUITE if entry.name == "rgb_zh-all")
    assert (
        rgb.command()
        == "python run.py eval --dataset ../shared/datasets/rgb_zh --per-qtype 150 --no-baseline --concurrency 2"
    )


@pytest.mark.parametrize(
    ("bad_entry", "problem"),
    [
        (
            "  - name: odd\n    dataset: demo\n    title: T\n    strategies: [policy, best_guess]\n",
            "unknown strategies ['best_guess']",
        ),
        ("  - name: odd\n    dataset: demo\n    title: T\n    limt: 10\n", "limt"),
        ("  - name: odd\n    dataset: demo\n    title: T\n    limit: ten\n", "limit"),
        ("  - name: odd\n    dataset: demo\n    title: T\n    limit: 0\n", "limit"),
        ("  - name: odd\n    dataset: demo\n    title: T\n    baseline: 'no'\n", "baseline"),
        ("  - name: odd\n    dataset: demo\n", "title"),
        (
            "  - name: odd\n    dataset: demo\n    title: T\n    questions_file: questions_nowhere.jsonl\n",
            "questions_nowhere",
        ),
        ("  - name: odd\n    dataset: ../elsewhere\n    title: T\n", "plain names"),
        ("  - name: demo\n    dataset: demo\n    title: Again\n", "earlier entry"),
    ],
)
def test_a_bad_suite_entry_is_an_error_naming_the_file_and_the_entry(tmp_path, bad_entry, problem):
    path = _suite_file(tmp_path, "suite:\n" + GOOD_ENTRY + bad_entry)
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: entry 2 (")
    assert problem in message


def test_a_suites_file_that_is_not_a_list_of_entries_is_an_error(tmp_path):
    for body in ("suite: {}\n", "entries:\n" + GOOD_ENTRY, "suite:\n  - [demo]\n", "suite: [\n"):
        with pytest.raises(SuiteError, match=str(tmp_path)):
            load_suite(_suite_file(tmp_path, body))
    assert main(["--report-only", "--suite", str(tmp_path / "absent.yaml"), "--out", str(tmp_path / "q.md")]) == 2


# ----------------------------------------------------------------------------- rendering the numbers


def _saved_result(cache, name: str, seconds: float) -> None:
    """A run of three demo questions as run_eval saves it: one answered right, one refused that
    should have been answered, one refused as it should be."""
    questions = [
        Question(qid="p1", question="XZ-3000多少钱", answers=["199元"], gold_doc_ids=["d1"], qtype="price"),
        Question(qid="p2", question="XZ-2000多少钱", answers=["149元"], gold_doc_ids=["d2"], qtype="price"),
        Question(qid="u1", question="XZ-4000多少钱", answerable=False, qtype="unknown_model"),
    ]
    base = {"strategy": POLICY, "conflicts": [], "tool_calls": 2, "within_budget": True, "invalid_ids": []}
    records = [
        {**base, "qid": "p1", "answer": "售价199元【d1#0】", "cited_ids": ["d1#0"], "evidence": [["d1#0", "d1"]],
         "refused": False, "latency_ms": 40.0, "pool_docs": ["d1"]},
        {**base, "qid": "p2", "answer": "", "cited_ids": [], "evidence": [["d3#0", "d3"], ["d2#0", "d2"]],
         "refused": True, "latency_ms": 60.0, "pool_docs": ["d3", "d2"]},
        {**base, "qid": "u1", "answer": "", "cited_ids": [], "evidence": [["d1#0", "d1"]],
         "refused": True, "latency_ms": 50.0, "pool_docs": ["d1"]},
    ]  # fmt: skip
    summary = summarize(questions, records, [POLICY])
    summary.update(
        {
            "split": "questions",
            "questions_file": "/anywhere/knowledge/demo/questions.jsonl",
            "corpus": ["/anywhere/knowledge/demo"],
            "seconds": 5.0,
            "n_questions": 3,
            "qtypes": {"price": 2, "unknown_model": 1},
            "refusal_threshold": {"corpus": 0.1225},
        }
    )
    result = {"dataset": "demo", "splits": {"questions": summary}}
    result.update({"entry": name, "finished_at": "2026-12-01T00:00:00+00:00", "seconds": seconds})
    folder = cache / "eval" / "quality"
    folder.mkdir(parents=True)
    (folder / f"{name}.json").write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")


def test_the_report_renders_a_saved_result_and_names_the_entry_not_run(tmp_path, monkeypatch):
    monkeypatch.setenv("CITESCOPE_CACHE_DIR", str(tmp_path / "cache"))
    _saved_result(tmp_path / "cache", "demo", seconds=120.0)
    suite = _suite_file(tmp_path, "suite:\n" + GOOD_ENTRY + "  - name: rgb_zh\n    dataset: rgb_zh\n    title: RGB\n")
    report = tmp_path / "quality.md"
    assert main(["--report-only", "--suite", str(suite), "--out", str(report)]) == 0
    text = report.read_text(encoding="utf-8")

    assert text.startswith(FRAME_FILE.read_text(encoding="utf-8").format(minutes=2) + "\n## Targets (issue 5)\n")
    assert "| invalid citation ids = 0 | 0 over 3 answers of every run | **met** |" in text
    assert "| citation precision ≥ 0.95 — demo | 1.000 | **met** |" in text
    assert "| end-to-end p50 ≤ 300 ms offline on the demo KB | 50 ms | **met** |" in text
    assert "| citation precision ≥ 0.95 — cmrc2018_dev | – | not run |" in text
    assert (
        "## Demo\n\n`python run.py eval --dataset knowledge/demo --questions questions.jsonl`\n\n"
        "Finished 2026-12-01T00:00:00+00:00, 2.0 min.\n\n"
        "### questions (questions.jsonl on demo)\n\n"
        "3 questions (price 2, unknown_model 1); refusal threshold 0.1225; 5 s.\n"
    ) in text
    # R@1 0.5 (p2's gold ranked second), R@5 1.0, MRR 0.75; one of two answerable answered and right
    assert "| policy | 0.500 | 1.000 | 0.750 | 1.000 | 1.000 | 0.500 | 1.000 | 1.000 | 0 | 1.000 | 0.500 |" in text
    assert "| unknown_model (1) | – | – | – | – | – | – | – | – | 0 | 1.000 |" in text
    assert "## RGB\n\n`python run.py eval --dataset ../shared/datasets/rgb_zh --concurrency 2`\n\nNot run yet" in text
    assert "--only rgb_zh" in text
    assert text.rstrip().split("\n")[-3:-1] == ["## Environment", ""]


def test_docs_quality_md_is_what_the_renderer_writes_around_its_numbers():
    """docs/quality.md is generated; this catches a hand edit, or a change to the renderer's text or the
    suite that was not carried into it (rerun `make eval`, or `--report-only` where the results are)."""
    text = (REPO / "docs" / "quality.md").read_text(encoding="utf-8")
    minutes = int(re.search(r"The entries below took (\d+) min", text).group(1))
    assert text.startswith(FRAME_FILE.read_text(encoding="utf-8").format(minutes=minutes) + "\n## Targets (issue 5)\n")
    finished = [float(m) for m in re.findall(r"^Finished \S+, ([\d.]+) min\.$", text, flags=re.M)]
    assert len(finished) == len(SUITE) and abs(sum(finished) - minutes) <= 1
    assert entries_it_would_drop(REPO / "docs" / "quality.md", {}) == [entry.name for entry in SUITE]
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    suite_titles = [entry.title for entry in SUITE]
    calibration = ["Calibration (`python run.py calibrate`)"] if "\n## Calibration" in text else []
    assert headings == [
        "Method in short",
        "How to reproduce",
        "Targets (issue 5)",
        *suite_titles,
        *calibration,
        "Environment",
    ]
