"""Decision traces: a real pipeline answer's trace round-trips through SQLite with everything a
reader needs (arm scores, tool calls with hit ids, the evidence shown, conflicts, inspector,
timings), API keys never reach the file, and `run.py trace` shows it (rich sections or JSON)."""

from __future__ import annotations

import json

import pytest
from rich.console import Console
from typer.testing import CliRunner

from citescope.agents.query_analysis import analyze
from citescope.workflows.cli import app
from citescope.workflows.experience import ExperienceLearner, ExperienceStore
from citescope.workflows.pipeline import QAPipeline
from citescope.workflows.pipeline_config import PipelineConfig
from citescope.workflows.traces import FILE_NAME, TraceStore, attach_outcome, build_trace, render_trace

SECRET = "sk-unit-test-secret-0123456789"


@pytest.fixture(scope="module")
def pipeline(demo_kb) -> QAPipeline:
    return QAPipeline(demo_kb, PipelineConfig.load(demo_kb.dir, environ={})).warm_up()


@pytest.fixture(scope="module")
def priced(pipeline):
    return pipeline.run("XZ-3000 充电宝多少钱？")


@pytest.fixture(scope="module")
def conflicting(pipeline):
    return pipeline.run("现在买的东西几天之内可以无理由退换？")


def render(trace: dict) -> str:
    console = Console(record=True, width=200, color_system=None)
    console.print(render_trace(trace))
    return console.export_text()


def test_trace_round_trip_holds_the_whole_decision(tmp_path, demo_kb, priced):
    priced = priced.model_copy(update={"session_id": "s-1"})
    store = TraceStore.for_kb(tmp_path)
    recorded = store.record(priced, demo_kb)
    store.close()
    trace = TraceStore.for_kb(tmp_path).get(priced.trace_id)
    assert trace == recorded and store.path.name == FILE_NAME
    assert trace["trace_id"] == priced.trace_id and trace["session_id"] == "s-1"
    assert trace["kb_version"] == demo_kb.version and trace["created_at"]
    assert trace["policy"]["arm"] == priced.policy.arm and set(trace["policy"]["scores"]) == set(priced.policy.scores)
    assert trace["policy"]["reason"] == priced.policy.reason
    assert [c["name"] for c in trace["tool_calls"]] == [c.name for c in priced.tool_calls]
    assert [c["hit_ids"] for c in trace["tool_calls"]] == [c.hit_ids for c in priced.tool_calls]
    assert [e["id"] for e in trace["evidence"]] == priced.evidence_ids
    assert all(e["title"] and e["snippet"] and e["doc_id"] for e in trace["evidence"])
    assert {e["id"] for e in trace["evidence"] if e["cited"]} == {c.id for c in priced.citations}
    assert trace["inspection"]["passed"] and trace["timings_ms"]["total"] == priced.timings_ms["total"]
    assert trace["models"] == priced.models and trace["features"]["intent"] == priced.features["intent"]
    assert TraceStore.for_kb(tmp_path).get("no-such-trace") is None


def test_api_keys_never_reach_the_trace_file(tmp_path, demo_kb, priced, monkeypatch):
    monkeypatch.setenv("CITESCOPE_LLM_API_KEY", "plain-configured-key-42")
    leaky = priced.model_copy(deep=True)
    leaky.degraded = True
    leaky.degradation_reasons = [
        f"answerer model failed (401: bad key {SECRET}); extractive answer used",
        "planner failed: Authorization: Bearer abcdefgh12345678",
        "echoed plain-configured-key-42",
    ]
    leaky.tool_calls[0].arguments["note"] = SECRET
    store = TraceStore.for_kb(tmp_path)
    store.record(leaky, demo_kb)
    store.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith(FILE_NAME))
    for secret in (SECRET, "abcdefgh12345678", "plain-configured-key-42"):
        assert secret.encode() not in raw
    trace = TraceStore.for_kb(tmp_path).get(leaky.trace_id)
    assert all("[REDACTED]" in reason for reason in trace["degradation_reasons"])
    assert trace["tool_calls"][0]["arguments"]["note"] == "[REDACTED]"


def test_rendered_trace_has_every_section(demo_kb, priced, conflicting):
    text = render(build_trace(priced, demo_kb))
    for part in (
        "decision trace",
        "query analysis",
        "arm scores",
        "plan",
        "tool calls",
        "evidence shown",
        "inspector",
        "costs",
        priced.policy.arm,
        priced.tool_calls[0].name,
        priced.trace_id,
    ):
        assert part in text, part
    assert all(f"【{i}】" in text for i in priced.evidence_ids)
    assert f"chose {priced.policy.arm}" in text and "✔" in text

    assert conflicting.conflicts, "the demo's two return policies disagree"
    text = render(build_trace(conflicting, demo_kb))
    assert "conflicts" in text and conflicting.conflicts[0].values[0].chunk_id in text


def test_outcome_joins_the_rounds_reward_and_feedback(tmp_path, demo_kb, priced):
    experience = ExperienceStore.for_kb(tmp_path)
    learner = ExperienceLearner(experience).warm_up()
    learner.record(priced, analyze(priced.question, demo_kb))
    trace = build_trace(priced, demo_kb)
    assert attach_outcome(dict(trace), experience)["outcome"]["rating"] is None
    learner.feedback(priced.trace_id, -1, "价格不对")
    outcome = attach_outcome(dict(trace), experience)["outcome"]
    assert (
        outcome["rating"] == -1 and outcome["comment"] == "价格不对" and outcome["reward"] < outcome["implicit_reward"]
    )
    assert "👎" in render({**trace, "outcome": outcome})
    experience.close()


def test_trace_command_shows_a_stored_trace(tmp_path, demo_kb, priced):
    runner = CliRunner()
    missing = runner.invoke(app, ["trace", priced.trace_id, "--kb", str(tmp_path)])
    assert missing.exit_code == 2 and "no traces" in missing.output

    store = TraceStore.for_kb(tmp_path)
    stored = store.record(priced, demo_kb)
    store.close()
    shown = runner.invoke(app, ["trace", priced.trace_id, "--kb", str(tmp_path), "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout) == stored  # no experience store here: no outcome joined
    pretty = runner.invoke(app, ["trace", priced.trace_id, "--kb", str(tmp_path)], env={"COLUMNS": "200"})
    assert pretty.exit_code == 0 and "decision trace" in pretty.output and priced.policy.arm in pretty.output
    unknown = runner.invoke(app, ["trace", "nope", "--kb", str(tmp_path)])
    assert unknown.exit_code == 2 and "no trace 'nope'" in unknown.output
