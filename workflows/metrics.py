"""Evaluation metrics, as the datasets README defines them (pure functions, no I/O).

Retrieval is scored at document level: hits are chunks, so a ranked list is first reduced to
its distinct doc ids in rank order; a question counts as a hit at k when any gold doc is among
the first k of them. Answer metrics score one pipeline outcome per question.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

import numpy as np
from pydantic import BaseModel, Field

from citescope.agents.citations import strip_citations, without_markup_debris

T = TypeVar("T")
_WHITESPACE = re.compile(r"\s+")


# ----------------------------------------------------------------------------- retrieval


def ranked_doc_ids(hit_doc_ids: Iterable[str]) -> list[str]:
    """Distinct doc ids in the order of their first (best) hit."""
    return list(dict.fromkeys(hit_doc_ids))


def recall_at_k(ranked_docs: Sequence[str], gold_doc_ids: Iterable[str], k: int) -> float:
    """1.0 when any gold doc is among the first k ranked docs, else 0.0."""
    gold = set(gold_doc_ids)
    return 1.0 if gold and any(d in gold for d in ranked_docs[:k]) else 0.0


def reciprocal_rank(ranked_docs: Sequence[str], gold_doc_ids: Iterable[str], k: int | None = None) -> float:
    """1 / rank of the first gold doc (within the first k when given), 0.0 when none is found."""
    gold = set(gold_doc_ids)
    for rank, doc_id in enumerate(ranked_docs[:k] if k else ranked_docs, start=1):
        if doc_id in gold:
            return 1.0 / rank
    return 0.0


def retrieval_scores(
    runs: Iterable[tuple[Sequence[str], Iterable[str]]], ks: Sequence[int] = (1, 5, 10), mrr_k: int = 10
) -> dict:
    """Mean Recall@k for each k and MRR@mrr_k over (ranked docs, gold doc ids) pairs."""
    runs = [(list(ranked), list(gold)) for ranked, gold in runs]
    out: dict = {f"recall@{k}": mean(recall_at_k(r, g, k) for r, g in runs) for k in ks}
    out[f"mrr@{mrr_k}"] = mean(reciprocal_rank(r, g, mrr_k) for r, g in runs)
    out["n"] = len(runs)
    return out


# ----------------------------------------------------------------------------- answers


def _squeeze(text: str) -> str:
    """Text as compared: no whitespace, no markup debris (an empty （）)."""
    return _WHITESPACE.sub("", without_markup_debris(text))


def answer_text(answer: str) -> str:
    """The answer as scored: citation markers, markup debris (an empty （）) and all whitespace removed."""
    return _squeeze(strip_citations(answer))


def answer_hit(answer: str, answer_groups: Sequence[Sequence[str]]) -> bool:
    """Every group matched by one of its strings (whitespace and markup debris ignored, as an
    answer quoting 开发（）营运 writes 开发营运). Empty groups: False."""
    text = answer_text(answer)
    groups = [[squeezed for s in group if (squeezed := _squeeze(s))] for group in answer_groups]
    if not groups or not all(groups):
        return False
    return all(any(s in text for s in group) for group in groups)


def states_any(answer: str, phrases: Iterable[str]) -> bool:
    """Does the answer contain any of the phrases (whitespace and citations ignored)?"""
    text = answer_text(answer)
    return any((squeezed := _squeeze(p)) and squeezed in text for p in phrases)


def citation_scores(
    cited_ids: Sequence[str], gold_doc_ids: Iterable[str], evidence: Mapping[str, str]
) -> tuple[float, float]:
    """(precision, recall) of one answer's citations on doc ids.

    evidence maps every id the answerer was shown (chunk ids, doc ids) to its doc id; a cited id
    outside it is invalid and counts as wrong. An answer citing nothing scores (0, 0).
    """
    gold = set(gold_doc_ids)
    cited = list(dict.fromkeys(cited_ids))
    if not cited:
        return 0.0, 0.0
    cited_docs = [evidence.get(i) for i in cited]
    correct = sum(1 for d in cited_docs if d is not None and d in gold)
    found = {d for d in cited_docs if d is not None} & gold
    return correct / len(cited), (len(found) / len(gold) if gold else 0.0)


# ----------------------------------------------------------------------------- aggregates


def roc_auc(positive: Sequence[float], negative: Sequence[float]) -> float | None:
    """P(a random positive scores above a random negative), ties counting half (Mann-Whitney):
    how well a score separates two kinds, whatever threshold is put on it."""
    if not positive or not negative:
        return None
    scores = np.concatenate([np.asarray(positive, dtype=float), np.asarray(negative, dtype=float)])
    order = scores.argsort(kind="mergesort")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    for value in np.unique(scores):  # average ranks of ties
        tied = scores == value
        ranks[tied] = ranks[tied].mean()
    wins = ranks[: len(positive)].sum() - len(positive) * (len(positive) + 1) / 2
    return round(float(wins / (len(positive) * len(negative))), 4)


def mean(values: Iterable[float]) -> float:
    values = list(values)
    return float(sum(values) / len(values)) if values else float("nan")


def rate(flags: Iterable[bool]) -> float:
    return mean(1.0 if f else 0.0 for f in flags)


def latency_summary(milliseconds: Iterable[float]) -> dict:
    """p50 / p95 / mean / max / n of a list of latencies (ms); NaN when empty."""
    values = np.asarray(list(milliseconds), dtype=np.float64)
    if values.size == 0:
        return {"p50": float("nan"), "p95": float("nan"), "mean": float("nan"), "max": float("nan"), "n": 0}
    return {
        "p50": float(np.percentile(values, 50)),
        "p95": float(np.percentile(values, 95)),
        "mean": float(values.mean()),
        "max": float(values.max()),
        "n": int(values.size),
    }


def group_by(items: Iterable[T], key: Callable[[T], Hashable]) -> dict:
    """{key: [items]} in first-seen key order."""
    groups: dict = defaultdict(list)
    for item in items:
        groups[key(item)].append(item)
    return dict(groups)


class Outcome(BaseModel):
    """What the pipeline did for one question, as the answer metrics need it."""

    qid: str
    answer: str = ""
    cited_ids: list[str] = Field(default_factory=list)
    evidence: dict[str, str] = Field(default_factory=dict)  # id shown to the answerer -> doc id
    refused: bool = False
    conflict_flagged: bool = False
    latency_ms: float | None = None


def answer_scores(questions: Sequence, outcomes: Mapping[str, Outcome]) -> dict:
    """Answer, citation, refusal and conflict metrics over questions (objects with the fields of
    workflows.evaluation.datasets.Question) and their outcomes by qid.

    - answer_hit: over answerable questions that were answered (not refused);
    - citation precision / recall: per answered answerable question that has a gold doc, then
      averaged (RGB counterfactual_only questions have none: no citation of theirs can be right);
    - refusal_recall on answerable=false; false_refusal_rate on answerable=true;
    - conflict_flag_rate on expect_conflict; false_flag_rate elsewhere; fake_answer_asserted:
      share of questions with fake_answers whose answer states one without flagging a conflict.
    """
    pairs = [(q, outcomes[q.qid]) for q in questions if q.qid in outcomes]
    answerable = [(q, o) for q, o in pairs if q.answerable]
    answered = [(q, o) for q, o in answerable if not o.refused]
    citations = [citation_scores(o.cited_ids, q.gold_doc_ids, o.evidence) for q, o in answered if q.gold_doc_ids]
    with_fakes = [(q, o) for q, o in pairs if q.fake_answers]
    latencies = [o.latency_ms for _, o in pairs if o.latency_ms is not None]
    return {
        "n": len(pairs),
        "answer_hit": mean(1.0 if answer_hit(o.answer, q.answer_groups) else 0.0 for q, o in answered),
        "answer_hit_all_answerable": mean(
            0.0 if o.refused else (1.0 if answer_hit(o.answer, q.answer_groups) else 0.0) for q, o in answerable
        ),
        "citation_precision": mean(p for p, _ in citations),
        "citation_recall": mean(r for _, r in citations),
        "refusal_recall": rate(o.refused for q, o in pairs if not q.answerable),
        "false_refusal_rate": rate(o.refused for _, o in answerable),
        "conflict_flag_rate": rate(o.conflict_flagged for q, o in pairs if q.expect_conflict),
        "false_flag_rate": rate(o.conflict_flagged for q, o in pairs if not q.expect_conflict),
        "fake_answer_asserted": rate(
            states_any(o.answer, q.fake_answers) and not o.conflict_flagged for q, o in with_fakes
        ),
        "latency_ms": latency_summary(latencies),
    }


def answer_scores_by_qtype(questions: Sequence, outcomes: Mapping[str, Outcome]) -> dict:
    """answer_scores for all questions ("all") and for each qtype."""
    out = {"all": answer_scores(questions, outcomes)}
    for qtype, group in group_by(questions, lambda q: q.qtype).items():
        out[qtype] = answer_scores(group, outcomes)
    return out
