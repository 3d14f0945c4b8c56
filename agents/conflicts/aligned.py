"""Rule 1, aligned statements: two sentences that say the same thing word for word except one slot
(共有70个议席 / 共有170个议席). See the package docstring."""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

import jieba
import jieba.posseg

from citescope.agents.conflicts.passages import ENGLISH_STRONG_END, STRONG_END, Candidate, Passage, Side
from citescope.agents.conflicts.question import Question
from citescope.agents.conflicts.values import NOT_WORD, VALUE, Value, parse_value
from citescope.knowledge.text import (
    CJK_CHAR,
    STOPWORDS,
)

# ----------------------------------------------------------------------------- tuning constants
# Aligned statements: the two sentences share this much of the shorter one ...
MIN_SHARED_FRACTION = 0.75


MIN_SHARED_OF_LONGER = 0.5  # ... and half of the longer one (a truncated copy, not a longer story)


MIN_SHARED_CHARS = 5


MIN_SHARED_CJK = 4  # ... including real words, not only a date header such as "Jan 6, 2022 ..."


MIN_SHARED_LATIN = 12  # ... or, in English, letters of a few words


MAX_SLOTS_PER_SENTENCE = 3  # more differences than this is a rewrite, not one changed value


MAX_TEXT_SLOT_CHARS = 10  # a longer rewritten span is a paraphrase, not a changed name


# The passages (with their titles) must each hold at least this share of the question's terms:
# what is asked is what they are about.
MIN_COVERAGE = 0.5


# A slot is relevant when a question term occurs within this many characters of it.
RELEVANCE_WINDOW = 32


# jieba part-of-speech tags of the words of a name: nouns, proper names, numerals, abbreviations,
# the "·" inside foreign names.
_NAME_POS = ("n", "m", "eng", "j", "q", "x")


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


_LIST_SEPARATORS = "、，,；;和及与"


_DIGIT = re.compile(r"\d")


_LATIN = re.compile(r"[a-z]")


# A photo caption (新华社照片, 记者李明摄) says what a picture shows: two captions of one template are
# two pictures (张帅在比赛中回球 / 发球), not two claims about one fact.
_PHOTO_CAPTION = re.compile(r"新华社照片|图片来源|资料图片|供图|(?:记者|摄影)[^，,。\s]{1,8}摄")


# What numbers an item of a list (②, 2、, 4., （3）, 三是), and a bare number, which numbers one only
# beside a marked one (② and 2)
_ITEM_NUMBER = r"(?:\d{1,2}|[一二三四五六七八九十]{1,3})"


_MARKED_ITEM = re.compile(rf"^\s*(?:[\u2460-\u2473]|[一二三四五六七八九十]{{1,3}}是|[（(]?{_ITEM_NUMBER}[)）、.．])")


_ITEM_MARK = re.compile(rf"{_MARKED_ITEM.pattern}|^\s*{_ITEM_NUMBER}$")


# -- rule 1: aligned statements -------------------------------------------------------------
@dataclass
class _Slot:
    a_span: tuple[int, int]
    b_span: tuple[int, int]
    value_a: Value | None = None
    value_b: Value | None = None
    omitted: tuple[str, ...] = ()  # list items one side has and the other leaves out

    @property
    def typed(self) -> bool:
        return self.value_a is not None and self.value_b is not None

    @property
    def values(self) -> tuple[Value, Value]:
        """The two sides' values, of a typed slot."""
        assert self.value_a is not None and self.value_b is not None, "only a typed slot has values"
        return self.value_a, self.value_b


def _sentence_slots(a: Passage, sa: tuple[int, int], b: Passage, sb: tuple[int, int]) -> list[_Slot] | None:
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


def _grown(a: Passage, b: Passage, region: tuple[int, int, int, int], grow) -> tuple[int, int, int, int]:
    """Widen a raw difference by the same amount on both sides (the text around it is shared)."""
    i1, i2, j1, j2 = region
    new_a, new_b = grow(a.text, i1, i2), grow(b.text, j1, j2)
    left = max(i1 - new_a[0], j1 - new_b[0])
    right = max(new_a[1] - i2, new_b[1] - j2)
    return i1 - left, i2 + right, j1 - left, j2 + right


def _merge_regions(a: Passage, b: Passage, regions: list[tuple]) -> list[tuple]:
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
    a: Passage, b: Passage, sa: tuple[int, int], sb: tuple[int, int], region: tuple[int, int, int, int]
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
    for match in VALUE.finditer(text, max(0, start - 24), min(len(text), end + 24)):
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


def _is_content(slot: _Slot, a: Passage, b: Passage) -> bool:
    """Whether two sides of a slot say different things, rather than the same thing in other
    characters (开幕式 / 开闭幕式 is an elaboration, 北青网 / 北青網 another script)."""
    if slot.typed:
        value_a, value_b = slot.values
        return not value_a.same_as(value_b)
    clean_a = NOT_WORD.sub("", a.text[slice(*slot.a_span)])
    clean_b = NOT_WORD.sub("", b.text[slice(*slot.b_span)])
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
    clean = NOT_WORD.sub("", text)
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


def _omitted_items(slot: _Slot, a: Passage, b: Passage) -> tuple[str, ...]:
    """The list items one sentence has and the other leaves out (统计学院、环境学院、信息学院 vs
    统计学院、信息学院), or () when the difference is not whole list items."""
    spans = ((a, slot.a_span), (b, slot.b_span))
    present = [(p, span) for p, span in spans if p.text[slice(*span)].strip()]
    if len(present) != 1:
        return ()
    passage, (inserted_start, inserted_end) = present[0]
    for start, end in _equivalent_insertions(passage.text, inserted_start, inserted_end):
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


def _answer_slot(slots: list[_Slot], a: Passage, b: Passage, question: Question) -> _Slot | None:
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
    if len({value.key for s in typed for value in s.values}) == 2 and not names:
        if any(not s.typed and _DIGIT.search(a.text[slice(*s.a_span)] + b.text[slice(*s.b_span)]) for s in content):
            return None  # another changed span holds a number too (比重为51.5% / 利润占比为20.8%): two facts
        slot = typed[0]
        return slot if question.accepts_value(*slot.values) else None
    changed_names = {
        (NOT_WORD.sub("", a.text[slice(*s.a_span)]), NOT_WORD.sub("", b.text[slice(*s.b_span)])) for s in names
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


def aligned_candidates(a: Passage, b: Passage, entity: str, question: Question) -> list[Candidate]:
    found: list[Candidate] = []
    if question.coverage(a.about) < MIN_COVERAGE or question.coverage(b.about) < MIN_COVERAGE:
        return found
    for sa in a.sentences:
        for sb in b.sentences:
            if b.text[slice(*sb)] in a.text or a.text[slice(*sa)] in b.text:
                continue  # each passage also says what the other says: no contradiction here
            if _PHOTO_CAPTION.search(a.text[slice(*sa)]) or _PHOTO_CAPTION.search(b.text[slice(*sb)]):
                continue
            slots = _sentence_slots(a, sa, b, sb) or []
            if any(s.typed and question.is_qualifier(s.values[0]) and _is_content(s, a, b) for s in slots):
                continue  # a different year, model, size or asked-for qualifier: a different fact
            slot = _answer_slot(slots, a, b, question)
            if slot is not None:
                found += _slot_candidate(a, b, slot, entity, question)
    return found


def _near_question(passage: Passage, span: tuple[int, int], question: Question) -> bool:
    """A question term close to the value and not past the end of its sentence, or in the label
    line just above it (`招生计划：` then `20人`)."""
    text, strong_end = passage.text, ENGLISH_STRONG_END if passage.english else STRONG_END
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


def _slot_candidate(a: Passage, b: Passage, slot: _Slot, entity: str, question: Question) -> list[Candidate]:
    if not (_near_question(a, slot.a_span, question) or _near_question(b, slot.b_span, question)):
        return []
    shown_a, shown_b = a.show(slot.a_span), b.show(slot.b_span)
    if slot.typed:
        value_a, value_b = slot.values
        key_a, key_b, dimension = value_a.key, value_b.key, value_a.dimension
    elif slot.omitted:
        items = "、".join(slot.omitted)
        shown_a, shown_b = (items, f"未列出{items}") if shown_a else (f"未列出{items}", items)
        key_a, key_b, dimension = shown_a, shown_b, "列表"
    else:
        said_a, said_b = a.text[slice(*slot.a_span)], b.text[slice(*slot.b_span)]
        if _numbers_one_item(said_a, said_b):
            return []
        key_a, key_b, dimension = NOT_WORD.sub("", said_a), NOT_WORD.sub("", said_b), "名称"
    attribute = _attribute_label(a.text, slot.a_span, question.terms, dimension)
    return [
        Candidate(
            entity,
            attribute,
            dimension,
            [Side(shown_a, key_a, a, slot.a_span[0]), Side(shown_b, key_b, b, slot.b_span[0])],
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
