"""Fusing ranked lists from several retrieval legs into one list (pure functions).

Each leg's list is best-first. The fused hit keeps every leg's own score and rank in
`hit.legs`, so an answer can say which leg found a piece of evidence. Ties are broken by
chunk id, so the same inputs always give the same order.
"""

from __future__ import annotations

from citescope.knowledge.chunking import TABLE_ROW_ID
from citescope.tools.base import EvidenceHit, LegScore


def rrf_fuse(
    legs: dict[str, list[EvidenceHit]], weights: dict[str, float] | None = None, k: int = 60, top_k: int = 8
) -> list[EvidenceHit]:
    """Weighted reciprocal rank fusion: score(d) = sum over legs of w_leg / (k + rank_leg(d))."""
    if k < 0:
        raise ValueError(f"rrf k must be >= 0, got {k}")
    contributions: dict[str, dict[str, float]] = {}
    for name, hits in legs.items():
        for rank, hit in _ranked(hits):
            contributions.setdefault(name, {})[hit.chunk_id] = 1.0 / (k + rank)
    return _combine(legs, contributions, weights, top_k)


def weighted_fuse(
    legs: dict[str, list[EvidenceHit]], weights: dict[str, float] | None = None, top_k: int = 8
) -> list[EvidenceHit]:
    """Weighted sum of per-leg min-max normalised scores (a hit a leg missed gets 0 from it).

    Normalising within each list puts BM25 (unbounded) and cosine (compressed near 0.9) on one
    0..1 scale; a list whose scores are all equal counts every member as 1.
    """
    contributions: dict[str, dict[str, float]] = {}
    for name, hits in legs.items():
        ranked = list(_ranked(hits))
        if not ranked:
            continue
        scores = [_leg_score(name, hit) for _, hit in ranked]
        low, high = min(scores), max(scores)
        span = high - low
        contributions[name] = {
            hit.chunk_id: (score - low) / span if span > 0 else 1.0
            for (_, hit), score in zip(ranked, scores, strict=False)
        }
    return _combine(legs, contributions, weights, top_k)


def _ranked(hits: list[EvidenceHit]):
    """(1-based rank, hit) for the first occurrence of each chunk id in a best-first list."""
    seen: set[str] = set()
    rank = 0
    for hit in hits:
        if hit.chunk_id in seen:
            continue
        seen.add(hit.chunk_id)
        rank += 1
        yield rank, hit


def _leg_score(leg: str, hit: EvidenceHit) -> float:
    """The leg's own score: the attributed one when the hit carries it, else the hit's score."""
    own = hit.legs.get(leg)
    return own.score if own is not None else hit.score


def _combine(
    legs: dict[str, list[EvidenceHit]],
    contributions: dict[str, dict[str, float]],
    weights: dict[str, float] | None,
    top_k: int,
) -> list[EvidenceHit]:
    weights = weights or {}
    if any(w < 0 for w in weights.values()):
        raise ValueError(f"fusion weights must be >= 0, got {weights}")
    fused: dict[str, EvidenceHit] = {}
    totals: dict[str, float] = {}
    supported: set[str] = set()
    for name, hits in legs.items():
        weight = float(weights.get(name, 1.0))
        for rank, hit in _ranked(hits):
            merged = fused.get(hit.chunk_id)
            if merged is None:
                merged = fused[hit.chunk_id] = hit.model_copy(deep=True)
                merged.legs = {}
            merged.legs[name] = LegScore(score=_leg_score(name, hit), rank=rank)
            totals[hit.chunk_id] = totals.get(hit.chunk_id, 0.0) + weight * contributions.get(name, {}).get(
                hit.chunk_id, 0.0
            )
            if weight > 0:
                supported.add(hit.chunk_id)
    # A hit only zero-weight legs found is dropped: switching a leg off removes its hits.
    order = sorted(supported, key=lambda cid: (-totals[cid], cid))
    out = []
    for chunk_id in order[: max(top_k, 0)]:
        hit = fused[chunk_id]
        hit.score = totals[chunk_id]
        out.append(hit)
    return out


def later_table_rows(hits: list[EvidenceHit]) -> tuple[list[EvidenceHit], list[EvidenceHit]]:
    """(the hits with one row of each product page's table, the page's other rows), order kept.
    Every row repeats the page's title (…轻羽3 尺码表 — 尺码: 41), so for any question naming the
    product all rows outscore the section that answers it (功能特点: 跑量达到 600-800 公里后更换);
    the rows a question names are found by product_lookup, or fill what nothing else does."""
    tables: set[tuple[str, str]] = set()
    first, later = [], []
    for hit in hits:
        if hit.product_id and TABLE_ROW_ID.search(hit.chunk_id):
            if (hit.doc_id, hit.section) in tables:
                later.append(hit)
                continue
            tables.add((hit.doc_id, hit.section))
        first.append(hit)
    return first, later
