"""The load benchmark drives a real `run.py serve` subprocess over loopback: with an API key
enforced, no errors, nothing of the key or of a customer's secret in the server log, and no
growth in open files or stored sessions after the warm-up."""

from __future__ import annotations

from citescope.workflows.evaluation.bench.load import format_load_report, run_load_bench


def test_load_on_the_served_demo_kb(demo_kb):
    result = run_load_bench(demo_kb.dir, n_requests=30, concurrency=5)
    assert result["errors"] == {} and result["latency_ms"]["n"] == 30
    assert result["auth"] == {"no_key": 401, "wrong_key": 401, "right_key": 200}
    assert result["log_leaks"] == {"api_key": 0, "customer_secret": 0}
    assert result["access_log_lines"] >= 30 + 5  # one JSON line per request, warm-up included
    before, after = result["server"]["before"], result["server"]["after"]
    assert after["sessions"] == before["sessions"] == 5
    assert after["open_fds"] <= before["open_fds"] + 2  # keep-alive sockets may differ by a couple
    assert "API key enforced: no key -> 401" in format_load_report(result)
