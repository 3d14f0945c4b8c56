"""The service's counters per tenant (questions, and the model requests, tokens and cost they
spent: agents/usage.py) and their Prometheus text exposition, served at GET /metrics.

Counters live in memory for the life of the process, as Prometheus counters do (a restart starts
them at 0, which Prometheus' rate() expects). A priced model's cost is a counter per currency; a
model without a price in the config has token counters and no cost line (its cost is unknown,
not 0). The text is written here rather than with prometheus_client: a few counters, one format,
no dependency.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from citescope.agents.usage import UsageReport
from citescope.workflows.result import QAResult

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass
class TenantCounters:
    questions: int = 0
    refused: int = 0
    degraded: int = 0
    usage: UsageReport = field(default_factory=UsageReport)


class UsageCounters:
    """Thread-safe: the service records from its request handlers and reads from /metrics."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tenants: dict[str, TenantCounters] = {}

    def record(self, tenant: str, result: QAResult) -> None:
        with self._lock:
            counters = self._tenants.setdefault(tenant, TenantCounters())
            counters.questions += 1
            counters.refused += int(result.refused)
            counters.degraded += int(result.degraded)
            counters.usage = UsageReport.combine([counters.usage, result.usage])

    def usage(self, tenant: str) -> UsageReport:
        with self._lock:
            counters = self._tenants.get(tenant)
            return counters.usage if counters is not None else UsageReport()

    def prometheus(self, tenants: Iterable[str] | None = None) -> str:
        """The counters in Prometheus' text format; tenants: only these (None: every tenant)."""
        with self._lock:
            chosen = sorted(self._tenants) if tenants is None else sorted(set(tenants) & set(self._tenants))
            snapshot = {name: self._tenants[name] for name in chosen}
        lines: list[str] = []

        def family(name: str, help_text: str, samples: list[tuple[dict[str, str], float]]) -> None:
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} counter")
            lines.extend(f"{name}{{{_labels(labels)}}} {_number(value)}" for labels, value in samples)

        family(
            "citescope_questions_total",
            "Questions answered (refusals and clarifying questions included).",
            [({"tenant": t}, c.questions) for t, c in snapshot.items()],
        )
        family(
            "citescope_refused_questions_total",
            "Questions refused.",
            [({"tenant": t}, c.refused) for t, c in snapshot.items()],
        )
        family(
            "citescope_degraded_questions_total",
            "Questions answered in degraded mode (a model failed or a limit was reached).",
            [({"tenant": t}, c.degraded) for t, c in snapshot.items()],
        )
        per_model = [(t, m, used) for t, c in snapshot.items() for m, used in sorted(c.usage.by_model.items())]
        for metric, attribute, help_text in (
            ("citescope_model_requests_total", "requests", "Model requests sent, every attempt counted."),
            ("citescope_model_input_tokens_total", "input_tokens", "Input tokens the provider reported."),
            ("citescope_model_cached_tokens_total", "cached_tokens", "Input tokens served from the provider's cache."),
            ("citescope_model_output_tokens_total", "output_tokens", "Output tokens the provider reported."),
        ):
            family(metric, help_text, [({"tenant": t, "model": m}, getattr(u, attribute)) for t, m, u in per_model])
        family(
            "citescope_model_cost_total",
            "Cost of the tokens at the configured prices (models without a price have no line).",
            [
                ({"tenant": t, "model": m, "currency": u.currency or ""}, u.cost)
                for t, m, u in per_model
                if u.cost is not None
            ],
        )
        return "\n".join(lines) + "\n"


def _labels(labels: dict[str, str]) -> str:
    return ",".join(f'{name}="{_escape(value)}"' for name, value in labels.items())


def _escape(value: str) -> str:
    """A label value as the text format wants it: backslash, double quote and newline escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else repr(float(value))
