"""Decision traces: why each answer is what it is, stored per KB and shown readably.

A trace is the whole QAResult (features, policy scores per arm, chosen arm and reason, plan,
every tool call with its arguments and hit ids, conflicts, inspector report, budget, timings,
models, model usage and cost, degradations, clarification) plus the evidence shown to the answerer with titles and
snippets as they were at answer time, and the KB version. `TraceStore` keeps them in
`<kb>/traces.sqlite`; every string passes through agents.models.redact and the personal-data
redaction first, so neither an API key that reached an error message nor a customer's phone
number lands on disk. Each trace is owned by the tenant whose request made it. The reward and
feedback of a round live in the experience store; a reader joins them in (Assistant.trace).

Each stage of a question is one span of its trace: `StageClock.span(name)` adds the time since
the previous span ended to `timings_ms[name]` (a stage run twice, such as a regenerated answer,
adds up). The names are read by scripts (eval results, `bench cost`): analyze, policy, planner,
rerank, conflicts, answer, inspect, compliance, total; a deadline refusal adds the stage it
stopped before (search, rerank, conflicts, answer).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from citescope.agents.models import redact
from citescope.agents.usage import UsageReport
from citescope.knowledge.kb import KnowledgeBase
from citescope.tools.base import EvidenceHit
from citescope.workflows.experience import ExperienceStore
from citescope.workflows.personal_data import map_strings, redact_personal
from citescope.workflows.result import Citation, QAResult
from citescope.workflows.sqlite_store import add_missing_column, columns_of, open_sqlite
from citescope.workflows.tenants import DEFAULT_TENANT

FILE_NAME = "traces.sqlite"

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS traces (
    trace_id TEXT PRIMARY KEY, session_id TEXT, created_at REAL NOT NULL, question TEXT NOT NULL, trace TEXT NOT NULL,
    tenant TEXT NOT NULL DEFAULT '{DEFAULT_TENANT}'
);
CREATE INDEX IF NOT EXISTS traces_session ON traces(tenant, session_id, created_at);
"""


def _migrate(conn) -> None:
    """Traces stored before tenants belong to the default tenant; the old index lacks the tenant."""
    if columns_of(conn, "traces") and "tenant" not in columns_of(conn, "traces"):
        add_missing_column(conn, "traces", "tenant", f"TEXT NOT NULL DEFAULT '{DEFAULT_TENANT}'")
        conn.execute("DROP INDEX IF EXISTS traces_session")


class StageClock:
    """One question's stage spans, in milliseconds (QAResult.timings_ms)."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self._start = self._last = time.perf_counter()

    def lap(self, stage: str) -> None:
        """Close the span `stage`: the time since the previous span ended counts toward it, so a
        wait before a stage (a long message giving way, a deadline check) is that stage's time."""
        now = time.perf_counter()
        self.timings[stage] = round(self.timings.get(stage, 0.0) + (now - self._last) * 1000, 2)
        self._last = now

    @contextmanager
    def span(self, stage: str) -> Iterator[None]:
        """The block is the stage `stage`; a block that raises records nothing (the caller says
        where the question stopped, e.g. a deadline refusal laps the stage it stopped before)."""
        yield
        self.lap(stage)

    def total(self) -> dict[str, float]:
        """Every span, and "total" since the question started."""
        self.timings["total"] = round((time.perf_counter() - self._start) * 1000, 2)
        return self.timings


def redacted(value: Any) -> Any:
    """The value with every string redacted of keys and personal data (dict keys included)."""
    return map_strings(value, lambda text: redact_personal(redact(text)))


def build_trace(result: QAResult, kb: KnowledgeBase | None = None) -> dict:
    """The trace of one answer; the evidence shown is looked up in the KB while it is current."""
    trace = result.model_dump(mode="json")
    cited = {c.id for c in result.citations}
    evidence = []
    for chunk_id in result.evidence_ids:
        chunk = kb.get(chunk_id) if kb is not None else None
        shown = Citation.of(EvidenceHit.from_chunk(chunk, 0.0)).model_dump() if chunk else {"id": chunk_id}
        evidence.append({**shown, "cited": chunk_id in cited})
    trace["evidence"] = evidence
    trace["kb_version"] = kb.version if kb is not None else None
    trace["created_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    return redacted(trace)


def attach_outcome(trace: dict, experience: ExperienceStore, tenant: str | None = None) -> dict:
    """The trace with its round's reward and latest feedback ("outcome"), when the round was logged."""
    round_ = experience.get(trace["trace_id"], tenant)
    if round_ is not None:
        trace["outcome"] = {
            "implicit_reward": round_.implicit_reward,
            "reward": round_.reward,
            "rating": round_.rating,
            "comment": redact(round_.comment),
        }
    return trace


class TraceStore:
    """SQLite store of traces by trace id; one connection serialised by a lock."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self._conn = open_sqlite(self.path, _SCHEMA, migrate=_migrate)
        self._lock = threading.Lock()

    @classmethod
    def for_kb(cls, kb_dir: Path | str) -> TraceStore:
        return cls(Path(kb_dir) / FILE_NAME)

    def record(self, result: QAResult, kb: KnowledgeBase | None = None, tenant: str = DEFAULT_TENANT) -> dict:
        trace = build_trace(result, kb)
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO traces (trace_id, session_id, created_at, question, trace, tenant) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    result.trace_id,
                    result.session_id,
                    time.time(),
                    trace["question"],
                    json.dumps(trace, ensure_ascii=False),
                    tenant,
                ),
            )
        return trace

    def get(self, trace_id: str, tenant: str | None = None) -> dict | None:
        """The trace; with `tenant`, only when that tenant owns it (None: any owner, the operator's view
        in the CLI)."""
        with self._lock:
            row = self._conn.execute(
                "SELECT trace FROM traces WHERE trace_id = ? AND (? IS NULL OR tenant = ?)", (trace_id, tenant, tenant)
            ).fetchone()
        return json.loads(row[0]) if row else None

    def session_usage(self, session_id: str, tenant: str = DEFAULT_TENANT) -> UsageReport:
        """What a session's questions spent on models, summed over their traces (a cached answer's
        trace holds zeros: it called no model)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT json_extract(trace, '$.usage') FROM traces WHERE tenant = ? AND session_id = ?",
                (tenant, session_id),
            ).fetchall()
        return UsageReport.combine(UsageReport.read(json.loads(row[0]) if row[0] else None) for row in rows)

    def close(self) -> None:
        with self._lock:
            self._conn.close()


# ----------------------------------------------------------------------------- rendering


def _table(title: str, *columns: str) -> Table:
    table = Table(title=title, title_justify="left", title_style="bold", show_lines=False, expand=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return escape(text if len(text) <= limit else text[:limit] + "…")


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _flags(trace: dict) -> str:
    flags = []
    if trace.get("clarification"):
        flags.append("[cyan]clarifying question[/cyan]")
    if trace.get("refused"):
        flags.append(f"[red]refused[/red] ({escape(trace.get('refusal_reason') or '')})")
    if trace.get("conflicts"):
        flags.append(f"[yellow]conflicts {len(trace['conflicts'])}[/yellow]")
    if trace.get("regenerated"):
        flags.append("regenerated")
    if trace.get("degraded"):
        flags.append("[yellow]degraded[/yellow]")
    return " · ".join(flags) or "[green]answered[/green]"


def render_trace(trace: dict) -> RenderableType:
    """The trace as rich sections: answer, analysis, policy, tool calls, evidence, checks, costs."""
    parts: list[RenderableType] = []
    source = "clarifying question" if trace.get("clarification") else trace.get("answer_source", "")
    head = Text.from_markup(
        f"[bold]question[/bold] {escape(trace.get('question', ''))}\n"
        f"[bold]answer[/bold] ({escape(source)}) {escape(trace.get('answer', ''))}\n"
        f"{_flags(trace)}\n"
        f"[dim]trace {trace.get('trace_id')} · session {trace.get('session_id') or '-'} · "
        f"KB version {trace.get('kb_version')} · {trace.get('created_at', '')}[/dim]"
    )
    parts.append(Panel(head, title="decision trace", title_align="left"))

    clarification = trace.get("clarification")
    if clarification:
        table = _table("clarification", "asked", "need", "product", "skill arguments")
        product = (clarification.get("product") or {}).get("name", "")
        table.add_row(
            _short(clarification.get("text", ""), 120),
            ", ".join(clarification.get("need", [])),
            escape(product),
            _short(clarification.get("arguments", {})),
        )
        parts.append(table)

    features = trace.get("features") or {}
    if features:
        table = _table("query analysis", "feature", "value")
        for name, value in features.items():
            if value not in (None, [], False, ""):
                table.add_row(name, _short(value, 100))
        parts.append(table)

    policy = trace.get("policy")
    if policy:
        parts.append(
            Text.from_markup(
                f"[bold]policy[/bold] ({escape(policy.get('source', ''))}) chose "
                f"[bold]{escape(policy.get('arm', ''))}[/bold]: {escape(policy.get('reason', ''))}"
            )
        )
        table = _table("arm scores", "arm", "score", "chosen")
        for arm, score in sorted((policy.get("scores") or {}).items(), key=lambda item: -item[1]):
            table.add_row(arm, f"{score:.3f}", "✔" if arm == policy.get("arm") else "")
        parts.append(table)
    if trace.get("plan"):
        table = _table("plan", "#", "skill", "arguments")
        for number, call in enumerate(trace["plan"], start=1):
            table.add_row(str(number), call.get("skill", ""), _short(call.get("args", {}), 100))
        parts.append(table)

    if trace.get("tool_calls"):
        planner = f" (planner: {trace.get('planner_source', '')})" if policy else ""
        table = _table(f"tool calls{planner}", "#", "tool", "arguments", "outcome", "hits", "ms")
        for number, call in enumerate(trace["tool_calls"], start=1):
            hits = call.get("hit_ids") or []
            outcome = call.get("outcome", "") + (" (degraded)" if call.get("degraded") else "")
            table.add_row(
                str(number),
                call.get("name", ""),
                _short(call.get("arguments", {}), 100),
                outcome,
                f"{len(hits)}"
                + (": " + _short(", ".join(hits[:4]) + (" …" if len(hits) > 4 else ""), 90) if hits else ""),
                f"{call.get('elapsed_ms', 0):.1f}",
            )
        parts.append(table)

    if trace.get("evidence"):
        best = trace.get("best_score")
        table = _table(f"evidence shown (best score {best})", "#", "chunk", "title", "cited")
        for number, item in enumerate(trace["evidence"], start=1):
            table.add_row(
                str(number),
                escape(f"【{item['id']}】"),
                _short(item.get("title", ""), 50),
                "✔" if item.get("cited") else "",
            )
        parts.append(table)

    if trace.get("conflicts"):
        table = _table("conflicts", "attribute", "entity", "values")
        for conflict in trace["conflicts"]:
            values = "; ".join(
                f"{v['value']} 【{v['chunk_id']}】 {v.get('updated_at') or ''}" for v in conflict["values"]
            )
            table.add_row(escape(conflict.get("attribute", "")), escape(conflict.get("entity", "")), escape(values))
        parts.append(table)

    if trace.get("rules_fired"):  # the question rules that read the question (agents/question_cues.yaml)
        parts.append(Text.from_markup("[bold]question rules fired[/bold]: " + escape(", ".join(trace["rules_fired"]))))

    if trace.get("route"):  # the models asked (agents/routing.py): which, why, how each ended
        table = _table("model route", "#", "role", "model", "why", "outcome")
        for number, step in enumerate(trace["route"], start=1):
            table.add_row(
                str(number),
                step["role"],
                escape(step["model"]),
                _short(step["reason"], 60),
                _short(step["outcome"], 80),
            )
        parts.append(table)

    inspection = trace.get("inspection")
    if inspection:
        table = _table("inspector", "check", "result")
        table.add_row("passed", "✔" if inspection.get("passed") else "✘")
        table.add_row(
            "coverage",
            f"{inspection.get('coverage', 0):.2f} of {inspection.get('factual_sentences', 0)} factual sentences",
        )
        for name in ("invalid_ids", "uncited", "unsupported", "missing_conflicts"):
            if inspection.get(name):
                table.add_row(name, _short(inspection[name], 160))
        # the semantic rules (agents/claim_rules.py) and the model judge that rejected a sentence
        fired = [hit["rule"] for claim in inspection.get("unsupported") or [] for hit in claim.get("contradicted", [])]
        if fired:
            table.add_row("rules fired", ", ".join(dict.fromkeys(fired)))
        if inspection.get("judge"):
            table.add_row("judge", _short(inspection["judge"], 160))
        parts.append(table)

    costs = _table("costs", "item", "value")
    for stage, ms in (trace.get("timings_ms") or {}).items():
        costs.add_row(f"time {stage}", f"{ms:.1f} ms")
    budget = trace.get("budget")
    if budget:
        costs.add_row(
            "tool calls",
            f"{budget['tool_calls']} (cached {budget['cached_calls']}, refused "
            f"{budget['refused_calls']}) of {budget['limits']['max_tool_calls']}",
        )
        costs.add_row("model calls", f"{budget['model_calls']} of {budget['limits']['max_model_calls']}")
    usage = UsageReport.read(trace.get("usage"))
    if usage.requests:
        costs.add_row("model usage", escape(usage.render()))
        for model, used in usage.by_model.items():
            cost = "cost unknown (no price)" if used.cost is None else f"{used.cost:.4f} {used.currency}"
            costs.add_row(
                f"  {escape(model)}",
                f"{used.requests} requests, {used.input_tokens} in ({used.cached_tokens} cached), "
                f"{used.output_tokens} out, {cost}",
            )
    for stage, model in (trace.get("models") or {}).items():
        costs.add_row(f"model {stage}", escape(model))
    parts.append(costs)

    if trace.get("degradation_reasons"):
        parts.append(Text("degraded: " + "；".join(trace["degradation_reasons"]), style="yellow"))
    outcome = trace.get("outcome")
    if outcome:
        if not policy:  # e.g. a clarifying question: no arm was played, the policy learned nothing
            outcome = {**outcome, "reward": None, "implicit_reward": None}
        rating = {1: "👍", -1: "👎"}.get(outcome.get("rating"), "none")
        parts.append(
            Text(
                f"outcome: reward {_number(outcome.get('reward'))} (implicit "
                f"{_number(outcome.get('implicit_reward'))}) · feedback {rating} "
                f"{outcome.get('comment') or ''}".rstrip()
            )
        )
    return Group(*parts)
