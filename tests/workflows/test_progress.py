"""The runners' progress bar counts what it is told to count; disabled, it does nothing."""

from __future__ import annotations

from citescope.workflows.progress import RecordProgress


def test_counts_errors_first_then_the_other_flags(capsys):
    progress = RecordProgress("batch", 3, True, counted=("error", "refused"))
    with progress as advance:
        for record in ({"refused": True}, {"error": "boom", "refused": True}, {}):
            advance(record)
    assert progress.counts == {"error": 1, "refused": 1}
    assert "errors 1  refused 1" in capsys.readouterr().err


def test_disabled_progress_prints_nothing(capsys):
    with RecordProgress("eval", 1, False) as advance:
        advance({"error": "boom"})
    assert capsys.readouterr().err == ""
