"""Stage rank: everything the skills gathered, re-scored by the calibrated reranker for the
question (each chunk's best score over the question's readings and the parts of a compound one),
filtered by the caller's filters and cut to the evidence shown: at most top_n chunks and
max_chars characters, a few per document, the findings' rows pinned. The best score is what the
gate reads. The scoring runs on a worker thread: its query embeddings release the GIL, so a
service's loop goes on with other questions' stages meanwhile."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Protocol

from citescope.agents.arms import template_values
from citescope.agents.budget import DeadlinePassed
from citescope.agents.entity_scope import about_other_entities
from citescope.agents.evidence import RERANK_LEG, EvidencePool
from citescope.agents.query_analysis import QueryFeatures
from citescope.agents.question_cues import asking_clauses
from citescope.knowledge.chunking import SKU_OVERVIEW_SECTION
from citescope.knowledge.crosslingual import document_query
from citescope.knowledge.filters import SearchFilters
from citescope.knowledge.kb import Chunk, KnowledgeBase, metadata_columns
from citescope.tools.base import EvidenceHit, LegScore
from citescope.tools.fusion import later_table_rows
from citescope.workflows.pipeline_config import PipelineConfig
from citescope.workflows.stages.analyse import Analysis
from citescope.workflows.stages.context import QuestionRun


class Scorer(Protocol):
    """A calibrated reranker (tools/rerank.py): one score in [0, 1] per chunk for the query."""

    def score(self, query: str, chunks: list[Chunk], as_of: date | None = None) -> list[float]: ...


@dataclass(frozen=True)
class EvidenceLimits:
    top_n: int  # chunks shown (evidence_top_n)
    max_chars: int  # characters shown (evidence_max_chars)
    per_doc: int  # chunks of one document, unless nothing else can fill a slot (evidence_per_doc)
    conflict_scan_top_n: int  # how far down the ranking a disagreement with the shown evidence counts

    @classmethod
    def of(cls, config: PipelineConfig) -> EvidenceLimits:
        return cls(
            config.evidence_top_n, config.evidence_max_chars, config.evidence_per_doc, config.conflict_scan_top_n
        )


@dataclass(frozen=True)
class RankInput:
    analysis: Analysis
    pool: EvidencePool  # what the skills gathered
    pinned: Sequence[str]  # chunk ids shown whatever their rank (what a finding rests on)
    filters: SearchFilters | None
    limits: EvidenceLimits


@dataclass(frozen=True)
class Ranking:
    shown: list[EvidenceHit]  # the evidence the answerer is shown, in rank order
    ranked: list[EvidenceHit]  # the whole pool in that order
    best_score: float | None  # what the gate reads; None: no evidence
    degradations: list[str]
    # the pool's chunks about a sibling of the entity the question names (agents/entity_scope.py): the
    # gate does not read them, and the extractive answerer quotes none of them as the answer
    siblings: frozenset[str] = frozenset()


class PairReader(Protocol):
    """The reader's pair scorer (agents/pair_scorer.py): P(answers) of each candidate text."""

    def score(self, question: str, candidates: list[str]) -> list[float]: ...


class Rank:
    def __init__(self, kb: KnowledgeBase, reranker: Scorer, pair_scorer: PairReader | None = None, pair_top_n: int = 5):
        self.kb = kb
        self.reranker = reranker
        self.pair_scorer = pair_scorer  # opt-in (pair_model): reads the reranker's best pair_top_n chunks
        self.pair_top_n = pair_top_n

    async def run(self, given: RankInput, run: QuestionRun) -> Ranking:
        features = given.analysis.features
        # a compound question's parts are queries too: a chunk is as relevant as to the part it answers
        parts = [None, *features.parts]
        if run.long:
            # A message cut to what it asks (retrieval_question.py) is scored as the one text the search
            # read, so its query embedding, most of what a long message costs, comes from the embedder's
            # cache: that text already carries the documents' words (with_document_words), and the
            # cut kept the asking sentences, so the other readings would say the same again (~0.3 s of CPU each).
            queries = [template_values(features, part=part)["query"] for part in parts]
            alternates: list[str] = []
        else:
            queries = [template_values(features, part=part, bridged=False)["query"] for part in parts]
            # the question is also scored as the documents word it (an English question as a Chinese shop's
            # evidence does, 洗澡 as 淋浴: knowledge/crosslingual.py), and a chat message by what it asks without
            # what the shopper adds about themselves (… 平时不在家); the best of the readings counts
            worded = document_query(features.question, features.shop)
            asking = asking_clauses(features.question)
            alternates = [a for a in (worded, asking, asking and document_query(asking, features.shop)) if a]
        compared = [p.product_id for p in features.products] if len(features.products) > 1 else []
        return await asyncio.to_thread(self._rank, given, queries, alternates, compared, run)

    def _rank(
        self,
        given: RankInput,
        queries: Sequence[str],
        alternates: Sequence[str],
        compared: Sequence[str | None],
        run: QuestionRun,
    ) -> Ranking:
        """queries: the question, then the parts of a compound one. alternates: other readings of the
        whole question (an English one's Chinese words, a chat message's asking clauses), scored as it
        is. compared: the products a question names two or more of, each shown the best chunk of its page."""
        filters = given.filters
        as_of = filters.reference_day() if filters else None
        # Score the text the answerer will see (hostile passages already cut), not the raw chunk.
        pairs = [
            (hit, chunk.model_copy(update={"text": hit.text, "title": hit.title}))
            for hit in given.pool.hits()
            if (chunk := self.kb.get(hit.chunk_id)) is not None
        ]
        if filters is not None and filters.restricts() and pairs:
            keep = filters.mask(metadata_columns([chunk for _, chunk in pairs]))
            if keep is not None:  # None only when nothing restricts
                pairs = [pair for pair, kept in zip(pairs, keep, strict=False) if kept]
        if not pairs:
            return Ranking(shown=[], ranked=[], best_score=None, degradations=[])
        degradations: list[str] = []
        # a sibling's page of the entity the question names does not count (agents/entity_scope.py)
        counted = counted_for_gate(given.analysis.features, [c for _, c in pairs])
        siblings = frozenset(chunk.chunk_id for (_, chunk), keep in zip(pairs, counted, strict=True) if not keep)
        try:
            chunks = [chunk for _, chunk in pairs]

            def scored(query: str) -> list[float]:
                # each reading of the question costs an embedding and a pass over the pool
                run.checkpoint_in_thread("rerank")
                return self.reranker.score(query, chunks, as_of=as_of)

            per_query = [scored(q) for q in queries]
            for alternate in alternates:  # the whole question, worded otherwise: its best score counts
                per_query[0] = [max(pair) for pair in zip(per_query[0], scored(alternate), strict=False)]
            scores = [max(column) for column in zip(*per_query, strict=False)]
            # the pair scorer (opt-in) judges whether the evidence answers, not the order: a blended
            # order ranked the demo's gold documents first less often (everyday R@1 0.886 -> 0.734)
            read = per_query[0]
            if self.pair_scorer is not None:
                run.checkpoint_in_thread("rerank")
                question = given.analysis.features.question
                read = read_pairs(self.pair_scorer, question, chunks, per_query[0], self.pair_top_n)
            # the gate: the question's best chunk or, if higher, the best chunk of a compound question's
            # weakest part (a short part alone, 地址在哪, matches a passage about something else too well)
            gate = max(best_of(read, counted), min((best_of(part, counted) for part in per_query[1:]), default=0.0))
        except DeadlinePassed:
            raise
        except Exception as exc:  # keep the skills' own calibrated scores; none -> nothing passes the gate
            degradations.append(f"final rerank failed ({type(exc).__name__}); earlier rerank scores used")
            scores = [hit.legs[RERANK_LEG].score if RERANK_LEG in hit.legs else 0.0 for hit, _ in pairs]
            gate = best_of(scores, counted)
        hits = [hit for hit, _ in pairs]
        scores = overviews_as_rows(hits, scores)  # raises no score above the best, so not the gate
        # on a tie the overview goes first: it and its best row share the document's slots, not two rows
        order = sorted(
            range(len(hits)),
            key=lambda i: (-scores[i], hits[i].section != SKU_OVERVIEW_SECTION, hits[i].chunk_id),
        )
        ranked: list[EvidenceHit] = []
        for rank, i in enumerate(order, start=1):
            rescored = hits[i].model_copy(deep=True)
            rescored.score = float(scores[i])
            rescored.legs[RERANK_LEG] = LegScore(score=float(scores[i]), rank=rank)
            ranked.append(rescored)
        # every product compared is shown what its page says best: its SKU rows and overview may
        # otherwise take its slots (轻羽Pro's 价格 row where 分别多重 asks its 材质 line's 198 克)
        best_page: dict[str | None, str] = {}
        for hit in ranked:
            if (
                hit.product_id in compared
                and hit.doc_type == "product"
                and hit.section not in ("SKU", SKU_OVERVIEW_SECTION)
            ):
                best_page.setdefault(hit.product_id, hit.chunk_id)
        pinned = [*given.pinned, *best_page.values()]
        limits = given.limits
        varied, spare = at_most_per_doc(ranked, limits.per_doc)
        shown = EvidencePool.from_hits(varied).top(limits.top_n, limits.max_chars)
        # The cap diversifies; it must not leave slots empty. Slots left over go first to a
        # section not shown yet (a product's 产地 before a third SKU row), then to the rest.
        for tier in new_sections_first(spare, shown):
            if len(shown) >= limits.top_n:
                break
            shown = EvidencePool.from_hits(tier).top(limits.top_n, limits.max_chars, after=shown)
        return Ranking(
            shown=with_pinned(shown, ranked, pinned, limits.top_n),
            ranked=ranked,
            best_score=float(gate),
            degradations=degradations,
            siblings=siblings,
        )


def read_pairs(
    reader: PairReader, question: str, chunks: Sequence[Chunk], scores: list[float], top_n: int
) -> list[float]:
    """What the gate reads: the reranker's best top_n chunks scored as the mean of its probability and
    the pair scorer's P(answers) (read against each chunk's sentences nearest the question, its title
    first: an FAQ entry's title is the question it answers); the others keep the reranker's."""
    top = sorted(range(len(chunks)), key=lambda i: -scores[i])[:top_n]
    read = reader.score(question, [f"{chunks[i].title}\n{chunks[i].text}" for i in top])
    blended = list(scores)
    for i, answers in zip(top, read, strict=True):
        blended[i] = (scores[i] + answers) / 2
    return blended


def counted_for_gate(features: QueryFeatures, chunks: Sequence[Chunk]) -> list[bool]:
    """Which chunks the gate reads: not a sibling's page of the entity the question names."""
    named = [p.product_id for p in features.products if p.product_id]
    return [not other for other in about_other_entities(features.question, chunks, named)]


def best_of(scores: Sequence[float], counted: Sequence[bool]) -> float:
    """The best score among the counted chunks (0.0 when none counts: every one is about a sibling)."""
    return max((score for score, keep in zip(scores, counted, strict=True) if keep), default=0.0)


def new_sections_first(
    spare: Sequence[EvidenceHit], shown: Sequence[EvidenceHit]
) -> tuple[list[EvidenceHit], list[EvidenceHit]]:
    """(the best spare hit of each (document, section) not shown yet, the other spare hits),
    order kept."""
    seen = {_section_key(hit) for hit in shown}
    fresh: list[EvidenceHit] = []
    rest: list[EvidenceHit] = []
    for hit in spare:
        key = _section_key(hit)
        (rest if key in seen else fresh).append(hit)
        seen.add(key)
    return fresh, rest


def with_pinned(
    shown: Sequence[EvidenceHit], ranked: Sequence[EvidenceHit], pinned: Sequence[str], n: int
) -> list[EvidenceHit]:
    """The shown evidence with every pinned hit of the ranking in it, each taking the place of the
    lowest-ranked unpinned one once all n slots are used; rank order kept."""
    missing = [hit for hit in ranked if hit.chunk_id in set(pinned) - {h.chunk_id for h in shown}]
    if not missing:
        return list(shown)
    keep = list(shown)
    for hit in missing:
        if len(keep) >= n:
            drop = next((h for h in reversed(keep) if h.chunk_id not in pinned), None)
            if drop is None:
                break
            keep.remove(drop)
        keep.append(hit)
    order = {hit.chunk_id: i for i, hit in enumerate(ranked)}
    return sorted(keep, key=lambda h: order[h.chunk_id])


def overviews_as_rows(hits: Sequence[EvidenceHit], scores: list[float]) -> list[float]:
    """A product's SKU overview states every fact any of its SKU rows states, so it ranks with the
    best of them, not below rows it summarises."""
    best_row: dict[str, float] = {}
    for hit, score in zip(hits, scores, strict=False):
        if hit.section == "SKU":
            best_row[hit.doc_id] = max(score, best_row.get(hit.doc_id, 0.0))
    return [
        max(score, best_row.get(hit.doc_id, 0.0)) if hit.section == SKU_OVERVIEW_SECTION else score
        for hit, score in zip(hits, scores, strict=False)
    ]


def _section_key(hit: EvidenceHit) -> tuple[str, str]:
    # A product's SKU overview restates its SKU rows: it is the rows' section, not a new one that
    # would take a slot from the page's own sections (重量 of 功能特点 for "单只耳朵有多重").
    return hit.doc_id, "SKU" if hit.section == SKU_OVERVIEW_SECTION else hit.section


def at_most_per_doc(hits: Sequence[EvidenceHit], limit: int) -> tuple[list[EvidenceHit], list[EvidenceHit]]:
    """(the best `limit` hits of each document, one row of a product page's table among them, the
    rest), order kept: one product's SKU rows or table rows or one policy's sections must not fill
    the evidence and push out a disagreeing source; the rest only fill slots no other document can
    (a question over two long documents)."""
    # A product page's table rows take one of its slots (防水：… below 尺码: 41); the rows a question
    # names or a skill worked out are pinned.
    later_rows = {id(hit) for hit in later_table_rows(list(hits))[1]}
    seen: dict[str, int] = {}
    kept: list[EvidenceHit] = []
    spare: list[EvidenceHit] = []
    for hit in hits:
        if id(hit) in later_rows:
            spare.append(hit)
            continue
        seen[hit.doc_id] = seen.get(hit.doc_id, 0) + 1
        (kept if seen[hit.doc_id] <= limit else spare).append(hit)
    return kept, spare
