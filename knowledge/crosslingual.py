"""The words a shop's documents use for what a question says in other words, so the evidence can
be found and scored: the Chinese words for an English question, and for a Chinese shopper's everyday
words.

The dense leg (multilingual e5) already reads across languages and paraphrase, weakly; BM25, the
reranker's term and body coverage and so the refusal gate do not: "Can I take the XZ-3000 power bank
on a plane?" shares no token with "可以随身携带登机", nor does "充电宝能带上飞机吗", and "寄到上海几天能到"
none with "江浙沪地区：发货后 1-2 天送达". Two glossaries give the documents' words: for English words
(knowledge/glossary_en.json) and for everyday Chinese ones (knowledge/glossary_zh.json, one way: 洗澡 is
淋浴, not the reverse). Where a place is delivered is the shop's own word: its shop profile's delivery
zones (knowledge/shop_profile.py) join the glossary's delivery context, so 上海 is 江浙沪 in the demo
shop's questions about delivery and nothing in a shop without zones. The pipeline searches with
them added (agents/arms.template_values), scores the evidence for the question and for its
documents' wording (document_query, the better counts), and the answerer reads an English question
with them against Chinese evidence (worded_for) and takes a sentence with an everyday word's
document word as saying what is asked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

import jieba
from pypinyin import lazy_pinyin

from citescope.knowledge.shop_profile import ShopProfile
from citescope.knowledge.text import CJK_CHAR, ENGLISH_STOPWORDS

GLOSSARY_PATH = Path(__file__).with_name("glossary_en.json")
EVERYDAY_PATH = Path(__file__).with_name("glossary_zh.json")
Zones = tuple[tuple[str, tuple[str, ...]], ...]  # a shop's (place, its zone's words), hashable for the caches
NO_ZONES: Zones = ()


def _zones(shop: ShopProfile | None) -> Zones:
    return shop.zone_table if shop is not None else NO_ZONES


def _read(path: Path) -> dict:
    try:
        glossary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a valid glossary ({exc})") from exc
    if not isinstance(glossary, dict) or not isinstance(glossary.get("words"), dict):
        raise ValueError(f'{path}: not a valid glossary (no "words" table)')
    return glossary


@lru_cache(maxsize=4)
def _english(path: Path = GLOSSARY_PATH) -> tuple[re.Pattern, dict[str, list[str]]]:
    """The pattern of the glossary's words and phrases as a question writes them (whole words, the last one
    inflected: jackets, ordered, cancelled, shipping's own entry first) and each form's Chinese words."""
    listed = {k.lower(): v for k, v in _read(path)["words"].items()}
    forms = dict(listed)  # a listed form keeps its own words (shipping is 运费, not ship's 发货)
    for key, chinese in listed.items():
        for form in _inflections(key):
            forms.setdefault(form, chinese)
    phrases = sorted(forms, key=len, reverse=True)  # "free shipping" before "shipping"
    pattern = re.compile(r"(?<![a-z0-9])(" + "|".join(re.escape(p) for p in phrases) + r")(?![a-z0-9])")
    return pattern, forms


# ship -> shipped, cancel -> cancelled; a form no one writes (orderred, expireed) matches nothing and costs nothing
_DOUBLED = re.compile(r"[aeiou][bdglmnprt]$")


def _inflections(phrase: str) -> list[str]:
    """Regular English forms of a phrase's last word: plural or third person, past, -ing (order: orders,
    ordered, ordering; expire: expired, expiring; ship: shipped, shipping)."""
    if not phrase[-1:].isalpha():
        return []
    forms = [phrase + "s", phrase + "es", phrase + "ed", phrase + "ing"]
    if phrase.endswith("e"):
        forms += [phrase + "d", phrase[:-1] + "ing"]
    if _DOUBLED.search(phrase) and not re.search(r"[aeiou]{2}[a-z]$", phrase):
        forms += [phrase + phrase[-1] + "ed", phrase + phrase[-1] + "ing"]
    return forms


@lru_cache(maxsize=8)
def _everyday(
    path: Path = EVERYDAY_PATH, zones: Zones = NO_ZONES
) -> list[tuple[re.Pattern | None, Mapping[str, Sequence[str]]]]:
    """The glossary's tables, each with the words a question must also have for it to apply (None:
    always); a context marked shop_zones is followed by the shop's places with its zones' names."""
    glossary = _read(path)
    try:
        tables: list[tuple[re.Pattern | None, Mapping[str, Sequence[str]]]] = [(None, glossary["words"])]
        for context in glossary.get("in_context", []):
            when = re.compile(context["when"])
            tables.append((when, context["words"]))
            if context.get("shop_zones") and zones:
                tables.append((when, dict(zones)))
        return tables
    except (KeyError, TypeError, re.error) as exc:
        raise ValueError(f"{path}: not a valid glossary ({exc})") from exc


def chinese_words(question: str, path: Path = GLOSSARY_PATH) -> list[str]:
    """The glossary's Chinese words for the English words of a question asked in English (at least
    three English words and no more Chinese characters: not the English title in 《Gold》是谁唱的), in
    order, each once."""
    return list(dict.fromkeys(w for words in chinese_concepts(question, path) for w in words))


def chinese_concepts(question: str, path: Path = GLOSSARY_PATH) -> list[tuple[str, ...]]:
    """What chinese_words gives, one entry per thing the question asks in the glossary's words: the Chinese
    words of each English word or phrase ("cash on delivery" -> (货到付款,), "shipping" -> (运费, 配送, 发货)),
    in order, each once."""
    english = len(re.findall(r"[A-Za-z]+", question))
    if english < 3 or english < len(CJK_CHAR.findall(question)):
        return []
    pattern, words = _english(path)
    return list(dict.fromkeys(tuple(words[match.group(1)]) for match in pattern.finditer(question.lower())))


@lru_cache(maxsize=256)  # one question is worded for several arms, queries and the answerer
def _everyday_spans(
    question: str, path: Path = EVERYDAY_PATH, zones: Zones = NO_ZONES
) -> tuple[tuple[int, int, Sequence[str]], ...]:
    """(start, end, documents' words) of the everyday words of a Chinese question, longest first at each
    place, each a run of whole jieba words (退款几天到账 has 到账, not 几天到)."""
    if not CJK_CHAR.search(question):
        return ()
    text = question.lower()
    tables = [words for when, words in _everyday(path, zones) if when is None or when.search(text)]
    longest = _longest_word(path, zones)
    bounds, at = [0], 0
    for word in jieba.lcut(text):
        at += len(word)
        bounds.append(at)
    spans, i = [], 0
    while i < len(bounds) - 1:
        start = bounds[i]
        # Only runs no longer than the glossary's longest word can be one of its words: the scan per
        # place is bounded by that, not by the question's length (a 2,000-character message).
        reach = i + 1
        while reach < len(bounds) - 1 and bounds[reach + 1] - start <= longest:
            reach += 1
        found = next(
            (
                (j, words[text[start : bounds[j]]])
                for j in range(reach, i, -1)
                for words in tables
                if text[start : bounds[j]] in words
            ),
            None,
        )
        if found is None:
            i += 1
            continue
        spans.append((start, bounds[found[0]], found[1]))
        i = found[0]
    return tuple(spans)


@lru_cache(maxsize=8)
def _longest_word(path: Path = EVERYDAY_PATH, zones: Zones = NO_ZONES) -> int:
    return max((len(word) for _, words in _everyday(path, zones) for word in words), default=0)


def everyday_words(question: str, path: Path = EVERYDAY_PATH, *, shop: ShopProfile | None = None) -> list[str]:
    """The documents' words for the everyday words of a Chinese question (洗澡 -> 淋浴; 上海 -> 江浙沪 when
    it asks about delivery and the shop's zones put 上海 in 江浙沪), in order, each once, without those
    the rest of the question says."""
    return _not_said(question, _everyday_spans(question, path, _zones(shop)))


def _not_said(question: str, spans: Sequence[tuple[int, int, Sequence[str]]]) -> list[str]:
    """The spans' documents' words, in order, each once, but those the question says outside the spans."""
    rest = question.lower()
    for start, end, _ in reversed(spans):
        rest = rest[:start] + " " + rest[end:]
    return list(dict.fromkeys(w for _, _, words in spans for w in words if w.lower() not in rest))


def document_words(question: str, shop: ShopProfile | None = None) -> list[str]:
    """The documents' words for a question's English or everyday words (shop: whose delivery zones)."""
    return chinese_words(question) or everyday_words(question, shop=shop)


_NAME = re.compile(
    r"(?<![A-Za-z0-9\-])[A-Za-z\-]*\d[A-Za-z0-9\-]*|[\u4e00-\u9fff]+"
)  # XZ-3000, T20, AJ1, and Chinese a question names


# a capitalised word or run of them in an English question (Hong Kong, PayPal, Beijing, USB): a name, unless
# it is a function word opening the sentence (Do, Can, Is)
_WORD = r"[A-Z][A-Za-z]*(?:-[A-Za-z0-9]+)*"  # USB-C is one word
_CAPITALISED = re.compile(rf"(?<![A-Za-z0-9\-]){_WORD}(?: {_WORD})*(?![A-Za-z0-9\-])")
# words that open an English question capitalised and name nothing: the stopwords and these
_OPENERS = ENGLISH_STOPWORDS | frozenset(
    "can will may shall i any also just hi hey hello thanks thank sorry yes no ok okay dear".split()
)


def english_names(question: str, path: Path = GLOSSARY_PATH) -> list[str]:
    """The names an English question says that the glossary does not translate (Hong Kong, PayPal,
    Shengyu): a capitalised word or run of them, not a function word, not inside a glossary phrase (SF
    Express) and without digits (model numbers are _NAME's). Evidence that says none of a name
    (`says_name`) answers another question: "Do you ship to Hong Kong?" is not answered by 江浙沪's delivery
    times, as 香港 keeps "能寄到香港吗" from them."""
    pattern, _ = _english(path)
    known = [match.span() for match in pattern.finditer(question.lower())]
    names = []
    for match in _CAPITALISED.finditer(question):
        words = match.group(0).lower().split(" ")
        while words and words[0] in _OPENERS:  # Do, Can, Is opening the question
            words.pop(0)
        overlaps = any(start < match.end() and match.start() < end for start, end in known)
        if words and not overlaps and not any(char.isdigit() for word in words for char in word):
            names.append(" ".join(words))
    return list(dict.fromkeys(names))


def says_name(text: str, name: str) -> bool:
    """Whether the text says the name (lower-case, from english_names): as written, or in Chinese characters
    whose pinyin it is (a shopper writes 声屿 as Shengyu, 云迹 as Yunji): syllable by syllable, tones and
    spaces dropped, so "yunji" is 云迹 of 云迹 B15 but not a run across two words' syllables' letters."""
    text = text.lower()
    if name in text:
        return True
    letters = re.sub(r"[^a-z]", "", name)
    if not letters or not CJK_CHAR.search(text):
        return False
    syllables = [s for s in lazy_pinyin(text) if s.isalpha() and s.isascii()]
    for start in range(len(syllables)):
        joined = ""
        for syllable in syllables[start:]:
            joined += syllable
            if not letters.startswith(joined):
                break
            if joined == letters:
                return True
    return False


def document_query(question: str, shop: ShopProfile | None = None) -> str | None:
    """The question as the documents word it, for scoring them; None when no glossary knows its words.
    An English one: its model numbers and Chinese names with the glossary's words ("can i take the
    XZ-3000 power bank on a plane?" -> "XZ-3000 充电宝 飞机 登机"), since against Chinese evidence every
    English word would count as a word it lacks. A Chinese one: each everyday word replaced by the
    documents' words ("S1耳机能戴着洗澡吗" -> "S1耳机能戴着 淋浴 吗")."""
    words = chinese_words(question)
    if words:
        return " ".join(dict.fromkeys([*_NAME.findall(question), *words]))
    spans = _everyday_spans(question, EVERYDAY_PATH, _zones(shop))
    if not _not_said(question, spans):  # none, or only words the question says itself (几天到账 of 退款几天到账)
        return None
    worded = question.lower()
    for start, end, replacement in reversed(spans):
        worded = f"{worded[:start]} {' '.join(replacement)} {worded[end:]}"
    return " ".join(worded.split())


def with_document_words(question: str, shop: ShopProfile | None = None) -> str:
    """The question, then the documents' words for its English or everyday words (as it is if none)."""
    words = document_words(question, shop)
    return f"{question} {' '.join(words)}" if words else question


def worded_for(question: str, evidence_texts: list[str]) -> str:
    """The question as matched against this evidence: with the glossary's Chinese words when it has
    no Chinese and the evidence is Chinese (most of its passages); as it is against English pages,
    where Chinese words would only count as words the pages lack."""
    chinese = sum(bool(CJK_CHAR.search(text)) for text in evidence_texts)
    if CJK_CHAR.search(question) or not evidence_texts or 2 * chinese <= len(evidence_texts):
        return question
    return with_document_words(question)
