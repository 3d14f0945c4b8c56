"""`run.py bench llm`'s fault measures on a short deadline: a hung endpoint, a breaker it opens."""

from __future__ import annotations

from citescope.workflows.evaluation.bench.llm import TOPICS
from citescope.workflows.evaluation.bench.llm_faults import fault_metrics


def test_a_hung_provider_is_answered_offline_and_an_open_breaker_sends_nothing(demo_kb):
    report = fault_metrics(demo_kb, ["XZ-3000 充电宝多少钱？"], deadline_s=2.0)

    assert report["stalled_provider_answered"] == "1/1" and report["open_breaker_answered"] == "1/1"
    assert report["open_breaker_requests"] == 0  # the open breaker failed the question without a request
    assert report["stalled_provider_deadline_s"] == 2.0
    assert {"stalled_provider_s", "open_breaker_s"} <= set(report) and fault_metrics in TOPICS
