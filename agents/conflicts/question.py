"""The question as the conflict check reads it: its terms, the kinds of value it asks for and the
kinds it fixes (第五次), and whether a pair of values answers it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from citescope.agents.conflicts.values import (
    CN_NUMERAL,
    COMPARED_UNITS,
    QUALIFIER_UNITS,
    UNIT_PATTERN,
    VALUE,
    Value,
    ascii_lower,
    canonical_text,
    parse_value,
)
from citescope.knowledge.lexicon import Lexicon
from citescope.knowledge.normalize import normalize
from citescope.knowledge.text import STOPWORDS, arabic_numerals, tokenize

# Words that only shape a question; they never anchor an attribute. Not question_cues.ASKING_WORDS
# (the one list of what asks): whole words, so a name like 哪吒 stays an anchor, and with the
# framing words (现在, 可以, 之内) a question wraps its attribute in.
_QUESTION_WORDS = frozenset(
    "多少 几天 几个 几年 几次 几名 几人 什么 时候 什么时候 哪里 哪儿 哪个 哪些 哪年 哪天 哪一天 是不是 怎么 "
    "怎样 如何 多久 多长 多大 多重 多高 多远 为什么 现在 能否 可否 请问 有没有 是否 一样 分别 各自 还是 "
    "可以 需要 应该 之内 以内 东西".split()
    # ... and in English, beyond the stop words (How many days does delivery take?)
    + "many much long take takes taken need needs can will may must tell get any some".split()
)


def _question_terms(question: str, lexicon: Lexicon | None) -> list[str]:
    # A title in book-title marks is one name however the tokenizer cuts it (《人在囧途》).
    terms = [ascii_lower(canonical_text(t, lexicon)) for t in re.findall(r"《([^》]{2,30})》", question)]
    # numerals in digits, as canonical_text writes the evidence they are found in (七天 -> 7天)
    for token in tokenize(arabic_numerals(question, CN_NUMERAL), lexicon):
        if token in _QUESTION_WORDS or token in STOPWORDS:
            continue
        if len(token) < 2 and not token.isdigit():
            continue
        if token.isascii() and token in COMPARED_UNITS:
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
    text = ascii_lower(canonical_text(question, lexicon))
    dimensions = set()
    for match in VALUE.finditer(text):
        value = parse_value(match.group(0))
        if value is not None and value.dimension not in ("数量", "名称", "年份"):
            dimensions.add(value.dimension)
    return dimensions


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
class Question:
    raw: str  # as asked (normalised only)
    text: str  # canonical_text
    terms: list[str]
    dimensions: set[str]  # kinds of value the question itself fixes (第五次 -> 次)

    @classmethod
    def of(cls, question: str, lexicon: Lexicon | None) -> Question:
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

    def is_qualifier(self, value: Value) -> bool:
        """A value that says *which* thing (a size, a model, a year when no date is asked, a kind
        of value the question fixes): if it differs, the two sentences are about different things."""
        if value.dimension in QUALIFIER_UNITS or value.dimension in self.dimensions:
            return True
        return value.dimension == "年份" and "date" not in self.asks

    @cached_property
    def asked_dimension(self) -> str | None:
        """The kind of amount the question names (几天 -> 天, 多少个 -> 数量, 多少钱 -> 元)."""
        match = re.search(rf"(?:多少|几|\bhow many\s+)\s*({UNIT_PATTERN}|钱)", ascii_lower(self.raw))
        if match is None:
            return None
        unit = "元" if match.group(1) == "钱" else match.group(1)
        return COMPARED_UNITS[unit].dimension

    def accepts_value(self, a: Value, b: Value) -> bool:
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
