"""Compound questions: one message asking for several facts, each answered as a question of its own.

"2022年和2023年春节档票房冠军", "德国队和法国队在哪个组", "主演和导演是谁", "逃税多少钱，被罚了多少钱":
each part is stated by its own sentence, so each is answered on its own. A comparison (M码和L码差多少,
哪个更…) asks for one relation of both sides, so it is never split. The question words and clause
endings are question_cues' (the one list of them).
"""

from __future__ import annotations

import re

from citescope.agents.question_cues import (
    CLAUSE_END,
    COMPARISON_WORDS,
    MODIFIER_STOP,
    NOT_ENDS,
    QUESTION_WORD,
    words_of,
)

_YEARS_COORDINATED = re.compile(r"((?:19|20)\d{2})\s*年?\s*(?:和|与|及|、)\s*((?:19|20)\d{2})\s*年?")
_COORDINATOR = frozenset("和与及、")
_RESPECTIVELY = re.compile(r"分别|各自")
_COMPARISON = re.compile(
    rf"{COMPARISON_WORDS}|相差|差多少|相比|一样|相同|不同|哪个|哪款|哪双|哪件|还是|更|关系|之间|共同|一起|合作|同时",
    re.I,
)
_ASKED_AFTER = re.compile(r"\s*(?:是谁|是什么|是多少|是哪[个些里位家]?|有哪些|有多少)?\s*[？?。]?\s*$")
_WH = re.compile(r"谁|什么|哪|多少|多[大重久长高远宽厚]|几|何时|时间|日期|地点|冠军|得主")
_ASKS_YES_NO = ("吗", "么", "嘛", *NOT_ENDS)
_PRONOUN = re.compile(r"^(?:它|其|他|她|该片|该剧)(?:的)?")
_BOOK_TITLE = re.compile(r"《[^》]+》")


def compound_parts(question: str) -> list[str]:
    """The questions a compound question is made of, or [question] when it asks one thing."""
    text = question.strip()
    if _COMPARISON.search(text):
        return [text]
    clauses = [c for c in CLAUSE_END.split(text) if c.strip()]
    if len(clauses) > 1 and all(_WH.search(c) or c.strip().endswith(_ASKS_YES_NO) for c in clauses):
        subject = _BOOK_TITLE.search(clauses[0])
        return [clauses[0], *(_PRONOUN.sub(subject.group(0) + "的", c) if subject else c for c in clauses[1:])]
    years = _YEARS_COORDINATED.search(text)
    if years:
        plain = text[: years.start()] + "{}年" + _RESPECTIVELY.sub("", text[years.end() :])
        return [plain.format(year) for year in years.groups()]
    words = _names_with_spaces(words_of(text))
    for index, word in enumerate(words):
        if word not in _COORDINATOR or not 0 < index < len(words) - 1:
            continue
        left, right = _conjuncts(words, index)
        if len(left) < 2 or len(right) < 2 or not (left.strip() and right.strip()):
            continue
        if left == words[index + 1] or right.startswith(left):
            continue
        joint = f"{left}{word}{right}"
        after = text[text.find(joint) + len(joint) :] if joint in text else None
        # two things asked at once (主演和导演是谁, 时间和地点？) or said to be asked each (分别);
        # otherwise "A和B" may be one thing (苏格兰和英格兰的边界) or a companion (和男朋友自驾)
        if after is None or not (_RESPECTIVELY.search(text) or _ASKED_AFTER.match(after)):
            continue
        plain = _RESPECTIVELY.sub("", text)
        return [plain.replace(joint, left, 1), plain.replace(joint, right, 1)]
    return [text]


def _conjuncts(words: list[str], index: int) -> tuple[str, str]:
    """The two phrases joined by words[index]: parallel ones as long as their shared words show
    (女子双人10米跳台 / 男子双人10米跳台, 最佳电视剧 / 最佳电视动画), else a word each side."""
    after = []
    for word in words[index + 1 : index + 8]:
        if (
            word in _COORDINATOR
            or QUESTION_WORD.match(word)
            or _RESPECTIVELY.match(word)
            or not word.strip()
            or word in {"的", "是", "在", "有"}
            or not re.search(r"\w", word)
        ):
            break
        after.append(word)
    before = words[max(0, index - 6) : index]
    if before and before[-1] in after[1:]:  # the same last word: 跳台 … 跳台
        size = after.index(before[-1]) + 1
        if size <= len(before):
            return "".join(before[-size:]), "".join(after[:size])
    if after and after[0] in before[:-1]:  # the same first word: 最佳电视剧 / 最佳电视动画
        start = len(before) - 1 - before[::-1].index(after[0])
        return "".join(before[start:]), "".join(after)
    shared = next((w for w in after[1:] if w in before[:-1] and len(w) > 1), None)
    if shared:  # a word in the same place of both: 北极驿极光700 / 雪域极光Pro
        i, j = len(before) - 1 - before[::-1].index(shared), after.index(shared)
        if i >= j:
            return "".join(before[i - j :]), "".join(after[: j + len(before) - i])
    left, right = words[index - 1], words[index + 1]
    if len(left) == 1 and index >= 2:  # jieba cut an unknown word into a character and a word
        left = words[index - 2] + left
    if len(right) == 1 and index + 2 < len(words):
        right += words[index + 2]
    elif index + 2 < len(words) and _CUT_OFF_CHARACTER.fullmatch(words[index + 2]):  # 透湿 量 of 透湿量
        right += words[index + 2]
    return left, right


# One Chinese character jieba left after a word it did not know whole (透湿 量), not a function one.
_CUT_OFF_CHARACTER = re.compile(rf"[^\W\d_A-Za-z{''.join(MODIFIER_STOP)}等都也还各分呢吗吧啊呀么]")


def _names_with_spaces(words: list[str]) -> list[str]:
    """Latin words a space apart joined into one name (AJ1 Retro, Air Jordan 1), which a
    coordinator joins whole: XZ-3000和AJ1 Retro is XZ-3000 / AJ1 Retro, not XZ-3000 Retro / AJ1 Retro."""
    joined: list[str] = []
    for word in words:
        if _LATIN_WORD.fullmatch(word) and len(joined) >= 2 and joined[-1] == " " and _LATIN_WORD.fullmatch(joined[-2]):
            joined[-2:] = [f"{joined[-2]} {word}"]
        else:
            joined.append(word)
    return joined


_LATIN_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-]*(?: [A-Za-z0-9][A-Za-z0-9.\-]*)*")
