"""What kind of value a record's field holds (a person, a time, a place, a number) and what kind a
question asks for (#44): "蔡秀是哪位大夫负责的？" asks a person, so on a KB of patient records the
field it asks in other words is more likely 主治医生 (whose values are people) than 科室 or 过敏史.

The aspect reader (agents/aspect_reading.py) embeds the question and each label and reads the nearest
label when it stands clear of the next; e5's cosines are compressed, so a label asked in other words often
does not. The kind of value asked is a second, independent cue, read from the KB's own values (jieba's
parts of speech and date shapes: no word list of fields) and from the question's asking words (the
core pack's `when_question`, `asks_person`, `asks_place` and `asks_amount` rules, agents/question_cues.yaml)
— the same pairing of parts of speech with asking words as the self-calibration probes use to ask a
masked word (agents/self_probes.py: a person as 谁, a place as 哪里, a time as 什么时候, a number as 多少).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from itertools import islice

import jieba.posseg

from citescope.agents.question_rules import QuestionRules
from citescope.knowledge.text import CJK_CHAR

PERSON, TIME, PLACE, NUMBER = "person", "time", "place", "number"

# the asking words of each kind, checked in this order: 几号 and 几点 ask a time, not a number
ASKING_RULES = (("when_question", TIME), ("asks_person", PERSON), ("asks_place", PLACE), ("asks_amount", NUMBER))

# a calendar date or a clock time (2025年1月8日, 2026年5月, 3月15日, 14:00); 2年 and 15天 are durations: numbers
_DATE = re.compile(r"\d{4}\s*年|\d{1,2}\s*月\s*\d{1,2}\s*[日号]|\d{1,2}\s*月份?$|\d{1,2}:\d{2}")
_NAME_CHARS = (2, 4)  # a Chinese personal name: 赵强, 刘小雨, 欧阳明月
MAX_VALUES = 50  # values read per label: a kind is a majority, and jieba costs ~0.1 ms a value
MIN_VALUES = 2  # one value makes no majority
MAJORITY = 2 / 3  # of a label's values that must share its kind


def value_kind(value: str) -> str | None:
    """The kind of one field value: a time, a person, a place, a number, or None (a word: 心内科, AB型)."""
    value = value.strip()
    if _DATE.search(value):
        return TIME
    words = [(w, f) for w, f in jieba.posseg.lcut(value) if w.strip()]
    if not words:
        return None
    flags = [f for _, f in words]
    if flags[0] == "t":
        return TIME
    # jieba tags a whole name nr, but splits some (周 nr + 建平 n, 刘 zg + 小雨 nr); a short all-Chinese value
    # holding a name part is a name. Not a longer phrase it mis-tags (青霉素过敏: 过敏 is tagged nr).
    short_name = _NAME_CHARS[0] <= len(value) <= _NAME_CHARS[1] and all(CJK_CHAR.match(c) for c in value)
    if flags[0].startswith("nr") or short_name and "nr" in flags:
        return PERSON
    if flags[0] == "ns":
        return PLACE
    if any(c.isdigit() for c in value):
        return NUMBER
    return None


def label_kinds(values: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """Each label's kind: the kind at least MAJORITY of its values (the first MAX_VALUES) share; a label
    whose values are words (科室: 心内科, 骨科) or of mixed kinds has none."""
    kinds: dict[str, str] = {}
    for label, given in values.items():
        read = [value_kind(v) for v in islice(given, MAX_VALUES)]
        if len(read) < MIN_VALUES:
            continue
        kind, count = Counter(read).most_common(1)[0]
        if kind is not None and count >= MAJORITY * len(read):
            kinds[label] = kind
    return kinds


def asked_kind(question: str, rules: QuestionRules) -> str | None:
    """The kind of value the question asks for by its asking words, or None (是什么, 有没有)."""
    return next((kind for rule_id, kind in ASKING_RULES if rules.pattern(rule_id).search(question)), None)
