"""Text normalisation and the jieba tokenizer shared by indexing and queries."""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Container
from functools import lru_cache
from itertools import accumulate

import jieba

from citescope.knowledge.chinese_script import matching_form
from citescope.knowledge.lexicon import Lexicon

# Model numbers: letters then digits (XZ-3000, XZ3000, IPX4, T20, UPF50), not part of a longer
# word: not the C1 of USB-C1. One pattern for the query analyser, reranker and inspector.
MODEL_NUMBER = re.compile(r"(?<![A-Za-z0-9\-])[A-Za-z]{1,6}-?\d{1,6}[A-Za-z]?(?![A-Za-z0-9])")


# A year, with or without 年 (2021年, 2022清明档, 2022 ASICS巡回赛), not an amount before a unit or
# counter (2000毫安, 2000元) nor inside a model number (XZ-2000, EMNLP2022 names the event).
_NOT_A_YEAR_AFTER = r"[\d.%]|\s*[毫元块米克斤个件万亿多余款台张瓦伏人名次条]"
YEAR = re.compile(rf"(?<![\dA-Za-z\-])((?:19|20)\d{{2}})(?!{_NOT_A_YEAR_AFTER})")
# A question names the years it asks about the same way, but only before 年 or a name (2022中关村论坛):
# "XZ 2000 多少钱" names no year.
ASKED_YEAR = re.compile(rf"(?<![\dA-Za-z\-])((?:19|20)\d{{2}})(?!{_NOT_A_YEAR_AFTER})(?=\s*年|[\u4e00-\u9fff])")
CJK_CHAR = re.compile(r"[\u4e00-\u9fff]")  # one Chinese character
SNIPPET_CUT = re.compile(r"\s+\.{3}")  # how a search snippet marks where it cut the page (…同比净增 ...)


def model_numbers(text: str) -> set[str]:
    """The model numbers in a text, compared without case or hyphen (XZ-3000 = xz3000)."""
    return {m.upper().replace("-", "") for m in MODEL_NUMBER.findall(text)}


def is_storable_text(text: object) -> bool:
    """Text that encodes as UTF-8, so SQLite, the embedder and JSON can keep it: not text with an
    unpaired surrogate (a cut emoji, an undecodable argv byte)."""
    if not isinstance(text, str):
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_CN_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_CN_UNITS = {"十": 10, "百": 100, "千": 1000}
# The characters of a Chinese numeral (十五, 两, 一百二十): what chinese_int reads.
CN_NUMERAL_CHARS = "".join(_CN_DIGITS) + "".join(_CN_UNITS)
# 1.5万 = 15000: the large units a number is written with, in Chinese numerals or in digits.
MULTIPLIERS = {"万": 10_000, "亿": 100_000_000}


def chinese_int(text: str) -> int | None:
    """十五 -> 15, 两 -> 2, 一百二十 -> 120; None when it is not a plain numeral."""
    total, digit = 0, None
    for char in text:
        if char in _CN_DIGITS:
            digit = _CN_DIGITS[char]
        elif char in _CN_UNITS:
            total += (1 if digit is None else digit) * _CN_UNITS[char]
            digit = None
        else:
            return None
    return total + (digit or 0)


def amount(number: str, multiplier: str = "") -> float:
    """The amount a number states: 1,299 -> 1299, 1.5 with 万 -> 15000, 十五 -> 15, 两 with 万 -> 20000."""
    plain = number.replace(",", "")
    value = float(plain) if re.fullmatch(r"\d+(?:\.\d+)?", plain) else chinese_int(plain)
    if value is None:
        raise ValueError(f"not a number: {number!r}")
    return value * MULTIPLIERS.get(multiplier, 1)


def unit_alternatives(units) -> str:
    """A regex alternation of `units`, longest first; an ASCII unit only as a whole word (5 g, 5g网络,
    but not the g of "5 great")."""
    return "|".join(
        re.escape(u) + ("(?![A-Za-z])" if u[-1].isascii() and u[-1].isalpha() else "")
        for u in sorted(units, key=len, reverse=True)
    )


def numerals_before(units) -> re.Pattern:
    """A Chinese numeral before one of `units` (七天, 两年, 十五个工作日): not after a digit (120千米)
    nor in 哪一年 / 每一天 / 第一 / 统一, which are no amounts; not inside a longer numeral (第五十八条
    stays whole) nor a bare 百/千 (百年人寿, 千元机 are names)."""
    return re.compile(
        rf"(?<![\d.哪每第这那同统唯之{CN_NUMERAL_CHARS}])(?![百千])"
        rf"[{CN_NUMERAL_CHARS}]+(?=\s*(?:{unit_alternatives(units)}))"
    )


# Durations and money a customer writes in words (七天无理由, 保修两年, 抵一块钱) where a shop writes
# digits; not counters, whose 一 is mostly an article (一个国际团队, 一件衣服), no amount asked about.
QUANTITY_NUMERAL = numerals_before("天 日 周 星期 小时 分钟 个月 年 个工作日 工作日 元 块".split())


def arabic_numerals(text: str, numeral: re.Pattern = QUANTITY_NUMERAL) -> str:
    """七天 -> 7天, 十五个工作日 -> 15个工作日: each numeral `numeral` finds, in digits."""

    def replace(match: re.Match) -> str:
        value = chinese_int(match.group(0))
        return match.group(0) if value is None else str(value)

    return numeral.sub(replace, text)


# What ends a sentence: a run of 。！？!?, or an English full stop before a space or at the end (not the
# point of 3.5, nor the "1. " of an inline list). Answers (agents/citations.py), long messages
# (agents/retrieval_question.py) and streamed replies (workflows/service.py) are all cut here.
SENTENCE_BOUNDARY = r"[。！？!?]+|(?<!\d)\.(?=\s)|\.(?=\s*$)"
_ENDS = "。！？!?"
# The point right after a sentence's end or a line break (the marks stay with their sentence): split
# on it, a text's pieces join back into the text.
SENTENCE_END = re.compile(rf"(?<=[{_ENDS}\n])(?![{_ENDS}])|(?<=[^\d{_ENDS}]\.)(?=\s)")
# ... and after a clause that a semicolon ends (a message's asks are often clauses of one sentence)
CLAUSE_END = re.compile(rf"(?<=[{_ENDS}；;\n])(?![{_ENDS}；;])|(?<=[^\d{_ENDS}]\.)(?=\s)")


# A list under a label, as an answer quotes an item of it: "功能特点：- 单口输出" reads "功能特点：单口输出"
_LIST_AFTER_LABEL = re.compile(r"：\s*[-*•·]\s+")


def joined_after_label(text: str) -> str:
    """The text with each list that opens right after a label joined to the label, as quoted."""
    return _LIST_AFTER_LABEL.sub("：", text)


def split_sentences(text: str, at_clauses: bool = False) -> list[str]:
    """The text's sentences (or, at_clauses, its clauses too), stripped, empty ones left out."""
    return [piece.strip() for piece in (CLAUSE_END if at_clauses else SENTENCE_END).split(text) if piece.strip()]


# English function words: an English text is searched by its content words. Only a text without
# Chinese drops them: in Chinese text AM, IT, US, WHO are names, and a, i letters of one (哆啦A保, i5).
ENGLISH_STOPWORDS = frozenset(
    "an the of to in on at by for from with into about as and or but if is are was were be been being am "
    "do does did have has had how what which who whom whose when where why me my we us our you your he "
    "him his she her they them their it its this that these those there here please would could should".split()
)
STOPWORDS = frozenset(
    "的 了 吗 呢 吧 啊 呀 是 在 和 与 及 或 也 都 就 还 又 有 没有 我 你 他 她 它 我们 你们 "
    "这 那 这个 那个 一个 请问 什么 怎么 怎么样 如何 多少 哪 哪个 哪些 是否 为什么 可以 能 会 "
    "要 想 问 下 一下 些 个 吗? ? , . ! : ; ( ) - / 、 “ ” ‘ ’ 《 》 【 】 … ·".split()
)


def is_english(question: str, names: str = "") -> bool:
    """Asked in English: no Chinese, and an English function word ("XZ-3000 price please") or, given
    `names` (the titles of what the evidence is about), a word outside them ("XZ-3000 price"). A
    name typed alone is English only when the names are ("Warranty"), not in a Chinese shop ("AJ1
    Retro", canonical "Air Jordan 1 Retro 高帮篮球鞋")."""
    if CJK_CHAR.search(question):
        return False
    words = re.findall(r"[a-z]+", question.lower())
    if any(word in ENGLISH_STOPWORDS or word in ("a", "i") for word in words):
        return True
    names = names.lower()
    return bool(names) and (not CJK_CHAR.search(names) or any(len(word) > 1 and word not in names for word in words))


CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
_PUNCT_OR_SPACE = re.compile(r"^[\W_]+$", re.UNICODE)

jieba.setLogLevel(logging.WARNING)
_tokenizers: dict[str, jieba.Tokenizer] = {}
_tokenizers_lock = threading.Lock()


def _tokenizer_for(lexicon: Lexicon | None) -> jieba.Tokenizer:
    key = lexicon.fingerprint() if lexicon else ""
    with _tokenizers_lock:
        tokenizer = _tokenizers.get(key)
        if tokenizer is None:
            tokenizer = jieba.Tokenizer()
            tokenizer.initialize()
            terms = lexicon.all_terms() if lexicon else []
            # a traditional shop's names also in matching form, only where it differs: jieba's
            # add_word adds to its total every time, so a word added twice changes how all text is cut
            known = set(terms)
            terms += [form for form in dict.fromkeys(map(matching_form, terms)) if form not in known]
            for term in terms:
                tokenizer.add_word(term.lower(), freq=200000)
            _tokenizers[key] = tokenizer
        return tokenizer


def tokenize(text: str, lexicon: Lexicon | None = None) -> list[str]:
    """Search tokens of the text's matching form (simplified, knowledge/chinese_script.py):
    alias-canonical, lower-cased, jieba cut_for_search, no stopwords."""
    text = matching_form(text)
    if lexicon is not None:
        text = lexicon.canonicalize(text)
    words = _tokenizer_for(lexicon).cut_for_search(text.lower())
    english = () if CJK_CHAR.search(text) else ENGLISH_STOPWORDS
    return [
        w
        for w in (w.strip() for w in words)
        if w and w not in STOPWORDS and w not in english and not _PUNCT_OR_SPACE.match(w)
    ]


# A title that is itself a customer question (an FAQ entry loaded without doc_type "faq"): long
# enough not to be a name (哪吒), with a question mark or a question word (…的区别 and 长不长 ask too).
# Here, not agents/question_cues: loading decides which documents are FAQs, below every agent.
_QUESTION_TITLE = re.compile(
    r"[？?]|吗|呢|什么|怎么|怎样|如何|哪|多少|多久|多长|是否|能否|可否|有没有|是不是|能不能|可不可以"
    r"|为什么|为何|有何|区别|(.)不\1|[么呀]$"
)  # (.)不\1: 要不要, 冲不冲突
_MIN_QUESTION_TITLE_CHARS = 8


# Characters jieba's new-word guessing glues onto an unknown name before them (潘淑是, 钟惺在, 尚恩有),
# and the modal verbs it glues onto the start of an unknown word after them (能机 of 能机洗吗: 能 + 机洗).
_GLUED_VERBS = frozenset("是在有为")
_GLUED_MODALS = frozenset("能可会要想该")


def unglued(token: str, lexicon: Lexicon | None = None) -> str:
    """An unknown word without the verb jieba glued to it (潘淑是 -> 潘淑, 能机 -> 机, whose 洗 the
    next token holds); any other token unchanged. A dictionary word (误以为, 普遍存在, 可以, 会员) is
    left whole."""
    if not all(CJK_CHAR.match(c) for c in token) or _tokenizer_for(lexicon).FREQ.get(token):
        return token
    if len(token) >= 3 and token[-1] in _GLUED_VERBS:
        return token[:-1]
    if len(token) == 2 and token[0] in _GLUED_MODALS:
        return token[1:]
    return token


def in_vocabulary(tokens: list[str], vocabulary: Container[str], longest: int = 6) -> list[str]:
    """The tokens, with each run of Chinese tokens the KB's documents never use cut again into words they
    do use, where jieba's new-word guessing glued characters around a name it does not know: a word of
    the documents across two of its tokens (发顺 丰要 of 想发顺丰要加钱吗: 发顺丰), or a token that is such a
    word with one function character glued on (顺丰要: 顺丰 + 要). A word found inside one whole token is
    not taken (货到付款 is no 付款: the documents lack the word, not its segmentation). Longest match against
    `vocabulary` (two to `longest` characters); a long word also gives its two-character words the
    documents use (发顺丰: 顺丰), as jieba's search cut does; a token of the run no word touches is kept
    (加钱). Tokens the documents use stay as they are."""
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        text = "".join(run)
        ends = list(accumulate(len(t) for t in run))
        starts = [e - len(t) for t, e in zip(run, ends, strict=True)]
        covered = [False] * len(text)
        words, i = [], 0
        while i < len(text):
            size = next((n for n in range(min(longest, len(text) - i), 1, -1) if text[i : i + n] in vocabulary), 0)
            if not size or not _glued_word(i, size, text, starts, ends):
                i += 1
                continue
            word = text[i : i + size]
            words.append(word)
            words += [word[j : j + 2] for j in range(size - 1) if size > 2 and word[j : j + 2] in vocabulary]
            covered[i : i + size] = [True] * size
            i += size
        for token, start in zip(run, starts, strict=True):  # a token none of whose characters a word took stays
            if not any(covered[start : start + len(token)]):
                words.append(token)
        out.extend(dict.fromkeys(words))
        run.clear()

    for token in tokens:
        if token not in vocabulary and len(token) >= 2 and all(CJK_CHAR.match(c) for c in token):
            run.append(token)
            continue
        if run:
            flush()
        out.append(token)
    if run:
        flush()
    return out  # a token repeated stays repeated: BM25 counts each (tokenize's own behaviour)


# function characters jieba glues onto an unknown word (顺丰要, 想发, 潘淑是, 顺丰得)
_GLUE = frozenset("是在有为能可会要想该的了吗呢吧啊得地着过都也还就把被给到")


def _glued_word(at: int, size: int, text: str, starts: list[int], ends: list[int]) -> bool:
    """Whether text[at:at+size] is a word jieba's cut hid: it runs across a token boundary, or it is a
    whole token but for one glued function character."""
    if any(at < end < at + size for end in ends[:-1]):
        return True
    token = next(k for k, (s, e) in enumerate(zip(starts, ends, strict=True)) if s <= at < e)
    left = text[starts[token] : at] + text[at + size : ends[token]]
    return len(left) == 1 and left in _GLUE


def has_term(text: str, term: str) -> bool:
    """Substring match for CJK words; ASCII words must stand alone (the L of L码, not of LED), and
    one typed with letters and digits glued is also found written apart (emnlp2022: EMNLP 2022, GPT-4)."""
    if term.isascii():
        return _ascii_term(term).search(text) is not None
    return term in text


_LETTER_DIGIT = re.compile(r"(?<=[a-z])(?=\d)|(?<=\d)(?=[a-z])")


@lru_cache(maxsize=4096)
def _ascii_term(term: str) -> re.Pattern:
    glued = r"[\s_-]?".join(re.escape(part) for part in _LETTER_DIGIT.split(term))
    return re.compile(rf"(?<![a-z0-9]){glued}(?![a-z0-9])")


def series_names(title_a: str, title_b: str) -> tuple[str, str] | None:
    """The names two titles of one series of pages differ in (2021年甘肃省录取分数线 / 2021年安徽省录取分数线
    -> 甘肃, 安徽; 名单(山西) / 名单(山东) -> 西, 东), or None: each page is about its own place or thing.
    A name is up to 6 Chinese characters, no number or version, and the titles share most of the rest."""
    prefix = len(os.path.commonprefix([title_a, title_b]))
    suffix = len(os.path.commonprefix([title_a[prefix:][::-1], title_b[prefix:][::-1]]))
    names = (title_a[prefix : len(title_a) - suffix], title_b[prefix : len(title_b) - suffix])
    shared = prefix + suffix
    if (
        shared >= 4
        and shared >= 0.6 * min(len(title_a), len(title_b))
        and all(len(name) <= 6 and CJK_RUN.fullmatch(name) for name in names)
    ):
        return names
    return None


def bigram_dice(a: str, b: str) -> float:
    """How alike two short texts are: Dice overlap of their character bigrams, punctuation and
    case ignored (word-cut free, so 保单贷款怎么办理 and 保单贷款能办吗 compare fairly)."""

    def grams(text: str) -> set[str]:
        text = re.sub(r"[\W_]+", "", text.lower())
        return {text[i : i + 2] for i in range(len(text) - 1)} or ({text} if text else set())

    first, second = grams(a), grams(b)
    return 2 * len(first & second) / (len(first) + len(second)) if first and second else 0.0


def is_faq(item) -> bool:
    """An FAQ entry (a chunk or a hit): typed so, or an untyped document whose title is a
    customer's question — its title is the standard question, its text the answer."""
    if item.doc_type == "faq":
        return True
    title = (item.title or "").strip()
    return (
        item.doc_type == "doc" and len(title) >= _MIN_QUESTION_TITLE_CHARS and _QUESTION_TITLE.search(title) is not None
    )
