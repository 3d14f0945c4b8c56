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
from collections.abc import Callable, Collection, Iterable
from typing import Generic, NamedTuple, TypeVar

from citescope.agents.self_probes import NOT_HEADINGS, field_labels, labelled_lines
from citescope.agents.value_kinds import label_kinds
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.schema import Chunk
from citescope.knowledge.text import CJK_CHAR

# a heading naming two aspects (洗涤/保养, 尺码与版型) names each
_HEADING_PARTS = re.compile(r"[/／、&＆]|与|和|及")
_MIN_CHARS, _MAX_CHARS = 2, 6  # 产地 … 手机配件说明; longer headings are a page's own (本政策适用范围说明)
MIN_DOCUMENTS = 2  # an aspect is shared: one page's own heading names no kind of fact
FIELD_SHEET_SHARE, MIN_FIELDS = 2 / 3, 3  # a page that is a list of fields, not prose with a few of them
_LIST_MARKER = re.compile(r"^[ \t]*[-*•·]\s*", re.MULTILINE)  # - 防水：IPX4… is a labelled line too


def kb_aspects(chunks: Iterable[Chunk], headings: bool = True) -> frozenset[str]:
    """The headings (each part of a joined one) and field labels that at least MIN_DOCUMENTS documents of
    different titles use; FAQ entries are questions, not pages with aspects. headings=False: the field
    labels alone (a label names one value; a heading can name a whole topic: 运费说明, 办理流程)."""
    titles: dict[str, set[str]] = defaultdict(set)
    for chunk in chunks:
        if chunk.doc_type == "faq":
            continue
        words = set(field_labels(_LIST_MARKER.sub("", chunk.text)))
        if headings and chunk.section and chunk.section not in NOT_HEADINGS and chunk.section != chunk.title:
            words.update(_HEADING_PARTS.split(chunk.section))
        for word in words:
            word = word.strip()
            if _MIN_CHARS <= len(word) <= _MAX_CHARS and CJK_CHAR.search(word):
                titles[word].add(chunk.title)
    return frozenset(word for word, named in titles.items() if len(named) >= MIN_DOCUMENTS)


def field_sheet_labels(chunks: Iterable[Chunk]) -> frozenset[str]:
    """The KB's field labels when its pages are field sheets — at least half of its documents (FAQ entries
    aside) mostly `label：value` lines with labels other documents share, as records written from one
    template are — else none. On such a page a question about it asks one of its fields; on a page of
    prose sections (a shop's product page) it can ask anything, and reading a field into it misleads
    (agents/aspect_reading.py, measured in docs/answerer.md)."""
    chunks = [c for c in chunks if c.doc_type != "faq"]
    labels = kb_aspects(chunks, headings=False)
    lines: dict[str, list[str]] = defaultdict(list)
    for chunk in chunks:
        lines[chunk.doc_id].extend(line for line in _LIST_MARKER.sub("", chunk.text).splitlines() if line.strip())
    sheets = sum(_is_field_sheet(doc_lines, labels) for doc_lines in lines.values())
    return labels if lines and sheets * 2 >= len(lines) else frozenset()


class FieldSheets(NamedTuple):
    labels: frozenset[str]  # field_sheet_labels
    kinds: dict[str, str]  # each label's kind of value (agents/value_kinds.py), where its values share one


def field_sheets(chunks: Iterable[Chunk]) -> FieldSheets:
    """The KB's field-sheet labels and the kind of value each holds across its documents (主治医生: person,
    入院日期: time), read in one pass over the chunks; none when the KB is not field sheets."""
    chunks = [c for c in chunks if c.doc_type != "faq"]
    labels = field_sheet_labels(chunks)
    if not labels:
        return FieldSheets(labels, {})
    values: dict[str, list[str]] = defaultdict(list)
    for chunk in chunks:
        for label, value in labelled_lines(_LIST_MARKER.sub("", chunk.text)):
            if label in labels:
                values[label].append(value)
    return FieldSheets(labels, label_kinds(values))


def _is_field_sheet(lines: list[str], labels: frozenset[str]) -> bool:
    """At least FIELD_SHEET_SHARE of a document's lines are shared fields, and at least MIN_FIELDS of them."""
    fields = sum(any(label.strip() in labels for label in field_labels(line)) for line in lines)
    return fields >= MIN_FIELDS and fields >= FIELD_SHEET_SHARE * len(lines)


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


Read = TypeVar("Read")


class KBAspects(Generic[Read]):
    """What a reader reads of a KB's chunks (its aspects: kb_aspects; its field labels: field_sheet_labels;
    both at once: field_sheets) as the KB is now: read again when its version moves on (an
    ingest while serving adds a page with a new heading), as the entity index is. Called for the current read."""

    def __init__(self, kb: KnowledgeBase, read: Callable[[Iterable[Chunk]], Read]):
        self.kb = kb
        self.read = read
        self._read: tuple[int, Read] | None = None  # (the KB's version, what was read of it)

    def __call__(self) -> Read:
        version = self.kb.version
        if self._read is None or self._read[0] != version:
            self._read = (version, self.read(self.kb.all_chunks()))
        return self._read[1]
