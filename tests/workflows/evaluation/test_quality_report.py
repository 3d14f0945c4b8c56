"""The quality report never drops entries it cannot rerun here: rewriting docs/quality.md from
this machine's saved results must not turn another machine's measured tables into "not run"."""

from __future__ import annotations

from citescope.workflows.evaluation.quality_report import SUITE, entries_it_would_drop, main


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
