"""Claim-checking items for the reader (issue #46): from an evidence passage, a factual sentence is
changed into a claim that contradicts it (a perturbation) or restated so that it still holds (a
faithful paraphrase). Offline tooling: the claim benchmark (workflows/evaluation/bench/reader.py)
and, later, the reader's training data are both made here, so the two can never drift apart.

Each family is one small function `(sentence, context) -> changed sentence | None`; None means the
family cannot change this sentence (the generator then tries the passage's next sentence, and
counts the passage as skipped when none fits). Everything random draws from a generator seeded
by (seed, passage id, family), so an item does not depend on which other passages were chosen.

What training may never see (decided before any training, #46):
- HELD_OUT_FAMILIES: two whole perturbation families; training generates only TRAINING_FAMILIES.
- the reading-comprehension passages whose title hashes into READER_BENCH_BUCKET of (reader_holdout.py)
  MRC_BUCKETS (`is_reader_bench_title`): the benchmark's training-text passages.
"""

from __future__ import annotations

import datetime
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from citescope.knowledge.text import MODEL_NUMBER, split_sentences

Label = Literal["supported", "contradicted"]

# ----------------------------------------------------------------------------- held out

HELD_OUT_FAMILIES = frozenset({"entity_swap", "date_change"})


# ----------------------------------------------------------------------------- items


@dataclass(frozen=True)
class Passage:
    passage_id: str  # the evidence chunk's id (what the claim cites)
    text: str
    source: str  # "demo_kb", "mrc_heldout", ...
    title: str = ""  # the article's or page's title (training frames some claims with it)


@dataclass(frozen=True)
class ClaimItem:
    claim: str
    evidence_id: str
    label: Label
    family: str
    source: str
    sentence: str  # the evidence sentence the claim was made from


@dataclass
class FamilyContext:
    rng: random.Random
    passage: str  # the whole evidence text: a replacement it already contains would not contradict it
    names: Mapping[str, Sequence[str]] = field(default_factory=dict)  # kind -> names of the passage set (entity_swap)


Family = Callable[[str, FamilyContext], str | None]


def _pick(matches: Sequence[re.Match], ctx: FamilyContext) -> re.Match | None:
    return ctx.rng.choice(list(matches)) if matches else None


def _replace(sentence: str, match: re.Match, new: str) -> str:
    return sentence[: match.start()] + new + sentence[match.end() :]


# A field's label ("适用范围：", "适合身高(cm): "): negating a label makes no claim, only noise.
_LABEL = re.compile(r"(?:^|(?<=[；;，\s—]))[^；;：:，。\s]{1,12}(?:\([^)]*\))?\s*[：:]")


def _by_table(
    sentence: str, ctx: FamilyContext, table: Sequence[tuple[str, str]], skip_labels: bool = False
) -> str | None:
    """One occurrence, drawn at random, of a table pattern replaced by its counterpart."""
    labels = [m.span() for m in _LABEL.finditer(sentence)] if skip_labels else []
    found = [
        (m, new)
        for pattern, new in table
        for m in re.finditer(pattern, sentence)
        if not any(s <= m.start() < e for s, e in labels)
    ]
    if not found:
        return None
    match, new = ctx.rng.choice(found)
    return _replace(sentence, match, match.expand(new))


# Spans other families own: a date belongs to date_change, a model number to entity_swap, so
# number_change and unit_change leave their digits alone.
_FULL_DATE = re.compile(r"(?<!\d)(\d{4})(\s*[-/.年]\s*)(\d{1,2})(\s*[-/.月]\s*)(\d{1,2})(?!\d)")
_MONTH_DAY = re.compile(r"(?<![\d年])(\d{1,2})月(\d{1,2})([日号])")
_YEAR = re.compile(r"(?<![\d.])((?:1\d|20)\d{2})(\s*年)(?!\d*个?月)")
_MONTH = re.compile(r"(?<![\d个])\d{1,2}\s*月")  # 5月 is a date's month (12个月 is an amount)
_NUMBER = re.compile(r"(?<![\d.])\d+(?:\.\d+)?(?![\d])")


def _owned_spans(sentence: str) -> list[tuple[int, int]]:
    spans = [
        m.span()
        for pattern in (_FULL_DATE, _MONTH_DAY, _YEAR, _MONTH, MODEL_NUMBER)
        for m in pattern.finditer(sentence)
    ]
    return spans


def _free_numbers(sentence: str) -> list[re.Match]:
    owned = _owned_spans(sentence)
    return [m for m in _NUMBER.finditer(sentence) if not any(s <= m.start() < e for s, e in owned)]


def _numbers_in(text: str) -> set[float]:
    return {float(m.group(0)) for m in _NUMBER.finditer(text)}


# ----------------------------------------------------------------------------- perturbations

# Adding or taking away a negation. Lookarounds keep words that only contain the characters
# (会员, 功能, 所有, 有效期) out; 有货/缺货 is stock_flip's.
NEGATIONS: tuple[tuple[str, str], ...] = (
    (r"不支持", "支持"),
    (r"(?<!不)支持", "不支持"),
    (r"不可以", "可以"),
    (r"(?<!不)可以", "不可以"),
    (r"不能够?", "能"),
    (r"(?<![不功性智技可才])能够?(?![量力源耗])", "不能"),
    (r"(?<![不])可(?=[机干水手熨烘申退换免选])", "不可"),
    (r"不可(?=[机干水手熨烘申退换免选])", "可"),
    (r"没有(?!货)", "有"),
    (r"(?<![所具拥没只还享含占持稀少保都共])有(?![效限关些点的时意助利货\d一二两三四五六七八九十几])", "没有"),
    (r"无需|不需要", "需要"),
    (r"(?<![不无])需要", "不需要"),
    (r"不包含|不含", "包含"),
    (r"(?<!不)包含", "不包含"),
    (r"不会(?![员议计话场])", "会"),
    (r"(?<=[将也还就都])会(?![员议计话场])", "不会"),
    (r"(?<!不)(提供|享受|适合|允许|承担|支付|适用)", r"不\1"),
    (r"不(提供|享受|适合|允许|承担|支付|适用)", r"\1"),
    (r"不是", "是"),
)

# Words and their opposites; each pair is read both ways.
ANTONYM_PAIRS: tuple[tuple[str, str], ...] = (
    ("增加", "减少"),
    ("提高", "降低"),
    ("上升", "下降"),
    ("免费", "收费"),
    ("之前", "之后"),
    ("以前", "以后"),
    ("以上", "以下"),
    ("以内", "以外"),
    ("最多", "最少"),
    ("至少", "至多"),
    ("超过", "不足"),
    ("高帮", "低帮"),
    ("高温", "低温"),
    ("长期", "短期"),
    ("偏大", "偏小"),
    ("更轻", "更重"),
    ("更多", "更少"),
    ("开启", "关闭"),
    ("男款", "女款"),
    ("室内", "室外"),
    ("店铺承担", "买家承担"),
    ("允许", "禁止"),
    ("先行", "延后"),
    ("国内", "国外"),
    ("早期", "晚期"),
    ("胜利", "失败"),
    ("最大", "最小"),
    ("最高", "最低"),
    ("北部", "南部"),
    ("东部", "西部"),
)
_ANTONYM = {a: b for pair in ANTONYM_PAIRS for a, b in (pair, pair[::-1])}
_ANTONYM_PATTERN = re.compile("|".join(sorted(map(re.escape, _ANTONYM), key=len, reverse=True)))

# A unit and one of another amount written with the same number (15天 -> 15周).
UNIT_SWAPS: dict[str, str] = {
    "个工作日": "周",
    "天": "周",
    "周": "天",
    "个月": "年",
    "年": "个月",
    "小时": "天",
    "分钟": "小时",
    "美元": "元",
    "元": "美元",
    "千克": "克",
    "公斤": "克",
    "克": "千克",
    "kg": "g",
    "g": "kg",
    "cm": "mm",
    "mm": "cm",
    "厘米": "米",
    "毫米": "厘米",
    "米": "厘米",
    "毫升": "升",
    "升": "毫升",
    "mAh": "Ah",
    "W": "kW",
    "英寸": "厘米",
    "公里": "米",
    "平方公里": "平方米",
}
_UNIT = re.compile(
    r"(?<![\d.])(\d+(?:\.\d+)?)(\s*)("
    + "|".join(sorted(map(re.escape, UNIT_SWAPS), key=len, reverse=True))
    + r")(?![A-Za-z代度年])"  # 40年代, 2002-03年度, 80周年 are no amounts
)
# 年 after a number is an amount only in a duration's words (保修2年, 2年内, 用了40年时间); 民国16年,
# 前295年 and 1066年 name a year.
_DURATION_BEFORE = re.compile(r"(?:保修|质保|有效期|为期|用了|长达|历时|期限|满|近|共|约)\s*$")
_DURATION_AFTER = re.compile(r"\s*(?:内|以内|之内|后|以后|时间|左右|保修|质保|有效)")


def _duration_year(sentence: str, match: re.Match) -> bool:
    """Whether the 年 right after this match's number counts years (a duration), not names one."""
    value = float(match.group(1))
    return value < 100 and bool(
        _DURATION_BEFORE.search(sentence[: match.start()]) or _DURATION_AFTER.match(sentence, match.end())
    )


STOCK_FLIPS: tuple[tuple[str, str], ...] = (
    (r"有货", "缺货"),
    (r"现货", "缺货"),
    (r"缺货|无货|售罄|已售完", "有货"),
)
_STOCK_COUNT = re.compile(r"(库存\s*[:：]?\s*)(\d+)")


def negation(sentence: str, ctx: FamilyContext) -> str | None:
    """支持 -> 不支持, 可以 -> 不可以, 有 -> 没有, and back."""
    return _by_table(sentence, ctx, NEGATIONS, skip_labels=True)


def antonym(sentence: str, ctx: FamilyContext) -> str | None:
    """A word replaced by its opposite (增加/减少, 免费/收费, 之前/之后, 以上/以下 ...)."""
    found = [
        m
        for m in _ANTONYM_PATTERN.finditer(sentence)
        if _ANTONYM[m.group(0)] not in sentence and not sentence[: m.start()].endswith("不")  # 不超过 is no 不不足
    ]
    match = _pick(found, ctx)
    return None if match is None else _replace(sentence, match, _ANTONYM[match.group(0)])


def number_change(sentence: str, ctx: FamilyContext) -> str | None:
    """A number (not of a date or model number) changed to one the passage never states."""
    passage_numbers = _numbers_in(ctx.passage)
    match = _pick(_free_numbers(sentence), ctx)
    if match is None:
        return None
    raw = match.group(0)
    whole, _, decimals = raw.partition(".")
    step = 10 ** max(0, len(whole.lstrip("0") or "0") - 2)  # 12 -> 13, 1299 -> 1399
    for delta in ctx.rng.sample([1, 2, 3, 5], 4):
        value = int(whole) + delta * step
        new = f"{value}.{decimals}" if decimals else str(value)
        if float(new) not in passage_numbers:
            return _replace(sentence, match, new)
    return None


def unit_change(sentence: str, ctx: FamilyContext) -> str | None:
    """The same number in another unit: 15天 -> 15周, 299元 -> 299美元 (never 0, never a year's 年)."""
    owned = _owned_spans(sentence)
    found = [
        m
        for m in _UNIT.finditer(sentence)
        if float(m.group(1)) != 0
        and not any(s <= m.start() < e for s, e in owned)
        and (m.group(3) != "年" or _duration_year(sentence, m))
    ]
    match = _pick(found, ctx)
    if match is None:
        return None
    return _replace(sentence, match, match.group(1) + match.group(2) + UNIT_SWAPS[match.group(3)])


def entity_swap(sentence: str, ctx: FamilyContext) -> str | None:
    """A name of the passage set (a product, a brand, an article's title: `ctx.names` by kind) or
    a model number replaced by another of its kind that the passage does not mention."""
    kinds = {
        # longest first, then by text: a set's own order changes with every process (hash seed)
        kind: sorted({n for n in names if len(n) >= 2}, key=lambda n: (-len(n), n))
        for kind, names in ctx.names.items()
    }
    kinds["model"] = sorted({m.group(0) for ns in kinds.values() for n in ns for m in MODEL_NUMBER.finditer(n)})
    found: list[tuple[int, int, str, str]] = []
    for kind, names in kinds.items():
        for name in names:
            for m in re.finditer(re.escape(name), sentence):
                if not any(s < m.end() and m.start() < e for s, e, _, _ in found):  # the longest name wins
                    found.append((m.start(), m.end(), name, kind))
    candidates_of = {
        (start, end): [n for n in kinds[kind] if n not in name and name not in n and n not in ctx.passage]
        for start, end, name, kind in found
    }
    options = [(start, end, candidates_of[start, end]) for start, end, _, _ in found if candidates_of[start, end]]
    if not options:
        return None
    start, end, candidates = ctx.rng.choice(options)
    return sentence[:start] + ctx.rng.choice(candidates) + sentence[end:]


def stock_flip(sentence: str, ctx: FamilyContext) -> str | None:
    """有货 <-> 缺货, 库存 N -> 0 (and 0 -> some)."""
    counts = list(_STOCK_COUNT.finditer(sentence))
    if counts:
        match = ctx.rng.choice(counts)
        new = "0" if int(match.group(2)) > 0 else str(ctx.rng.choice([5, 12, 30]))
        return sentence[: match.start(2)] + new + sentence[match.end(2) :]
    return _by_table(sentence, ctx, STOCK_FLIPS)


def date_change(sentence: str, ctx: FamilyContext) -> str | None:
    """A date moved (2026-03-12 -> 2026-03-19, 3月12日 -> 5月12日, 1985年 -> 1987年), its format kept."""
    found = list(_FULL_DATE.finditer(sentence)) + list(_MONTH_DAY.finditer(sentence))
    owned = [m.span() for m in found]
    found += [m for m in _YEAR.finditer(sentence) if not any(s <= m.start() < e for s, e in owned)]
    match = _pick(found, ctx)
    if match is None:
        return None
    for _ in range(5):  # a date the passage states elsewhere would only move the claim onto another fact
        moved = _moved_date(match, ctx.rng)
        if moved is not None and moved not in ctx.passage:
            return _replace(sentence, match, moved)
    return None


def _moved_date(match: re.Match, rng: random.Random) -> str | None:
    if match.re is _FULL_DATE:
        year, sep1, month, sep2, day = match.groups()
        try:
            moved = datetime.date(int(year), int(month), int(day))
        except ValueError:
            return None
        moved += datetime.timedelta(days=rng.choice([-30, -7, -3, 3, 7, 30, 365]))
        return f"{moved.year}{sep1}{moved.month:0{len(month)}d}{sep2}{moved.day:0{len(day)}d}"
    if match.re is _MONTH_DAY:
        month = (int(match.group(1)) - 1 + rng.choice([1, 2, 3, 9, 10, 11])) % 12 + 1
        return f"{month}月{match.group(2)}{match.group(3)}"
    year = int(match.group(1)) + rng.choice([-10, -3, -2, -1, 1, 2, 3, 10])
    return f"{year}{match.group(2)}"


PERTURBATIONS: dict[str, Family] = {
    "negation": negation,
    "antonym": antonym,
    "number_change": number_change,
    "unit_change": unit_change,
    "entity_swap": entity_swap,
    "stock_flip": stock_flip,
    "date_change": date_change,
}

# ----------------------------------------------------------------------------- paraphrases

# Same meaning, other words: a small explicit table (no thesaurus, whose "synonyms" are often
# only related words and would make wrong labels).
SYNONYMS: tuple[tuple[str, str], ...] = (
    ("如果", "若"),
    ("但是", "不过"),
    ("立即", "马上"),
    ("目前", "当前"),
    ("购买", "购入"),
    ("大约", "约"),
    ("建议", "推荐"),
    ("仅限", "只限"),
    ("只能", "仅能"),
    ("并且", "而且"),
    ("日常", "平时"),
    ("需要", "需"),
    ("可以", "能够"),
    ("以及", "和"),
    ("因此", "所以"),
    ("位于", "坐落于"),
    ("曾经", "曾"),
)
_SYNONYM_PATTERN = re.compile("|".join(re.escape(a) for a, _ in sorted(SYNONYMS, key=lambda p: -len(p[0]))))
_SYNONYM = dict(SYNONYMS)

# Courtesy that states nothing: dropping it keeps the claim (请 of 申请, 请求 is no courtesy).
COURTESY = re.compile(r"亲爱的顾客，|亲，|敬请|烦请|请您|为您|麻烦您|请(?=[勿用在将按放先不保及务尽联填选确核注提])")

_CHINESE_DIGITS = "零一二三四五六七八九十"


# A clause that follows on from the one before (然后, 审核通过后, 否则): its place is part of the meaning.
_FOLLOWS_ON = re.compile(
    r"^(?:然后|随后|之后|再|并|但|否则|如|若|且|或|即|则|因此|所以|同时|此外|另外|其中|其余|.{0,6}后)"
)
_BRACKETS = (("(", ")"), ("（", "）"), ("《", "》"), ("“", "”"), ("「", "」"), ("[", "]"))
# A heading before the clauses ("办理流程：") stays in front; a table row's first field ("颜色: 黑色",
# the chunker writes fields with an ASCII colon) is a clause like the others.
_HEADING = re.compile(r"^[^；;：:，。]{1,12}：\s*(?=.*；)")


def clause_reorder(sentence: str, ctx: FamilyContext) -> str | None:
    """Parallel clauses a semicolon joins (a SKU row's fields, two independent rules) in another order."""
    heading = _HEADING.match(sentence)
    head = heading.group(0) if heading else ""
    body = sentence[len(head) :].rstrip("。！!")
    end = sentence[len(head) + len(body) :]
    parts = [p.strip() for p in body.split("；") if p.strip()]
    unbalanced = any(p.count(o) != p.count(c) for p in parts for o, c in _BRACKETS)  # a ； inside brackets
    if len(parts) < 2 or unbalanced or any(_FOLLOWS_ON.match(p) for p in parts[1:]):
        return None
    for _ in range(5):
        order = ctx.rng.sample(parts, len(parts))
        if order != parts:
            return head + "；".join(order) + end
    return None


def synonym_swap(sentence: str, ctx: FamilyContext) -> str | None:
    """A word replaced by a synonym from SYNONYMS."""
    match = _pick(list(_SYNONYM_PATTERN.finditer(sentence)), ctx)
    return None if match is None else _replace(sentence, match, _SYNONYM[match.group(0)])


def _rewrites(value: str, unit: str) -> list[str]:
    """The same amount written another way. Its own small conversion table, not knowledge/units.py on
    purpose: the benchmark measures the checker that reads units, so it must not share its table."""
    number = float(value)
    out = []
    if value.endswith(".00") and unit == "元":
        out.append(value[:-3] + unit)
    elif "." not in value and unit == "元":
        out.append(value + ".00" + unit)
    if number.is_integer():
        n = int(number)
        conversions = {
            "年": [(n * 12, "个月")],
            "个月": [(n // 12, "年")] if n % 12 == 0 else [],
            "小时": [(n // 24, "天")] if n % 24 == 0 else [],
            "天": [(n // 7, "周")] if n % 7 == 0 else [],
            "周": [(n * 7, "天")],
            "千克": [(n * 1000, "克")],
            "kg": [(n * 1000, "g")],
            "克": [(n // 1000, "千克")] if n % 1000 == 0 else [],
        }
        out += [f"{v}{u}" for v, u in conversions.get(unit, []) if v > 0]
        if 1 <= n <= 10 and unit and "." not in value and unit not in ("元", "年"):
            out.append(_CHINESE_DIGITS[n] + unit)
        if n >= 10000 and n % 1000 == 0 and "." not in value:
            out.append(f"{n / 10000:g}万{unit}")
    return out


# One end of a range (1-3年, 2006-07年): its unit belongs to both ends, so a rewrite of one misreads it.
_RANGE_NEIGHBOUR = re.compile(r"[-~～—–至到]\s*$|\s*[-~～—–至到]")
_AMOUNT = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*(个月|小时|千克|kg|年|天|周|克|元|万)?(?![\d.A-Za-z年代岁])")


def number_rewrite(sentence: str, ctx: FamilyContext) -> str | None:
    """A number written another way: 1年 -> 12个月, 299.00元 -> 299元, 3天 -> 三天, 20000 -> 2万."""
    owned = _owned_spans(sentence)
    options = [
        (m, new)
        for m in _AMOUNT.finditer(sentence)
        if not any(s <= m.start() < e for s, e in owned)
        and m.group(2) != "万"
        and not _RANGE_NEIGHBOUR.search(sentence[max(0, m.start() - 2) : m.start()])
        and not _RANGE_NEIGHBOUR.match(sentence, m.end())
        and (m.group(2) != "年" or _duration_year(sentence, m))
        for new in _rewrites(m.group(1), m.group(2) or "")
    ]
    if not options:
        return None
    match, new = ctx.rng.choice(options)
    return _replace(sentence, match, new)


def courtesy_drop(sentence: str, ctx: FamilyContext) -> str | None:
    """Courtesy words (请, 您, 亲) dropped."""
    match = _pick(list(COURTESY.finditer(sentence)), ctx)
    if match is None:
        return None
    changed = _replace(sentence, match, "")
    return changed if changed.strip("，。 ") else None


PARAPHRASES: dict[str, Family] = {
    "clause_reorder": clause_reorder,
    "synonym_swap": synonym_swap,
    "number_rewrite": number_rewrite,
    "courtesy_drop": courtesy_drop,
}

FAMILIES: dict[str, tuple[Label, Family]] = {
    **{name: ("contradicted", f) for name, f in PERTURBATIONS.items()},
    **{name: ("supported", f) for name, f in PARAPHRASES.items()},
}
TRAINING_FAMILIES = tuple(name for name in FAMILIES if name not in HELD_OUT_FAMILIES)

# ----------------------------------------------------------------------------- generator

_CJK = re.compile(r"[\u4e00-\u9fff]")


def factual_sentences(text: str) -> list[str]:
    """The passage's sentences that can carry a claim: Chinese statements of 8 to 160 characters
    (not questions, not list headers)."""
    out = []
    for sentence in split_sentences(text):
        sentence = re.sub(r"^\s*(?:[-*•·]+|\d{1,2}[.、)）](?!\d))\s*", "", sentence).strip()
        if 8 <= len(sentence) <= 160 and len(_CJK.findall(sentence)) >= 4 and not sentence.endswith(("？", "?", "：")):
            out.append(sentence)
    return out


@dataclass
class Generated:
    items: list[ClaimItem] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)  # family -> passages it could not change


def generate(
    passages: Iterable[Passage],
    seed: int = 0,
    names: Mapping[str, Sequence[str]] | None = None,
    families: Sequence[str] | None = None,
) -> Generated:
    """At most one item per (passage, family): the first of the passage's factual sentences (in
    an order drawn from the seed) that the family changes. `families` defaults to every family;
    training passes TRAINING_FAMILIES, never a held-out one. `names`: kind -> names of the
    passage set ("product", "brand", "title"), what entity_swap swaps within a kind."""
    chosen = list(families) if families is not None else list(FAMILIES)
    unknown = [f for f in chosen if f not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown families: {unknown}")
    result = Generated()
    for passage in passages:
        sentences = factual_sentences(passage.text)
        for family in chosen:
            label, change = FAMILIES[family]
            ctx = FamilyContext(random.Random(f"{seed}:{passage.passage_id}:{family}"), passage.text, names or {})
            item = None
            for sentence in ctx.rng.sample(sentences, len(sentences)):
                claim = change(sentence, ctx)
                if claim and claim != sentence:
                    item = ClaimItem(claim, passage.passage_id, label, family, passage.source, sentence)
                    break
            if item is None:
                result.skipped[family] += 1
            else:
                result.items.append(item)
    return result
