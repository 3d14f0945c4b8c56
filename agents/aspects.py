"""A KB's aspects: the kinds of fact its pages state under a section heading or a field label that
several of its documents share (保修, 产地, 洗涤/保养 on product pages; a template's 过敏史, 主治医生).

A question that names an aspect asks for that fact: "星择 XZ-2000 保修多久" is answered by a sentence
under 保修 or one that says 保修, not by the page's other durations (充满约需 3.5 小时), and when the
page has no 保修 section nothing of it answers. Read from the KB's own chunks, so a shop's headings
and a records template's labels are its vocabulary, with no word list to keep (issue #44: a sibling's
fact, or a fact the page lacks, is no answer).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Iterable

from citescope.agents.self_probes import NOT_HEADINGS, field_labels
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.schema import Chunk
from citescope.knowledge.text import CJK_CHAR

# a heading naming two aspects (洗涤/保养, 尺码与版型) names each
_HEADING_PARTS = re.compile(r"[/／、&＆]|与|和|及")
_MIN_CHARS, _MAX_CHARS = 2, 6  # 产地 … 手机配件说明; longer headings are a page's own (本政策适用范围说明)
MIN_DOCUMENTS = 2  # an aspect is shared: one page's own heading names no kind of fact
_LIST_MARKER = re.compile(r"^[ \t]*[-*•·]\s*", re.MULTILINE)  # - 防水：IPX4… is a labelled line too


def kb_aspects(chunks: Iterable[Chunk]) -> frozenset[str]:
    """The headings (each part of a joined one) and field labels that at least MIN_DOCUMENTS documents of
    different titles use; FAQ entries are questions, not pages with aspects."""
    titles: dict[str, set[str]] = defaultdict(set)
    for chunk in chunks:
        if chunk.doc_type == "faq":
            continue
        words = set(field_labels(_LIST_MARKER.sub("", chunk.text)))
        if chunk.section and chunk.section not in NOT_HEADINGS and chunk.section != chunk.title:
            words.update(_HEADING_PARTS.split(chunk.section))
        for word in words:
            word = word.strip()
            if _MIN_CHARS <= len(word) <= _MAX_CHARS and CJK_CHAR.search(word):
                titles[word].add(chunk.title)
    return frozenset(word for word, named in titles.items() if len(named) >= MIN_DOCUMENTS)


def asked_aspects(terms: Iterable[str], aspects: Iterable[str], names: Collection[str] = ()) -> set[str]:
    """The aspects a question's words (lower-case) name: a word that is one (保修) or holds one (保修期),
    unless one of the shop's names among the words holds it (拉杆 of 拉杆箱, a kind of product: the
    tokenizer gives both)."""
    terms = list(terms)
    in_names = [t for t in terms if t in names]
    return {a for a in aspects if any(a in t for t in terms) and not any(a in n and a != n for n in in_names)}


def states_aspect(text: str, aspects: Iterable[str]) -> bool:
    """Whether a (canonical, lower-case) heading or text says one of the aspects."""
    return any(a in text for a in aspects)


class KBAspects:
    """A KB's aspects as it is now: read again when its version moves on (an ingest while serving adds a
    page with a new heading), as the entity index is. Called for the current set."""

    def __init__(self, kb: KnowledgeBase):
        self.kb = kb
        self._version: int | None = None
        self._words: frozenset[str] = frozenset()

    def __call__(self) -> frozenset[str]:
        version = self.kb.version
        if version != self._version:
            self._words, self._version = kb_aspects(self.kb.all_chunks()), version
        return self._words
