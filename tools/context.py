"""Context expansion: the chunks around a hit (same section), its section, or its document.

A retrieved chunk is often half an answer: the next row of a table, the rest of a paragraph.
Returned hits keep what the pool already knows about a chunk (its score and legs) and add a
"context" leg whose rank is the chunk's place in the returned passage.

No `from __future__ import annotations` here: AgentScope reads the skill's real annotations.
"""

from citescope.knowledge.chunking import TABLE_ROW_ID
from citescope.knowledge.schema import Chunk
from citescope.tools.base import EvidenceHit, LegScore, SkillContext, SkillResult

MODES = ("neighbours", "section", "document")
MAX_WINDOW = 5
DEFAULT_DOCUMENT_CHARS = 2000


def expand_context(chunk_id: str, mode: str = "neighbours", window: int = 1, *, ctx: SkillContext) -> SkillResult:
    """扩展上下文：取某条证据前后相邻的段落、所在小节或整篇文档，用于补全被切断的信息（如表格其他行）。

    Args:
        chunk_id: 证据 ID，即检索结果中【】里的内容。
        mode: 扩展方式：neighbours（同一小节内前后相邻的段落，默认）、section（整个小节）、document（整篇文档，约 2000 字以内）。
        window: neighbours 模式下前后各取几段，默认 1，最多 5。
    """  # noqa: E501 - the model reads this docstring as the tool's description: wrapping a line would change it
    chunk = ctx.kb.get(chunk_id)
    if chunk is None:
        return SkillResult(
            skill="expand_context", note=f"未知的证据 ID：{chunk_id[:80]}，请使用检索结果中【】里的 ID。"
        )
    if mode not in MODES:
        return SkillResult(skill="expand_context", note=f"未知的扩展方式 {mode[:20]}，可选 {', '.join(MODES)}。")
    document = ctx.kb.chunks_of(chunk.doc_id)  # in document order
    if mode == "document":
        budget = int(ctx.config.get("max_chars", DEFAULT_DOCUMENT_CHARS))
        chosen = _around(document, chunk, budget)
        note = f"文档 {chunk.doc_id} 共 {len(document)} 段，返回其中 {len(chosen)} 段（约 {budget} 字以内）。"
    else:
        section = sorted((c for c in document if c.section == chunk.section), key=lambda c: c.position)
        if mode == "section":
            chosen = section
        else:
            reach = max(0, min(int(window), MAX_WINDOW))
            is_row = TABLE_ROW_ID.search(chunk.chunk_id) is not None
            # A table row reads better with its whole table (kept for tables that fit a chunk).
            chosen = [
                c for c in section if abs(c.position - chunk.position) <= reach or (is_row and "-table-" in c.chunk_id)
            ]
        note = f"{chunk.title} · {chunk.section or '正文'}：返回 {len(chosen)} 段。"
    return SkillResult(skill="expand_context", hits=_hits(ctx, chosen), note=note)


def _around(document: list[Chunk], chunk: Chunk, budget: int) -> list[Chunk]:
    """The chunk plus its nearest chunks in document order, alternately after and before,
    while the total text stays within the budget."""
    at = next(i for i, c in enumerate(document) if c.chunk_id == chunk.chunk_id)
    low, high = at, at + 1
    used = len(chunk.text)
    grew = True
    while grew:
        grew = False
        for side in ("after", "before"):
            i = high if side == "after" else low - 1
            if 0 <= i < len(document) and used + len(document[i].text) <= budget:
                used += len(document[i].text)
                if side == "after":
                    high += 1
                else:
                    low -= 1
                grew = True
    return document[low:high]


def _hits(ctx: SkillContext, chunks: list[Chunk]) -> list[EvidenceHit]:
    out = []
    for rank, chunk in enumerate(chunks, start=1):
        known = ctx.pool.get(chunk.chunk_id)
        hit = known.model_copy(deep=True) if known is not None else EvidenceHit.from_chunk(chunk, 0.0)
        hit.legs["context"] = LegScore(score=hit.score, rank=rank)
        out.append(hit)
    return out
