"""Pair-scorer examples made from a shop's own KB (`run.py train answers --kb DIR`, #46).

The pair scorer learns on CMRC what answers a question; a shop's text is another kind (short FAQ
replies, product pages cut by heading, one template for every product), and the issue names the KB's
own documents as data a shop may always train on. Each example is laid out as the gate reads it
(`pair_scorer.pair_text(question, f"{title}\\n{text}")`, workflows/stages/rank.read_pairs):
- faq: an FAQ entry's title against its own entry (answers), and in a minimal pair under the title of
  the entry most like it (the one sharing most character pairs): its own reply answers, that entry's
  reply — on the topic, saying something else — does not;
- masked: a sentence of a chunk asked about one of its words (`agents/self_probes.masked_question`),
  a page's title before it, against its own chunk (answers), another section of the same page that does
  not say the sentence (does not), and the same section of a sibling page (same type and category) that
  does not say it either (does not: another product's 材质 is not this one's);
- heading: a page's title with a section heading (`声屿 S1 材质`) against that section (answers), another
  section of the page and the sibling page's same section (do not).

What trains is what the shop says in the KB (question files beside the documents are never ingested;
customers' reviews and posts are left out). A
document's examples go to `valid` when a hash of its id falls in the first 5% (`pair_data.split_of_title`).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

from citescope.agents.pair_scorer import LABELS, pair_text
from citescope.agents.self_probes import NOT_HEADINGS, askable_sentences, masked_question
from citescope.knowledge.schema import Chunk, in_users_voice
from citescope.workflows.training.kb_pair_data import is_faq_entry, kb_chunks, read_frozen, write_frozen
from citescope.workflows.training.pair_data import LabelledText, split_of_title

ANSWERS, DOES_NOT = LABELS.index("answers"), LABELS.index("does_not_answer")
KB_SOURCE = "kb"
KB_LICENCE = "the shop's own documents (its own to train on)"
KINDS = ("faq", "masked", "heading")
MASKED_PER_CHUNK = 2
KB_SHARE = 0.25  # of the training examples: the KB's, repeated, so a few hundred documents are not drowned


def _entry(chunk: Chunk) -> str:
    """A chunk as the gate gives it to the scorer: its title line, then its text."""
    return f"{chunk.title}\n{chunk.text}"


def _bigrams(text: str) -> frozenset[str]:
    return frozenset(text[i : i + 2] for i in range(len(text) - 1))


def _faq_examples(entry: Chunk, faq: list[tuple[Chunk, frozenset[str]]]) -> Iterator[tuple[str, str, str, int]]:
    """The entry's own, and its minimal pair under the title of the entry sharing most character pairs
    with its title (`faq`: every entry with its title's pairs; ties: the KB's order)."""
    title, reply = entry.title.strip(), entry.text.strip()
    yield "faq", title, _entry(entry), ANSWERS
    mine = _bigrams(title)
    others = [(c, pairs) for c, pairs in faq if c.doc_id != entry.doc_id]
    if others:
        other = max(others, key=lambda item: len(mine & item[1]))[0]
        yield "faq", title, f"{other.title}\n{reply}", ANSWERS
        yield "faq", title, _entry(other), DOES_NOT


def _page_examples(
    chunk: Chunk, page: list[Chunk], sibling: list[Chunk], rng: random.Random
) -> Iterator[tuple[str, str, str, int]]:
    """Masked and heading questions of one chunk of a page, against it, the page's other sections and
    a sibling page's same section."""
    title, section = chunk.title.strip(), chunk.section.strip()
    others = [c for c in page if c.section != chunk.section]
    same_section = [c for c in sibling if c.section == chunk.section]
    sentences = askable_sentences(chunk.text)
    rng.shuffle(sentences)
    # a sentence that repeats the page's title (a table row's lead) would be asked about the title's words
    sentences = [s for s in sentences if title not in s]
    asked = [(q, s) for s in sentences if (q := masked_question(s, rng))][:MASKED_PER_CHUNK]
    for question, sentence in asked:
        yield "masked", f"{title} {question}", _entry(chunk), ANSWERS
        for negative in (rng.choice(others) if others else None, same_section[0] if same_section else None):
            if negative is not None and sentence not in negative.text:
                yield "masked", f"{title} {question}", _entry(negative), DOES_NOT
    if section and section not in NOT_HEADINGS and section != title:
        yield "heading", f"{title} {section}", _entry(chunk), ANSWERS
        for negative in (rng.choice(others) if others else None, same_section[0] if same_section else None):
            if negative is not None:
                yield "heading", f"{title} {section}", _entry(negative), DOES_NOT


def kb_answer_examples(kb_dir: Path, seed: int = 0) -> tuple[dict[str, list[LabelledText]], dict[str, int]]:
    """{"train": [...], "valid": [...]} examples of the KB in `kb_dir` and counts by kind, split and
    label. ValueError when the folder is not a KB or holds no chunk."""
    # what the shop says, not its customers' reviews and posts: their headlines are no questions
    chunks = [c for c in kb_chunks(kb_dir)[0] if not in_users_voice(c.doc_type, c.authority)]
    if not chunks:
        raise ValueError(f"{kb_dir}: the KB holds no chunk; ingest the shop's documents first")
    rng = random.Random(f"kb-answers:{seed}")
    pages: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        pages.setdefault(chunk.doc_id, []).append(chunk)
    faq = [(page[0], _bigrams(page[0].title.strip())) for page in pages.values() if is_faq_entry(page[0])]
    faq = [(entry, pairs) for entry, pairs in faq if entry.text.strip()]
    kinds: dict[tuple[str, str], list[str]] = {}  # (doc_type, category) -> its pages, in the KB's order
    place: dict[str, int] = {}  # a page's place among its kind's
    for doc_id, page in pages.items():
        kin = kinds.setdefault((page[0].doc_type, page[0].category or ""), [])
        place[doc_id] = len(kin)
        kin.append(doc_id)
    split: dict[str, list[LabelledText]] = {"train": [], "valid": []}
    counts = {"documents": len(pages), "train": 0, "valid": 0, "answers": 0, "does_not_answer": 0}
    counts.update(dict.fromkeys(KINDS, 0))
    for doc_id, page in pages.items():
        if is_faq_entry(page[0]):
            made = list(_faq_examples(page[0], faq)) if page[0].text.strip() else []
        else:
            kin = kinds[(page[0].doc_type, page[0].category or "")]
            sibling_id = kin[(place[doc_id] + 1) % len(kin)]  # the next page of its kind
            sibling = pages[sibling_id] if sibling_id != doc_id else []
            made = [example for chunk in page for example in _page_examples(chunk, page, sibling, rng)]
        part = split_of_title(doc_id)
        for kind, question, candidate, label in made:
            split[part].append(LabelledText(pair_text(question, candidate), label))
            counts[part] += 1
            counts[kind] += 1
            counts[LABELS[label]] += 1
    return split, counts


def repeated_to_share(kb_examples: list[LabelledText], others: int, share: float = KB_SHARE) -> list[LabelledText]:
    """The KB's examples repeated so they make about `share` of the training set beside `others`
    examples (at least once each)."""
    if not kb_examples:
        return []
    times = max(1, round(share * others / ((1 - share) * len(kb_examples))))
    return kb_examples * times


def frozen_kb_answer_examples(
    kb_dir: Path, saved: Path, seed: int, resume: bool
) -> tuple[dict[str, list[LabelledText]], dict[str, int]]:
    """The KB's examples as a run first made them: written to `saved` on a fresh run, read back on a
    resumed one (the KB may have changed since; the run's data must not)."""
    if resume and saved.exists():
        counts, rows = read_frozen(saved)
        split: dict[str, list[LabelledText]] = {"train": [], "valid": []}
        for row in rows:
            split[row["split"]].append(LabelledText(row["text"], row["label"]))
        return split, counts
    split, counts = kb_answer_examples(kb_dir, seed)
    write_frozen(saved, counts, [{"split": p, "text": e.text, "label": e.label} for p in split for e in split[p]])
    return split, counts
