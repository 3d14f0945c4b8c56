"""Chinese words for an English question, so a Chinese shop's evidence can be found and scored.

The dense leg (multilingual e5) already reads across languages; BM25, the reranker's term and body
coverage and so the refusal gate do not: "Can I take the XZ-3000 power bank on a plane?" shares no
token with "可以随身携带登机". The glossary (knowledge/glossary_en.json) gives the shop's Chinese words for
the English ones; the pipeline searches with them added (workflows/arms.template_values), scores the evidence for
the question and for its Chinese wording (chinese_query, the better counts), and the answerer and the
conflict check read it with them against Chinese evidence (worded_for).
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from knowledge.text import CJK_CHAR

GLOSSARY_PATH = Path(__file__).with_name("glossary_en.json")


@lru_cache(maxsize=4)
def _glossary(path: Path = GLOSSARY_PATH) -> tuple[re.Pattern, dict[str, list[str]]]:
    try:
        words = json.loads(path.read_text(encoding="utf-8"))["words"]
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(f"{path}: not a valid glossary ({exc})") from exc
    phrases = sorted(words, key=len, reverse=True)  # "free shipping" before "shipping"
    # whole words, a plural s allowed (earbuds / earbud is listed as earbuds; jackets -> jacket)
    pattern = re.compile(r"(?<![a-z0-9])(" + "|".join(re.escape(p) for p in phrases) + r")s?(?![a-z0-9])")
    return pattern, {k.lower(): v for k, v in words.items()}


def chinese_words(question: str, path: Path = GLOSSARY_PATH) -> list[str]:
    """The glossary's Chinese words for the English words of a question asked in English (at least
    three English words and no more Chinese characters: not the English title in 《Gold》是谁唱的), in
    order, each once."""
    english = len(re.findall(r"[A-Za-z]+", question))
    if english < 3 or english < len(CJK_CHAR.findall(question)):
        return []
    pattern, words = _glossary(path)
    found: list[str] = []
    for match in pattern.finditer(question.lower()):
        found += words[match.group(1)]
    return list(dict.fromkeys(found))


_NAME = re.compile(r"(?<![A-Za-z0-9\-])[A-Za-z\-]*\d[A-Za-z0-9\-]*|[\u4e00-\u9fff]+")  # XZ-3000, T20, AJ1, and Chinese a question names


def chinese_query(question: str, path: Path = GLOSSARY_PATH) -> str | None:
    """The question as a Chinese shop's evidence words it: its model numbers and Chinese names with
    the glossary's words ("can i take the XZ-3000 power bank on a plane?" -> "XZ-3000 充电宝 飞机 登机"),
    for scoring Chinese evidence, where every English word would count as a word it lacks; None
    when the glossary knows none of its words."""
    words = chinese_words(question, path)
    if not words:
        return None
    return " ".join(dict.fromkeys([*_NAME.findall(question), *words]))


def with_chinese_words(question: str, path: Path = GLOSSARY_PATH) -> str:
    """The question, then the glossary's Chinese words for its English ones (as it is if none)."""
    words = chinese_words(question, path)
    return f"{question} {' '.join(words)}" if words else question


def worded_for(question: str, evidence_texts: list[str]) -> str:
    """The question as matched against this evidence: with the glossary's Chinese words when it has
    no Chinese and the evidence is Chinese (most of its passages); as it is against English pages,
    where Chinese words would only count as words the pages lack."""
    chinese = sum(bool(CJK_CHAR.search(text)) for text in evidence_texts)
    if CJK_CHAR.search(question) or not evidence_texts or 2 * chinese <= len(evidence_texts):
        return question
    return with_chinese_words(question)
