"""Traditional and simplified Chinese: a customer in Hong Kong or Taiwan asks "退貨運費誰承擔？" of a
shop whose pages say 退货运费. The question is read in simplified characters (search, analysis and
answer matching all see 退货运费), and the answer is given back in the script it was asked in.

OpenCC's phrase tables do the conversion (头发 -> 頭髮, 乾隆 stays 乾隆), not a character map.
A question counts as traditional when at least a tenth of its Chinese characters change: simplified
questions with one traditional character typed by habit (如意險, 店舖) stay simplified.

A knowledge base may be written in either script, or both: every text is matched in one form,
`matching_form` (simplified), whatever script it is written in; what is stored, shown and cited
stays as written.
"""

from __future__ import annotations

import re
import threading
from functools import cache, lru_cache

import opencc

_TRADITIONAL_SHARE = 0.1
# Answers use Taiwan's standard forms (為, 裡), not OpenCC's dictionary forms (爲, 裏), which read as
# archaic in Taiwan and Hong Kong alike.
_TRADITIONAL = "s2tw"
_CJK = re.compile(r"[\u4e00-\u9fff]")
_CITATION = re.compile(r"(【[^】]*】)")  # chunk ids are the KB's own (…#商品简介-0): never converted
_lock = threading.Lock()
# Bumped when what a KB text is matched as changes: KBs ingested before re-read traditional documents.
MATCHING_FORM = 1


@cache
def _converter(config: str) -> opencc.OpenCC:
    with _lock:  # the tables load once, whichever thread asks first
        return opencc.OpenCC(config)


def to_simplified(text: str) -> str:
    """The text in simplified characters (simplified text comes back unchanged)."""
    return _converter("t2s").convert(text) if _CJK.search(text) else text


@lru_cache(maxsize=1 << 15)  # a chunk is matched against every question: its form is computed once
def matching_form(text: str) -> str:
    """The form every KB text and question is tokenised, scored and compared in: simplified.
    Only text written in traditional is converted: OpenCC's t2s also changes a few characters of
    simplified text (the surname 沈 -> 沉, 舖, 於, 綝 in names), which must read as they did."""
    return to_simplified(text) if written_in_traditional(text) else text


def written_in_traditional(text: str) -> bool:
    """Is the text written in traditional characters (a tenth or more of its Chinese characters)?"""
    chinese = _CJK.findall(text)
    if not chinese:
        return False
    joined = "".join(chinese)
    simplified = to_simplified(joined)
    if len(simplified) != len(joined):  # a phrase converted to another length: count character by character
        simplified = "".join(to_simplified(character) for character in chinese)
    changed = sum(a != b for a, b in zip(joined, simplified, strict=False))
    return changed >= _TRADITIONAL_SHARE * len(chinese)


def in_traditional(answer: str) -> str:
    """The answer in traditional characters, its 【citation】 ids as they are."""
    convert = _converter(_TRADITIONAL).convert
    return "".join(piece if _CITATION.fullmatch(piece) else convert(piece) for piece in _CITATION.split(answer))


def in_simplified(answer: str) -> str:
    """The answer in simplified characters, its 【citation】 ids as they are: a simplified question
    answered from a traditional page reads the quote in its own script."""
    convert = _converter("t2s").convert
    return "".join(piece if _CITATION.fullmatch(piece) else convert(piece) for piece in _CITATION.split(answer))


def warm_up() -> None:
    """Load both tables now rather than on the first traditional question."""
    _converter("t2s"), _converter(_TRADITIONAL)
