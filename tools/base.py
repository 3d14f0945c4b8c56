"""What every retrieval skill returns: a framework-free, typed result.

Skills are plain functions over the KB; agents/ wraps a SkillResult into an AgentScope
ToolResponse (text for the model, the structured result as metadata).
"""

from __future__ import annotations

from datetime import date

from pydantic import BaseModel, Field

from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.schema import Chunk

SNIPPET_CHARS = 160


class LegScore(BaseModel):
    """One retrieval leg's view of a hit, kept for attribution (which leg found it, where)."""

    score: float
    rank: int  # 1-based rank within that leg


class EvidenceHit(BaseModel):
    chunk_id: str
    doc_id: str
    score: float  # the skill's final score (calibrated [0,1] after rerank)
    legs: dict[str, LegScore] = Field(default_factory=dict)  # "bm25", "dense", "rerank", ...
    title: str = ""
    section: str = ""
    doc_type: str = "doc"
    source: str = ""
    updated_at: str | None = None
    authority: str = "official"
    product_id: str | None = None
    text: str = ""

    @classmethod
    def from_chunk(cls, chunk: Chunk, score: float, legs: dict[str, LegScore] | None = None) -> EvidenceHit:
        return cls(
            chunk_id=chunk.chunk_id,
            doc_id=chunk.doc_id,
            score=score,
            legs=legs or {},
            title=chunk.title,
            section=chunk.section,
            doc_type=chunk.doc_type,
            source=chunk.source,
            updated_at=chunk.updated_at,
            authority=chunk.authority,
            product_id=chunk.product_id,
            text=chunk.text,
        )

    def line(self) -> str:
        """How the model sees a hit: 【chunk_id】 title — snippet."""
        snippet = self.text.replace("\n", " ")
        if len(snippet) > SNIPPET_CHARS:
            snippet = snippet[:SNIPPET_CHARS] + "…"
        return f"【{self.chunk_id}】 {self.title} — {snippet}"


class SkillResult(BaseModel):
    skill: str
    hits: list[EvidenceHit] = Field(default_factory=list)
    data: dict = Field(default_factory=dict)  # structured output of non-search skills
    degraded: list[str] = Field(default_factory=list)  # what failed and was worked around
    note: str = ""  # a sentence for the model (e.g. "需要身高和体重")

    def text(self) -> str:
        lines = [self.note] if self.note else []
        lines += [hit.line() for hit in self.hits]
        if not lines:
            lines = ["没有找到相关内容。"]
        if self.degraded:
            lines.append("（降级：" + "；".join(self.degraded) + "）")
        return "\n".join(lines)


def hits_from_chunks(kb: KnowledgeBase, scored: list[tuple[str, float]], leg: str) -> list[EvidenceHit]:
    """(chunk_id, score) best first -> EvidenceHit with this leg's score and rank."""
    out = []
    for rank, (chunk_id, score) in enumerate(scored, start=1):
        chunk = kb.get(chunk_id)
        if chunk is not None:
            out.append(EvidenceHit.from_chunk(chunk, score, {leg: LegScore(score=score, rank=rank)}))
    return out


class SkillContext:
    """Per-question state a skill may use besides its arguments; bound as a hidden (preset)
    argument `ctx` when the skill is registered, so the model never sees or fills it."""

    def __init__(self, kb: KnowledgeBase, config: dict | None = None, reranker=None, as_of: date | None = None):
        self.kb = kb
        self.config = config or {}  # per-skill parameters from the registry config
        self.reranker = reranker  # tools.rerank reranker instance, shared across questions
        self.as_of = as_of  # the day the question is about (SearchFilters.as_of), for the reranker
        self.pool: dict[str, EvidenceHit] = {}  # evidence gathered so far for this question

    def remember(self, hits: list[EvidenceHit]) -> None:
        """Add hits to the pool, keeping the best score per chunk and every leg that found it."""
        for hit in hits:
            known = self.pool.get(hit.chunk_id)
            if known is None:
                self.pool[hit.chunk_id] = hit.model_copy(deep=True)
            else:
                known.legs.update(hit.legs)
                known.score = max(known.score, hit.score)
