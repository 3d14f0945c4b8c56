"""The evidence pool of one question: every hit of every tool call, keyed by chunk id.

A chunk found twice is kept once, with its best score, every retrieval leg that saw it and the
skills that found it. `top` is what the answerer is shown: best first, bounded by count and by
characters (a token proxy), and `render` is the exact text the model reads.

Every hit is neutralised once, when it enters the pool (knowledge/injection.py): whatever reads
the evidence (answerer prompt, extractive answerer, conflict check, inspector, citations) sees
the same cleaned text. A hit records what was neutralised in `sanitized`; an untrusted hit with
nothing left is kept out of the pool and listed in `quarantined`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from pydantic import Field

from citescope.knowledge.injection import clean_evidence, is_untrusted
from citescope.tools.base import EvidenceHit

RERANK_LEG = "rerank"


class PooledHit(EvidenceHit):
    found_by: set[str] = Field(default_factory=set)  # skill names
    sanitized: list[str] = Field(default_factory=list)  # injection families removed, or "bracket"


def rank_key(hit: EvidenceHit) -> tuple[int, float]:
    """Calibrated rerank scores are comparable with each other but not with raw skill scores
    (BM25 is unbounded), so reranked hits come first, each tier ordered by its own score."""
    rerank = hit.legs.get(RERANK_LEG)
    return (1, rerank.score) if rerank is not None else (0, hit.score)


class EvidencePool:
    def __init__(self) -> None:
        self._hits: dict[str, PooledHit] = {}
        self.quarantined: dict[str, list[str]] = {}  # chunk id -> families; nothing of it was left

    @classmethod
    def from_hits(cls, hits: Iterable[EvidenceHit] | Mapping[str, EvidenceHit], skill: str = "") -> EvidencePool:
        """Wrap existing hits, e.g. a SkillContext.pool (dict chunk_id -> hit)."""
        pool = cls()
        pool.add(skill, hits.values() if isinstance(hits, Mapping) else hits)
        return pool

    def add(self, skill: str, hits: Iterable[EvidenceHit]) -> None:
        for hit in hits:
            known = self._hits.get(hit.chunk_id)
            if known is None:
                if hit.chunk_id in self.quarantined:
                    continue
                known = cleaned_hit(hit)
                if hit.text.strip() and not known.text.strip():  # cleaning left nothing to show
                    self.quarantined[hit.chunk_id] = known.sanitized
                    continue
                self._hits[hit.chunk_id] = known
            for leg, score in hit.legs.items():
                if leg not in known.legs or score.score > known.legs[leg].score:
                    known.legs[leg] = score.model_copy()
            known.score = max(known.score, hit.score)
            known.found_by |= getattr(hit, "found_by", set())
            if skill:
                known.found_by.add(skill)

    def __len__(self) -> int:
        return len(self._hits)

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._hits

    def get(self, chunk_id: str) -> PooledHit | None:
        return self._hits.get(chunk_id)

    def hits(self) -> list[PooledHit]:
        """Every hit, best first (ties keep the order they were found in)."""
        return sorted(self._hits.values(), key=rank_key, reverse=True)

    def top(self, n: int = 8, max_chars: int = 3000, after: Sequence[PooledHit] = ()) -> list[PooledHit]:
        """The best hits, at most n of them and at most max_chars of rendered lines in total.

        A hit that does not fit is skipped so smaller ones after it may still fit; the best hit
        is always kept, so a non-empty pool never yields empty evidence. `after`: hits chosen
        before (from another pool) that come first and count against both bounds.
        """
        chosen: list[PooledHit] = list(after)
        used = sum(len(render_line(hit)) for hit in chosen)
        for hit in self.hits():
            if len(chosen) >= n:
                break
            size = len(render_line(hit))
            if chosen and used + size > max_chars:
                continue
            chosen.append(hit)
            used += size
        return chosen

    @staticmethod
    def render(hits: Iterable[EvidenceHit], siblings: Collection[str] = frozenset()) -> str:
        """The prompt's evidence lines; a chunk in `siblings` (about another entity of the same kind than
        the one asked: the rank stage's Ranking.siblings) carries SIBLING_MARK, which the answerer prompts
        explain."""
        return "\n".join(render_line(hit, hit.chunk_id in siblings) for hit in hits)


def cleaned_hit(hit: EvidenceHit) -> PooledHit:
    """A pooled copy of the hit, no legs yet, its title, section and text neutralised."""
    clean = clean_evidence(hit.title, hit.section, hit.text, is_untrusted(hit.doc_type, hit.authority))
    pooled = PooledHit(**hit.model_dump(exclude={"found_by"}))
    pooled.legs = {}
    pooled.title, pooled.section, pooled.text = clean.title, clean.section, clean.text
    pooled.sanitized = sorted({*pooled.sanitized, *clean.families})
    return pooled


# marks a sibling's evidence line for a model: another product or record of the kind asked, never the answer
# about the one asked (rule 10 of prompts/answerer.md says so; the inspector's entity.sibling rule checks it)
SIBLING_MARK = "〔另一对象〕"


def render_line(hit: EvidenceHit, sibling: bool = False) -> str:
    """`【chunk_id】(doc_type, updated_at, source) text` on one line; a sibling's with SIBLING_MARK
    before its text.

    The title leads the text when the chunk does not repeat it, so a section chunk such as
    "保修：…" still says which product it is about.
    """
    text = " ".join(hit.text.split())
    if hit.title and hit.title not in text:
        text = f"{hit.title}｜{text}"
    mark = SIBLING_MARK if sibling else ""
    return (
        f"【{hit.chunk_id}】({hit.doc_type}, {hit.updated_at or '日期未知'}, {hit.source or '来源未知'}) {mark}{text}"
    )


def render_conflicts(conflicts: Iterable) -> str:
    """The answerer prompt's {conflicts}: one line per conflict, its values official first, then
    newest first (nearest the asked time first when the question names one)."""
    lines = []
    for conflict in conflicts:
        values = "；".join(
            f"{v.value}（{v.updated_at or '日期未知'}，"
            f"{'官方' if v.authority == 'official' else '用户'}）【{v.chunk_id}】"
            for v in conflict.values
        )
        asked = f"（问的是 {conflict.as_of} 时的情况：最接近该时间的在前）" if getattr(conflict, "as_of", None) else ""
        lines.append(f"- {conflict.entity} 的 {conflict.attribute}{asked}：{values}")
    return "\n".join(lines) or "无"
