"""size_recommend: a size from a product's size table, for the customer's height and weight
(clothes) or foot length (shoes), with the reason and the rows it rests on.

No `from __future__ import annotations`: tool schemas are built from the real annotations.
"""

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from citescope.knowledge.chunking import TABLE_ROW_ID, row_cells
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.schema import Chunk
from citescope.tools.base import SkillContext, SkillResult
from citescope.tools.product_index import chunk_hit, product_index, sku_row_hits, unresolved

_NUMBER = re.compile(r"\d+(?:\.\d+)?")


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
        product: 商品名称、别名、型号或商品 ID，例如“冲锋衣”“AB-100”。
        height_cm: 顾客身高，单位厘米，例如 175。
        weight_kg: 顾客体重，单位公斤，例如 70。
        foot_length_cm: 顾客脚长，单位厘米，例如 25.5（鞋类必填）。
    """
    skill = "size_recommend"
    match = product_index(ctx.kb).resolve(product)
    if match.product is None:
        return unresolved(skill, product, match)
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
                hits=sku_row_hits(ctx.kb, item.skus[:1]),
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
            hits=[h for h in (chunk_hit(ctx.kb, r.chunk_id, "size_table", i) for i, r in enumerate(rows, 1)) if h],
        )
    hits = [h for h in (chunk_hit(ctx.kb, r.chunk_id, "size_table", i) for i, r in enumerate(used, 1)) if h]
    data: dict[str, Any] = {
        "product": item.name,
        "size": chosen.size if chosen else None,
        "reason": reason,
        "rows_used": [r.chunk_id for r in used] + ([note[0]] if note and note[1] in reason else []),
    }
    if note and note[1] in reason:  # the note the reason quotes is shown and cited with the rows
        hits += [h for h in [chunk_hit(ctx.kb, note[0], "size_table", len(hits) + 1)] if h]
    if chosen is None:
        return SkillResult(skill=skill, hits=hits, data=data, note=f"{item.name}：{reason}，建议联系客服确认。")
    same_size = [r for r in item.skus if r.get("size") == chosen.size]
    data["in_stock"] = any(r["stock"] > 0 for r in same_size) if same_size else None
    stock_note = {True: "该尺码目前有货", False: "该尺码目前缺货", None: "本店暂未上架该尺码"}[data["in_stock"]]
    sku_hits = sku_row_hits(ctx.kb, same_size, start_rank=len(hits) + 1)
    data["sku_rows"] = [h.chunk_id for h in sku_hits]
    hits += sku_hits
    return SkillResult(
        skill=skill, hits=hits, data=data, note=f"{item.name} 推荐 {chosen.size} 码：{reason}。{stock_note}。"
    )
