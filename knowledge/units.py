"""The one table of units: every way a text writes a unit after a number, what kind of amount it
is, and how many of the kind's base unit one of it makes (1年 = 12个月, 1斤 = 500克, 1米 = 1000毫米).

The inspector (agents/inspector.py: does the cited text support this number?) and the conflict
check (agents/conflicts/: do two sources state different values?) both read units from here, so
they agree by construction: two amounts are the same when `same_amount` says so, whichever of
them reads it (保修1年 is supported by 保修12个月, and 1年 / 12个月 is no conflict).

Counters (个, 件, 名, 次 ...) only count: 90个议席 and 90名议员 give the same number, so they share
one dimension, COUNT. ASCII forms are listed in the case they are written in; a reader that
lower-cases its text first (the conflict check) reads them through `lower_case`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

COUNT = "数量"  # the dimension of every counter


@dataclass(frozen=True)
class Unit:
    name: str  # the unit a value is said in (kg, 年, 件): what a question asks a value in (多少kg)
    dimension: str  # what it measures, named by the base unit (g, 月, 数量)
    factor: float = 1.0  # base units in one of it (kg: 1000 g)


def _all(forms: str, unit: Unit) -> dict[str, Unit]:
    return dict.fromkeys(forms.split("|"), unit)


# Surface form -> unit. Longest forms are matched first (unit_alternatives in knowledge/text.py).
UNITS: dict[str, Unit] = {
    # money
    **_all("元|块钱|块|人民币|yuan|rmb", Unit("元", "元")),
    **_all("usd|dollars|dollar|美元", Unit("usd", "usd")),  # 美元 before 元: 299美元 is no price in 元
    # electricity
    **_all("毫安时|毫安|mAh|mah", Unit("mah", "mah")),
    **_all("Ah|安时", Unit("ah", "mah", 1000)),
    **_all("Wh|wh", Unit("wh", "wh")),
    **_all("kW|kw", Unit("kw", "w", 1000)),
    **_all("W|w|瓦", Unit("w", "w")),
    **_all("V|v|伏", Unit("v", "v")),
    # length (公厘, 公分, 公尺: as Taiwan and Hong Kong write millimetres, centimetres, metres)
    **_all("mm|毫米|公厘", Unit("mm", "mm")),
    **_all("cm|厘米|公分", Unit("cm", "mm", 10)),
    **_all("m|米|公尺", Unit("m", "mm", 1000)),
    **_all("km|公里|千米", Unit("km", "mm", 1e6)),
    **_all("英寸|寸", Unit("英寸", "寸")),
    # weight
    **_all("kg|公斤|千克", Unit("kg", "g", 1000)),
    **_all("g|克", Unit("g", "g")),
    **_all("斤", Unit("斤", "g", 500)),
    # volume
    **_all("ml|mL|毫升", Unit("ml", "ml")),
    **_all("L|l|升", Unit("l", "ml", 1000)),
    # time: days are the base of durations, working days are their own kind (5个工作日 is not 5天)
    **_all("个工作日|工作日|business days|working days|business day", Unit("工作日", "工作日")),
    **_all("天|日|days|day", Unit("天", "天")),
    **_all("周|星期|weeks|week", Unit("周", "天", 7)),
    **_all("个小时|小时|h|hours|hour", Unit("h", "天", 1 / 24)),
    **_all("分钟|min|minutes", Unit("min", "天", 1 / 1440)),
    **_all("秒", Unit("s", "天", 1 / 86400)),
    **_all("个月|月|months|month", Unit("月", "月")),
    **_all("年|years|year", Unit("年", "月", 12)),
    # rates and their changes: 下降1.11个千分点 is no count of 1.11 things
    **_all("%|percent", Unit("%", "%")),
    **_all("‰", Unit("‰", "‰")),
    **_all("个百分点|百分点", Unit("百分点", "百分点")),
    **_all("个千分点|千分点", Unit("千分点", "千分点")),
    **_all("℃|°C", Unit("℃", "℃")),
    # counters
    **_all("件|个|双|只|台|条|套|pieces|pcs", Unit("件", COUNT)),
    **_all("名|人|位", Unit("人", COUNT)),
    **{form: Unit(form, COUNT) for form in "次 张 册 所 项 门 席 份 家 场 篇 本 款 批 轮 级".split()},
    # other kinds, each its own: a score, a multiple, a size, an edition, a degree, an instalment,
    # a discount, loyalty points, a box-office season (春节档), a down jacket's fill power
    **{form: Unit(form, form) for form in "分 倍 码 届 度 档 期 折 积分".split()},
    **_all("FP|fp", Unit("fp", "fp")),
}
# Units that, after a number, also write a date's month and day (12月20日): a reader with its own
# date grammar (the conflict check) leaves them to it.
DATE_PARTS = frozenset({"月", "日"})
CURRENCY_SIGNS = {"¥": "元", "￥": "元", "$": "usd"}
# Units that say *which* thing (a size, an edition), not how much of it.
QUALIFIERS = frozenset({"码", "届"})

BY_NAME: dict[str, Unit] = {unit.name: unit for unit in UNITS.values()}


def lower_case(units: dict[str, Unit]) -> dict[str, Unit]:
    """The table as a reader of lower-cased text sees it (mAh and mah are one form)."""
    return {form.lower(): unit for form, unit in units.items()}


def base_amount(number: float, unit: Unit) -> float:
    """The number in its dimension's base unit: 1 年 -> 12 (月), 2 kg -> 2000 (g)."""
    return number * unit.factor


def same_amount(a: tuple[float, Unit], b: tuple[float, Unit], tolerance: float = 1e-9) -> bool:
    """Whether two numbers with units state one amount: one dimension, one base amount (within a
    relative tolerance: 1051.41 and 1051.42 are one figure rounded, when the caller says so)."""
    (number_a, unit_a), (number_b, unit_b) = a, b
    if unit_a.dimension != unit_b.dimension:
        return False
    x, y = base_amount(number_a, unit_a), base_amount(number_b, unit_b)
    return math.isclose(x, y, rel_tol=tolerance, abs_tol=1e-12)
