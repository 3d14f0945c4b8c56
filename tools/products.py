"""Product skills over structured data: exact product look-up and size recommendation.

Prices, stock and sizes come from the SKU table and from the size-table rows of a product's
detail page, never from prose, and every number the model sees sits in a citable chunk.

No `from __future__ import annotations`: tool schemas are built from the real annotations.
"""

import re
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from citescope.knowledge.chunking import SKU_OVERVIEW_SECTION, SKU_OVERVIEW_SLUG, TABLE_ROW_ID, row_cells
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.schema import Chunk, size_key
from citescope.knowledge.text import normalize
from citescope.tools.base import EvidenceHit, LegScore, SkillContext, SkillResult

MIN_COVERAGE = 0.6  # share of the asked name that must be found in a product name
TIE_MARGIN = 0.05  # scores this close count as "equally good": list candidates, never guess
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_SKU_LIKE = re.compile(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+|[A-Za-z0-9]{4,}")
# A unit is one CJK character, one letter run or one digit run: "XZ-2000", "XZ 2000" and
# "xz2000" all become [xz, 2000], so model numbers compare whole and spelling-independent.
_UNIT = re.compile(r"[a-z]+|\d+(?:\.\d+)?|[^\sa-z\d\W]", re.UNICODE)
_QUANTITY_WORDS = frozenset("码 号 件 个 双 只 元 块 斤 岁 cm mm kg g".split())  # "42码" is not a model


# ----------------------------------------------------------------------------- product index


@dataclass
class Product:
    product_id: str
    name: str
    brand: str = ""
    category: str = ""
    skus: list[dict] = field(default_factory=list)  # SKU table rows
    size_rows: list[Chunk] = field(default_factory=list)  # size-table row chunks of its page
    units: list[str] = field(default_factory=list)  # of the alias-canonical name
    keys: set = field(default_factory=set)  # its multi-character units and unit pairs


@dataclass
class Match:
    product: Product | None = None
    candidates: list[Product] = field(default_factory=list)  # several equally good: ask
    sku: dict | None = None  # the SKU row when the text named a SKU code
    score: float = 0.0


def _units(text: str) -> list[str]:
    return _UNIT.findall(normalize(text).lower())


def _match_keys(units: list[str]) -> set:
    """What two unit lists must share for any run of 2+ characters to be common to both."""
    return {u for u in units if len(u) > 1} | set(zip(units, units[1:], strict=False))


def _longest_common_run(query: Sequence[str | None], name: Sequence[str | None]) -> tuple[int, int, int]:
    """(query start, name start, length) of the longest common run of units; None units never match."""
    best = (0, 0, 0)
    previous = [0] * (len(name) + 1)
    for i, unit in enumerate(query):
        current = [0] * (len(name) + 1)
        for j, other in enumerate(name):
            if unit is not None and unit == other:
                current[j + 1] = previous[j] + 1
                if current[j + 1] > best[2]:
                    best = (i - current[j + 1] + 1, j - current[j + 1] + 1, current[j + 1])
        previous = current
    return best


def _coverage(query: list[str], name: list[str]) -> float:
    """Share of the query's characters found in the name, as common runs of 2+ characters in any
    order (longest first), so "低帮 AJ1" and "AJ1 低帮" match alike.

    Returns 0 when the query has a number the name lacks (XZ-2500 vs XZ-2000, 轻羽5 vs 轻羽Pro),
    unless it is a quantity such as "42码", or when a matched run sits next to a different number
    on both sides: a model number decides, it is never "close enough".
    """
    total = sum(len(u) for u in query)
    if not total:
        return 0.0
    for i, unit in enumerate(query):
        follower = query[i + 1] if i + 1 < len(query) else ""
        if unit[0].isdigit() and follower not in _QUANTITY_WORDS and unit not in name:
            return 0.0  # the query names a number this product does not have
    # a matched run is blanked out (None) so that no unit counts twice
    left: list[str | None] = list(query)
    right: list[str | None] = list(name)
    matched = 0
    while True:
        qi, ni, size = _longest_common_run(left, right)
        chars = sum(len(u) for u in query[qi : qi + size])
        if not size or chars < 2:
            return matched / total
        for qn, nn in ((qi - 1, ni - 1), (qi + size, ni + size)):
            if 0 <= qn < len(query) and 0 <= nn < len(name):
                if query[qn][0].isdigit() and name[nn][0].isdigit() and query[qn] != name[nn]:
                    return 0.0
        matched += chars
        left[qi : qi + size] = [None] * size
        right[ni : ni + size] = [None] * size


class ProductIndex:
    """Every product of one KB generation: SKU rows, size rows and matchable names."""

    def __init__(self, kb: KnowledgeBase):
        self.generation = kb.version
        self.lexicon = kb.lexicon
        self.products: dict[str, Product] = {}
        self.by_sku: dict[str, dict] = {}
        for row in kb.skus():
            product = self.products.setdefault(
                row["product_id"],
                Product(
                    row["product_id"],
                    row.get("name") or row["product_id"],
                    row.get("brand") or "",
                    row.get("category") or "",
                ),
            )
            product.skus.append(row)
            self.by_sku[row["sku"].upper()] = row
        for chunk in kb.all_chunks():
            if chunk.doc_type != "product" or not chunk.product_id:
                continue
            if chunk.product_id not in self.products:  # a detail page without SKU rows is still a product
                self.products[chunk.product_id] = Product(
                    chunk.product_id, chunk.title or chunk.product_id, chunk.brand or "", chunk.category or ""
                )
            product = self.products[chunk.product_id]
            fragment = chunk.chunk_id.partition("#")[2]
            if "尺码" in chunk.section and TABLE_ROW_ID.search(fragment):
                product.size_rows.append(chunk)
        for product in self.products.values():
            product.units = _units(self.lexicon.canonicalize(product.name))
            product.keys = _match_keys(product.units)
            product.skus.sort(key=lambda r: (r.get("colour") or "", size_key(r.get("size") or "")))

    def resolve(self, text: str) -> Match:
        """Product by SKU code, product id, or (alias-canonical) name; ambiguous -> candidates."""
        text = normalize(text or "").strip()
        if not text:
            return Match()
        by_id = next((p for pid, p in self.products.items() if pid.lower() == text.lower()), None)
        if by_id is not None:
            return Match(by_id, score=1.0)
        named = {m.group(0).upper() for m in _SKU_LIKE.finditer(text)} & set(self.by_sku)
        if named:
            rows = [self.by_sku[code] for code in sorted(named)]
            owners = {row["product_id"] for row in rows}
            if len(owners) > 1:
                return Match(candidates=[self.products[pid] for pid in sorted(owners)])
            return Match(self.products[rows[0]["product_id"]], sku=rows[0], score=1.0)
        query = _units(self.lexicon.canonicalize(text))
        exact = [p for p in self.products.values() if p.units == query]
        if len(exact) == 1:
            return Match(exact[0], score=1.0)
        keys = _match_keys(query)
        scored = sorted(
            ((_coverage(query, p.units), p.product_id) for p in self.products.values() if keys & p.keys), reverse=True
        )
        best = scored[0][0] if scored else 0.0
        if best < MIN_COVERAGE:
            return Match()
        tied = [self.products[pid] for score, pid in scored if score >= best - TIE_MARGIN]
        if len(tied) > 1:
            return Match(candidates=sorted(tied, key=lambda p: p.product_id), score=best)
        return Match(tied[0], score=best)


_indexes: "weakref.WeakKeyDictionary[KnowledgeBase, ProductIndex]" = weakref.WeakKeyDictionary()
_indexes_lock = threading.Lock()


def product_index(kb: KnowledgeBase) -> ProductIndex:
    """The KB's product index, rebuilt only when the KB's generation has moved on."""
    with _indexes_lock:
        index = _indexes.get(kb)
        if index is None or index.generation != kb.version:
            index = _indexes[kb] = ProductIndex(kb)
        return index


# ----------------------------------------------------------------------------- shared helpers


def _hit(kb: KnowledgeBase, chunk_id: str, leg: str, rank: int) -> EvidenceHit | None:
    chunk = kb.get(chunk_id)
    if chunk is None:
        return None
    return EvidenceHit.from_chunk(chunk, 1.0, {leg: LegScore(score=1.0, rank=rank)})


def _sku_hits(kb: KnowledgeBase, rows: list[dict], start_rank: int = 1) -> list[EvidenceHit]:
    hits: list[EvidenceHit] = []
    for row in rows:
        chunk_id = row.get("chunk_id") or f"sku-{row['product_id']}#sku-{row['sku']}"
        hit = _hit(kb, chunk_id, "sku_table", start_rank + len(hits))
        if hit is not None:
            hits.append(hit)
    return hits


def _overview_hit(kb: KnowledgeBase, rows: list[dict]) -> EvidenceHit | None:
    """The product's SKU overview chunk (knowledge.chunking.render_sku_overview), if indexed."""
    row_id = rows[0].get("chunk_id") if rows else None  # "<doc part>#sku-<sku>"
    chunk = kb.get(row_id.rpartition("#")[0] + "#" + SKU_OVERVIEW_SLUG) if row_id else None
    if chunk is None or chunk.section != SKU_OVERVIEW_SECTION:
        return None
    return EvidenceHit.from_chunk(chunk, 1.0, {"sku_table": LegScore(score=1.0, rank=1)})


def _unresolved(skill: str, asked: str, match: Match) -> SkillResult:
    """Not found, or several products equally likely: say so and ask, never pick one."""
    if match.candidates:
        listed = "；".join(f"{p.name}（{p.product_id}）" for p in match.candidates)
        return SkillResult(
            skill=skill,
            note=f"“{asked}”可能指以下多款商品，请确认是哪一款：{listed}。",
            data={"candidates": [{"product_id": p.product_id, "name": p.name} for p in match.candidates]},
        )
    return SkillResult(skill=skill, note=f"商品表中没有找到“{asked}”，请提供更准确的商品名称、型号或 SKU 编码。")


def _price(value: float) -> str:
    return f"{value:.2f}"


# ----------------------------------------------------------------------------- product_lookup


def product_lookup(product: str, sizes: list[str] | None = None, *, ctx: SkillContext) -> SkillResult:
    """商品结构化查询：按商品名、别名（如 AJ1）、型号（如 XZ-2000）、商品 ID 或 SKU 编码查商品表，返回价格、颜色、尺码和库存。

    价格、库存等数字来自商品表本身，适合回答“多少钱”“有没有货”“有哪些尺码/颜色”。
    问到具体尺码（如“M码和L码差多少”）时传 sizes，会先返回这些尺码的尺码表行和 SKU。
    同名或含糊时会列出候选商品，请向顾客确认，不要猜测。

    Args:
        product: 商品名称、别名、型号、商品 ID 或 SKU 编码，例如“AJ1 低帮”“XZ-3000”“AJ1L-WR-42”。
        sizes: 可选，问题里提到的尺码，例如 ["M", "L"] 或 ["42"]。
    """  # noqa: E501 - the model reads this docstring as the tool's description: wrapping a line would change it
    match = product_index(ctx.kb).resolve(product)
    if match.product is None:
        return _unresolved("product_lookup", product, match)
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
    size_hits = [h for h in (_hit(ctx.kb, row.chunk_id, "size_table", 1) for row in named) if h]
    hits = size_hits + _sku_hits(ctx.kb, ordered)
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


# ----------------------------------------------------------------------------- size_recommend


@dataclass
class SizeRow:
    chunk_id: str
    size: str
    columns: dict[str, str]

    def raw(self, keyword: str) -> str:
        """The table's own text of the first column whose name contains keyword (quoted in reasons,
        so a cited reason repeats the source's numbers exactly)."""
        return next((value for name, value in self.columns.items() if keyword in name), "")

    def number_range(self, keyword: str) -> tuple[float, float] | None:
        """(low, high) of that column: "160-167" -> (160, 167), "24.5" -> (24.5, 24.5)."""
        numbers = [float(n) for n in _NUMBER.findall(self.raw(keyword))]
        return (numbers[0], numbers[-1]) if numbers else None


def parse_size_rows(chunks: list[Chunk]) -> list[SizeRow]:
    """Row chunks ("<title> 尺码表 — 尺码: 39；脚长(cm): 24.5") -> columns; rows without 尺码 dropped."""
    by_row: dict[int, SizeRow] = {}
    for chunk in sorted(chunks, key=lambda c: c.position):
        _, dash, body = chunk.text.partition(" — ")
        columns = row_cells(body if dash else chunk.text)
        row_id = TABLE_ROW_ID.search(chunk.chunk_id)
        assert row_id is not None, chunk.chunk_id  # ProductIndex keeps only chunks whose id names a table row
        row_no = int(row_id.group(1))
        if row_no in by_row:  # a long row split into pieces: one row, first piece's id
            by_row[row_no].columns.update(columns)
            continue
        size = next((v for k, v in columns.items() if "尺码" in k), None)
        if size is not None:
            by_row[row_no] = SizeRow(chunk.chunk_id, size, columns)
    return [by_row[k] for k in sorted(by_row)]


def _fmt(value: float) -> str:
    return f"{value:g}"


def _pick_by_range(
    rows: list[SizeRow], keyword: str, value: float, label: str, unit: str
) -> tuple[SizeRow | None, str, SizeRow]:
    """(the row whose range holds value (the larger one on a shared boundary, the next larger in a
    gap; None when value is above every range), the reason, the row whose numbers the reason quotes)."""
    ranged = [(row, r) for row in rows if (r := row.number_range(keyword)) is not None]
    inside = [(row, r) for row, r in ranged if r[0] <= value <= r[1]]
    if inside:
        row = inside[-1][0]
        shared = "（恰在两个尺码的分界上，取较大的一码）" if len(inside) > 1 else ""
        return (
            row,
            f"{label} {_fmt(value)}{unit} 在 {row.size} 码的适合{label} {row.raw(keyword)}{unit} 内{shared}",
            row,
        )
    if value < ranged[0][1][0]:
        row = ranged[0][0]
        return (
            row,
            f"{label} {_fmt(value)}{unit} 低于最小码 {row.size} 的适合{label} {row.raw(keyword)}{unit}，"
            f"按最小码 {row.size}",
            row,
        )
    larger = [row for row, r in ranged if r[0] > value]
    if not larger:
        row = ranged[-1][0]
        return None, f"{label} {_fmt(value)}{unit} 超出最大码 {row.size} 的适合{label} {row.raw(keyword)}{unit}", row
    row = larger[0]
    return (
        row,
        f"{label} {_fmt(value)}{unit} 介于两个尺码之间，取较大的 {row.size} 码（适合{label} {row.raw(keyword)}{unit}）",
        row,
    )


# A size table's note on a foot between two sizes (本款鞋码偏大，脚长介于两个尺码之间时建议选小一码): the
# shop's own rule, which the smallest size not shorter than the foot would break.
_BETWEEN_SIZES = re.compile(r"[^。；：\n]*介于两个尺码之间[^。；\n]*?选([大小])(?:一|半)码[^。；\n]*")


def fit_note(kb: KnowledgeBase, rows: list[SizeRow]) -> tuple[str, str, str] | None:
    """(chunk id, the note as written, "大" or "小") of the size table's rule for a foot between two
    sizes, from the prose of the section the rows belong to; None when it has none."""
    if not rows:
        return None
    row = kb.get(rows[0].chunk_id)
    if row is None:
        return None
    row_ids = {r.chunk_id for r in rows}
    for chunk in kb.chunks_of(row.doc_id):
        if chunk.section == row.section and chunk.chunk_id not in row_ids:
            found = _BETWEEN_SIZES.search(chunk.text)
            if found:
                return chunk.chunk_id, found.group(0).strip(), found.group(1)
    return None


def _recommend_shoe(
    rows: list[SizeRow], foot_length_cm: float, note: tuple[str, str, str] | None = None
) -> tuple[SizeRow | None, list[SizeRow], str]:
    """The smallest size whose foot length is not shorter than the foot; for a foot between two
    sizes, the one the size table's note says (note: fit_note's finding)."""
    measured = sorted(((r[1], row) for row in rows if (r := row.number_range("脚长"))), key=lambda pair: pair[0])
    for index, (length, row) in enumerate(measured):
        if length >= foot_length_cm:
            below = measured[index - 1][1] if index > 0 else None
            if note is not None and below is not None and length > foot_length_cm:
                pick = below if note[2] == "小" else row
                return (
                    pick,
                    [below, row],
                    (
                        f"脚长 {_fmt(foot_length_cm)}cm 介于 {below.size} 码（脚长 {below.raw('脚长')}cm）"
                        f"和 {row.size} 码（脚长 {row.raw('脚长')}cm）之间，{note[1]}"
                    ),
                )
            return (
                row,
                [row],
                (
                    f"脚长 {_fmt(foot_length_cm)}cm：{row.size} 码对应脚长 {row.raw('脚长')}cm，"
                    f"是尺码表中脚长不小于 {_fmt(foot_length_cm)}cm 的最小尺码"
                ),
            )
    row = measured[-1][1]
    return None, [row], f"脚长 {_fmt(foot_length_cm)}cm 超出尺码表最大码 {row.size}（脚长 {row.raw('脚长')}cm）"


def _recommend_by_body(
    rows: list[SizeRow], height_cm: float | None, weight_kg: float | None
) -> tuple[SizeRow | None, list[SizeRow], str]:
    picks = []
    if height_cm is not None and any(r.number_range("身高") for r in rows):
        picks.append(_pick_by_range(rows, "身高", height_cm, "身高", "cm"))
    if weight_kg is not None and any(r.number_range("体重") for r in rows):
        picks.append(_pick_by_range(rows, "体重", weight_kg, "体重", "kg"))
    used = [row for row, _, _ in picks if row is not None]
    quoted = list({id(r): r for _, _, r in picks}.values())  # every row a reason quotes is cited
    reasons = [reason for _, reason, _ in picks]
    if any(row is None for row, _, _ in picks):
        return None, quoted, "；".join(reasons) + "，尺码表中没有合适的尺码"
    order = {id(row): i for i, row in enumerate(rows)}
    chosen = max(used, key=lambda row: order[id(row)])
    if len({row.size for row in used}) > 1:
        sizes = "、".join(f"{label}对应 {row.size} 码" for row, label in zip(used, ("身高", "体重"), strict=False))
        reasons.append(f"{sizes}，两者不一致时建议选较大的 {chosen.size} 码，穿着不会紧绷")
    return chosen, quoted, "；".join(reasons)


class SizeAdvice(BaseModel):
    """size_recommend's finding as an answer states it: the size (None: the table has none that
    fits), why, the size-table rows it rests on and the SKU rows of that size."""

    product: str
    size: str | None
    reason: str
    rows_used: list[str]
    sku_rows: list[str] = Field(default_factory=list)
    in_stock: bool | None = None

    @classmethod
    def of(cls, data: dict | None) -> "SizeAdvice | None":
        """From size_recommend's result data; None when it asked for facts or had no table to read."""
        if not data or not data.get("rows_used") or not data.get("product"):
            return None
        return cls.model_validate(data)

    def chunk_ids(self) -> list[str]:
        return [*self.rows_used, *self.sku_rows]

    def describe(self) -> str:
        """The finding as a model reads it (the answerer prompt's 【工具结论】), with the ids to cite."""
        rows = "".join(f"【{i}】" for i in self.rows_used)
        if self.size is None:
            return f"尺码推荐（size_recommend 按尺码表计算）：{self.product}：{self.reason}，没有合适的尺码；依据{rows}"
        skus = "".join(f"【{i}】" for i in self.sku_rows)
        return (
            f"尺码推荐（size_recommend 按尺码表计算）：{self.product} 建议选 {self.size} 码；理由：{self.reason}；"
            f"依据{rows}" + (f"；该尺码的 SKU 行{skus}" if skus else "")
        )


def size_recommend(
    product: str,
    height_cm: float | None = None,
    weight_kg: float | None = None,
    foot_length_cm: float | None = None,
    *,
    ctx: SkillContext,
) -> SkillResult:
    """尺码推荐：按商品详情页的尺码表，根据顾客的身高体重（服装）或脚长（鞋）推荐尺码并说明理由。

    缺少必要信息时（服装缺身高/体重、鞋缺脚长）不会猜测，而是返回需要向顾客询问的信息。

    Args:
        product: 商品名称、别名、型号或商品 ID，例如“峰刃冲锋衣”“AJ1 低帮”。
        height_cm: 顾客身高，单位厘米，例如 175。
        weight_kg: 顾客体重，单位公斤，例如 70。
        foot_length_cm: 顾客脚长，单位厘米，例如 25.5（鞋类必填）。
    """
    skill = "size_recommend"
    match = product_index(ctx.kb).resolve(product)
    if match.product is None:
        return _unresolved(skill, product, match)
    item = match.product
    given = {"height_cm": height_cm, "weight_kg": weight_kg, "foot_length_cm": foot_length_cm}
    bad = [name for name, value in given.items() if value is not None and not value > 0]
    if bad:
        return SkillResult(
            skill=skill, note=f"参数无效（{'、'.join(bad)} 须为正数），请向顾客确认。", data={"need": bad}
        )
    rows = parse_size_rows(item.size_rows)
    if not rows:
        sizes = {r.get("size") for r in item.skus}
        if sizes == {"均码"}:
            return SkillResult(
                skill=skill,
                hits=_sku_hits(ctx.kb, item.skus[:1]),
                note=f"{item.name} 为均码商品，无需选择尺码。",
                data={"size": "均码", "reason": "商品表中该商品只有均码", "rows_used": []},
            )
        return SkillResult(
            skill=skill, note=f"{item.name}（{item.product_id}）没有找到按尺码划分的尺码表，无法推荐尺码。"
        )
    by_foot = any(row.number_range("脚长") for row in rows)
    by_body = [
        key
        for key, word in (("height_cm", "身高"), ("weight_kg", "体重"))
        if any(row.number_range(word) for row in rows)
    ]
    need = (
        ([] if foot_length_cm is not None else ["foot_length_cm"])
        if by_foot
        else [key for key in by_body if given[key] is None]
    )
    if need:
        asks = {"foot_length_cm": "脚长（厘米）", "height_cm": "身高（厘米）", "weight_kg": "体重（公斤）"}
        return SkillResult(
            skill=skill,
            data={"need": need},
            note=f"为 {item.name} 推荐尺码需要先请顾客提供：{'和'.join(asks[k] for k in need)}。",
        )
    note = fit_note(ctx.kb, rows) if by_foot else None
    if by_foot:
        assert foot_length_cm is not None  # else `need` above asked for it
        chosen, used, reason = _recommend_shoe(rows, foot_length_cm, note)
    elif by_body:
        chosen, used, reason = _recommend_by_body(rows, height_cm, weight_kg)
    else:
        return SkillResult(
            skill=skill,
            note=f"{item.name} 的尺码表只有成衣尺寸，没有身高、体重或脚长对照，无法据此推荐。",
            hits=[h for h in (_hit(ctx.kb, r.chunk_id, "size_table", i) for i, r in enumerate(rows, 1)) if h],
        )
    hits = [h for h in (_hit(ctx.kb, r.chunk_id, "size_table", i) for i, r in enumerate(used, 1)) if h]
    data: dict[str, Any] = {
        "product": item.name,
        "size": chosen.size if chosen else None,
        "reason": reason,
        "rows_used": [r.chunk_id for r in used] + ([note[0]] if note and note[1] in reason else []),
    }
    if note and note[1] in reason:  # the note the reason quotes is shown and cited with the rows
        hits += [h for h in [_hit(ctx.kb, note[0], "size_table", len(hits) + 1)] if h]
    if chosen is None:
        return SkillResult(skill=skill, hits=hits, data=data, note=f"{item.name}：{reason}，建议联系客服确认。")
    same_size = [r for r in item.skus if r.get("size") == chosen.size]
    data["in_stock"] = any(r["stock"] > 0 for r in same_size) if same_size else None
    stock_note = {True: "该尺码目前有货", False: "该尺码目前缺货", None: "本店暂未上架该尺码"}[data["in_stock"]]
    sku_hits = _sku_hits(ctx.kb, same_size, start_rank=len(hits) + 1)
    data["sku_rows"] = [h.chunk_id for h in sku_hits]
    hits += sku_hits
    return SkillResult(
        skill=skill, hits=hits, data=data, note=f"{item.name} 推荐 {chosen.size} 码：{reason}。{stock_note}。"
    )
