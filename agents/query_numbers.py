"""The numbers a question gives with their units: body measures (height, weight, foot length),
sizes, a price limit, and the bare numbers a reply to a clarifying question may give ("175，72公斤").

Rules only, read from the normalized question (agents/query_analysis.py calls them for every
question; workflows/sessions.py reads a reply with parse_body_reply).
"""

from __future__ import annotations

import re

from citescope.knowledge.text import MODEL_NUMBER, chinese_int

_NUM = r"(\d+(?:\.\d+)?)"
_HEIGHT = [
    re.compile(r"身高\s*(?:是|有|为|:)?\s*" + _NUM + r"\s*(cm|厘米|公分|m|米)?", re.I),
    re.compile(r"(?<![\d.])(1\d{2}(?:\.\d)?)\s*(cm|厘米|公分)", re.I),
    re.compile(r"(?<![\d.])(1\.\d{1,2})\s*(m|米)(?![a-z])", re.I),
]
_HEIGHT_METRE_CM = re.compile(r"(?<![\d.])1\s*米\s*(\d{1,2})")  # 1米75
_HEIGHT_CN = re.compile(r"一米([一二三四五六七八九])([零一二三四五六七八九])?")  # 一米七五
_WEIGHT = [
    re.compile(r"体重\s*(?:是|有|为|:)?\s*" + _NUM + r"\s*(kg|公斤|千克|斤)?", re.I),
    re.compile(r"(?<![\d.])" + _NUM + r"\s*(kg|公斤|千克|斤)", re.I),
]
_FOOT = re.compile(r"脚长?\s*(?:是|有|为|:)?\s*" + _NUM + r"\s*(cm|厘米|公分|mm|毫米)?", re.I)
# Shoe sizes: any two-digit "码"; "号" only for 30-49 (12号 is a date).
_NUMERIC_SIZE = re.compile(r"(?<![\d.])(\d{2}(?:\.5)?)\s*码|(?<![\d.月])([34]\d(?:\.5)?)\s*号")
_LETTER_SIZE = re.compile(
    r"(?<![A-Za-z0-9])([2-4]XL|XXXL|XXL|XL|XS|S|M|L)(?=\s*(?:码|号|的|还是|呢|吗|和|或|$|[,.?!，。？！、\s]))"
)
_PRICE_LIMIT = [
    re.compile(_NUM + r"\s*(?:元|块|rmb)?\s*(?:以内|以下|之内|内|之下|不到)", re.I),
    re.compile(r"(?:不超过|不高于|低于|少于|预算|最多)\s*" + _NUM, re.I),
]


def _first(patterns: list[re.Pattern], text: str) -> re.Match | None:
    for pattern in patterns:
        found = pattern.search(text)
        if found:
            return found
    return None


def parse_height_cm(text: str) -> float | None:
    found = _HEIGHT_CN.search(text)
    if found:
        tens, ones = (chinese_int(digit or "零") or 0 for digit in found.groups())
        return 100 + tens * 10 + ones
    found = _HEIGHT_METRE_CM.search(text)
    if found:
        tail = found.group(1)
        return 100 + (int(tail) * 10 if len(tail) == 1 else int(tail))
    found = _first(_HEIGHT, text)
    if not found:
        return None
    value, unit = float(found.group(1)), (found.group(2) or "").lower()
    if unit in ("m", "米") or value < 3:
        value *= 100
    return value if 50 <= value <= 250 else None


def parse_weight_kg(text: str) -> float | None:
    found = _first(_WEIGHT, text)
    if not found:
        return None
    value, unit = float(found.group(1)), (found.group(2) or "").lower()
    if unit == "斤":
        value /= 2
    return value if 10 <= value <= 300 else None


def parse_foot_length_cm(text: str) -> float | None:
    found = _FOOT.search(text)
    if not found:
        return None
    value, unit = float(found.group(1)), (found.group(2) or "").lower()
    if unit in ("mm", "毫米") or value > 100:
        value /= 10
    return value if 10 <= value <= 40 else None


# What a reply to "请告诉我您的身高（cm）和体重（kg）" may say without units ("175，72公斤", "175/72", "26").
# A bare number is one no unit, label, size or model number claims.
_BARE_NUMBER = re.compile(
    r"(?<![\d.A-Za-z])(\d+(?:\.\d+)?)(?![\d.])(?!\s*(?:[A-Za-z%]|[岁元块码号寸年月日天个件双次分秒斤克米]))"
)
_LENGTH = re.compile(r"(?<![\d.])" + _NUM + r"\s*(cm|厘米|公分|mm|毫米)", re.I)
_CLAIMED = [
    *_HEIGHT,
    _HEIGHT_METRE_CM,
    _HEIGHT_CN,
    *_WEIGHT,
    _FOOT,
    _LENGTH,
    _NUMERIC_SIZE,
    MODEL_NUMBER,
    re.compile(r"(?<![\d.])\d+(?:\.\d+)?\s*(?:m|米)(?![a-z])", re.I),
]
BARE_HEIGHT_CM = (140, 220)  # a bare number in this range, or 1.40-2.20 (metres), is a height
BARE_WEIGHT_KG = (35, 150)  # read as kg (the unit asked for) once the height is known
BARE_FOOT_CM = (20, 35)  # 200-350 is the same length in mm (a bare 175 is no foot: it is a height)


def parse_body_reply(text: str, need: list[str] | tuple[str, ...] = ()) -> dict[str, float]:
    """The body measures a reply to a clarifying question gives (height_cm, weight_kg,
    foot_length_cm): what the parse_* functions read, plus, for the facts `need` lists, bare
    numbers in their plausible range: "175，72公斤" is 175 cm and 72 kg, "175/72" too (a bare
    weight only once the height is given or no longer asked for), "26" or "255" a foot length,
    "26cm" a foot length when that is what was asked. "140斤" stays 70 kg: a number with a unit
    is read by its unit, never again as a bare number."""
    facts = {
        name: value
        for name, value in (
            ("height_cm", parse_height_cm(text)),
            ("weight_kg", parse_weight_kg(text)),
            ("foot_length_cm", parse_foot_length_cm(text)),
        )
        if value is not None
    }
    masked = text
    for pattern in _CLAIMED:
        masked = pattern.sub(lambda m: " " * len(m.group(0)), masked)
    bare = [float(m.group(1)) for m in _BARE_NUMBER.finditer(masked)]

    def take(convert) -> float | None:
        for i, value in enumerate(bare):
            converted = convert(value)
            if converted is not None:
                del bare[i]
                return converted
        return None

    def in_range(value: float, bounds: tuple[float, float]) -> bool:
        return bounds[0] <= value <= bounds[1]

    if "height_cm" in need and "height_cm" not in facts:
        height = take(
            lambda v: (
                v if in_range(v, BARE_HEIGHT_CM) else v * 100 if in_range(v * 100, BARE_HEIGHT_CM) and v < 3 else None
            )
        )
        if height is not None:
            facts["height_cm"] = height
    if "weight_kg" in need and "weight_kg" not in facts and ("height_cm" in facts or "height_cm" not in need):
        weight = take(lambda v: v if in_range(v, BARE_WEIGHT_KG) else None)
        if weight is not None:
            facts["weight_kg"] = weight
    if "foot_length_cm" in need and "foot_length_cm" not in facts:
        for found in _LENGTH.finditer(text):
            value = float(found.group(1)) / (10 if found.group(2).lower() in ("mm", "毫米") else 1)
            if 10 <= value <= 40:  # the range parse_foot_length_cm reads
                facts["foot_length_cm"] = value
                break
        else:
            foot = take(
                lambda v: (
                    v if in_range(v, BARE_FOOT_CM) else v / 10 if in_range(v / 10, BARE_FOOT_CM) and v >= 100 else None
                )
            )
            if foot is not None:
                facts["foot_length_cm"] = foot
    return facts


def describe_body_facts(facts: dict[str, float]) -> str:
    """ "身高175cm，体重72kg": the facts as the parse_* functions read them back."""
    labels = {"height_cm": "身高{}cm", "weight_kg": "体重{}kg", "foot_length_cm": "脚长{}cm"}
    return "，".join(labels[name].format(f"{facts[name]:g}") for name in labels if name in facts)


def parse_sizes(text: str) -> list[str]:
    found = [(m.start(), m.group(1) or m.group(2)) for m in _NUMERIC_SIZE.finditer(text)]
    found += [(m.start(), m.group(1).upper()) for m in _LETTER_SIZE.finditer(text)]
    return list(dict.fromkeys(size for _, size in sorted(found)))


def parse_price_limit(text: str) -> float | None:
    found = _first(_PRICE_LIMIT, text)
    return float(found.group(1)) if found else None
