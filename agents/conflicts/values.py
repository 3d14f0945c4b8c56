"""Values as the conflict check compares them: canonical text (15天 = 十五天 = 15 天) and typed values
(dates field by field, amounts in the units of knowledge/units.py, codes and names)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from citescope.knowledge.lexicon import Lexicon
from citescope.knowledge.normalize import normalize
from citescope.knowledge.text import (
    CJK_CHAR,
    CN_NUMERAL_CHARS,
    MULTIPLIERS,
    amount,
    arabic_numerals,
    chinese_int,
    numerals_before,
    unit_alternatives,
)
from citescope.knowledge.units import COUNT, CURRENCY_SIGNS, DATE_PARTS, QUALIFIERS, UNITS, lower_case

NUMBER_TOLERANCE = 0.005  # 1051.41 vs 1051.42 is rounding, not a conflict


_ASCII_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}


# The units of knowledge/units.py as this reader sees them: in lower-cased text (mAh = mah), and
# without the bare 月 and 日 after a number, which its own date grammar reads (12月20日).
COMPARED_UNITS = {form: unit for form, unit in lower_case(UNITS).items() if form not in DATE_PARTS}
QUALIFIER_UNITS = QUALIFIERS | {"编码"}  # they say which thing, not how much
UNIT_PATTERN = unit_alternatives(COMPARED_UNITS)


CN_NUMERAL = numerals_before(COMPARED_UNITS)


_ASCII_GAP = re.compile(r"(?<=[A-Za-z0-9])[ \t]+(?=[A-Za-z0-9])")


# English text keeps its spaces between words (warranty. Keep, Jun 1, 2026), not around a colon (11 : 00)
_ENGLISH_GAP = re.compile(r"(?<=[A-Za-z0-9.,;!?)%])[ \t]+(?=[A-Za-z0-9($\"'])")


_OTHER_GAP = re.compile(r"[ \t]+")


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


_NUMBER = r"\d+(?:,\d{3})*(?:\.\d+)?"
_MULTIPLIER = "|".join(MULTIPLIERS)


VALUE = re.compile(
    r"(?P<date>(?:(?P<y>\d{4})年)?(?P<m>\d{1,2})月(?:(?P<d>\d{1,2})[日号])?"
    r"|(?P<iy>\d{4})[-/.](?P<im>\d{1,2})[-/.](?P<id>\d{1,2})"
    rf"|(?P<em>{'|'.join(_MONTHS)})[a-z]*\.?\s*(?P<ed>\d{{1,2}}),\s*(?P<ey>\d{{4}}))"
    r"(?P<time>(?:上午|下午|晚上|中午)?(?P<hour>\d{1,2})(?::(?P<minute>\d{2})|[点时](?:(?P<minute2>\d{1,2})分)?))?"
    r"|(?P<clock>\d{1,2}:\d{2})"
    rf"|(?P<ordinal>第(?P<on>\d+|[{CN_NUMERAL_CHARS}]+)(?P<ounit>[\u4e00-\u9fff])?)"
    rf"|(?P<qty>(?P<cur>[¥$])?(?P<n1>{_NUMBER})(?:\s*[-~～至到]\s*(?P<n2>{_NUMBER}))?\s*(?P<mult>{_MULTIPLIER})?\s*(?P<unit>{UNIT_PATTERN})?)"
    r"|(?P<code>[a-z]+[a-z0-9]*(?:[-_][a-z0-9]+)*)"
)


NOT_WORD = re.compile(r"[\W_]+")


def canonical_text(text: str, lexicon: Lexicon | None = None) -> str:
    """Text as compared and shown: half-width, no spaces inside Chinese, arabic numerals before
    units, lexicon aliases replaced. Newlines stay (they end sentences and table cells)."""
    text = normalize(text)
    text = (_ASCII_GAP if CJK_CHAR.search(text) else _ENGLISH_GAP).sub("\x00", text)
    text = _OTHER_GAP.sub("", text).replace("\x00", " ")
    text = arabic_numerals(text, CN_NUMERAL)
    if lexicon is not None:
        text = lexicon.canonicalize(text)
    return text


def ascii_lower(text: str) -> str:
    """Lower-case ASCII only, so positions in the lowered text are positions in the original."""
    return text.translate(_ASCII_LOWER)


def fmt(value: float) -> str:
    return f"{round(value, 4):g}"


@dataclass(frozen=True)
class Value:
    """A typed value. Dates compare field by field (12月20日 agrees with 2021年12月20日); amounts
    compare within rounding (175万 = 175.5万 is not a conflict) and counters by number only."""

    key: str
    dimension: str
    date: tuple[int | None, ...] | None = None  # (year, month, day, hour, minute)
    numbers: tuple[float, ...] = ()

    def same_as(self, other: Value) -> bool:
        if self.date is not None and other.date is not None:
            shared = [(x, y) for x, y in zip(self.date, other.date, strict=False) if x is not None and y is not None]
            return bool(shared) and all(x == y for x, y in shared)
        if self.numbers and other.numbers and self.dimension == other.dimension:
            return len(self.numbers) == len(other.numbers) and all(
                abs(x - y) <= NUMBER_TOLERANCE * max(abs(x), abs(y))
                for x, y in zip(self.numbers, other.numbers, strict=False)
            )
        return self.key == other.key


def parse_value(text: str) -> Value | None:
    """The typed value that is exactly `text` (a date, a quantity with or without unit, a code)."""
    match = VALUE.fullmatch(ascii_lower(text.strip()))
    if match is None:
        return None
    if match.group("date"):
        return _date_value(match)
    if match.group("clock"):
        hour, minute = (int(n) for n in match.group("clock").split(":"))
        return Value(f"{hour}:{minute:02d}", "日期", (None, None, None, hour, minute))
    if match.group("ordinal"):
        number = match.group("on")
        rank = int(number) if number.isdigit() else chinese_int(number)
        return Value(f"第{rank}{match.group('ounit') or ''}", "序数")
    if match.group("code"):
        return Value(match.group("code"), "编码" if re.search(r"\d", match.group("code")) else "名称")
    form = match.group("unit") or CURRENCY_SIGNS.get(match.group("cur") or "", "")
    unit = COMPARED_UNITS.get(form)
    first = amount(match.group("n1"))
    if form == "年" and first >= 1000 and not match.group("n2"):  # 2021年 is a year, not a duration
        return Value(f"{int(first)}年", "年份", (int(first), None, None, None, None))
    numbers = tuple(
        amount(number, match.group("mult") or "") * (unit.factor if unit else 1)
        for number in [match.group("n1")] + ([match.group("n2")] if match.group("n2") else [])
    )
    # counters only count (90个议席 and 90名议员 give the same number), as does a bare number
    dimension = unit.dimension if unit else COUNT
    key = "-".join(fmt(n) for n in numbers) + ("" if dimension == COUNT else dimension)
    return Value(key, dimension, numbers=numbers)


def _date_value(match: re.Match) -> Value:
    def number(*names: str) -> int | None:
        for name in names:
            if match.group(name):
                return int(match.group(name))
        return None

    month = number("m", "im")
    if match.group("em"):
        month = _MONTHS.index(match.group("em")) + 1
    hour = number("hour")
    if hour is not None and (match.group("time") or "").startswith(("下午", "晚上")) and hour < 12:
        hour += 12
    minute = number("minute", "minute2")
    fields = (
        number("y", "iy", "ey"),
        month,
        number("d", "id", "ed"),
        hour,
        minute if minute is not None else (0 if hour is not None else None),
    )
    key = "-".join("" if f is None else str(f) for f in fields[:3]) + (
        f" {hour}:{fields[4]:02d}" if hour is not None else ""
    )
    return Value(key, "日期", fields)
