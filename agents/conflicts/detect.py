"""The conflict check's entry point: pairs the evidence, runs the four rules, merges candidates into
conflicts and orders each conflict's values (official first, then newest or nearest the asked time)."""

from __future__ import annotations

import math
from datetime import date

import jieba
import jieba.posseg
from pydantic import BaseModel

from citescope.agents.conflicts.aligned import aligned_candidates
from citescope.agents.conflicts.claims import claim_candidates, is_version_pair, table_candidates, version_candidate
from citescope.agents.conflicts.fields import field_candidates
from citescope.agents.conflicts.passages import Candidate, Passage, Side, title_stem
from citescope.agents.conflicts.question import Question
from citescope.agents.conflicts.subjects import about_a_sibling, asked_passages, entity_of
from citescope.knowledge.chinese_script import matching_form
from citescope.knowledge.crosslingual import worded_for
from citescope.knowledge.filters import as_of_day, parse_day
from citescope.knowledge.lexicon import Lexicon
from citescope.knowledge.normalize import normalize
from citescope.knowledge.schema import AUTHORITY_RANK
from citescope.knowledge.text import is_faq
from citescope.tools.base import EvidenceHit


class ConflictValue(BaseModel):
    value: str
    chunk_id: str
    updated_at: str | None
    authority: str
    sentence: str


class Conflict(BaseModel):
    attribute: str
    entity: str
    values: list[ConflictValue]  # official before community, then newest first (nearest the as-of time)
    as_of: str | None = None  # the time the question asks about, when the values are ordered by it


def warm_up() -> None:
    """Load jieba's dictionary now rather than on the first question."""
    jieba.initialize()


# ----------------------------------------------------------------------------- entry point
def detect_conflicts(
    question: str, evidence: list[EvidenceHit], lexicon: Lexicon | None = None, as_of: str | None = None
) -> list[Conflict]:
    """Conflicts among the evidence that bear on the question ([] when there are none). as_of: the
    time the question asks about (SearchFilters.as_of); its values then lead nearest that time."""
    # an English question about a Chinese shop's evidence is read with the shop's Chinese words too
    asked = Question.of(worded_for(question, [hit.text for hit in evidence]), lexicon)
    if not asked.terms or len(evidence) < 2:
        return []
    passages = [Passage.of(hit, lexicon) for hit in _unique(evidence)]
    off_topic = _off_topic(passages, asked)
    candidates: list[Candidate] = []
    aligned_docs: set[tuple[str, str]] = set()
    version_sections: dict[tuple[str, str], list[tuple[float, Passage, Passage, str]]] = {}
    for i, a in enumerate(passages):
        for b in passages[i + 1 :]:
            if a.hit.doc_id == b.hit.doc_id:
                continue  # a document's rows and prices are different facts, not a conflict
            if a.hit.chunk_id in off_topic or b.hit.chunk_id in off_topic:
                continue
            entity = entity_of(a, b, asked)
            if entity is None:
                continue
            first_doc, second_doc = sorted((a.hit.doc_id, b.hit.doc_id))
            docs = (first_doc, second_doc)
            aligned = aligned_candidates(a, b, entity, asked)
            if aligned:
                candidates += aligned
                aligned_docs.add(docs)
            elif is_version_pair(a.hit, b.hit):
                relevance = asked.coverage(a.about) + asked.coverage(b.about)
                version_sections.setdefault(docs, []).append((relevance, a, b, entity))
            elif not a.hit.product_id and a.subject and a.subject == b.subject:
                candidates += field_candidates(a, b, entity, asked)  # one record's field stated twice
            if a.hit.product_id:
                candidates += claim_candidates(a, b, asked)
    candidates += table_candidates(passages, asked)
    for docs, sections in version_sections.items():
        if docs in aligned_docs:
            continue  # the versions already differ in a value the question asks about
        _, a, b, entity = max(sections, key=lambda section: section[0])  # the section asked about
        version = version_candidate(a, b, entity, asked)
        candidates += [version] if version is not None else []
    named = asked_passages(passages, asked)
    return [_to_conflict(c, as_of) for c in _merge(candidates) if not _about_a_sibling(c, named)]


def _about_a_sibling(candidate: Candidate, named: list[Passage]) -> bool:
    """A disagreement about another entity than the one the question names (two versions of 韩艳's
    record, asked about 苏敏) is not the question's. A product's claims are tied to it by product_id."""
    if not named or candidate.product_id:
        return False
    return about_a_sibling([side.passage for side in candidate.sides], named)


def _off_topic(passages: list[Passage], question: Question) -> set[str]:
    """Chunks about something else than what the question names: when the question names the title
    of an evidence page (班卡雀鲷, 谢尔), a page (no product, no FAQ) whose title it does not name and
    whose text never mentions a named title (蓝纹高身雀鲷, 鄂温人) gives another thing's value."""
    asked = question.raw.lower()  # titles are compared as written (normalised), not canonicalised
    # FAQ titles are customers' questions (退款多久能到账？), not names of things
    # titles and text in matching form: a traditional page's title names what a question asks
    pages = [
        (title_stem(matching_form(p.hit.title)).lower(), p.hit)
        for p in passages
        if not p.hit.product_id and not is_faq(p.hit)
    ]
    named = {stem for stem, _ in pages if len(stem) >= 2 and stem in asked}
    if not named:
        return set()
    return {
        hit.chunk_id
        for stem, hit in pages
        if stem not in named and not any(name in matching_form(normalize(hit.text)).lower() for name in named)
    }


def _unique(evidence: list[EvidenceHit]) -> list[EvidenceHit]:
    seen, out = set(), []
    for hit in evidence:
        if hit.chunk_id not in seen:
            seen.add(hit.chunk_id)
            out.append(hit)
    return out


def _merge(candidates: list[Candidate]) -> list[Candidate]:
    """One conflict per kind of value whose value sets overlap, for one product (or, for
    documents without products, for the question's topic however the pairs named it)."""
    merged: list[Candidate] = []
    for candidate in candidates:
        for existing in merged:
            if (existing.product_id, existing.dimension) == (candidate.product_id, candidate.dimension) and (
                existing.keys() & candidate.keys()
            ):
                existing.sides += candidate.sides
                break
        else:
            merged.append(Candidate(candidate.entity, candidate.attribute, candidate.dimension, list(candidate.sides)))
    return [c for c in merged if len(c.keys()) > 1]


def _rank(side: Side, asked_day: date | None = None) -> tuple:
    hit = side.passage.hit
    # Official before community whatever the dates (a newer review does not outrank the
    # product page), then newest first (the 2026 policy before the 2024 one), or, for a question
    # about a given time, nearest that time first (the 2016 brochure for "as of 2016").
    if asked_day is None:
        return (AUTHORITY_RANK.get(hit.authority, 0), hit.updated_at or "", hit.score)
    day = parse_day(hit.updated_at)
    return (
        AUTHORITY_RANK.get(hit.authority, 0),
        -abs((day - asked_day).days) if day is not None else -math.inf,
        hit.score,
    )


def _to_conflict(candidate: Candidate, as_of: str | None = None) -> Conflict:
    asked_day = as_of_day(as_of) if as_of else None
    best: dict[str, Side] = {}
    for side in candidate.sides:
        if side.key not in best or _rank(side, asked_day) > _rank(best[side.key], asked_day):
            best[side.key] = side
    values = [
        ConflictValue(
            value=side.value,
            chunk_id=side.passage.hit.chunk_id,
            updated_at=side.passage.hit.updated_at,
            authority=side.passage.hit.authority,
            sentence=side.passage.sentence_text(side.position),
        )
        for side in sorted(best.values(), key=lambda side: _rank(side, asked_day), reverse=True)
    ]
    return Conflict(attribute=candidate.attribute, entity=candidate.entity, values=values, as_of=as_of)
