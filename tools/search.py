"""Search skills: keyword (BM25), semantic (dense) and hybrid (both legs, fused).

No `from __future__ import annotations` here: AgentScope builds each tool's JSON schema from
the real annotation objects. Filters are validated by knowledge.filters.SearchFilters before any
index sees them; an invalid value becomes a note for the model, never an exception.
"""

import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from pydantic import ValidationError

from citescope.knowledge.filters import SearchFilters
from citescope.tools.base import EvidenceHit, SkillContext, SkillResult, hits_from_chunks
from citescope.tools.fusion import later_table_rows, rrf_fuse, weighted_fuse

MAX_TOP_K = 50
DEFAULT_CANDIDATES = 30
DEFAULT_TITLE_WEIGHT = 1.0
_LIST_SEPARATORS = re.compile(r"[,，、;；\s]+")
_VALUE_RULE = "不能含引号、运算符等特殊字符"
_FIELD_RULES = {
    "doc_type": "只能是 product, review, policy, faq, post, doc（逗号分隔）",
    "brand": _VALUE_RULE,
    "category": _VALUE_RULE,
    "product_id": _VALUE_RULE,
    "updated_after": "须为日期 YYYY-MM-DD",
}


class InvalidFilter(ValueError):
    """A filter argument the model gave that cannot be used; the message is for the model."""


def build_filters(
    doc_type: str | None = None,
    brand: str | None = None,
    category: str | None = None,
    product_id: str | None = None,
    updated_after: str | None = None,
) -> SearchFilters | None:
    """Model arguments -> validated SearchFilters (None when no filter is set).

    Raises InvalidFilter naming the bad field(s); the offending value is not echoed back.
    """
    types = [t.lower() for t in _LIST_SEPARATORS.split(doc_type or "") if t]
    raw = {
        "doc_type": types or None,
        "brand": brand or None,
        "category": category or None,
        "product_id": product_id or None,
        "updated_after": updated_after or None,
    }
    try:
        filters = SearchFilters.model_validate(raw)  # the model's strings, checked here (e.g. doc_type)
    except ValidationError as exc:
        fields = sorted({str(err["loc"][0]) for err in exc.errors() if err.get("loc")})
        problems = "；".join(f"{f} {_FIELD_RULES.get(f, _VALUE_RULE)}" for f in fields)
        raise InvalidFilter(f"过滤条件无效（{problems}），本次未检索。请去掉该过滤条件或改用合法取值后重试。") from None
    return None if filters.is_empty() else filters


def _clamp_top_k(top_k: int) -> int:
    return max(1, min(int(top_k), MAX_TOP_K))


def _candidates(ctx: SkillContext) -> int:
    """How many hits each leg fetches: more than asked, so that a chunk ranked low by one leg and
    high by the other, or a section below a product table's repeated rows, can still make the cut."""
    return int(ctx.config.get("candidates", DEFAULT_CANDIDATES))


def _rows_after_sections(hits: list[EvidenceHit], top_k: int) -> list[EvidenceHit]:
    """The best top_k, a product table's rows after its first behind every other hit (later_table_rows)."""
    first, later = later_table_rows(hits)
    return [*first, *later][:top_k]


def _keyword_leg(ctx: SkillContext, query: str, k: int, filters: SearchFilters | None) -> list[EvidenceHit]:
    title_weight = float(ctx.config.get("title_weight", DEFAULT_TITLE_WEIGHT))
    found = ctx.kb.search_keyword(query, k=k, filters=filters, title_weight=title_weight)
    return hits_from_chunks(ctx.kb, [(h.chunk_id, h.score) for h in found], "bm25")


def _dense_leg(ctx: SkillContext, query: str, k: int, filters: SearchFilters | None) -> list[EvidenceHit]:
    found = ctx.kb.search_dense(query, k=k, filters=filters)
    return hits_from_chunks(ctx.kb, [(h.chunk_id, h.score) for h in found], "dense")


def _single_leg(
    skill: str, leg: str, run: Callable, query: str, top_k: int, filter_args: dict, ctx: SkillContext
) -> SkillResult:
    try:
        filters = build_filters(**filter_args)
    except InvalidFilter as exc:
        return SkillResult(skill=skill, note=str(exc))
    top_k = _clamp_top_k(top_k)
    try:
        hits = _rows_after_sections(run(ctx, query, max(_candidates(ctx), top_k), filters), top_k)
    except Exception as exc:  # a broken index must not end the agent's turn
        return SkillResult(
            skill=skill,
            degraded=[f"{leg} leg failed: {type(exc).__name__}"],
            note="检索暂时不可用，请换用其他检索技能。",
        )
    return SkillResult(skill=skill, hits=hits, note=f"找到 {len(hits)} 条。")


def keyword_search(
    query: str,
    top_k: int = 8,
    doc_type: str | None = None,
    brand: str | None = None,
    category: str | None = None,
    product_id: str | None = None,
    updated_after: str | None = None,
    *,
    ctx: SkillContext,
) -> SkillResult:
    """关键词检索（BM25）：适合型号、SKU、专有名词、精确数字等字面匹配的问题。

    Args:
        query: 检索用的问题或关键词，中文为主，例如“AB-100 充电宝 价格”。
        top_k: 返回条数，默认 8，最多 50。
        doc_type: 只检索这些文档类型，逗号分隔，可选 product, review, policy, faq, post, doc。
        brand: 只检索该品牌，即商品页写的品牌名。
        category: 只检索该类目，例如“手机配件”。
        product_id: 只检索该商品 ID，例如“p-ab100”。
        updated_after: 只检索该日期（含）之后更新的内容，格式 YYYY-MM-DD。
    """
    filter_args = dict(
        doc_type=doc_type, brand=brand, category=category, product_id=product_id, updated_after=updated_after
    )
    return _single_leg("keyword_search", "bm25", _keyword_leg, query, top_k, filter_args, ctx)


def semantic_search(
    query: str,
    top_k: int = 8,
    doc_type: str | None = None,
    brand: str | None = None,
    category: str | None = None,
    product_id: str | None = None,
    updated_after: str | None = None,
    *,
    ctx: SkillContext,
) -> SkillResult:
    """语义检索（向量）：适合口语化、同义改写、字面不完全一致的问题。

    Args:
        query: 检索用的问题，中文为主，用完整的自然语言描述效果更好。
        top_k: 返回条数，默认 8，最多 50。
        doc_type: 只检索这些文档类型，逗号分隔，可选 product, review, policy, faq, post, doc。
        brand: 只检索该品牌，即商品页写的品牌名。
        category: 只检索该类目，例如“手机配件”。
        product_id: 只检索该商品 ID，例如“p-ab100”。
        updated_after: 只检索该日期（含）之后更新的内容，格式 YYYY-MM-DD。
    """
    filter_args = dict(
        doc_type=doc_type, brand=brand, category=category, product_id=product_id, updated_after=updated_after
    )
    return _single_leg("semantic_search", "dense", _dense_leg, query, top_k, filter_args, ctx)


def hybrid_search(
    query: str,
    top_k: int = 8,
    doc_type: str | None = None,
    brand: str | None = None,
    category: str | None = None,
    product_id: str | None = None,
    updated_after: str | None = None,
    *,
    ctx: SkillContext,
) -> SkillResult:
    """混合检索：关键词与语义两路并行检索后融合排序，是大多数问题的首选。

    Args:
        query: 检索用的问题或关键词，中文为主。
        top_k: 返回条数，默认 8，最多 50。
        doc_type: 只检索这些文档类型，逗号分隔，可选 product, review, policy, faq, post, doc。
        brand: 只检索该品牌，即商品页写的品牌名。
        category: 只检索该类目，例如“手机配件”。
        product_id: 只检索该商品 ID，例如“p-ab100”。
        updated_after: 只检索该日期（含）之后更新的内容，格式 YYYY-MM-DD。
    """
    try:
        filters = build_filters(doc_type, brand, category, product_id, updated_after)
    except InvalidFilter as exc:
        return SkillResult(skill="hybrid_search", note=str(exc))
    top_k = _clamp_top_k(top_k)
    # Each leg over-fetches: a chunk ranked 20th by one leg and 3rd by the other belongs on top.
    candidates = max(_candidates(ctx), top_k)
    runs = {"bm25": _keyword_leg, "dense": _dense_leg}
    with ThreadPoolExecutor(max_workers=len(runs), thread_name_prefix="hybrid-leg") as pool:
        futures = {leg: pool.submit(run, ctx, query, candidates, filters) for leg, run in runs.items()}
    legs: dict[str, list[EvidenceHit]] = {}
    degraded = []
    for leg, future in futures.items():
        try:
            legs[leg] = future.result()
        except Exception as exc:  # one broken leg: answer from the other
            degraded.append(f"{leg} leg failed: {type(exc).__name__}")
    if not legs:
        return SkillResult(skill="hybrid_search", degraded=degraded, note="检索暂时不可用。")
    hits = _rows_after_sections(fuse(legs, ctx.config, candidates), top_k)
    return SkillResult(skill="hybrid_search", hits=hits, degraded=degraded, note=f"找到 {len(hits)} 条。")


def fuse(legs: dict[str, list[EvidenceHit]], config: dict, top_k: int) -> list[EvidenceHit]:
    """Fuse leg lists with the method and weights the skill config names (default: RRF, k=60)."""
    method = config.get("fusion", "rrf")
    weights = config.get("weights")
    if method == "rrf":
        return rrf_fuse(legs, weights, k=int(config.get("rrf_k", 60)), top_k=top_k)
    if method == "weighted":
        return weighted_fuse(legs, weights, top_k=top_k)
    raise ValueError(f"fusion: unknown method {method!r} (use 'rrf' or 'weighted')")
