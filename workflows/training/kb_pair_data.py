"""Training pairs made from a shop's own KB: the one source a shop may always train on.

#46 names them beside CMRC 2018 and PAWS-X as data for commercial weights ("an FAQ title with its
reply, a section heading with its body, a sentence with the passage it was taken from") and asks how
a shop retrains on its own FAQ and feedback logs. Four kinds, each a (query, passage) pair the
retriever should rank first, read from a KB `run.py ingest` built:
- faq: an FAQ entry's title (the standard question) → its reply, without the title (with it the pair
  is a copy; without, the model learns to match a question with what answers it);
- heading: a page's title with one of its section headings (`云迹S5胸包 防水性能`) → that section's body;
- masked: one sentence of a chunk asked about one of its words (`agents/self_probes.masked_question`,
  the probes self-calibration asks) → the chunk as the KB embeds it (`knowledge/ingest.embedding_text`);
- rated: a customer's question whose answer was rated up (`feedback`, +1) → the first chunk it cited,
  read from the KB's experience store (questions stored with personal data redacted; a round rated
  down says what is wrong, not what is right, and is left out).

What trains is what the KB holds: question files beside the documents are never ingested. A
document's pairs (and a rated round, by its cited document) go to `valid` when a hash of its id falls
in the first 5% (`pair_data.split_of_title`), so no document straddles train and valid.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

from citescope.agents.self_probes import NOT_HEADINGS, askable_sentences, masked_question
from citescope.knowledge.ingest import embedding_text
from citescope.knowledge.kb import KBError, KnowledgeBase
from citescope.knowledge.lexicon import Lexicon
from citescope.knowledge.schema import Chunk
from citescope.knowledge.settings import get_settings
from citescope.workflows.experience import FILE_NAME as EXPERIENCE_FILE
from citescope.workflows.experience import ExperienceStore
from citescope.workflows.training.pair_data import TextPair, split_of_title

KB_SOURCE = "kb"
KB_LICENCE = "the shop's own documents and customers' rated questions (its own to train on)"
KINDS = ("faq", "heading", "masked", "rated")
MASKED_PER_CHUNK = 2  # masked questions per chunk: a long page gives more pairs, each chunk a few
_QUESTION_TITLE = re.compile(r"[？?]\s*$")


def kb_pairs(kb_dir: Path, seed: int = 0) -> tuple[dict[str, list[TextPair]], dict[str, int]]:
    """{"train": [...], "valid": [...]} pairs of the KB in `kb_dir`, and counts by kind and split for
    the manifest. ValueError when the folder is not a KB or holds no chunk."""
    chunks, lexicon = kb_chunks(kb_dir)
    rng = random.Random(seed)
    split: dict[str, list[TextPair]] = {"train": [], "valid": []}
    counts = {"documents": 0, "train": 0, "valid": 0, **dict.fromkeys(KINDS, 0)}

    def add(kind: str, doc_id: str, anchor: str, positive: str) -> None:
        part = split_of_title(doc_id)  # the hash that splits CMRC's articles, on the document's id
        split[part].append(TextPair(anchor, positive, False, KB_SOURCE))
        counts[part] += 1
        counts[kind] += 1

    by_doc: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_doc.setdefault(chunk.doc_id, []).append(chunk)
    counts["documents"] = len(by_doc)
    for doc_id, doc_chunks in by_doc.items():
        for kind, anchor, positive in _pairs_of(doc_chunks, lexicon, rng):
            add(kind, doc_id, anchor, positive)
    by_id = {chunk.chunk_id: chunk for chunk in chunks}
    for question, chunk_id in rated_questions(Path(kb_dir)):
        if (cited := by_id.get(chunk_id)) is not None:  # a chunk deleted since is no pair
            add("rated", cited.doc_id, question, embedding_text(cited, lexicon))
    return split, counts


def kb_chunks(kb_dir: Path) -> tuple[list[Chunk], Lexicon]:
    """The chunks of the KB in `kb_dir` in the KB's order, and its lexicon. ValueError when the folder is
    not a KB (naming it and how to build one) or holds no chunk."""
    try:
        kb = KnowledgeBase(kb_dir, get_settings(kb_dir=kb_dir))
    except KBError as exc:  # names the folder and how to build it
        raise ValueError(str(exc)) from exc
    try:
        chunks = [chunk for chunk, *_ in kb.catalog.iter_chunks()]
        lexicon = kb.lexicon
    finally:
        kb.close()
    if not chunks:
        raise ValueError(f"{kb_dir}: the KB holds no chunk; ingest the shop's documents first")
    return chunks, lexicon


def write_frozen(saved: Path, counts: dict, rows: list[dict]) -> None:
    """A run's KB examples as JSON lines (the counts first), written whole and renamed into place."""
    lines = [json.dumps({"counts": counts}, ensure_ascii=False)] + [json.dumps(r, ensure_ascii=False) for r in rows]
    temporary = saved.with_name(saved.name + ".tmp")
    temporary.write_text("\n".join(lines) + "\n", encoding="utf-8")
    temporary.replace(saved)


def read_frozen(saved: Path) -> tuple[dict, list[dict]]:
    """(counts, rows) as write_frozen wrote them."""
    stored = [json.loads(line) for line in saved.read_text(encoding="utf-8").splitlines() if line.strip()]
    return stored[0]["counts"], stored[1:]


def rated_questions(kb_dir: Path) -> list[tuple[str, str]]:
    """(question, first cited chunk id) of the answered rounds whose latest rating is +1, of every
    tenant (a tenant shares the KB, and its questions teach the KB's model), oldest first, each
    question once."""
    if not (kb_dir / EXPERIENCE_FILE).exists():
        return []
    store = ExperienceStore.for_kb(kb_dir)
    try:
        rounds = store.rounds()
    finally:
        store.close()
    rated = [(r.question, r.cited_ids[0]) for r in rounds if r.rating == 1 and not r.refused and r.cited_ids]
    return list(dict.fromkeys(rated))


def is_faq_entry(chunk: Chunk) -> bool:
    """An FAQ entry: typed so, or titled with a question (a shop's FAQ file that states no doc_type)."""
    return chunk.doc_type == "faq" or bool(_QUESTION_TITLE.search(chunk.title.strip()))


def _pairs_of(chunks: list[Chunk], lexicon: Lexicon, rng: random.Random) -> Iterator[tuple[str, str, str]]:
    """(kind, query, passage) of one document's chunks, in the KB's order."""
    title = chunks[0].title.strip()
    is_faq = is_faq_entry(chunks[0])
    if is_faq and chunks[0].text.strip():
        yield "faq", title, chunks[0].text.strip()
    for chunk in chunks:
        section = chunk.section.strip()
        if not is_faq and title and section and section not in NOT_HEADINGS and section != title:
            # the chunk opens with its heading (`防水性能：…`): the body alone, or the pair is a copy
            yield "heading", f"{title} {section}", chunk.text.removeprefix(f"{section}：")
        sentences = askable_sentences(chunk.text)
        rng.shuffle(sentences)
        asked = (q for s in sentences if (q := masked_question(s, rng)))
        passage = embedding_text(chunk, lexicon)
        for question in islice(asked, MASKED_PER_CHUNK):
            yield "masked", question, passage


def frozen_kb_pairs(
    kb_dir: Path, saved: Path, seed: int, resume: bool
) -> tuple[dict[str, list[TextPair]], dict[str, int]]:
    """The KB's pairs as a run first read them: made and written to `saved` on a fresh run, read back
    from it on a resumed one (a resumed run's data position counts in the list it started with)."""
    if resume and saved.exists():
        counts, rows = read_frozen(saved)
        split: dict[str, list[TextPair]] = {"train": [], "valid": []}
        for row in rows:
            split[row["split"]].append(TextPair(row["anchor"], row["positive"], False, KB_SOURCE))
        return split, counts
    split, counts = kb_pairs(kb_dir, seed)
    write_frozen(
        saved,
        counts,
        [{"split": part, "anchor": p.anchor, "positive": p.positive} for part in split for p in split[part]],
    )
    return split, counts


def kb_manifest_entry(kb_dir: Path, counts: dict[str, int]) -> dict:
    """The manifest's `sources.kb`: which KB, what it gave, under which licence."""
    return {"kind": KB_SOURCE, "licence": KB_LICENCE, "commercial": True, "kb": str(kb_dir), **counts}
