"""Labelled probe questions made from a KB's own documents, for calibrating its refusal threshold
without anyone's labelled questions (workflows/self_calibration.py scores them; issue #44).

Three kinds, each labelled by construction:
- masked (answerable): a question made of one of a document's sentences: one word of it asked for (a
  number as 多少, a person as 谁, a place as 哪里, a time as 什么时候, else 什么), cut to the clause
  that holds it (`直到2007年退休，由谁接任？`), the passage kept. Readers ask about a passage this way
  (a clause of it, one thing left open). Measured on a KB of cmrc2018_train passages against their
  633 real questions (training data; bench/self_probe_design.py), such probes score as the real
  questions do at the low end (5th percentile 0.124-0.141 over two seeds, real 0.127). The first designs
  scored far from them: a whole sentence taken out of its passage (inverse cloze) far under (0.024: a
  threshold that refuses nothing), a
  page's title with a heading or a field label (`韩艳的住院病历的科室`) far over (a records KB's
  threshold 0.56, above half of its real answerable questions): the threshold is read off the
  answerable probes alone, so they must score as real questions do, not as a copy of the page;
- held_out (unanswerable): each answerable question again with its whole document out of the KB;
- sibling (unanswerable): a near miss about a page's title with one of its section headings or field
  labels (`山野 峰刃 GTX 冲锋衣的产地`, `唐霞的住院病历的过敏史`), naming a sibling (another page of
  the same type and category) whose fact is not there: its chunks of that section are out of the KB,
  or it has no such field — the entity is known, its fact is not, and the near entity's fact is.

Deterministic for a seed, bounded (max_probes), read from the KB's chunks only.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Literal

import jieba.posseg

from citescope.knowledge.chunking import SKU_OVERVIEW_SECTION
from citescope.knowledge.schema import Chunk
from citescope.knowledge.text import split_sentences

ProbeKind = Literal["masked", "held_out", "sibling"]
# sections that are table rows or generated summaries, not a heading a shopper would ask by
NOT_HEADINGS = frozenset({"SKU", SKU_OVERVIEW_SECTION})
_MIN_SENTENCE, _MAX_SENTENCE = 8, 120  # a masked question's sentence: a real one, not a fragment
_MASKED_PER_DOC = 4
_MIN_CLAUSE = 10  # a clause shorter than this takes the one before it too (由谁接任 alone names nothing)
# what a masked word is asked as, by its jieba part of speech (others: 什么)
_ASKED_AS = {"m": "多少", "nr": "谁", "ns": "哪里", "t": "什么时候"}
_MASKABLE = frozenset({"m", "nr", "ns", "nt", "nz", "t", "n"})  # numbers, names, places, times, nouns
_CLAUSE_END = re.compile(r"(?<=[，,；;：:])")
_MIN_CONTEXT = 6  # characters a masked question keeps besides its asking word (not `什么？`)
_MASK = "\x00"  # where the asked word stands while the clauses are cut (no text holds it)
# a labelled line: a short label (letters, not a number or a time), a colon, a short value
_LABELLED_LINE = re.compile(r"^[ \t]*([^\s\d：:，,。；;]{2,8})[：:][ \t]*(\S[^\n]{0,40})$", re.MULTILINE)


@dataclass(frozen=True)
class Probe:
    question: str
    kind: ProbeKind
    doc_id: str  # the document the question was made from
    answerable: bool
    # what is out of the KB for this probe: (doc_id, section); section None = the whole document
    excluded: tuple[tuple[str, str | None], ...] = ()
    named: str = ""  # sibling: the sibling entity the question names
    stated: str = ""  # masked: the clause it asks about as its document states it (the word in place)

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

    def labels(self) -> set[str]:
        """The labels of its labelled lines (`血型：AB型`), the page's own fields."""
        return {label for c in self.chunks for label in field_labels(c.text)} - {self.title}


def field_labels(text: str) -> list[str]:
    """The labels of a text's labelled lines (`血型：AB型` -> 血型)."""
    return [label for label, _ in labelled_lines(text)]


def labelled_lines(text: str) -> list[tuple[str, str]]:
    """A text's labelled lines as (label, value) (`血型：AB型` -> (血型, AB型))."""
    return [(m.group(1), m.group(2).strip()) for m in _LABELLED_LINE.finditer(text)]


def make_probes(chunks: list[Chunk], seed: int = 0, max_probes: int = 200) -> list[Probe]:
    """Answerable probes (masked sentences, at most one per document first, so many documents are
    covered), each with its held-out twin unless another document states the same clause, then
    sibling probes with what is left of max_probes (at most a fifth of it)."""
    rng = random.Random(seed)
    docs = _documents(chunks)
    per_doc = [_masked_of(doc, rng) for doc in docs]
    sibling_budget = max_probes // 5
    answerable = _spread(per_doc, (max_probes - sibling_budget) // 2, rng)
    texts = {d.doc_id: _compact("".join(c.text for c in d.chunks)) for d in docs}
    probes: list[Probe] = []
    for probe in answerable:
        probes.append(probe)
        # out with it go the documents of the same name (a product's page and its SKU table are two)
        title = next(d.title for d in docs if d.doc_id == probe.doc_id)
        same = [d.doc_id for d in docs if d.doc_id == probe.doc_id or (title and d.title == title)]
        # a clause another document states as well (news reported twice, a reply quoted in a policy) is
        # still in the KB without them: that twin would be answerable, labelled unanswerable
        if _stated_elsewhere(probe.stated, texts, besides=same):
            continue
        held_out = tuple((doc_id, None) for doc_id in same)
        probes.append(Probe(probe.question, "held_out", probe.doc_id, answerable=False, excluded=held_out))
    order = list(docs)
    rng.shuffle(order)
    siblings = (s for doc in order if (s := _sibling_of(doc, docs, rng)) is not None)
    budget = max(0, min(sibling_budget, max_probes - len(probes)))
    probes.extend(s for _, s in zip(range(budget), siblings, strict=False))
    return probes


def _documents(chunks: list[Chunk]) -> list[_Doc]:
    docs: dict[str, _Doc] = {}
    for chunk in sorted(chunks, key=lambda c: (c.doc_id, c.position, c.chunk_id)):
        doc = docs.setdefault(
            chunk.doc_id, _Doc(chunk.doc_id, chunk.title.strip(), chunk.doc_type, chunk.category or "")
        )
        doc.chunks.append(chunk)
    return list(docs.values())


def _masked_of(doc: _Doc, rng: random.Random) -> list[Probe]:
    """A few masked questions of the document's sentences, in a seeded order."""
    sentences = [s for c in doc.chunks for s in askable_sentences(c.text)]
    rng.shuffle(sentences)
    # a few per document: the probes spread over documents first, and tagging every sentence of a big KB costs
    masked = (_masked(s, rng) for s in sentences[:_MASKED_PER_DOC])
    return [Probe(m[0], "masked", doc.doc_id, answerable=True, stated=m[1]) for m in masked if m]


def askable_sentences(text: str) -> list[str]:
    """The text's sentences a masked question can be made of: real ones, not fragments or table rows."""
    return [s for s in split_sentences(text) if _MIN_SENTENCE <= len(s) <= _MAX_SENTENCE]


def _compact(text: str) -> str:
    """The text without whitespace: words are found in another document however its lines break."""
    return re.sub(r"\s+", "", text)


def masked_question(sentence: str, rng: random.Random) -> str | None:
    """The sentence as a question about one of its words: that word (a number, name, place, time or
    noun of two characters or more, chosen by rng) replaced by how it is asked, cut to its clause (and
    the clause before it when short). None when the sentence has no such word."""
    masked = _masked(sentence, rng)
    return masked[0] if masked else None


def _masked(sentence: str, rng: random.Random) -> tuple[str, str] | None:
    """(the masked question, its clause as the document states it: the asked word back in place)."""
    words = [(pair.word, pair.flag) for pair in jieba.posseg.cut(sentence)]
    maskable = [i for i, (word, flag) in enumerate(words) if len(word) >= 2 and flag in _MASKABLE]
    if not maskable:
        return None
    i = rng.choice(maskable)
    asked = _ASKED_AS.get(words[i][1], "什么")
    before, after = "".join(w for w, _ in words[:i]), "".join(w for w, _ in words[i + 1 :])
    clauses = _CLAUSE_END.split(before + asked + after)
    # the same clauses with the word itself: the asked and the stated text split alike (no punctuation in either)
    stated = _CLAUSE_END.split(before + _MASK + after)
    at = next(k for k, clause in enumerate(clauses) if asked in clause)
    question, statement = clauses[at], stated[at]
    if len(question) < _MIN_CLAUSE and at > 0:
        question, statement = clauses[at - 1] + question, stated[at - 1] + statement
    question = question.strip().rstrip("。！!？?，,；;：:")
    if len(question) - len(asked) < _MIN_CONTEXT:
        return None  # 什么？ or 入院什么时候？ asks nothing a reader could answer
    statement = statement.replace(_MASK, words[i][0]).strip().rstrip("。！!？?，,；;：:")
    return question + "？", statement


def _stated_elsewhere(statement: str, texts: dict[str, str], besides: list[str]) -> bool:
    """Whether a document (compact texts by id) other than those `besides` states the masked clause, word
    and all."""
    statement = _compact(statement)
    return bool(statement) and any(statement in text for doc_id, text in texts.items() if doc_id not in besides)


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


def _sibling_of(own: _Doc, docs: list[_Doc], rng: random.Random) -> Probe | None:
    """A question about one of the page's sections or field labels asked of a sibling (same type, same
    category when it has one) that lacks it, or None when the page names nothing (no title, an FAQ's
    title is a question) or has no such sibling."""
    if own.doc_type == "faq" or len(own.title) < 2:
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
    sections = own.sections() - NOT_HEADINGS - {own.title}
    # a section's chunk may open with its heading as a label (产地：福建泉州): that is the section
    topics = [(s, False) for s in sorted(sections)] + [(label, True) for label in sorted(own.labels() - sections)]
    if not siblings or not topics:
        return None
    topic, is_label = rng.choice(topics)
    if is_label:  # only a sibling without that field lacks the fact; nothing is held out
        lacking = [d for d in siblings if not any(topic in t.labels() for t in docs if t.title == d.title)]
        if not lacking:
            return None
        sibling = rng.choice(lacking)
        return Probe(f"{sibling.title}的{topic}", "sibling", own.doc_id, False, named=sibling.title)
    sibling = rng.choice(siblings)
    # every document of the sibling's name loses that section (a product's page and its SKU table are two)
    named = tuple((d.doc_id, topic) for d in docs if d.title == sibling.title)
    return Probe(f"{sibling.title}的{topic}", "sibling", own.doc_id, False, excluded=named, named=sibling.title)
