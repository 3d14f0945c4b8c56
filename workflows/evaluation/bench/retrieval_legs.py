"""The retrieval benchmark's sets and legs: which questions are asked of which corpora, and
LegRunner, which runs one leg (a skill of tools/ with today's or the previous params, or a
baseline) for a question and times it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
from rank_bm25 import BM25Okapi

from citescope.knowledge.kb import KnowledgeBase
from citescope.tools.base import EvidenceHit, SkillContext, hits_from_chunks
from citescope.tools.registry import DEFAULT_CONFIG, read_config
from citescope.tools.rerank import OfflineReranker, rerank
from citescope.tools.search import hybrid_search, keyword_search, semantic_search
from citescope.workflows.evaluation.bench.agentscope_baseline import AgentScopeBaseline
from citescope.workflows.metrics import ranked_doc_ids

DEPTH = 30  # chunks per leg (= the hybrid candidates the reranker sees); docs come from these
KS = (1, 5, 10, 30)  # R@30: what any reranker of the 30 hybrid candidates can reach at most
LEGS = ("bm25", "dense", "hybrid", "hybrid+rerank", "rank_bm25", "agentscope")
# The skill params tools/skills.yaml had before this benchmark argued for title weight 1
# (2026-12-01): run side by side, so the change is measured in the same run.
PREVIOUS_PARAMS: dict[str, dict[str, Any]] = {
    "keyword_search": {"title_weight": 0.5},
    "hybrid_search": {"candidates": 30, "fusion": "rrf", "rrf_k": 60, "title_weight": 0.5},
}
SCALE_QUERIES = 100
BENCH_DIR = Path.home() / ".cache" / "citescope" / "bench"


@dataclass(frozen=True)
class EvalSet:
    key: str
    title: str
    corpora: tuple[str, ...]  # dataset folders whose corpus.jsonl make the KB
    questions: str  # dataset folder of questions.jsonl
    qtypes: tuple[str, ...] | None = None


SETS = (
    EvalSet(
        "a",
        "cmrc2018_dev in a mixed KB (cmrc2018_dev + baoxianzhidao + domainrag)",
        ("cmrc2018_dev", "baoxianzhidao", "domainrag"),
        "cmrc2018_dev",
    ),
    EvalSet(
        "b",
        "baoxianzhidao faq_description (user paraphrases)",
        ("baoxianzhidao",),
        "baoxianzhidao",
        ("faq_description",),
    ),
    EvalSet("c", "domainrag (all question types)", ("domainrag",), "domainrag"),
)


def current_params() -> dict[str, dict]:
    """Each skill's params as tools/skills.yaml sets them today."""
    return {spec.name: dict(spec.params) for spec in read_config(DEFAULT_CONFIG)}


def previous_params() -> dict[str, dict]:
    params = current_params()
    for name, extra in PREVIOUS_PARAMS.items():
        params.setdefault(name, {}).update(extra)
    return params


def doc_ids_of(hits: Sequence[EvidenceHit]) -> list[str]:
    return ranked_doc_ids(h.doc_id for h in hits)


def ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def forget_query_vectors(kb: KnowledgeBase) -> None:
    """Drop the embedder's memo of recent query vectors, so a timed leg pays for embedding its
    query as the first leg of a fresh question would (the legs of one question share the memo
    in production, and so do the untimed reruns here)."""
    getattr(kb.embedder, "_recent_queries", {}).clear()


class LegRunner:
    """Runs one leg for one query on one KB and says how long each step took."""

    def __init__(self, kb: KnowledgeBase, folder: Path, legs: Sequence[str]):
        self.kb = kb
        self.current, self.previous = current_params(), previous_params()
        self.reranker = OfflineReranker(kb)
        self.rank_bm25: BM25Okapi | None = None
        self.agentscope: AgentScopeBaseline | None = None
        self._chunks = kb.all_chunks()
        if "rank_bm25" in legs:
            # Title + text tokens of the KB's own catalog: exactly what our BM25 indexes.
            tokens = [title + body for _, _, body, title in kb.catalog.iter_chunks()]
            self.rank_bm25 = BM25Okapi(tokens)
        if "agentscope" in legs:
            self.agentscope = AgentScopeBaseline(kb, folder / "agentscope").warm_up()
        self._title_vectors: np.ndarray | None = None

    def ctx(self, skill: str, params: dict, as_of: date | None = None, **extra) -> SkillContext:
        return SkillContext(self.kb, {**params.get(skill, {}), **extra}, reranker=self.reranker, as_of=as_of)

    def run(self, leg: str, query: str, as_of: date | None = None) -> tuple[list[str], dict[str, float]]:
        """(ranked doc ids, {step: ms}) of one of LEGS; each leg embeds its query afresh. as_of:
        the day the question is about (only the reranker reads it)."""
        forget_query_vectors(self.kb)
        started = time.perf_counter()
        if leg == "bm25":
            docs = doc_ids_of(keyword_search(query, top_k=DEPTH, ctx=self.ctx("keyword_search", self.current)).hits)
            return docs, {"bm25": ms_since(started)}
        if leg == "dense":
            docs = doc_ids_of(semantic_search(query, top_k=DEPTH, ctx=self.ctx("semantic_search", self.current)).hits)
            return docs, {"dense": ms_since(started)}
        if leg == "hybrid":
            docs = doc_ids_of(hybrid_search(query, top_k=DEPTH, ctx=self.ctx("hybrid_search", self.current)).hits)
            return docs, {"hybrid": ms_since(started)}
        if leg == "hybrid+rerank":
            candidates, hybrid_ms = self.hybrid(query, self.current)
            reranked, rerank_ms = self.rerank(query, candidates, self.current, as_of=as_of)
            return doc_ids_of(reranked), {"hybrid": hybrid_ms, "rerank": rerank_ms}
        if leg == "rank_bm25":
            assert self.rank_bm25 is not None, "the runner was made without this leg"
            scores = self.rank_bm25.get_scores(self.kb.query_tokens(query))
            top = [i for i in np.argsort(-scores, kind="stable")[:DEPTH] if scores[i] > 0]
            return ranked_doc_ids(self._chunks[i].doc_id for i in top), {"rank_bm25": ms_since(started)}
        if leg == "agentscope":
            assert self.agentscope is not None, "the runner was made without this leg"
            docs = ranked_doc_ids(self.agentscope.retrieve_doc_ids(query, limit=DEPTH))
            return docs, {"agentscope": ms_since(started)}
        raise ValueError(f"unknown leg {leg!r} (use {', '.join(LEGS)})")

    def hybrid(self, query: str, params: dict, **extra) -> tuple[list[EvidenceHit], float]:
        started = time.perf_counter()
        hits = hybrid_search(query, top_k=DEPTH, ctx=self.ctx("hybrid_search", params, **extra)).hits
        return hits, ms_since(started)

    def rerank(
        self,
        query: str,
        candidates: list[EvidenceHit],
        params: dict,
        reranker: OfflineReranker | None = None,
        as_of: date | None = None,
    ) -> tuple[list[EvidenceHit], float]:
        """The rerank skill over the candidates (with another reranker, e.g. refitted weights)."""
        ctx = self.ctx("rerank", params, as_of=as_of)
        if reranker is not None:
            ctx.reranker = reranker
        ctx.remember(candidates)
        started = time.perf_counter()
        hits = rerank(query, top_k=len(candidates) or 1, chunk_ids=[h.chunk_id for h in candidates], ctx=ctx).hits
        return hits, ms_since(started)

    def title_dense(self, query: str) -> list[EvidenceHit]:
        """Experimental leg (not a skill): cosine of the query and each chunk's *title* alone.
        FAQ titles are the standard questions a paraphrase should match."""
        if self._title_vectors is None:
            titles = [c.title or c.text[:64] for c in self._chunks]
            self._title_vectors = self.kb.embedder.embed_passages(titles)  # cached after the first run
        vector = self.kb.embedder.embed_query(self.kb.lexicon.canonicalize(query))
        scores = self._title_vectors @ vector
        top = np.argsort(-scores, kind="stable")[:DEPTH]
        return hits_from_chunks(self.kb, [(self._chunks[i].chunk_id, float(scores[i])) for i in top], "title_dense")

    def close(self) -> None:
        if self.agentscope is not None:
            self.agentscope.close()
