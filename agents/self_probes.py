"""Labelled probe questions made from a KB's own documents, for calibrating its refusal threshold
without anyone's labelled questions (workflows/self_calibration.py scores them; issue #44).

Four kinds, each labelled by construction:
- heading (answerable): an FAQ's title, or a page's title with one of its section headings
  ("山野 峰刃 GTX 冲锋衣的产地"), whose answer is that chunk;
- cloze (answerable): for text without headings, one sentence taken out of its passage (inverse
  cloze): the question is the sentence, and the passage is searched with that sentence removed, so
  the score is how well the rest of the passage matches it, not a copy matching itself;
- held_out (unanswerable): each answerable question again with its whole document out of the KB;
- sibling (unanswerable): a near miss: the question names a sibling entity (another page of the
  same type and category) in place of its own, and the sibling's chunks of that section are out of
  the KB (a cloze sentence's sibling keeps nothing out: the sibling's article does not state the
  fact of another's) — the entity is known, its fact is not, and the near entity's fact is there.

Deterministic for a seed, bounded (max_probes), read from the KB's chunks only.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Literal

from citescope.knowledge.chunking import SKU_OVERVIEW_SECTION
from citescope.knowledge.schema import Chunk
from citescope.knowledge.text import split_sentences

ProbeKind = Literal["heading", "cloze", "held_out", "sibling"]
# sections that are table rows or generated summaries, not a heading a shopper would ask by
_NOT_HEADINGS = frozenset({"SKU", SKU_OVERVIEW_SECTION})
_MIN_SENTENCE, _MAX_SENTENCE = 8, 80  # a cloze question: a real sentence, not a fragment or a paragraph
_MIN_PASSAGE_LEFT = 20  # the passage must still say something once the sentence is out


@dataclass(frozen=True)
class Probe:
    question: str
    kind: ProbeKind
    doc_id: str  # the document the question was made from
    answerable: bool
    # what is out of the KB for this probe: (doc_id, section); section None = the whole document
    excluded: tuple[tuple[str, str | None], ...] = ()
    removed_sentence: str = ""  # cloze: the sentence taken out of its document's passages
    named: str = ""  # sibling: the sibling entity the question names

    def excludes(self, doc_id: str, section: str) -> bool:
        return any(doc_id == d and (s is None or s == section) for d, s in self.excluded)


@dataclass
class _Doc:
    doc_id: str
    title: str
    doc_type: str
    category: str
    chunks: list[Chunk] = field(default_factory=list)

    def sections(self) -> set[str]:
        return {c.section for c in self.chunks if c.section}


def make_probes(chunks: list[Chunk], seed: int = 0, max_probes: int = 200) -> list[Probe]:
    """Answerable probes (headings, else cloze sentences; at most one per document first, so many
    documents are covered), each with its held-out twin, then sibling probes with what is left of
    max_probes (at most a fifth of it)."""
    rng = random.Random(seed)
    docs = _documents(chunks)
    per_doc = [_answerable_of(doc, rng) for doc in docs]
    sibling_budget = max_probes // 5
    answerable_budget = (max_probes - sibling_budget) // 2
    answerable = _spread(per_doc, answerable_budget, rng)
    probes: list[Probe] = []
    by_id = {doc.doc_id: doc for doc in docs}
    for probe in answerable:
        probes.append(probe)
        # out with it go the documents of the same name (a product's page and its SKU table are two)
        title = by_id[probe.doc_id].title
        same = [d.doc_id for d in docs if d.doc_id == probe.doc_id or (title and d.title == title)]
        held_out = tuple((doc_id, None) for doc_id in same)
        probes.append(Probe(probe.question, "held_out", probe.doc_id, answerable=False, excluded=held_out))
    siblings = [s for probe in answerable if (s := _sibling_of(probe, by_id, docs, rng)) is not None]
    rng.shuffle(siblings)
    probes.extend(siblings[: max(0, min(sibling_budget, max_probes - len(probes)))])
    return probes


def _documents(chunks: list[Chunk]) -> list[_Doc]:
    docs: dict[str, _Doc] = {}
    for chunk in sorted(chunks, key=lambda c: (c.doc_id, c.position, c.chunk_id)):
        doc = docs.setdefault(
            chunk.doc_id, _Doc(chunk.doc_id, chunk.title.strip(), chunk.doc_type, chunk.category or "")
        )
        doc.chunks.append(chunk)
    return list(docs.values())


def _answerable_of(doc: _Doc, rng: random.Random) -> list[Probe]:
    """The document's answerable probes, shuffled: its headings as questions, else cloze sentences."""
    headings: list[Probe] = []
    if doc.doc_type == "faq" and doc.title:
        headings.append(Probe(doc.title, "heading", doc.doc_id, answerable=True))
    elif doc.title:
        for section in sorted(doc.sections() - _NOT_HEADINGS):
            if section != doc.title:
                headings.append(Probe(f"{doc.title}的{section}", "heading", doc.doc_id, answerable=True))
    if headings:
        rng.shuffle(headings)
        return headings
    clozes = [
        Probe(sentence, "cloze", doc.doc_id, answerable=True, removed_sentence=sentence)
        for chunk in doc.chunks
        for sentence in _cloze_sentences(chunk.text)
    ]
    rng.shuffle(clozes)
    return clozes


def _cloze_sentences(text: str) -> list[str]:
    sentences = split_sentences(text)
    if len(sentences) < 2:  # a one-sentence passage would be empty without it
        return []
    return [
        s
        for s in sentences
        if _MIN_SENTENCE <= len(s) <= _MAX_SENTENCE and len(text) - len(s) >= _MIN_PASSAGE_LEFT and text.count(s) == 1
    ]


def _spread(per_doc: list[list[Probe]], budget: int, rng: random.Random) -> list[Probe]:
    """Round robin over the documents in a seeded order: one probe of each before a second of any."""
    order = list(range(len(per_doc)))
    rng.shuffle(order)
    chosen: list[Probe] = []
    depth = 0
    while len(chosen) < budget and any(depth < len(per_doc[i]) for i in order):
        for i in order:
            if depth < len(per_doc[i]) and len(chosen) < budget:
                chosen.append(per_doc[i][depth])
        depth += 1
    return chosen


def _sibling_of(probe: Probe, by_id: dict[str, _Doc], docs: list[_Doc], rng: random.Random) -> Probe | None:
    """The probe's question about a sibling of its document (same type, same category when it has
    one), or None when it names no title or has no sibling. FAQ titles are questions, not names."""
    own = by_id[probe.doc_id]
    if own.doc_type == "faq" or len(own.title) < 2 or own.title not in probe.question:
        return None
    siblings = [
        d
        for d in docs
        if d.doc_id != own.doc_id
        and d.doc_type == own.doc_type
        and d.category == own.category
        and len(d.title) >= 2
        and d.title not in own.title
        and own.title not in d.title
    ]
    siblings = list({d.title: d for d in siblings}.values())  # one choice per name, however many documents
    if not siblings:
        return None
    sibling = rng.choice(siblings)
    question = probe.question.replace(own.title, sibling.title)
    if probe.kind == "heading":
        section = probe.question[len(own.title) + 1 :]  # "<title>的<section>"
        # every document of the sibling's name loses that section (a product's page and its SKU table are two)
        named = tuple((d.doc_id, section) for d in docs if d.title == sibling.title)
        return Probe(question, "sibling", own.doc_id, False, excluded=named, named=sibling.title)
    return Probe(question, "sibling", own.doc_id, False, named=sibling.title)
