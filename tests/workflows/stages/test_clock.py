"""StageClock: each stage is one span of timings_ms, a stage run twice adds up, a block that
raises records nothing, and total closes the question."""

from __future__ import annotations

import pytest

from citescope.workflows.traces import StageClock


def test_spans_are_named_by_stage_and_a_raising_block_records_nothing():
    clock = StageClock()
    with clock.span("answer"):
        pass
    first = clock.timings["answer"]
    with clock.span("inspect"):
        pass
    with clock.span("answer"):  # a regenerated answer adds to the same span
        pass
    with pytest.raises(RuntimeError), clock.span("compliance"):
        raise RuntimeError("stopped")
    assert list(clock.timings) == ["answer", "inspect"] and clock.timings["answer"] >= first
    timings = clock.total()
    assert list(timings) == ["answer", "inspect", "total"] and timings is clock.timings
