"""An evaluation's scores (retrieval, answers, operations; per strategy and question type) and
their markdown report.
"""

from collections.abc import Iterable, Sequence

from citescope.agents.usage import UsageReport
from citescope.workflows.evaluation.datasets import (
    Question,
)
from citescope.workflows.metrics import (
    Outcome,
    answer_scores_by_qtype,
    group_by,
    latency_summary,
    mean,
    ranked_doc_ids,
    recall_at_k,
    reciprocal_rank,
)

AGENTSCOPE = "agentscope"  # baseline retrieval row
KS = (1, 5)
MRR_K = 10


# ----------------------------------------------------------------------------- scores


def outcome_of(record: dict) -> Outcome:
    return Outcome(
        qid=record["qid"],
        answer=record.get("answer", ""),
        cited_ids=record.get("cited_ids", []),
        evidence={c: d for c, d in record.get("evidence", []) if c and d},
        refused=bool(record.get("refused")),
        conflict_flagged=bool(record.get("conflicts")),
        latency_ms=record.get("latency_ms"),
    )


def retrieval_of(questions: Sequence[Question], records: dict[str, dict]) -> dict:
    """Doc-level Recall@k and MRR over the evidence order (answerable questions with gold docs);
    pool_recall: a gold doc anywhere in what the tool calls gathered."""
    pairs = [(q, records[q.qid]) for q in questions if q.qid in records and q.answerable and q.gold_doc_ids]
    ranked = [(ranked_doc_ids(d for _, d in r.get("evidence", []) if d), q.gold_doc_ids) for q, r in pairs]
    out = {f"recall@{k}": mean(recall_at_k(docs, gold, k) for docs, gold in ranked) for k in KS}
    out[f"mrr@{MRR_K}"] = mean(reciprocal_rank(docs, gold, MRR_K) for docs, gold in ranked)
    pools = [(r["pool_docs"], q.gold_doc_ids) for q, r in pairs if "pool_docs" in r]
    out["pool_recall"] = mean(recall_at_k(docs, gold, len(docs)) for docs, gold in pools) if pools else float("nan")
    out["n"] = len(pairs)
    return out


def operations_of(records: Sequence[dict]) -> dict:
    """Citation validity, tool calls, budgets, degradations, errors and model usage (requests,
    tokens and cost summed: agents/usage.py) of some outcomes."""
    ok = [r for r in records if not r.get("error")]
    answered = [r for r in ok if not r.get("refused")]
    return {
        "invalid_ids": sum(len(r.get("invalid_ids", [])) for r in ok),
        "answers_with_invalid_ids": sum(bool(r.get("invalid_ids")) for r in answered),
        "tool_calls_mean": mean(r.get("tool_calls", 0) for r in ok),
        "tool_calls_max": max((r.get("tool_calls", 0) for r in ok), default=0),
        "budget_exceeded": sum(not r.get("within_budget", True) for r in ok),
        "degraded": sum(bool(r.get("degraded")) for r in ok),
        "errors": len(records) - len(ok),
        "latency_ms": latency_summary(r["latency_ms"] for r in ok if r.get("latency_ms") is not None),
        "usage": UsageReport.combine(UsageReport.read(r.get("usage")) for r in ok).model_dump(mode="json"),
    }


def summarize(questions: Sequence[Question], records: Iterable[dict], strategies: Sequence[str]) -> dict:
    """{"strategies": {strategy: {"all": scores, qtype: scores}}} over the given questions."""
    by_strategy: dict[str, dict[str, dict]] = {}
    for record in records:
        by_strategy.setdefault(record["strategy"], {})[record["qid"]] = record
    groups = {"all": list(questions), **group_by(questions, lambda q: q.qtype)}
    out: dict = {"strategies": {}}
    for strategy in strategies:
        mine = by_strategy.get(strategy, {})
        if strategy == AGENTSCOPE:
            out["strategies"][strategy] = {g: {"retrieval": retrieval_of(qs, mine)} for g, qs in groups.items()}
            continue
        outcomes = {qid: outcome_of(r) for qid, r in mine.items() if not r.get("error")}
        answers = answer_scores_by_qtype(questions, outcomes)
        out["strategies"][strategy] = {
            g: {
                "retrieval": retrieval_of(qs, mine),
                "answers": answers[g],
                "operations": operations_of([mine[q.qid] for q in qs if q.qid in mine]),
            }
            for g, qs in groups.items()
        }
    return out


# ----------------------------------------------------------------------------- report


def _f(value: float | None, digits: int = 3) -> str:
    return "–" if value is None or value != value else f"{value:.{digits}f}"


def strategy_row(name: str, scores: dict) -> list[str]:
    """One table row: retrieval, answers, refusal, conflicts, tools, latency."""
    r = scores["retrieval"]
    cells = [name, _f(r["recall@1"]), _f(r["recall@5"]), _f(r[f"mrr@{MRR_K}"]), _f(r.get("pool_recall"))]
    if "answers" not in scores:
        return cells + ["–"] * 12
    a, o = scores["answers"], scores["operations"]
    return cells + [
        _f(a["answer_hit"]),
        _f(a["answer_hit_all_answerable"]),
        _f(a["citation_precision"]),
        _f(a["citation_recall"]),
        str(o["invalid_ids"]),
        _f(a["refusal_recall"]),
        _f(a["false_refusal_rate"]),
        _f(a["conflict_flag_rate"]),
        _f(a["false_flag_rate"]),
        _f(a["fake_answer_asserted"]),
        f"{_f(o['tool_calls_mean'], 2)} / {o['tool_calls_max']}"
        + (f" ({o['budget_exceeded']} over)" if o["budget_exceeded"] else ""),
        f"{_f(o['latency_ms']['p50'], 0)} / {_f(o['latency_ms']['p95'], 0)}",
    ]


HEADER = [
    "",
    "R@1",
    "R@5",
    f"MRR@{MRR_K}",
    "pool R",
    "hit (answered)",
    "hit (all)",
    "cit P",
    "cit R",
    "invalid ids",
    "refusal R",
    "false refusal",
    "conflict flag",
    "false flag",
    "fake asserted",
    "tools mean / max",
    "ms p50 / p95",
]


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|---|" + "---:|" * (len(header) - 1),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def format_split(summary: dict, by_qtype_for: Sequence[str] | None = None) -> list[str]:
    """Markdown lines of one split: strategies side by side, then by qtype for some of them."""
    strategies = summary["strategies"]
    qtypes = ", ".join(f"{t} {n}" for t, n in summary["qtypes"].items())
    lines = [
        f"{summary['n_questions']} questions ({qtypes}); refusal threshold "
        f"{_thresholds(summary)}; {summary['seconds']:.0f} s.",
        "",
    ]
    lines += markdown_table(["strategy", *HEADER[1:]], [strategy_row(s, g["all"]) for s, g in strategies.items()])
    chosen = by_qtype_for if by_qtype_for is not None else [s for s in strategies if s != AGENTSCOPE]
    if len(summary["qtypes"]) > 1:
        for strategy in chosen:
            if strategy in strategies:
                lines += ["", f"By question type, {strategy}:", ""]
                lines += markdown_table(
                    ["qtype (n)", *HEADER[1:]],
                    [strategy_row(f"{t} ({summary['qtypes'][t]})", strategies[strategy][t]) for t in summary["qtypes"]],
                )
    return lines


def _thresholds(summary: dict) -> str:
    values = sorted(set(summary.get("refusal_threshold", {}).values()))
    return " / ".join(f"{v:g}" for v in values) or "–"


def format_eval_report(result: dict) -> str:
    lines = [f"## {result['dataset']}"]
    for name, summary in result["splits"].items():
        lines += ["", f"### {name}", *format_split(summary)]
    return "\n".join(lines)
