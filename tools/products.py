"""Product skills over structured data: product_lookup, the exact product look-up, here; the
size recommendation in tools/sizes.py and the product index both read in tools/product_index.py.

Prices, stock and sizes come from the SKU table and from the size-table rows of a product's
detail page, never from prose, and every number the model sees sits in a citable chunk.

No `from __future__ import annotations`: tool schemas are built from the real annotations.
"""

from typing import Any

from citescope.knowledge.chunking import SKU_OVERVIEW_SECTION, SKU_OVERVIEW_SLUG
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.normalize import normalize
from citescope.knowledge.schema import size_key
from citescope.tools.base import EvidenceHit, LegScore, SkillContext, SkillResult
from citescope.tools.product_index import Product, ProductIndex, chunk_hit, product_index, sku_row_hits, unresolved
from citescope.tools.sizes import SizeAdvice, SizeRow, fit_note, parse_size_rows, size_recommend

# ----------------------------------------------------------------------------- product_lookup helpers


def _overview_hit(kb: KnowledgeBase, rows: list[dict]) -> EvidenceHit | None:
    """The product's SKU overview chunk (knowledge.chunking.render_sku_overview), if indexed."""
    row_id = rows[0].get("chunk_id") if rows else None  # "<doc part>#sku-<sku>"
    chunk = kb.get(row_id.rpartition("#")[0] + "#" + SKU_OVERVIEW_SLUG) if row_id else None
    if chunk is None or chunk.section != SKU_OVERVIEW_SECTION:
        return None
    return EvidenceHit.from_chunk(chunk, 1.0, {"sku_table": LegScore(score=1.0, rank=1)})


def _price(value: float) -> str:
    return f"{value:.2f}"


# ----------------------------------------------------------------------------- product_lookup


def product_lookup(product: str, sizes: list[str] | None = None, *, ctx: SkillContext) -> SkillResult:
    """商品结构化查询：按商品名、别名（顾客常用的简称）、型号（如 AB-100）、商品 ID 或 SKU 编码查商品表，返回价格、颜色、尺码和库存。

    价格、库存等数字来自商品表本身，适合回答“多少钱”“有没有货”“有哪些尺码/颜色”。
    问到具体尺码（如“M码和L码差多少”）时传 sizes，会先返回这些尺码的尺码表行和 SKU。
    同名或含糊时会列出候选商品，请向顾客确认，不要猜测。

    Args:
        product: 商品名称、别名、型号、商品 ID 或 SKU 编码，例如“冲锋衣”“AB-100”“AB100-BK-42”。
        sizes: 可选，问题里提到的尺码，例如 ["M", "L"] 或 ["42"]。
    """  # noqa: E501 - the model reads this docstring as the tool's description: wrapping a line would change it
    match = product_index(ctx.kb).resolve(product)
    if match.product is None:
        return unresolved("product_lookup", product, match)
    item = match.product
    rows = item.skus
    if not rows:
        return SkillResult(
            skill="product_lookup",
            note=f"{item.name}（{item.product_id}）在商品表中暂无 SKU、价格和库存数据。",
            data={
                "product_id": item.product_id,
                "name": item.name,
                "brand": item.brand,
                "category": item.category,
                "skus": [],
            },
        )
    ordered = ([match.sku] if match.sku else []) + [r for r in rows if r is not match.sku]
    prices = [float(r["price"]) for r in rows]
    in_stock = sorted({r["size"] for r in rows if r["stock"] > 0 and r.get("size")}, key=size_key)
    out_of_stock = [r["sku"] for r in rows if r["stock"] <= 0]
    data: dict[str, Any] = {
        "product_id": item.product_id,
        "name": item.name,
        "brand": item.brand,
        "category": item.category,
        "skus": [
            {
                "sku": r["sku"],
                "colour": r.get("colour") or "",
                "size": r.get("size") or "",
                "price": float(r["price"]),
                "stock": int(r["stock"]),
            }
            for r in ordered
        ],
        "price_range": [min(prices), max(prices)],
        "in_stock_sizes": in_stock,
        "out_of_stock": out_of_stock,
    }
    parts = []
    if match.sku:
        row = match.sku
        data["matched_sku"] = row["sku"]
        parts.append(
            f"SKU {row['sku']}：颜色 {row.get('colour') or '-'}，尺码 {row.get('size') or '-'}，"
            f"价格 {_price(row['price'])} 元，库存 {row['stock']} 件"
        )
    low, high = data["price_range"]
    parts.append(
        f"{item.name}（{item.product_id}）价格 {_price(low)} 元"
        if low == high
        else f"{item.name}（{item.product_id}）价格 {_price(low)}–{_price(high)} 元"
    )
    parts.append("有货尺码/规格：" + ("、".join(in_stock) if in_stock else "无"))
    if out_of_stock:
        parts.append("缺货 SKU：" + "、".join(out_of_stock))
    named = _named_sizes(item, sizes)
    if named:  # the sizes asked about: their size-table rows, then their SKU rows, first
        data["size_rows"] = {row.size: row.chunk_id for row in named}
        asked = {row.size for row in named}
        ordered = [r for r in ordered if r.get("size") in asked] + [r for r in ordered if r.get("size") not in asked]
        parts.append(
            "所问尺码的尺码表："
            + "；".join(
                f"{row.size} 码 " + "，".join(f"{k} {v}" for k, v in row.columns.items() if "尺码" not in k)
                for row in named
            )
        )
    size_hits = [h for h in (chunk_hit(ctx.kb, row.chunk_id, "size_table", 1) for row in named) if h]
    hits = size_hits + sku_row_hits(ctx.kb, ordered)
    overview = _overview_hit(ctx.kb, rows)
    if overview is not None:  # all variants at once, after the one SKU or the sizes the question named
        hits.insert(len(size_hits) + (1 if match.sku else 0), overview)
    for rank, hit in enumerate(hits, start=1):
        next(iter(hit.legs.values())).rank = rank
    return SkillResult(skill="product_lookup", hits=hits, data=data, note="；".join(parts) + "。")


def _named_sizes(item: Product, sizes: list[str] | None) -> "list[SizeRow]":
    """The product's size-table rows of the asked sizes, in the asked order (case and width
    folded: "m" is M); sizes the table has no row for are left out."""
    if not sizes:
        return []
    by_size = {normalize(row.size).upper(): row for row in parse_size_rows(item.size_rows)}
    wanted = dict.fromkeys(normalize(str(size)).upper().removesuffix("码") for size in sizes)
    return [by_size[size] for size in wanted if size in by_size]


# product_lookup's neighbours, imported from here by their callers (agents, workflows, skills.yaml)
__all__ = [
    "Product",
    "ProductIndex",
    "SizeAdvice",
    "SizeRow",
    "fit_note",
    "parse_size_rows",
    "product_index",
    "product_lookup",
    "size_recommend",
]
