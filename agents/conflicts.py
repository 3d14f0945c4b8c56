"""Deterministic conflict check over evidence: the same attribute of the same entity, two values.

Four rules find candidate conflicts between hits from *different* documents (a document
never contradicts itself: its table rows, or a price and a discounted price, are different facts):

1. Aligned statements. Two sentences that say the same thing word for word except one slot
   (`共有70个议席` / `共有170个议席`, `7天无理由退换` / `15天无理由退换`, `在武汉举办` / `在成都举办`,
   or list items one side leaves out). The shared words around the slot are what make it the
   same attribute; free text with no product or title to anchor it is only ever compared this
   way. A slot that names *which* thing (a year, a model code, a size, a label, or a value of a
   kind the question itself fixes, such as `五次会议`) marks two different facts, not a conflict;
   so does a reworded function word, and a value of another kind than the question asks for.
   Documents whose titles name different years are yearly editions, never compared this way.
2. Versions. Two versions of one document (same title once a bracketed version mark such as
   （2024版） is removed) whose same section reads differently where the question asks: the
   clause each version says and the other does not is its value.
3. Claims about one product (same product_id, at least one side official): materials from a
   small lexicon (头层牛皮 vs 人造革) and yes/no properties (防水 vs 渗水).
4. Table numbers. A price or stock count that untrusted text (a review, a post, a text of
   unknown type) states about a product, against the product's official SKU rows in the
   evidence (agents/table_claims.py): a value no row holds is a conflict, the table's first.

Only slots near the question's own terms count. Values are compared in canonical form (15天 =
十五天 = 15 天, 1年 = 12个月, 149.00元 = 149元, 12月20日 = 2021年12月20日), and each conflict
lists one source per value, official before community, then newest first.
Measured rates and known limits: docs/conflicts.md.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import date
from difflib import SequenceMatcher
from functools import cached_property

import jieba
import jieba.posseg
from pydantic import BaseModel

from citescope.agents import table_claims
from citescope.knowledge.chinese_script import matching_form
from citescope.knowledge.crosslingual import worded_for
from citescope.knowledge.filters import as_of_day, parse_day
from citescope.knowledge.injection import is_untrusted
from citescope.knowledge.lexicon import Lexicon
from citescope.knowledge.schema import AUTHORITY_RANK
from citescope.knowledge.text import (
    CJK_CHAR,
    SNIPPET_CUT,
    STOPWORDS,
    YEAR,
    arabic_numerals,
    chinese_int,
    is_faq,
    model_numbers,
    normalize,
    numerals_before,
    series_names,
    tokenize,
    unit_alternatives,
)
from citescope.tools.base import EvidenceHit


class ConflictValue(BaseModel):
    value: str
    chunk_id: str
    updated_at: str | None
    authority: str
    sentence: str


class Conflict(BaseModel):
    attribute: str
    entity: str
    values: list[ConflictValue]  # official before community, then newest first (nearest the as-of time)
    as_of: str | None = None  # the time the question asks about, when the values are ordered by it


def warm_up() -> None:
    """Load jieba's dictionary now rather than on the first question."""
    jieba.initialize()


# ----------------------------------------------------------------------------- tuning constants
# Aligned statements: the two sentences share this much of the shorter one ...
MIN_SHARED_FRACTION = 0.75
MIN_SHARED_OF_LONGER = 0.5  # ... and half of the longer one (a truncated copy, not a longer story)
MIN_SHARED_CHARS = 5
MIN_SHARED_CJK = 4  # ... including real words, not only a date header such as "Jan 6, 2022 ..."
MIN_SHARED_LATIN = 12  # ... or, in English, letters of a few words
MAX_SLOTS_PER_SENTENCE = 3  # more differences than this is a rewrite, not one changed value
MAX_TEXT_SLOT_CHARS = 10  # a longer rewritten span is a paraphrase, not a changed name
NUMBER_TOLERANCE = 0.005  # 1051.41 vs 1051.42 is rounding, not a conflict
# The passages (with their titles) must each hold at least this share of the question's terms:
# what is asked is what they are about.
MIN_COVERAGE = 0.5
# Versions: the clause that differs must hold at least this many of the question's terms.
MIN_VERSION_CLAUSE_TERMS = 2
# A slot is relevant when a question term occurs within this many characters of it.
RELEVANCE_WINDOW = 32
# Claims: a material mention counts when a question term (鞋面) is this close.
CLAIM_WINDOW = 30

# Words that only shape a question; they never anchor an attribute.
_QUESTION_WORDS = frozenset(
    "多少 几天 几个 几年 几次 几名 几人 什么 时候 什么时候 哪里 哪儿 哪个 哪些 哪年 哪天 哪一天 是不是 怎么 "
    "怎样 如何 多久 多长 多大 多重 多高 多远 为什么 现在 能否 可否 请问 有没有 是否 一样 分别 各自 还是 "
    "可以 需要 应该 之内 以内 东西".split()
    # ... and in English, beyond the stop words (How many days does delivery take?)
    + "many much long take takes taken need needs can will may must tell get any some".split()
)
# jieba part-of-speech tags of the words of a name: nouns, proper names, numerals, abbreviations,
# the "·" inside foreign names.
_NAME_POS = ("n", "m", "eng", "j", "q", "x")
# ----------------------------------------------------------------------------- canonical text
_ASCII_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}

# Unit surface form -> (canonical unit, factor to it). Longest forms are matched first.
_UNITS: dict[str, tuple[str, float]] = {
    "元": ("元", 1),
    "块钱": ("元", 1),
    "块": ("元", 1),
    "人民币": ("元", 1),
    "毫安时": ("mah", 1),
    "毫安": ("mah", 1),
    "mah": ("mah", 1),
    "wh": ("wh", 1),
    "kw": ("w", 1000),
    "w": ("w", 1),
    "瓦": ("w", 1),
    "v": ("v", 1),
    "伏": ("v", 1),
    "mm": ("mm", 1),
    "毫米": ("mm", 1),
    "公厘": ("mm", 1),
    "cm": ("mm", 10),
    "厘米": ("mm", 10),
    "公分": ("mm", 10),
    "公尺": ("mm", 1000),
    "km": ("mm", 1e6),
    "公里": ("mm", 1e6),
    "千米": ("mm", 1e6),
    "米": ("mm", 1000),
    "kg": ("g", 1000),
    "公斤": ("g", 1000),
    "千克": ("g", 1000),
    "g": ("g", 1),
    "克": ("g", 1),
    "斤": ("g", 500),
    "ml": ("ml", 1),
    "毫升": ("ml", 1),
    "l": ("ml", 1000),
    "升": ("ml", 1000),
    "%": ("%", 1),
    "‰": ("‰", 1),
    "℃": ("℃", 1),
    # a change of a rate: 下降1.11个千分点 is no count of 1.11 things
    "个百分点": ("百分点", 1),
    "百分点": ("百分点", 1),
    "个千分点": ("千分点", 1),
    "千分点": ("千分点", 1),
    "个工作日": ("工作日", 1),
    "工作日": ("工作日", 1),
    "天": ("天", 1),
    "周": ("天", 7),
    "星期": ("天", 7),
    "小时": ("天", 1 / 24),
    "分钟": ("天", 1 / 1440),
    "个月": ("月", 1),
    "年": ("月", 12),
    "名": ("人", 1),
    "人": ("人", 1),
    "位": ("人", 1),
    "件": ("件", 1),
    "个": ("个", 1),
    "次": ("次", 1),
    "双": ("双", 1),
    "只": ("只", 1),
    "台": ("台", 1),
    "张": ("张", 1),
    "册": ("册", 1),
    "所": ("所", 1),
    "项": ("项", 1),
    "门": ("门", 1),
    "席": ("席", 1),
    "分": ("分", 1),
    "倍": ("倍", 1),
    "码": ("码", 1),
    "届": ("届", 1),
    "批": ("批", 1),
    "条": ("条", 1),
    "篇": ("篇", 1),
    "本": ("本", 1),
    "款": ("款", 1),
    "份": ("份", 1),
    "家": ("家", 1),
    "场": ("场", 1),
    "轮": ("轮", 1),
    "档": ("档", 1),
    "级": ("级", 1),
    "寸": ("寸", 1),
    "英寸": ("寸", 1),
    "度": ("度", 1),
    # English, matched in lower-cased text and only as whole words (7 days, 2 weeks, 30 minutes)
    "yuan": ("元", 1),
    "rmb": ("元", 1),
    "usd": ("usd", 1),
    "dollars": ("usd", 1),
    "dollar": ("usd", 1),
    "business days": ("工作日", 1),
    "working days": ("工作日", 1),
    "business day": ("工作日", 1),
    "days": ("天", 1),
    "day": ("天", 1),
    "weeks": ("天", 7),
    "week": ("天", 7),
    "hours": ("天", 1 / 24),
    "hour": ("天", 1 / 24),
    "minutes": ("天", 1 / 1440),
    "months": ("月", 1),
    "month": ("月", 1),
    "years": ("月", 12),
    "year": ("月", 12),
    "percent": ("%", 1),
    "pieces": ("件", 1),
    "pcs": ("件", 1),
}
_CURRENCY_SIGNS = {"¥": "元", "$": "usd"}
_ENGLISH_DIMENSIONS = {
    "元": "yuan",
    "usd": "USD",
    "天": "days",
    "月": "months",
    "工作日": "business days",
    "数量": "number",
    "日期": "date",
    "年份": "year",
    "名称": "name",
    "列表": "list",
    "编码": "code",
}
# Classifiers that only count: 90个议席 and 90名议员 give the same number.
_COUNTERS = frozenset("个 人 件 次 双 只 台 张 册 所 项 门 席 份 家 场 条 篇 本 款 批 轮 级".split())
_QUALIFIER_UNITS = frozenset({"码", "届", "编码"})  # they say which thing, not how much
_UNIT_PATTERN = unit_alternatives(_UNITS)
_CN_NUMERAL = numerals_before(_UNITS)
_ASCII_GAP = re.compile(r"(?<=[A-Za-z0-9])[ \t]+(?=[A-Za-z0-9])")
# English text keeps its spaces between words (warranty. Keep, Jun 1, 2026), not around a colon (11 : 00)
_ENGLISH_GAP = re.compile(r"(?<=[A-Za-z0-9.,;!?)%])[ \t]+(?=[A-Za-z0-9($\"'])")
_OTHER_GAP = re.compile(r"[ \t]+")

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_NUMBER = r"\d+(?:,\d{3})*(?:\.\d+)?"
_VALUE = re.compile(
    r"(?P<date>(?:(?P<y>\d{4})年)?(?P<m>\d{1,2})月(?:(?P<d>\d{1,2})[日号])?"
    r"|(?P<iy>\d{4})[-/.](?P<im>\d{1,2})[-/.](?P<id>\d{1,2})"
    rf"|(?P<em>{'|'.join(_MONTHS)})[a-z]*\.?\s*(?P<ed>\d{{1,2}}),\s*(?P<ey>\d{{4}}))"
    r"(?P<time>(?:上午|下午|晚上|中午)?(?P<hour>\d{1,2})(?::(?P<minute>\d{2})|[点时](?:(?P<minute2>\d{1,2})分)?))?"
    r"|(?P<clock>\d{1,2}:\d{2})"
    r"|(?P<ordinal>第(?P<on>\d+|[零一二两三四五六七八九十百]+)(?P<ounit>[\u4e00-\u9fff])?)"
    rf"|(?P<qty>(?P<cur>[¥$])?(?P<n1>{_NUMBER})(?:\s*[-~～至到]\s*(?P<n2>{_NUMBER}))?\s*(?P<mult>万|亿)?\s*(?P<unit>{_UNIT_PATTERN})?)"
    r"|(?P<code>[a-z]+[a-z0-9]*(?:[-_][a-z0-9]+)*)"
)
# An English full stop ends a sentence before a space, not in 3.5, e.g., U.S. or Jan. 6.
_FULL_STOP = (
    r"(?<=[a-z0-9%)])(?<!\b[a-z])(?<!\be\.g)(?<!\bi\.e)(?<!\bno)(?<!\bvs)(?<!\bmr)(?<!\bdr)(?<!\bst)"
    + "".join(rf"(?<!\b{m})" for m in ("jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))
    + r"\.(?=\s+[a-z0-9\"'(]|\s*$)"
)  # before an English word: not in 4时30分. 新华社
_SENTENCE_END = re.compile(r"[。！？!?\n]|…+|\.{3,}|[；;](?!\s*[^\s；;:：]{1,15}: )")
_STRONG_END = re.compile(r"[。！？!?\n]|…+|\.{3,}")
# ... and in a passage without Chinese, a full stop too (in Chinese text "5日. Nancy Pelosi" is one sentence)
_ENGLISH_SENTENCE_END = re.compile(rf"{_SENTENCE_END.pattern}|{_FULL_STOP}")
_ENGLISH_STRONG_END = re.compile(rf"{_STRONG_END.pattern}|{_FULL_STOP}")
_CLAUSE_END = re.compile(r"[，,、：:]")
_VERSION_MARK = re.compile(r"[（(【\[][^）)】\]]*(?:版|修订|更新|version|v\d)[^）)】\]]*[）)】\]]", re.IGNORECASE)
_LIST_SEPARATORS = "、，,；;和及与"
_DIGIT = re.compile(r"\d")
_LATIN = re.compile(r"[a-z]")
# A photo caption (新华社照片, 记者李明摄) says what a picture shows: two captions of one template are
# two pictures (张帅在比赛中回球 / 发球), not two claims about one fact.
_PHOTO_CAPTION = re.compile(r"新华社照片|图片来源|资料图片|供图|(?:记者|摄影)[^，,。\s]{1,8}摄")
_NOT_WORD = re.compile(r"[\W_]+")
# What numbers an item of a list (②, 2、, 4., （3）, 三是), and a bare number, which numbers one only
# beside a marked one (② and 2)
_ITEM_NUMBER = r"(?:\d{1,2}|[一二三四五六七八九十]{1,3})"
_MARKED_ITEM = re.compile(rf"^\s*(?:[\u2460-\u2473]|[一二三四五六七八九十]{{1,3}}是|[（(]?{_ITEM_NUMBER}[)）、.．])")
_ITEM_MARK = re.compile(rf"{_MARKED_ITEM.pattern}|^\s*{_ITEM_NUMBER}$")
_NEGATION = ("不是", "并非", "不像", "没有", "不", "没", "非", "无", "未", "假")
_QUOTED = ("宣传", "号称", "说是", "标称", "写着", "所谓", "介绍")


def canonical_text(text: str, lexicon: Lexicon | None = None) -> str:
    """Text as compared and shown: half-width, no spaces inside Chinese, arabic numerals before
    units, lexicon aliases replaced. Newlines stay (they end sentences and table cells)."""
    text = normalize(text)
    text = (_ASCII_GAP if CJK_CHAR.search(text) else _ENGLISH_GAP).sub("\x00", text)
    text = _OTHER_GAP.sub("", text).replace("\x00", " ")
    text = arabic_numerals(text, _CN_NUMERAL)
    if lexicon is not None:
        text = lexicon.canonicalize(text)
    return text


def _ascii_lower(text: str) -> str:
    """Lower-case ASCII only, so positions in the lowered text are positions in the original."""
    return text.translate(_ASCII_LOWER)


def _fmt(value: float) -> str:
    return f"{round(value, 4):g}"


@dataclass(frozen=True)
class _Value:
    """A typed value. Dates compare field by field (12月20日 agrees with 2021年12月20日); amounts
    compare within rounding (175万 = 175.5万 is not a conflict) and counters by number only."""

    key: str
    dimension: str
    date: tuple[int | None, ...] | None = None  # (year, month, day, hour, minute)
    numbers: tuple[float, ...] = ()

    def same_as(self, other: _Value) -> bool:
        if self.date is not None and other.date is not None:
            shared = [(x, y) for x, y in zip(self.date, other.date, strict=False) if x is not None and y is not None]
            return bool(shared) and all(x == y for x, y in shared)
        if self.numbers and other.numbers and self.dimension == other.dimension:
            return len(self.numbers) == len(other.numbers) and all(
                abs(x - y) <= NUMBER_TOLERANCE * max(abs(x), abs(y))
                for x, y in zip(self.numbers, other.numbers, strict=False)
            )
        return self.key == other.key


def parse_value(text: str) -> _Value | None:
    """The typed value that is exactly `text` (a date, a quantity with or without unit, a code)."""
    match = _VALUE.fullmatch(_ascii_lower(text.strip()))
    if match is None:
        return None
    if match.group("date"):
        return _date_value(match)
    if match.group("clock"):
        hour, minute = (int(n) for n in match.group("clock").split(":"))
        return _Value(f"{hour}:{minute:02d}", "日期", (None, None, None, hour, minute))
    if match.group("ordinal"):
        number = match.group("on")
        rank = int(number) if number.isdigit() else chinese_int(number)
        return _Value(f"第{rank}{match.group('ounit') or ''}", "序数")
    if match.group("code"):
        return _Value(match.group("code"), "编码" if re.search(r"\d", match.group("code")) else "名称")
    unit = match.group("unit") or _CURRENCY_SIGNS.get(match.group("cur") or "", "")
    canonical_unit, factor = _UNITS.get(unit, ("", 1))
    multiplier = {"万": 1e4, "亿": 1e8}.get(match.group("mult") or "", 1)
    first = float(match.group("n1").replace(",", ""))
    if unit == "年" and first >= 1000 and not match.group("n2"):  # 2021年 is a year, not a duration
        return _Value(f"{int(first)}年", "年份", (int(first), None, None, None, None))
    numbers = tuple(
        n * multiplier * factor
        for n in [first] + ([float(match.group("n2").replace(",", ""))] if match.group("n2") else [])
    )
    counted = canonical_unit in _COUNTERS or not canonical_unit
    key = "-".join(_fmt(n) for n in numbers) + ("" if counted else canonical_unit)
    return _Value(key, "数量" if counted else canonical_unit, numbers=numbers)


def _date_value(match: re.Match) -> _Value:
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
    return _Value(key, "日期", fields)


# ----------------------------------------------------------------------------- passages
_OPENERS, _CLOSERS = "（(", "）)"


def _inside_brackets(text: str, start: int, position: int) -> bool:
    """Whether a "；" at `position` stands inside a bracket opened since `start` and closed before the
    sentence ends (维多利亚（英语：Queen Victoria；1819年—1901年），… is one sentence)."""
    depth = sum(c in _OPENERS for c in text[start:position]) - sum(c in _CLOSERS for c in text[start:position])
    if depth <= 0:
        return False
    rest = re.split(r"[。！？!?\n]", text[position:], maxsplit=1)[0]
    return any(c in _CLOSERS for c in rest)


@dataclass
class _Passage:
    hit: EvidenceHit
    shown: str  # canonical_text of the hit's text: what values and sentences are shown from
    about: str  # title, section and text, canonical and lower-cased: what the passage is about
    text: str = ""  # `shown` with ASCII lower-cased: what is compared (same positions as `shown`)

    def __post_init__(self) -> None:
        self.text = _ascii_lower(self.shown)

    @classmethod
    def of(cls, hit: EvidenceHit, lexicon: Lexicon | None) -> _Passage:
        shown = canonical_text(hit.text, lexicon)
        heading = canonical_text(f"{hit.title}\n{hit.section}", lexicon)
        return cls(hit, shown, _ascii_lower(f"{heading}\n{shown}"))

    @cached_property
    def english(self) -> bool:
        """No Chinese: a full stop ends its sentences too."""
        return not CJK_CHAR.search(self.text)

    def show(self, span: tuple[int, int]) -> str:
        return self.shown[span[0] : span[1]].strip()

    @cached_property
    def sentences(self) -> list[tuple[int, int]]:
        spans, start = [], 0
        for match in (_ENGLISH_SENTENCE_END if self.english else _SENTENCE_END).finditer(self.text):
            if match.group(0) in "；;" and _inside_brackets(self.text, start, match.start()):
                continue
            if match.start() > start:
                spans.append((start, match.start()))
            start = match.end()
        if start < len(self.text):
            spans.append((start, len(self.text)))
        return [(s, e) for s, e in spans if self.text[s:e].strip()]

    def sentence_at(self, position: int) -> tuple[int, int]:
        for start, end in self.sentences:
            if start <= position < end:
                return start, end
        return (position, position)

    def sentence_text(self, position: int) -> str:
        start, end = self.sentence_at(position)
        text = self.shown[start:end].strip(" -\n")
        # a search snippet's cut (… ...; `shown` lost the space before it) stays at the end, so a
        # quote of the sentence drops the clause the cut ran into
        cut = self.shown.startswith("...", end) and _cut_after(self.hit.text, text)
        return f"{text} ..." if cut and text else text


def _cut_after(raw: str, sentence: str) -> bool:
    """Whether the "..." after `sentence` is a snippet's cut, not the writer's own ellipsis: every
    "..." of the page is a cut, or the sentence's last characters stand before one in the page."""
    cuts = len(SNIPPET_CUT.findall(raw))
    if cuts and cuts == len(re.findall(r"\.{3}", raw)):
        return True
    return cuts > 0 and re.search(re.escape(sentence[-6:]) + SNIPPET_CUT.pattern, raw) is not None


def _question_terms(question: str, lexicon: Lexicon | None) -> list[str]:
    # A title in book-title marks is one name however the tokenizer cuts it (《人在囧途》).
    terms = [_ascii_lower(canonical_text(t, lexicon)) for t in re.findall(r"《([^》]{2,30})》", question)]
    # numerals in digits, as canonical_text writes the evidence they are found in (七天 -> 7天)
    for token in tokenize(arabic_numerals(question, _CN_NUMERAL), lexicon):
        if token in _QUESTION_WORDS or token in STOPWORDS:
            continue
        if len(token) < 2 and not token.isdigit():
            continue
        if token.isascii() and token in _UNITS:
            continue  # "days" of "how many days" is the kind of value asked, as 几天 is
        token = _english_stem(token)
        if token not in terms:
            terms.append(token)
    return terms


def _english_stem(word: str) -> str:
    """An English word without its inflection, for substring matching: ships -> ship (shipping),
    returned -> return; any other word as it is."""
    if not (word.isascii() and word.isalpha()):
        return word
    for ending, shortest in (("ing", 6), ("ed", 5), ("es", 5), ("s", 4)):
        if word.endswith(ending) and len(word) >= shortest and not word.endswith("ss"):
            return word[: -len(ending)]
    return word


def _question_dimensions(question: str, lexicon: Lexicon | None) -> set[str]:
    """Kinds of value the question itself fixes (第五次 -> 次, 2021年 -> 年份): in the evidence
    a different value of such a kind names a different thing, it does not contradict."""
    text = _ascii_lower(canonical_text(question, lexicon))
    dimensions = set()
    for match in _VALUE.finditer(text):
        value = parse_value(match.group(0))
        if value is not None and value.dimension not in ("数量", "名称", "年份"):
            dimensions.add(value.dimension)
    return dimensions


def _terms_near(text: str, start: int, end: int, terms: list[str], window: int) -> set[str]:
    neighbourhood = text[max(0, start - window) : min(len(text), end + window)]
    return {term for term in terms if term in neighbourhood}


# ----------------------------------------------------------------------------- candidates
@dataclass
class _Side:
    value: str  # as shown
    key: str  # canonical, decides which values are the same
    passage: _Passage
    position: int


@dataclass
class _Candidate:
    entity: str
    attribute: str
    dimension: str
    sides: list[_Side] = field(default_factory=list)

    @property
    def product_id(self) -> str | None:
        return self.sides[0].passage.hit.product_id

    def keys(self) -> set[str]:
        return {side.key for side in self.sides}


# What kind of answer a question wants, from its wording; a slot of another kind is not an answer.
_ASKS = {
    "date": re.compile(
        r"什么时候|何时|哪天|哪一天|哪年|哪一年|几月|几号|时间|日期|截止|生效|多久|多长时间"
        r"|\bwhen\b|\b(?:what|which) (?:date|day|time|year)\b|\bdeadline\b|\bhow long\b",
        re.IGNORECASE,
    ),
    "number": re.compile(
        r"多少|几|多大|多重|多长|多久|多高|多远|多宽|比例|百分|价格|价钱|售价|费用|运费|容量|期限|有效期|保修"
        r"|(?:量|额|数|率|价|费|龄|重)[是为有]?[？?]?$"  # 产量, 人数, 增长率 ... at the end
        r"|\bhow (?:many|much|long|big|large|heavy|far|tall|high|wide|old)\b"
        r"|\b(?:price|prices|cost|costs|fee|fees|charge|capacity|rate|percentage|warranty)\b",
        re.IGNORECASE,
    ),
    "list": re.compile(
        r"哪些|有哪|都有谁|都有什么|包括什么|包含什么|\bwhich (?:ones|items)\b|\binclude[sd]?\b", re.IGNORECASE
    ),
    "name": re.compile(
        r"谁|哪位|哪里|哪儿|在哪|哪个|哪国|哪支|何地|地点|举办国|首都|国家|城市|得主|冠军|导演|编剧|作者|主演|演员|创始人"
        r"|\b(?:who|where)\b|\bwhich (?:country|city|team|company|brand|courier|carrier)\b"
        r"|\b(?:winner|director|author|founder)\b",
        re.IGNORECASE,
    ),
}
_DATE_DIMENSIONS = frozenset({"日期", "年份", "天", "月", "工作日"})


@dataclass
class _Question:
    raw: str  # as asked (normalised only)
    text: str  # canonical_text
    terms: list[str]
    dimensions: set[str]  # kinds of value the question itself fixes (第五次 -> 次)

    @classmethod
    def of(cls, question: str, lexicon: Lexicon | None) -> _Question:
        return cls(
            normalize(question),
            canonical_text(question, lexicon),
            _question_terms(question, lexicon),
            _question_dimensions(question, lexicon),
        )

    @cached_property
    def asks(self) -> set[str]:
        kinds = {kind for kind, pattern in _ASKS.items() if pattern.search(self.raw)}
        return kinds or {"date", "number", "name"}  # 是什么 / 如何: any kind of value

    @cached_property
    def key_terms(self) -> list[tuple[str, list[str]]]:
        """Each longest term with the shorter terms inside it (立法会: 立法, 法会)."""
        longest = [t for t in self.terms if not any(t != o and t in o for o in self.terms)]
        return [(t, [o for o in self.terms if o != t and o in t]) for t in longest]

    def coverage(self, text: str) -> float:
        """Share of the question's terms in `text` (half credit for part of a long term)."""
        if not self.key_terms:
            return 0.0
        score = sum(
            1.0 if term in text else 0.5 if any(p in text for p in parts) else 0.0 for term, parts in self.key_terms
        )
        return score / len(self.key_terms)

    def is_qualifier(self, value: _Value) -> bool:
        """A value that says *which* thing (a size, a model, a year when no date is asked, a kind
        of value the question fixes): if it differs, the two sentences are about different things."""
        if value.dimension in _QUALIFIER_UNITS or value.dimension in self.dimensions:
            return True
        return value.dimension == "年份" and "date" not in self.asks

    @cached_property
    def asked_dimension(self) -> str | None:
        """The kind of amount the question names (几天 -> 天, 多少个 -> 数量, 多少钱 -> 元)."""
        match = re.search(rf"(?:多少|几|\bhow many\s+)\s*({_UNIT_PATTERN}|钱)", _ascii_lower(self.raw))
        if match is None:
            return None
        unit = "元" if match.group(1) == "钱" else match.group(1)
        canonical_unit = _UNITS[unit][0]
        return "数量" if canonical_unit in _COUNTERS else canonical_unit

    def accepts_value(self, a: _Value, b: _Value) -> bool:
        if a.dimension != b.dimension and not (a.date and b.date):
            return False
        if (
            self.asked_dimension
            and a.dimension != self.asked_dimension
            and not ({a.dimension, self.asked_dimension} <= _DAYS)
        ):
            return False  # asked how many stations, the slot says how many minutes
        if a.dimension in _DATE_DIMENSIONS and "date" in self.asks:
            return True
        # an English name parses as a code without digits (DHL / UPS)
        return (
            "number" in self.asks
            and a.dimension not in ("日期", "年份")
            or "name" in self.asks
            and a.dimension in ("编码", "名称")
        )

    def names_term(self, text: str) -> bool:
        return any(term in text for term in self.terms)


_DAYS = frozenset({"天", "工作日"})  # 几天到账 is answered in 工作日 too


def _entity_of(a: EvidenceHit, b: EvidenceHit, question: _Question) -> str | None:
    """Who the two hits are about, or None when they are about different things."""
    if a.product_id or b.product_id:
        return a.product_id if a.product_id == b.product_id else None
    stem_a, stem_b = _title_stem(a.title), _title_stem(b.title)
    if stem_a and stem_a == stem_b:
        return stem_a
    if _editions_of_other_years(stem_a, stem_b) or series_names(stem_a, stem_b) is not None:
        return None
    terms = question.terms[:4]
    return (", " if all(t.isascii() for t in terms) else "、").join(terms) or "问题"


def _editions_of_other_years(stem_a: str, stem_b: str) -> bool:
    """Titles naming different years (2017年招生简章 / 2015年…, 章程（2016年实行） / （2018年实行）)
    are yearly editions: each states its own year's figures. A version mark's year (（2024版）) is
    gone from the stem, so two versions of one policy are still compared."""
    years_a, years_b = set(YEAR.findall(stem_a)), set(YEAR.findall(stem_b))
    return bool(years_a) and bool(years_b) and years_a != years_b


def _title_stem(title: str) -> str:
    return _VERSION_MARK.sub("", normalize(title)).strip()


def one_subject(hits: list[EvidenceHit]) -> bool:
    """Whether the hits are surely about one thing: one product, or one document title once
    version marks are taken out (退换货政策（2024版） / （2026版）; untitled passages count as one).
    Two titles that differ (斯温登 / 诺丁汉, 2021年甘肃省录取分数线 / 2020年青海省…) may be two things
    written alike, which the pipeline trusts only among the evidence it shows."""
    products = {hit.product_id for hit in hits}
    if None not in products:
        return len(products) == 1
    return len({_title_stem(hit.title) for hit in hits}) == 1


# -- rule 1: aligned statements -------------------------------------------------------------
@dataclass
class _Slot:
    a_span: tuple[int, int]
    b_span: tuple[int, int]
    value_a: _Value | None = None
    value_b: _Value | None = None
    omitted: tuple[str, ...] = ()  # list items one side has and the other leaves out

    @property
    def typed(self) -> bool:
        return self.value_a is not None and self.value_b is not None


def _sentence_slots(a: _Passage, sa: tuple[int, int], b: _Passage, sb: tuple[int, int]) -> list[_Slot] | None:
    """The differing slots of two sentences that say the same thing; None when they do not."""
    text_a, text_b = a.text[sa[0] : sa[1]], b.text[sb[0] : sb[1]]
    shorter, longer = sorted((len(text_a), len(text_b)))
    matcher = SequenceMatcher(None, text_a, text_b, autojunk=False)
    if matcher.real_quick_ratio() * (len(text_a) + len(text_b)) / 2 < MIN_SHARED_FRACTION * shorter:
        return None
    blocks = matcher.get_matching_blocks()
    shared = sum(block.size for block in blocks)
    if shared < MIN_SHARED_CHARS or shared < MIN_SHARED_FRACTION * shorter or shared < MIN_SHARED_OF_LONGER * longer:
        return None
    shared_text = "".join(text_a[block.a : block.a + block.size] for block in blocks)
    if len(CJK_CHAR.findall(shared_text)) < MIN_SHARED_CJK and len(_LATIN.findall(shared_text)) < MIN_SHARED_LATIN:
        return None
    ops = matcher.get_opcodes()
    regions = [
        (sa[0] + i1, sa[0] + i2, sb[0] + j1, sb[0] + j2, index in (0, len(ops) - 1))
        for index, (tag, i1, i2, j1, j2) in enumerate(ops)
        if tag != "equal"
    ]
    # Text present on one side only at either end is truncation or a different lead-in; a
    # replaced span there (…帮助广州恒大 / …帮助江苏苏宁) is still a changed value.
    regions = [r for r in _merge_regions(a, b, regions) if not (r[4] and (r[0] == r[1] or r[2] == r[3]))]
    if len(regions) > MAX_SLOTS_PER_SENTENCE:
        return None
    slots = []
    for region in regions:
        slot = _slot_of(a, b, sa, sb, region[:4])
        if slot is not None:
            slots.append(slot)
    return slots


def _grown(a: _Passage, b: _Passage, region: tuple[int, int, int, int], grow) -> tuple[int, int, int, int]:
    """Widen a raw difference by the same amount on both sides (the text around it is shared)."""
    i1, i2, j1, j2 = region
    new_a, new_b = grow(a.text, i1, i2), grow(b.text, j1, j2)
    left = max(i1 - new_a[0], j1 - new_b[0])
    right = max(new_a[1] - i2, new_b[1] - j2)
    return i1 - left, i2 + right, j1 - left, j2 + right


def _merge_regions(a: _Passage, b: _Passage, regions: list[tuple]) -> list[tuple]:
    """Differences inside one value (1937年7月7日 / 1931年9月18日) become one region;
    a region is (a start, a end, b start, b end, touches either end of the sentence)."""
    merged: list[tuple] = []
    for region in regions:
        if merged:
            last = merged[-1]
            grown = _grown(a, b, last[:4], _value_span)
            # One shared character between two differences (布莱恩·辛格 / 史蒂文·斯皮尔伯格) is one name.
            if (region[0] <= grown[1] and region[2] <= grown[3]) or (
                region[0] - last[1] <= 1 and region[2] - last[3] <= 1
            ):
                merged[-1] = (last[0], region[1], last[2], region[3], last[4] or region[4])
                continue
        merged.append(region)
    return merged


def _slot_of(
    a: _Passage, b: _Passage, sa: tuple[int, int], sb: tuple[int, int], region: tuple[int, int, int, int]
) -> _Slot | None:
    """A region widened to whole values (70 vs 170 -> 70个 vs 170个) or else to whole words."""
    for grow, typed in ((_value_span, True), (_word_span, False)):
        i1, i2, j1, j2 = _grown(a, b, region, grow)
        if i1 < sa[0] or j1 < sb[0] or i2 > sa[1] or j2 > sb[1]:
            continue
        if a.text[i1 : region[0]] != b.text[j1 : region[2]] or a.text[region[1] : i2] != b.text[region[3] : j2]:
            continue  # grew into another difference
        if typed:
            value_a, value_b = parse_value(a.text[i1:i2]), parse_value(b.text[j1:j2])
            if value_a is None or value_b is None:
                continue
            return _Slot((i1, i2), (j1, j2), value_a, value_b)
        return _Slot((i1, i2), (j1, j2))
    return None


def _value_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Grow [start, end) to cover every typed value it touches."""
    new_start, new_end = start, end
    for match in _VALUE.finditer(text, max(0, start - 24), min(len(text), end + 24)):
        inside = match.start() < end and match.end() > start
        at_insertion = start == end and match.start() <= start <= match.end()
        if match.end() > match.start() and (inside or at_insertion):
            new_start, new_end = min(new_start, match.start()), max(new_end, match.end())
    return new_start, new_end


def _word_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Grow [start, end) to whole jieba words."""
    lo, hi = max(0, start - 12), min(len(text), end + 12)
    position, new_start, new_end = lo, start, end
    for word in jieba.cut(text[lo:hi], HMM=False):
        word_start, word_end = position, position + len(word)
        position = word_end
        if (word_end > start and word_start < end) or (start == end and word_start < start < word_end):
            new_start, new_end = min(new_start, word_start), max(new_end, word_end)
    return new_start, new_end


def _is_content(slot: _Slot, a: _Passage, b: _Passage) -> bool:
    """Whether two sides of a slot say different things, rather than the same thing in other
    characters (开幕式 / 开闭幕式 is an elaboration, 北青网 / 北青網 another script)."""
    if slot.typed:
        return not slot.value_a.same_as(slot.value_b)
    clean_a = _NOT_WORD.sub("", a.text[slice(*slot.a_span)])
    clean_b = _NOT_WORD.sub("", b.text[slice(*slot.b_span)])
    if not clean_a or not clean_b or _is_subsequence(clean_a, clean_b) or _is_subsequence(clean_b, clean_a):
        return False  # an omission, an elaboration or punctuation: not a different value
    return not _has_traditional(clean_a + clean_b)  # 北青網 / 北青网: one name, two scripts


def _has_traditional(text: str) -> bool:
    """Whether text has Chinese characters outside GB2312, the simplified set: traditional
    script (網, 運, 爾) or rare characters."""
    return any(CJK_CHAR.match(char) and not _in_gb2312(char) for char in text)


def _in_gb2312(char: str) -> bool:
    try:
        char.encode("gb2312")
    except UnicodeEncodeError:
        return False
    return True


def _is_name(text: str) -> bool:
    """A short span that names something (广州恒大, 布莱恩·辛格, 是枝裕和, 新闻学), not a wording
    change (将从 / 自, 获得金牌, 次日起) and not a bare numeral (一部)."""
    clean = _NOT_WORD.sub("", text)
    if not clean or len(clean) > MAX_TEXT_SLOT_CHARS or clean in STOPWORDS:
        return False
    if clean.isascii() and clean.isalpha():
        return clean[0].isupper()  # DHL, London; not after / before, standard / express
    words = [w for w in jieba.posseg.lcut(clean) if w.word.strip()]
    if all(w.flag.startswith(("m", "q")) for w in words):
        return False
    if len(words) == 1:  # one word: a noun or a name (not 举办, 以及, 近日, 于)
        return words[0].flag.startswith(_NAME_POS)
    # Rare names fall apart into single characters (是枝裕和), but never into particles or
    # pronouns (的个人); a longer word must be a noun.
    return all(
        w.flag.startswith(_NAME_POS) or (len(w.word) == 1 and not w.flag.startswith(("u", "y", "r"))) for w in words
    )


def _omitted_items(slot: _Slot, a: _Passage, b: _Passage) -> tuple[str, ...]:
    """The list items one sentence has and the other leaves out (统计学院、环境学院、信息学院 vs
    统计学院、信息学院), or () when the difference is not whole list items."""
    spans = ((a, slot.a_span), (b, slot.b_span))
    present = [(p, span) for p, span in spans if p.text[slice(*span)].strip()]
    if len(present) != 1:
        return ()
    passage, (start, end) = present[0]
    for start, end in _equivalent_insertions(passage.text, start, end):
        before, after = passage.text[start - 1 : start], passage.text[end : end + 1]
        text = passage.text[start:end]
        # Whole items: a list separator (or the list's end: 等, a bracketed note) on both sides.
        if (before in _LIST_SEPARATORS or text[:1] in _LIST_SEPARATORS) and (
            after in _LIST_SEPARATORS + "等（(" or text[-1:] in _LIST_SEPARATORS
        ):
            items = [i.strip() for i in re.split(f"[{_LIST_SEPARATORS}]", passage.show((start, end))) if i.strip()]
            if items and all(len(i) > 1 and _is_name(i) for i in items):
                return tuple(items)
    return ()


def _equivalent_insertions(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Every placement of an inserted span that gives the same text: 《A》、《B》、《C》 minus 《B》、
    can be read as a missing `《B》、` or `B》、《`; the first reading is a whole list item."""
    spans = [(start, end)]
    left, right = start, end
    while left > 0 and text[left - 1] == text[right - 1]:
        left, right = left - 1, right - 1
        spans.append((left, right))
    left, right = start, end
    while right < len(text) and text[left] == text[right]:
        left, right = left + 1, right + 1
        spans.append((left, right))
    return spans


# a changed span holding a label's colon changed a label, not only a value; a clock time's colon
# (11:00 / 11 : 00, digits on both sides) is part of a value
_LABEL_MARK = re.compile(r"[：:](?!\s*\d)|(?<![\d\s])\s*[：:]")


def _answer_slot(slots: list[_Slot], a: _Passage, b: _Passage, question: _Question) -> _Slot | None:
    """The one changed value of two sentences that otherwise say the same thing, or None.

    One changed number or date, whatever wording changed around it; or one changed name and
    nothing else; or, for a question that asks for a list, items one side leaves out and nothing
    else. Two changed values (a date and a country) mean two different facts."""
    content = [s for s in slots if _is_content(s, a, b)]
    if any(
        a.text[s.a_span[1] : s.a_span[1] + 1] in ("：", ":")
        or _LABEL_MARK.search(a.text[slice(*s.a_span)] + b.text[slice(*s.b_span)])
        for s in content
    ):
        return None  # a changed label (初试： / 复试：, a speaker's name, 缺货: / 型号:) says which thing it is
    typed = [s for s in content if s.typed]
    names = [
        s
        for s in content
        if not s.typed and _is_name(a.shown[slice(*s.a_span)]) and _is_name(b.shown[slice(*s.b_span)])
    ]
    if len({s.value_a.key for s in typed} | {s.value_b.key for s in typed}) == 2 and not names:
        if any(not s.typed and _DIGIT.search(a.text[slice(*s.a_span)] + b.text[slice(*s.b_span)]) for s in content):
            return None  # another changed span holds a number too (比重为51.5% / 利润占比为20.8%): two facts
        slot = typed[0]
        return slot if question.accepts_value(slot.value_a, slot.value_b) else None
    changed_names = {
        (_NOT_WORD.sub("", a.text[slice(*s.a_span)]), _NOT_WORD.sub("", b.text[slice(*s.b_span)])) for s in names
    }
    # A changed name counts only in an otherwise identical sentence: the counterfeit copy of a
    # statement, not a caption that differs in who took the photo and who is in it.
    others_tiny = all(max(s.a_span[1] - s.a_span[0], s.b_span[1] - s.b_span[0]) <= 2 for s in slots if s not in names)
    if not typed and len(content) == len(names) and len(changed_names) == 1 and others_tiny:
        slot = names[0]
        side_a, side_b = a.text[slice(*slot.a_span)], b.text[slice(*slot.b_span)]
        sentence_a, sentence_b = (
            p.text[slice(*p.sentence_at(span[0]))] for p, span in ((a, slot.a_span), (b, slot.b_span))
        )
        if _has_traditional(sentence_a) != _has_traditional(sentence_b):
            return None  # one sentence in traditional script: names differ in spelling, not in fact
        if question.names_term(side_a) or question.names_term(side_b):
            return None  # the question names one side: the other is about something else
        return slot if "name" in question.asks else None
    if not content and "list" in question.asks:
        omissions = [s for s in slots if _omitted_items(s, a, b)]
        if len(omissions) == 1:
            slot = omissions[0]
            return _Slot(slot.a_span, slot.b_span, omitted=_omitted_items(slot, a, b))
    return None


def _is_subsequence(short: str, long: str) -> bool:
    chars = iter(long)
    return all(char in chars for char in short)


def _aligned_candidates(a: _Passage, b: _Passage, entity: str, question: _Question) -> list[_Candidate]:
    found = []
    if question.coverage(a.about) < MIN_COVERAGE or question.coverage(b.about) < MIN_COVERAGE:
        return found
    for sa in a.sentences:
        for sb in b.sentences:
            if b.text[slice(*sb)] in a.text or a.text[slice(*sa)] in b.text:
                continue  # each passage also says what the other says: no contradiction here
            if _PHOTO_CAPTION.search(a.text[slice(*sa)]) or _PHOTO_CAPTION.search(b.text[slice(*sb)]):
                continue
            slots = _sentence_slots(a, sa, b, sb) or []
            if any(s.typed and question.is_qualifier(s.value_a) and _is_content(s, a, b) for s in slots):
                continue  # a different year, model, size or asked-for qualifier: a different fact
            slot = _answer_slot(slots, a, b, question)
            if slot is not None:
                found += _slot_candidate(a, b, slot, entity, question)
    return found


def _near_question(passage: _Passage, span: tuple[int, int], question: _Question) -> bool:
    """A question term close to the value and not past the end of its sentence, or in the label
    line just above it (`招生计划：` then `20人`)."""
    text, strong_end = passage.text, _ENGLISH_STRONG_END if passage.english else _STRONG_END
    lo, hi = max(0, span[0] - RELEVANCE_WINDOW), min(len(text), span[1] + RELEVANCE_WINDOW)
    ends_before = [m.end() for m in strong_end.finditer(text, lo, span[0])]
    if ends_before:
        label_start = text.rfind("\n", 0, ends_before[-1] - 1) + 1
        is_label = text[label_start : ends_before[-1]].rstrip("\n").endswith(("：", ":"))
        lo = label_start if is_label else ends_before[-1]
    next_end = strong_end.search(text, span[1], hi)
    hi = next_end.start() if next_end else hi
    return question.names_term(text[lo:hi])


def _numbers_one_item(said_a: str, said_b: str) -> bool:
    """Do two differing stretches only number the same item of a list differently (② / 2、, 4. / 3、)?
    Two replies that list the same points state no different value by that."""
    return bool(_MARKED_ITEM.match(said_a) or _MARKED_ITEM.match(said_b)) and (
        _ITEM_MARK.sub("", said_a).strip() == _ITEM_MARK.sub("", said_b).strip()
    )


def _slot_candidate(a: _Passage, b: _Passage, slot: _Slot, entity: str, question: _Question) -> list[_Candidate]:
    if not (_near_question(a, slot.a_span, question) or _near_question(b, slot.b_span, question)):
        return []
    shown_a, shown_b = a.show(slot.a_span), b.show(slot.b_span)
    if slot.typed:
        key_a, key_b, dimension = slot.value_a.key, slot.value_b.key, slot.value_a.dimension
    elif slot.omitted:
        items = "、".join(slot.omitted)
        shown_a, shown_b = (items, f"未列出{items}") if shown_a else (f"未列出{items}", items)
        key_a, key_b, dimension = shown_a, shown_b, "列表"
    else:
        said_a, said_b = a.text[slice(*slot.a_span)], b.text[slice(*slot.b_span)]
        if _numbers_one_item(said_a, said_b):
            return []
        key_a, key_b, dimension = _NOT_WORD.sub("", said_a), _NOT_WORD.sub("", said_b), "名称"
    attribute = _attribute_label(a.text, slot.a_span, question.terms, dimension)
    return [
        _Candidate(
            entity,
            attribute,
            dimension,
            [_Side(shown_a, key_a, a, slot.a_span[0]), _Side(shown_b, key_b, b, slot.b_span[0])],
        )
    ]


def _attribute_label(text: str, span: tuple[int, int], terms: list[str], dimension: str) -> str:
    """The question term closest to the value, plus what kind of value it is."""
    best, best_distance = "", None
    for term in terms:
        for match in re.finditer(re.escape(term), text):
            distance = min(abs(match.start() - span[1]), abs(span[0] - match.end()))
            if (
                best_distance is None
                or distance < best_distance
                or (distance == best_distance and len(term) > len(best))
            ):
                best, best_distance = term, distance
    if best and not CJK_CHAR.search(best):  # an English term, labelled the English way
        return f"{best} ({_ENGLISH_DIMENSIONS.get(dimension, dimension)})"
    return f"{best}（{dimension}）" if best else dimension


# -- rule 2: versions of one document --------------------------------------------------------
def _is_version_pair(a: EvidenceHit, b: EvidenceHit) -> bool:
    stem = _title_stem(a.title)
    return bool(
        stem
        and stem == _title_stem(b.title)
        and a.title != b.title
        and a.section
        and a.section == b.section
        and a.doc_type == b.doc_type
    )


def _clauses(passage: _Passage) -> list[tuple[int, int]]:
    spans = []
    for start, end in passage.sentences:
        piece_start = start
        for match in _CLAUSE_END.finditer(passage.text, start, end):
            spans.append((piece_start, match.start()))
            piece_start = match.end()
        spans.append((piece_start, end))
    return [(s, e) for s, e in spans if e - s > 1]


def _version_candidate(a: _Passage, b: _Passage, entity: str, question: _Question) -> _Candidate | None:
    """The clause each version says about the question that the other version does not say."""
    sides = []
    for mine, other in ((a, b), (b, a)):
        best, best_score = None, 0.0
        for start, end in _clauses(mine):
            clause = mine.text[start:end].strip(" -\n")
            if not clause or clause in other.text:
                continue
            score = question.coverage(clause) * len(question.key_terms)
            if score < MIN_VERSION_CLAUSE_TERMS:
                continue
            if score > best_score:
                best, best_score = (start, end), score
        if best is None:
            return None
        shown = mine.show(best).strip(" -")
        sides.append(_Side(shown, _ascii_lower(_NOT_WORD.sub("", shown)), mine, best[0]))
    return _Candidate(entity, a.hit.section, "版本", sides)


# -- rule 3: claims about one product --------------------------------------------------------
# Material lexicon: surface form -> (family, class). Classes of one family exclude each other.
MATERIALS: dict[str, tuple[str, str]] = {
    **{
        w: ("皮料", "真皮")
        for w in ("头层牛皮", "头层皮", "二层牛皮", "全粒面", "真皮", "牛皮", "羊皮", "猪皮", "麂皮")
    },
    **{
        w: ("皮料", "人造革")
        for w in ("人造革", "人造皮", "合成革", "pu皮", "pu革", "超纤皮", "超纤革", "仿皮", "塑料皮")
    },
    **{w: ("填充", "鹅绒") for w in ("鹅绒", "白鹅绒", "灰鹅绒")},
    **{w: ("填充", "鸭绒") for w in ("鸭绒", "白鸭绒", "灰鸭绒")},
    **{w: ("填充", "化纤棉") for w in ("丝棉", "喷胶棉", "人造棉", "化纤棉")},
    **{w: ("纤维", "棉") for w in ("纯棉", "全棉", "精梳棉", "新疆棉")},
    **{w: ("纤维", "化纤") for w in ("涤纶", "聚酯纤维", "化纤", "腈纶")},
    **{w: ("纤维", "羊毛") for w in ("羊毛", "美利奴羊毛", "羊绒")},
    **{w: ("纤维", "真丝") for w in ("真丝", "桑蚕丝")},
    **{w: ("外壳", "金属") for w in ("铝合金", "不锈钢", "金属外壳", "锌合金")},
    **{w: ("外壳", "塑料") for w in ("塑料外壳", "abs塑料", "塑料壳")},
}
# Words that make a question about a material family even when it names no material.
_MATERIAL_QUESTION_WORDS = {
    "皮料": ("皮", "材质"),
    "填充": ("绒", "填充"),
    "纤维": ("面料", "材质", "成分"),
    "外壳": ("外壳", "材质"),
}
# Yes/no properties: attribute -> (words that assert it, words that deny it).
PROPERTIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "防水": (("防水", "不渗水", "不漏水", "不进水"), ("渗水", "漏水", "进水", "不防水", "湿透")),
    "透气": (("透气", "不闷"), ("不透气", "闷脚", "闷热", "捂汗")),
    "防滑": (("防滑", "抓地", "不打滑"), ("打滑", "不防滑")),
    "保暖": (("保暖", "暖和", "不冷"), ("不保暖", "漏风")),
    "掉色": (("掉色", "褪色", "染色"), ("不掉色", "不褪色")),
    "起球": (("起球",), ("不起球",)),
}
_CLAIM_PATTERN = re.compile(
    "|".join(
        re.escape(w)
        for w in sorted(
            {*MATERIALS, *(w for pos, neg in PROPERTIES.values() for w in (*pos, *neg))}, key=len, reverse=True
        )
    )
)


def _claims(passage: _Passage, terms: list[str]) -> dict[str, dict[str, tuple[str, int]]]:
    """{family or property: {class or yes/no: (word, position)}} for asserted, unquoted mentions."""
    found: dict[str, dict[str, tuple[str, int]]] = {}
    for match in _CLAIM_PATTERN.finditer(passage.text):
        word, start = match.group(0), match.start()
        before = passage.text[max(0, start - 6) : start]
        if any(marker in before for marker in _QUOTED) or any(n in before[-3:] for n in _NEGATION):
            continue  # "不像宣传的真皮": quoted or denied, not asserted
        # A material belongs to a part (鞋面, 内里): only one near what is asked counts. A
        # property (防水) belongs to the product, whichever of its words the question used.
        if (
            word in MATERIALS
            and word not in terms
            and not _terms_near(passage.text, start, match.end(), terms, CLAIM_WINDOW)
        ):
            continue
        if word in MATERIALS:
            family, kind = MATERIALS[word]
        else:
            family = next(p for p, (pos, neg) in PROPERTIES.items() if word in pos or word in neg)
            kind = "是" if word in PROPERTIES[family][0] else "否"
        found.setdefault(family, {}).setdefault(kind, (word, start))
    return found


def _asked_families(question: str) -> set[str]:
    text = _ascii_lower(canonical_text(question))
    asked = {MATERIALS[w][0] for w in MATERIALS if w in text}
    asked |= {family for family, words in _MATERIAL_QUESTION_WORDS.items() if any(w in text for w in words)}
    asked |= {p for p, (pos, neg) in PROPERTIES.items() if p in text or any(w in text for w in (*pos, *neg))}
    return asked


def _claim_candidates(a: _Passage, b: _Passage, question: _Question) -> list[_Candidate]:
    if "official" not in (a.hit.authority, b.hit.authority):
        return []  # two customers disagreeing is opinion, not conflicting evidence
    claims_a, claims_b = _claims(a, question.terms), _claims(b, question.terms)
    found = []
    for family in sorted(_asked_families(question.text)):
        kinds_a, kinds_b = claims_a.get(family, {}), claims_b.get(family, {})
        if len(kinds_a) != 1 or len(kinds_b) != 1 or kinds_a.keys() == kinds_b.keys():
            continue  # silent, mixed, or agreeing
        ((kind_a, (word_a, pos_a)),) = kinds_a.items()
        ((kind_b, (word_b, pos_b)),) = kinds_b.items()
        dimension = "材质" if family in _MATERIAL_QUESTION_WORDS else family
        found.append(
            _Candidate(
                a.hit.product_id or "",
                family,
                dimension,
                [
                    _Side(a.show((pos_a, pos_a + len(word_a))), kind_a, a, pos_a),
                    _Side(b.show((pos_b, pos_b + len(word_b))), kind_b, b, pos_b),
                ],
            )
        )
    return found


def _table_candidates(passages: list[_Passage], question: _Question) -> list[_Candidate]:
    """Rule 4: a price or stock count that an untrusted passage states about a product, when the
    question asks about prices or stock and no SKU row of the product in the evidence holds it:
    a conflict with the rows' values, table first. A stock count is held to the rows of the
    variant its sentence names (雾霾蓝), or to the only row shown; a count naming no variant of
    a product with several rows shown is not compared (the table has no total to hold it to)."""
    prices: dict[str, dict[str, _Side]] = {}  # product -> price key -> the first row saying it
    stocks: dict[str, list[tuple[set[str], _Side]]] = {}  # product -> (variant names, stock) per row
    for passage in passages:
        if not (table_claims.is_table(passage.hit) and passage.hit.product_id):
            continue
        numbers = table_claims.table_numbers(passage.hit)
        for kind, number, written in [(kind, n, w) for kind, found in numbers.items() for n, w in found]:
            shown = canonical_text(written)
            side = _Side(shown, _table_key(kind, number), passage, max(passage.shown.find(shown), 0))
            if kind == table_claims.PRICE:
                prices.setdefault(passage.hit.product_id, {}).setdefault(side.key, side)
            else:
                stocks.setdefault(passage.hit.product_id, []).append((table_claims.variants(passage.hit), side))
    found = []
    for passage in passages:
        if not is_untrusted(passage.hit.doc_type, passage.hit.authority):
            continue
        product = _product_of(passage, {*prices, *stocks}, passages)
        if product is None:
            continue
        for claim in table_claims.claimed_numbers(passage.shown):
            if not _ASKS_TABLE[claim.kind].search(question.raw):
                continue
            if claim.kind == table_claims.PRICE:
                rows = list(prices.get(product, {}).values())
            else:
                sentence = passage.sentence_text(claim.start)
                shown = stocks.get(product, [])
                named = [side for names, side in shown if any(name in sentence for name in names)]
                rows = named or ([shown[0][1]] if len(shown) == 1 else [])
            key = _table_key(claim.kind, claim.number)
            if not rows or key in {side.key for side in rows}:
                continue  # nothing to hold it to, or the table agrees
            claimed = _Side(claim.value, key, passage, claim.start)
            found.append(_Candidate(product, claim.kind, f"table:{claim.kind}", [*rows, claimed]))
    return found


def _table_key(kind: str, number: float) -> str:
    return f"{_fmt(number)}{'元' if kind == table_claims.PRICE else '件'}"


# A question about prices or stock: only then is a stranger's number for them worth disclosing.
_ASKS_TABLE = {
    table_claims.PRICE: re.compile(r"价|钱|免费|送|优惠|活动|\b(?:price|cost|free|how much)", re.IGNORECASE),
    table_claims.STOCK: re.compile(r"库存|有货|现货|缺货|没货|还有|几件|\b(?:stock|available)", re.IGNORECASE),
}


def _product_of(passage: _Passage, products: set[str], passages: list[_Passage]) -> str | None:
    """The product with a table in the evidence this passage is about: its own product_id, or for a
    text that names none, the one product whose table titles share a model number with it."""
    if passage.hit.product_id:
        return passage.hit.product_id if passage.hit.product_id in products else None
    named = model_numbers(passage.shown)
    matches = {
        p.hit.product_id for p in passages if p.hit.product_id in products and named & model_numbers(p.hit.title)
    }
    return matches.pop() if len(matches) == 1 else None


# ----------------------------------------------------------------------------- entry point
def detect_conflicts(
    question: str, evidence: list[EvidenceHit], lexicon: Lexicon | None = None, as_of: str | None = None
) -> list[Conflict]:
    """Conflicts among the evidence that bear on the question ([] when there are none). as_of: the
    time the question asks about (SearchFilters.as_of); its values then lead nearest that time."""
    # an English question about a Chinese shop's evidence is read with the shop's Chinese words too
    asked = _Question.of(worded_for(question, [hit.text for hit in evidence]), lexicon)
    if not asked.terms or len(evidence) < 2:
        return []
    passages = [_Passage.of(hit, lexicon) for hit in _unique(evidence)]
    off_topic = _off_topic(passages, asked)
    candidates: list[_Candidate] = []
    aligned_docs: set[tuple[str, str]] = set()
    version_sections: dict[tuple[str, str], list[tuple[float, _Passage, _Passage, str]]] = {}
    for i, a in enumerate(passages):
        for b in passages[i + 1 :]:
            if a.hit.doc_id == b.hit.doc_id:
                continue  # a document's rows and prices are different facts, not a conflict
            if a.hit.chunk_id in off_topic or b.hit.chunk_id in off_topic:
                continue
            entity = _entity_of(a.hit, b.hit, asked)
            if entity is None:
                continue
            docs = tuple(sorted((a.hit.doc_id, b.hit.doc_id)))
            aligned = _aligned_candidates(a, b, entity, asked)
            if aligned:
                candidates += aligned
                aligned_docs.add(docs)
            elif _is_version_pair(a.hit, b.hit):
                relevance = asked.coverage(a.about) + asked.coverage(b.about)
                version_sections.setdefault(docs, []).append((relevance, a, b, entity))
            if a.hit.product_id:
                candidates += _claim_candidates(a, b, asked)
    candidates += _table_candidates(passages, asked)
    for docs, sections in version_sections.items():
        if docs in aligned_docs:
            continue  # the versions already differ in a value the question asks about
        _, a, b, entity = max(sections, key=lambda section: section[0])  # the section asked about
        version = _version_candidate(a, b, entity, asked)
        candidates += [version] if version is not None else []
    return [_to_conflict(c, as_of) for c in _merge(candidates)]


def _off_topic(passages: list[_Passage], question: _Question) -> set[str]:
    """Chunks about something else than what the question names: when the question names the title
    of an evidence page (班卡雀鲷, 谢尔), a page (no product, no FAQ) whose title it does not name and
    whose text never mentions a named title (蓝纹高身雀鲷, 鄂温人) gives another thing's value."""
    asked = question.raw.lower()  # titles are compared as written (normalised), not canonicalised
    # FAQ titles are customers' questions (退款多久能到账？), not names of things
    # titles and text in matching form: a traditional page's title names what a question asks
    pages = [
        (_title_stem(matching_form(p.hit.title)).lower(), p.hit)
        for p in passages
        if not p.hit.product_id and not is_faq(p.hit)
    ]
    named = {stem for stem, _ in pages if len(stem) >= 2 and stem in asked}
    if not named:
        return set()
    return {
        hit.chunk_id
        for stem, hit in pages
        if stem not in named and not any(name in matching_form(normalize(hit.text)).lower() for name in named)
    }


def _unique(evidence: list[EvidenceHit]) -> list[EvidenceHit]:
    seen, out = set(), []
    for hit in evidence:
        if hit.chunk_id not in seen:
            seen.add(hit.chunk_id)
            out.append(hit)
    return out


def _merge(candidates: list[_Candidate]) -> list[_Candidate]:
    """One conflict per kind of value whose value sets overlap, for one product (or, for
    documents without products, for the question's topic however the pairs named it)."""
    merged: list[_Candidate] = []
    for candidate in candidates:
        for existing in merged:
            if (existing.product_id, existing.dimension) == (candidate.product_id, candidate.dimension) and (
                existing.keys() & candidate.keys()
            ):
                existing.sides += candidate.sides
                break
        else:
            merged.append(_Candidate(candidate.entity, candidate.attribute, candidate.dimension, list(candidate.sides)))
    return [c for c in merged if len(c.keys()) > 1]


def _rank(side: _Side, asked_day: date | None = None) -> tuple:
    hit = side.passage.hit
    # Official before community whatever the dates (a newer review does not outrank the
    # product page), then newest first (the 2026 policy before the 2024 one), or, for a question
    # about a given time, nearest that time first (the 2016 brochure for "as of 2016").
    if asked_day is None:
        return (AUTHORITY_RANK.get(hit.authority, 0), hit.updated_at or "", hit.score)
    day = parse_day(hit.updated_at)
    return (
        AUTHORITY_RANK.get(hit.authority, 0),
        -abs((day - asked_day).days) if day is not None else -math.inf,
        hit.score,
    )


def _to_conflict(candidate: _Candidate, as_of: str | None = None) -> Conflict:
    asked_day = as_of_day(as_of) if as_of else None
    best: dict[str, _Side] = {}
    for side in candidate.sides:
        if side.key not in best or _rank(side, asked_day) > _rank(best[side.key], asked_day):
            best[side.key] = side
    values = [
        ConflictValue(
            value=side.value,
            chunk_id=side.passage.hit.chunk_id,
            updated_at=side.passage.hit.updated_at,
            authority=side.passage.hit.authority,
            sentence=side.passage.sentence_text(side.position),
        )
        for side in sorted(best.values(), key=lambda side: _rank(side, asked_day), reverse=True)
    ]
    return Conflict(attribute=candidate.attribute, entity=candidate.entity, values=values, as_of=as_of)
