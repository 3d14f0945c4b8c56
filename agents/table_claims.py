"""Prices and stock levels that strangers' text states about a product, and the product's own table.

The SKU table is the shop's record of what a product costs and how many are in stock. A review,
a post or a text of unknown origin that says "XZ-3000 今天免费送，价格 0 元" or "库存 999 件" does
not change that record: agents/conflicts/ turns the disagreement into a conflict (the table's
value first, so the answer states it, and the claim disclosed beside it, both cited).

- `table_numbers(hit)`: the prices and stock counts an official SKU row or overview chunk holds;
- `claimed_numbers(text)`: the prices and stock counts a text states, each with where it stands.
  A price needs a price word before it (价格, 售价, 只要, costs …) and a currency unit (元, 块,
  yuan, ¥); an amount that is something else's (运费 10 元, 便宜了 100 元, 50元优惠券) is not one.

Only untrusted text (workflows/injection.is_untrusted) is compared: the shop's own pages may
state a former or a list price on purpose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from citescope.knowledge.chunking import SKU_OVERVIEW_SECTION, row_cells
from citescope.tools.base import EvidenceHit

PRICE, STOCK = "价格", "库存"
TABLE_SECTIONS = ("SKU", SKU_OVERVIEW_SECTION)

_AMOUNT = r"\d+(?:,\d{3})*(?:\.\d+)?"
_PRICE_WORD = (
    r"价格|价钱|售价|现价|卖价|标价|定价|到手价?|活动价|特价|只卖|卖|只要|只需|仅需|仅售|仅要|才|"
    r"\bcosts?\b|\bprice(?:d)?\b|\bsells? for\b|\bonly\b|\bjust\b"
)
_PRICE_CLAIM = re.compile(
    rf"(?:{_PRICE_WORD})[^，。！？；,!?\n\d]{{0,6}}?(?P<value>[¥$]\s*{_AMOUNT}|{_AMOUNT}\s*(?:元|块钱|块|yuan|rmb)(?![a-z]))",
    re.IGNORECASE,
)
_STOCK_CLAIM = re.compile(
    rf"(?:库存|现货|还剩|仅剩|只剩|剩下|剩余)[^，。！？；,!?\n\d]{{0,4}}?(?P<value>{_AMOUNT})\s*(?:件|个|双|台|只|套)"
    rf"|(?P<en>{_AMOUNT})\s*(?:units?\s+|pieces\s+|pcs\s+)?(?:in stock|left in stock)\b",
    re.IGNORECASE,
)
# An amount that is something else's: shipping, a saving, a coupon, a deposit, a repair.
_OTHER_AMOUNT_BEFORE = re.compile(
    r"运费|邮费|快递费|差价|便宜|省了|省下|优惠|立减|减|券|补贴|红包|返现|返|定金|订金|押金|维修"
    r"|手续费|加价|贵了|涨|降|shipping|discount|coupon|\boff\b|save|deposit",
    re.IGNORECASE,
)
_OTHER_AMOUNT_AFTER = re.compile(
    r"\s*(?:的)?(?:优惠|券|红包|补贴|运费|邮费|差价|定金|订金|off\b|coupon|discount)", re.IGNORECASE
)
_CONTEXT = 8  # characters before a price word that can make its amount another thing's
_ONE_SIZE = frozenset({"均码", "标准版", "one size"})


@dataclass(frozen=True)
class Claim:
    kind: str  # PRICE | STOCK
    value: str  # as written: "0 元", "¥0", "999件"
    number: float
    start: int
    end: int


def is_table(hit: EvidenceHit) -> bool:
    """The shop's own SKU row or overview chunk."""
    return hit.doc_type == "product" and hit.authority == "official" and hit.section in TABLE_SECTIONS


def table_numbers(hit: EvidenceHit) -> dict[str, list[tuple[float, str]]]:
    """{PRICE: [(299.0, "299.00元")], STOCK: [(28.0, "28件")]} of a table chunk: every price of
    its 价格 field (an overview lists one per variant), the stock of a row."""
    cells = row_cells(hit.text)
    found: dict[str, list[tuple[float, str]]] = {}
    for kind, unit in ((PRICE, "元"), (STOCK, "件")):
        for match in re.finditer(rf"({_AMOUNT})\s*{unit}", cells.get(kind, "")):
            found.setdefault(kind, []).append((_number(match.group(1)), match.group(0)))
    return found


def variant_values(fields: dict[str, str], keys: tuple[str, ...] = ("颜色", "尺码")) -> list[str]:
    """The colours and sizes (`keys`) of a SKU row or overview's fields (雾霾蓝, 42, 2m): an overview
    lists several of each, 、 between them."""
    return [value.strip() for key in keys for value in fields.get(key, "").split("、") if value.strip()]


def variants(hit: EvidenceHit) -> set[str]:
    """The names a sentence would use for a SKU row's variant: its colour, and its size unless that
    is a bare number (库存 42 件 names no size 42) or says one size fits all."""
    cells = row_cells(hit.text)
    sizes = [size for size in variant_values(cells, ("尺码",)) if not re.fullmatch(r"[\d.]+", size)]
    return {*variant_values(cells, ("颜色",)), *(size for size in sizes if size not in _ONE_SIZE)}


def claimed_numbers(text: str) -> list[Claim]:
    """The prices and stock counts a text states (module docstring), in order."""
    claims = []
    for match in _PRICE_CLAIM.finditer(text):
        before = text[max(0, match.start() - _CONTEXT) : match.start("value")]
        if _OTHER_AMOUNT_BEFORE.search(before) or _OTHER_AMOUNT_AFTER.match(text, match.end()):
            continue
        value = match.group("value")
        claims.append(
            Claim(
                PRICE,
                value.strip(),
                _number(re.findall(_AMOUNT, value)[0]),  # the value holds its amount
                match.start("value"),
                match.end("value"),
            )
        )
    for match in _STOCK_CLAIM.finditer(text):
        group = "value" if match.group("value") else "en"
        claims.append(
            Claim(
                STOCK,
                match.group(0)[match.start(group) - match.start() :].strip(),
                _number(match.group(group)),
                match.start(group),
                match.end(),
            )
        )
    return sorted(claims, key=lambda claim: claim.start)


def _number(text: str) -> float:
    return float(text.replace(",", ""))
