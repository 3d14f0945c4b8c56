"""Retrieval benchmark on the dev half of ../shared/datasets: our skills against the baselines a
user would otherwise pick, with an ablation of each idea and the latency of each leg.

Sets: (a) cmrc2018_dev questions in one mixed KB of the cmrc2018_dev, baoxianzhidao and
domainrag corpora (the other two are distractors); (b) baoxianzhidao `faq_description` (user
paraphrases) against its corpus; (c) domainrag against its corpus.
Legs: the real skills of tools/ (keyword_search, semantic_search, hybrid_search, hybrid 30 ->
rerank) with the params of tools/skills.yaml, and the same skills with PREVIOUS_PARAMS; then
rank-bm25 BM25Okapi over the same jieba tokens, and AgentScope's SimpleKnowledge (dense).
Every leg returns DEPTH chunks; scores are doc-level (workflows.metrics).
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
from rank_bm25 import BM25Okapi

from citescope.knowledge.chunking import chunk_document
from citescope.knowledge.ingest import embedding_text
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.loaders import load_path
from citescope.knowledge.settings import get_settings
from citescope.knowledge.vector_store import VectorStore
from citescope.tools.base import EvidenceHit, SkillContext, hits_from_chunks
from citescope.tools.registry import DEFAULT_CONFIG, read_config
from citescope.tools.rerank import FEATURES, OfflineReranker, load_weights, rerank, save_weights
from citescope.tools.rerank_fit import RankGroup, fit_ranking_weights
from citescope.tools.search import fuse, hybrid_search, keyword_search, semantic_search
from citescope.workflows.evaluation.bench.agentscope_baseline import AgentScopeBaseline
from citescope.workflows.evaluation.datasets import (
    Question,
    dataset_kb,
    held_out,
    kb_doc_ids,
    load_questions,
    missing_embeddings,
    sample,
)
from citescope.workflows.metrics import latency_summary, ranked_doc_ids, retrieval_scores

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


def _docs(hits: Sequence[EvidenceHit]) -> list[str]:
    return ranked_doc_ids(h.doc_id for h in hits)


def _ms(started: float) -> float:
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
            docs = _docs(keyword_search(query, top_k=DEPTH, ctx=self.ctx("keyword_search", self.current)).hits)
            return docs, {"bm25": _ms(started)}
        if leg == "dense":
            docs = _docs(semantic_search(query, top_k=DEPTH, ctx=self.ctx("semantic_search", self.current)).hits)
            return docs, {"dense": _ms(started)}
        if leg == "hybrid":
            docs = _docs(hybrid_search(query, top_k=DEPTH, ctx=self.ctx("hybrid_search", self.current)).hits)
            return docs, {"hybrid": _ms(started)}
        if leg == "hybrid+rerank":
            candidates, hybrid_ms = self.hybrid(query, self.current)
            reranked, rerank_ms = self.rerank(query, candidates, self.current, as_of=as_of)
            return _docs(reranked), {"hybrid": hybrid_ms, "rerank": rerank_ms}
        if leg == "rank_bm25":
            assert self.rank_bm25 is not None, "the runner was made without this leg"
            scores = self.rank_bm25.get_scores(self.kb.query_tokens(query))
            top = [i for i in np.argsort(-scores, kind="stable")[:DEPTH] if scores[i] > 0]
            return ranked_doc_ids(self._chunks[i].doc_id for i in top), {"rank_bm25": _ms(started)}
        if leg == "agentscope":
            assert self.agentscope is not None, "the runner was made without this leg"
            docs = ranked_doc_ids(self.agentscope.retrieve_doc_ids(query, limit=DEPTH))
            return docs, {"agentscope": _ms(started)}
        raise ValueError(f"unknown leg {leg!r} (use {', '.join(LEGS)})")

    def hybrid(self, query: str, params: dict, **extra) -> tuple[list[EvidenceHit], float]:
        started = time.perf_counter()
        hits = hybrid_search(query, top_k=DEPTH, ctx=self.ctx("hybrid_search", params, **extra)).hits
        return hits, _ms(started)

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
        return hits, _ms(started)

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


# ----------------------------------------------------------------------------- one set


def _set_questions(
    spec: EvalSet, datasets_dir: Path, kb: KnowledgeBase, limit: int | None, seed: int, sliced: bool
) -> list[Question]:
    questions = load_questions(datasets_dir / spec.questions / "questions.jsonl", qtypes=spec.qtypes)
    if sliced:  # a development slice of the corpus: keep questions it can answer
        present = kb_doc_ids(kb)
        questions = [q for q in questions if present & set(q.gold_doc_ids)]
    return sample(questions, limit, seed)


def _scores(runs: list[tuple[list[str], list[str]]]) -> dict:
    return retrieval_scores(runs, KS)


def _ablation(runner: LegRunner, questions: list[Question], history: bool) -> dict:
    """Each idea on its own (same questions): BM25 title weights, then one change at a time to
    hybrid_search as tools/skills.yaml sets it, the experimental title-dense leg, and the
    conversational history."""
    current = runner.current
    gold = [q.gold_doc_ids for q in questions]
    queries = [q.asked("all" if history else "none") for q in questions]

    def measure(ranker: Callable[[str], list[str]], texts: Sequence[str] = queries) -> dict:
        return _scores([(ranker(t), g) for t, g in zip(texts, gold, strict=False)])

    def keyword(weight: float) -> Callable[[str], list[str]]:
        return lambda t: _docs(
            keyword_search(t, top_k=DEPTH, ctx=runner.ctx("keyword_search", current, title_weight=weight)).hits
        )

    def hybrid(**extra) -> Callable[[str], list[str]]:  # the current params with one change
        return lambda t: _docs(runner.hybrid(t, current, **extra)[0])

    def with_title_leg(weights: dict | None) -> Callable[[str], list[str]]:
        def ranker(t: str) -> list[str]:
            ctx = runner.ctx("hybrid_search", current)
            legs = {
                "bm25": keyword_search(t, top_k=DEPTH, ctx=ctx).hits,
                "dense": semantic_search(t, top_k=DEPTH, ctx=ctx).hits,
                "title_dense": runner.title_dense(t),
            }
            return _docs(fuse(legs, {**ctx.config, "weights": weights}, DEPTH))

        return ranker

    variants: dict[str, Callable[[str], list[str]]] = {}
    for weight in (0.0, 0.5, 1.0, 2.0, 4.0):
        variants[f"bm25, title_weight={weight:g}"] = keyword(weight)
    plain = variants["hybrid (skills.yaml)"] = hybrid()
    for weight in (0.5, 2.0):
        variants[f"hybrid, title_weight={weight:g}"] = hybrid(title_weight=weight)
    variants["hybrid, weighted fusion"] = hybrid(fusion="weighted")
    variants["hybrid, rrf k=20"] = hybrid(rrf_k=20)
    variants["hybrid, bm25:dense=2:1"] = hybrid(weights={"bm25": 2, "dense": 1})
    variants["hybrid, bm25:dense=1:2"] = hybrid(weights={"bm25": 1, "dense": 2})
    variants["hybrid, 50 candidates per leg"] = hybrid(candidates=50)
    variants["title-only dense (experimental leg)"] = lambda t: _docs(runner.title_dense(t))
    variants["hybrid + title-dense leg 1:1:1"] = with_title_leg(None)
    variants["hybrid + title-dense leg 1:1:0.5"] = with_title_leg({"bm25": 1, "dense": 1, "title_dense": 0.5})
    out = {name: measure(ranker) for name, ranker in variants.items()}
    if any(q.history for q in questions):  # the other way round: what the history adds or costs
        other = [q.asked("none" if history else "all") for q in questions]
        label = "hybrid, questions without history" if history else "hybrid, earlier turns prepended"
        out[label] = measure(plain, other)
        opening = [q.asked("opening") for q in questions]
        out["hybrid, the opening turn prepended"] = measure(plain, opening)
        out["hybrid → rerank, the opening turn prepended"] = measure(
            lambda t: runner.run("hybrid+rerank", t)[0], opening
        )
    if any(q.as_of for q in questions):  # what knowing the asked time buys the reranker
        out["hybrid → rerank, as-of time not given"] = measure(lambda t: runner.run("hybrid+rerank", t)[0])
    return out


def _rerank_examples(runner: LegRunner, questions: list[Question], history: bool) -> list[dict]:
    """Per question: hybrid_search candidates, their reranker features and labels (gold doc or not)."""
    examples = []
    for q in questions:
        query, as_of = q.asked("all" if history else "none"), q.reference_day
        candidates, _ = runner.hybrid(query, runner.current)
        chunks = [c for h in candidates if (c := runner.kb.get(h.chunk_id)) is not None]
        features = runner.reranker.features(query, chunks, as_of)
        labels = [int(c.doc_id in q.gold_doc_ids) for c in chunks]
        examples.append(
            {
                "qid": q.qid,
                "query": query,
                "as_of": as_of,
                "candidates": candidates,
                "gold": q.gold_doc_ids,
                "features": features.tolist(),
                "labels": labels,
            }
        )
    return examples


def fold_of(qid: str, folds: int = 2) -> int:
    """Deterministic cross-validation fold of a question."""
    return zlib.crc32(qid.encode("utf-8")) % folds


# ----------------------------------------------------------------------------- the benchmark


def run_retrieval_bench(
    datasets_dir: Path,
    limit: int | None = None,
    legs: Sequence[str] = LEGS,
    seed: int = 0,
    sets: Sequence[EvalSet] = SETS,
    max_docs: int | None = None,
    ablation: bool = True,
    history: bool = False,
    scale_sizes: Sequence[int] = (10_000, 100_000),
    kb_root: Path | None = None,
    allow_embedding: bool = False,
) -> dict:
    """Recall@1/5/10, MRR@10 and latency per set and leg; with `ablation`, each idea on its own
    and a 2-fold cross-validated reranker fit (pooled over the sets); latency at replicated KB sizes.

    limit: questions per set (stratified by qtype, seed). max_docs: only the first N documents
    of each corpus (development slices; questions without a gold doc inside are dropped).
    history: prepend earlier turns to conversational questions, for every leg alike.
    A set whose corpus is not fully in the embedding cache is skipped (building it would embed
    the corpus, hours on a CPU) unless allow_embedding.
    """
    datasets_dir = Path(datasets_dir)
    unknown = set(legs) - set(LEGS)
    if unknown:
        raise ValueError(f"unknown legs {sorted(unknown)} (use {', '.join(LEGS)})")
    result: dict = {
        "config": {
            "depth": DEPTH,
            "limit": limit,
            "seed": seed,
            "max_docs": max_docs,
            "history": history,
            "legs": list(legs),
            "current_params": current_params(),
            "previous_params": PREVIOUS_PARAMS,
        },
        "sets": {},
        "skipped": {},
    }
    active: dict[str, tuple[EvalSet, LegRunner, list[Question]]] = {}
    runs: dict[str, dict[str, list]] = {}
    examples: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="citescope-retrieval-") as tmp:
        try:
            for spec in sets:
                corpora = [datasets_dir / name / "corpus.jsonl" for name in spec.corpora]
                missing = 0 if allow_embedding else missing_embeddings(corpora, max_docs)
                if missing:
                    result["skipped"][spec.key] = f"{missing} chunk texts of {', '.join(spec.corpora)} not embedded yet"
                    continue
                kb = dataset_kb(corpora, "+".join(spec.corpora), max_docs=max_docs, root=kb_root)
                questions = _set_questions(spec, datasets_dir, kb, limit, seed, sliced=max_docs is not None)
                runner = LegRunner(kb, Path(tmp) / spec.key, legs)
                active[spec.key] = (spec, runner, questions)
                runs[spec.key], latency = _run_set(runner, questions, legs, history)
                result["sets"][spec.key] = {
                    "title": spec.title,
                    "n_questions": len(questions),
                    "qtypes": {t: sum(q.qtype == t for q in questions) for t in sorted({q.qtype for q in questions})},
                    "kb": {
                        "corpora": list(spec.corpora),
                        "chunks": len(kb),
                        "docs": len(kb_doc_ids(kb)),
                        "dir": str(kb.dir),
                    },
                    "latency_ms": latency,
                }
                if ablation:
                    result["sets"][spec.key]["ablation"] = _ablation(runner, questions, history)
                    examples[spec.key] = _rerank_examples(runner, questions, history)
            if examples:
                fit = _cross_validated_rerank(active, examples, Path(tmp))
                for key, set_runs in fit.pop("runs", {}).items():
                    runs[key]["hybrid+rerank*"] = set_runs
                result["rerank_fit"] = fit
        finally:
            for _, runner, _ in active.values():
                runner.close()
    for key, (_, _, questions) in active.items():
        result["sets"][key].update(_summarise(questions, runs[key]))
    if scale_sizes:
        result["scale"] = run_scale_latency(datasets_dir, scale_sizes, seed, kb_root, allow_embedding)
    result["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}
    return result


def _run_set(
    runner: LegRunner, questions: list[Question], legs: Sequence[str], history: bool
) -> tuple[dict[str, list], dict]:
    """Every leg on every question (legs interleaved per question, so load hits all alike)."""
    runs: dict[str, list] = {leg: [] for leg in (*legs, "bm25*", "hybrid*")}
    timings: dict[str, list[float]] = {}
    for q in questions:
        query = q.asked("all" if history else "none")
        for leg in legs:
            docs, steps = runner.run(leg, query, q.reference_day)
            runs[leg].append((docs, q.gold_doc_ids))
            for step, ms in steps.items():
                timings.setdefault(step, []).append(ms)
        # the same skills with the previous params (hybrid+rerank* follows the reranker fit)
        ctx = runner.ctx("keyword_search", runner.previous)
        runs["bm25*"].append((_docs(keyword_search(query, top_k=DEPTH, ctx=ctx).hits), q.gold_doc_ids))
        runs["hybrid*"].append((_docs(runner.hybrid(query, runner.previous)[0]), q.gold_doc_ids))
    return runs, {step: latency_summary(values) for step, values in timings.items()}


def _summarise(questions: list[Question], runs: dict[str, list]) -> dict:
    out: dict[str, Any] = {"legs": {leg: _scores(r) for leg, r in runs.items()}, "by_qtype": {}}
    # The shipped reranker's weights were fitted by `run.py calibrate` on 70% of the dev questions:
    # its score on the other 30% is the number that has not seen its questions.
    unseen = [i for i, q in enumerate(questions) if held_out(q.qid)]
    if unseen and "hybrid+rerank" in runs:
        out["held_out"] = {
            "n": len(unseen),
            **{leg: _scores([runs[leg][i] for i in unseen]) for leg in ("hybrid", "hybrid+rerank") if leg in runs},
        }
    qtypes = sorted({q.qtype for q in questions})
    if len(qtypes) > 1:
        for qtype in qtypes:
            index = [i for i, q in enumerate(questions) if q.qtype == qtype]
            out["by_qtype"][qtype] = {leg: _scores([r[i] for i in index]) for leg, r in runs.items()}
    return out


def _cross_validated_rerank(active: dict, examples: dict[str, list[dict]], tmp: Path) -> dict:
    """Fit the offline reranker's weights (tools/rerank_fit.py, from the current weights, sets
    weighted alike) on one fold of every set's questions and rerank the other fold with the real
    rerank skill using them (2 folds); then fit on all. All nine weights move here, where `run.py
    calibrate` fits only its FITTED_FEATURES: this row shows what a free fit would buy."""

    def groups(folds: set[int]) -> dict[str, list[RankGroup]]:
        return {
            key: [
                RankGroup(np.asarray(e["features"]), [h.doc_id for h in e["candidates"]], frozenset(e["gold"]))
                for e in examples[key]
                if fold_of(e["qid"]) in folds
            ]
            for key in examples
        }

    start = load_weights()
    weight_files = {}
    for fold in (0, 1):
        weight_files[fold] = tmp / f"rerank_fold{fold}.json"
        save_weights(fit_ranking_weights(groups({1 - fold}), start), weight_files[fold])
    everything = fit_ranking_weights(groups({0, 1}), start)
    runs: dict[str, list[tuple[list[str], list[str]]]] = {}
    latency: dict[str, dict] = {}
    for key, (_, runner, questions) in active.items():
        by_qid = {e["qid"]: e for e in examples[key]}
        rerankers = {fold: OfflineReranker(runner.kb, path) for fold, path in weight_files.items()}
        runs[key], timings = [], []
        for q in questions:
            e = by_qid[q.qid]
            hits, ms = runner.rerank(
                e["query"], e["candidates"], runner.current, rerankers[fold_of(q.qid)], as_of=e["as_of"]
            )
            runs[key].append((_docs(hits), q.gold_doc_ids))
            timings.append(ms)
        latency[key] = latency_summary(timings)
    every = [e for key in examples for e in examples[key]]
    return {
        "folds": 2,
        "examples": sum(len(e["labels"]) for e in every),
        "positives": sum(sum(e["labels"]) for e in every),
        "features": list(FEATURES),
        "weights_all_dev": everything,
        "rerank_latency_ms": latency,
        "runs": runs,
    }


# ----------------------------------------------------------------------------- latency at scale


def scale_corpus(
    datasets_dir: Path, n_chunks: int, corpora: Sequence[str] = SETS[0].corpora, folder: Path = BENCH_DIR
) -> Path:
    """A corpus of about n_chunks chunks: the real documents of `corpora`, repeated under new doc
    ids once they run out. Same texts -> every vector comes from the embedding cache."""
    path = Path(folder) / f"scale-{'+'.join(corpora)}-{n_chunks}.jsonl"
    if path.exists():
        return path
    settings = get_settings()
    docs = [d for name in corpora for d in load_path(datasets_dir / name / "corpus.jsonl")[0]]
    sizes = [len(chunk_document(d, settings.chunk_size, settings.chunk_overlap)) for d in docs]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    total, copy = 0, 0
    with open(tmp, "w", encoding="utf-8") as out:
        while total < n_chunks:
            for doc, size in zip(docs, sizes, strict=False):
                doc_id = doc.doc_id if copy == 0 else f"{doc.doc_id}-copy{copy}"
                out.write(
                    json.dumps(
                        {"doc_id": doc_id, "title": doc.title, "text": doc.text, "source": doc.source},
                        ensure_ascii=False,
                    )
                    + "\n"
                )
                total += size
                if total >= n_chunks:
                    break
            copy += 1
    os.replace(tmp, path)
    return path


def run_scale_latency(
    datasets_dir: Path,
    sizes: Sequence[int],
    seed: int = 0,
    kb_root: Path | None = None,
    allow_embedding: bool = False,
    corpora: Sequence[str] = SETS[0].corpora,
    folder: Path = BENCH_DIR,
    n_queries: int = SCALE_QUERIES,
) -> dict:
    """Per-query latency of the real skills (dense, BM25, hybrid, rerank of 30) on KBs of the
    given sizes, built from replicated real documents; n_queries real questions of the sets."""
    pool = [
        q
        for spec in SETS
        for q in load_questions(datasets_dir / spec.questions / "questions.jsonl", qtypes=spec.qtypes)
    ]
    queries = [q.question for q in sample(pool, n_queries, seed, stratify_by="qtype")]
    out: dict = {}
    for size in sizes:
        corpus = scale_corpus(datasets_dir, size, corpora, folder)
        missing = 0 if allow_embedding else missing_embeddings([corpus])
        if missing:
            out[size] = {"skipped": f"{missing} chunk texts not embedded yet"}
            continue
        kb = dataset_kb([corpus], f"scale-{size}", root=kb_root)
        runner = LegRunner(kb, Path(tempfile.gettempdir()), legs=())
        current = runner.current
        timings: dict[str, list[float]] = {"dense": [], "bm25": [], "hybrid": [], "rerank": []}
        runner.hybrid(queries[0], current)  # warm caches before timing
        for query in queries:
            for leg in ("dense", "bm25"):
                timings[leg].append(runner.run(leg, query)[1][leg])
            forget_query_vectors(kb)
            candidates, ms = runner.hybrid(query, current)
            timings["hybrid"].append(ms)
            timings["rerank"].append(runner.rerank(query, candidates, current)[1])
        out[size] = {
            "chunks": len(kb),
            "queries": len(queries),
            **{step: latency_summary(values) for step, values in timings.items()},
        }
        lexicon = kb.lexicon
        vectors = kb.embedder.embed_passages([embedding_text(c, lexicon) for c in kb.all_chunks()])
        query_vectors = np.stack([kb.embedder.embed_query(lexicon.canonicalize(q)) for q in queries])
        runner.close()
        kb.close()
        with tempfile.TemporaryDirectory(prefix="citescope-engines-") as tmp:
            out[size]["vector_engines"] = vector_engine_latency(vectors, query_vectors, Path(tmp))
    return out


def vector_engine_latency(vectors: np.ndarray, query_vectors: np.ndarray, folder: Path, limit: int = 70) -> dict:
    """ms per top-`limit` inner-product search (the dense leg's over-fetch for k=30) over the same
    vectors: Milvus Lite FLAT as knowledge.vector_store ships it, NumPy, faiss IndexFlatIP and
    faiss HNSW (M 32, efSearch 64; recall@10 = share of its top 10 scoring at least the exact 10th)."""
    import faiss

    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    queries = np.ascontiguousarray(query_vectors, dtype=np.float32)
    exact_10th = [np.sort(vectors @ q)[-10] for q in queries]

    def timed(search: Callable[[np.ndarray], object]) -> dict:
        search(queries[0])  # warm
        times = []
        for q in queries:
            started = time.perf_counter()
            search(q)
            times.append(_ms(started))
        return latency_summary(times)

    store = VectorStore(str(folder / "milvus.db"), "engines", vectors.shape[1])
    store.warm_up()
    store.upsert([{"row_id": str(i), "chunk_id": str(i), "doc_id": str(i)} for i in range(len(vectors))], vectors)
    out = {"milvus_lite_flat": timed(lambda q: store.search(q, limit))}
    store.close()
    out["numpy"] = timed(lambda q: np.argpartition(-(vectors @ q), limit)[:limit])
    flat = faiss.IndexFlatIP(vectors.shape[1])
    flat.add(vectors)
    out["faiss_flat"] = timed(lambda q: flat.search(q[None, :], limit))
    hnsw = faiss.IndexHNSWFlat(vectors.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = 80
    started = time.perf_counter()
    hnsw.add(vectors)
    build_s = time.perf_counter() - started
    hnsw.hnsw.efSearch = 64
    out["faiss_hnsw"] = timed(lambda q: hnsw.search(q[None, :], limit))
    found = [hnsw.search(q[None, :], 10)[0][0] for q in queries]
    out["faiss_hnsw"]["recall@10"] = float(
        np.mean([np.mean(f >= t - 1e-5) for f, t in zip(found, exact_10th, strict=False)])
    )
    out["faiss_hnsw"]["build_s"] = build_s
    return out


# ----------------------------------------------------------------------------- report

TARGETS_R5 = {"a": 0.99, "b": 0.70, "c": 0.75}
LEG_LABELS = {
    "bm25": "bm25 (keyword_search)",
    "dense": "dense (semantic_search)",
    "hybrid": "hybrid (hybrid_search)",
    "hybrid+rerank": "hybrid 30 → rerank",
    "rank_bm25": "baseline: rank-bm25 BM25Okapi",
    "agentscope": "baseline: AgentScope SimpleKnowledge (Milvus Lite)",
    "bm25*": "bm25, previous params (title weight 0.5)",
    "hybrid*": "hybrid, previous params (RRF, title weight 0.5)",
    "hybrid+rerank*": "hybrid 30 → rerank, weights fitted on the other fold",
}


def _fmt(value: float) -> str:
    return "–" if value != value else f"{value:.3f}"


def _ms_cell(summary: dict | None) -> str:
    return "–" if not summary or not summary.get("n") else f"{summary['p50']:.1f} / {summary['p95']:.1f}"


def _step_of(leg: str) -> str | None:
    return {
        "bm25": "bm25",
        "dense": "dense",
        "hybrid": "hybrid",
        "hybrid+rerank": "rerank",
        "rank_bm25": "rank_bm25",
        "agentscope": "agentscope",
    }.get(leg)


def format_retrieval_report(result: dict) -> str:
    """Markdown: per set, legs x (Recall@1/5/10, MRR@10, ms); qtype breakdown; ablation; reranker
    fit; latency by KB size; targets."""
    lines: list[str] = []
    config = result["config"]
    lines.append(
        f"Depth {config['depth']} chunks per leg, doc-level scores; limit {config['limit']}, "
        f"seed {config['seed']}, max_docs {config['max_docs']}, history {config['history']}."
    )
    for key, why in result.get("skipped", {}).items():
        lines.append(f"Set ({key}) skipped: {why}.")
    for key, s in result["sets"].items():
        kb = s["kb"]
        lines += [
            "",
            f"### ({key}) {s['title']}",
            f"{s['n_questions']} questions {s['qtypes']}; KB {kb['docs']:,} docs / {kb['chunks']:,} chunks.",
            "",
            "| leg | R@1 | R@5 | R@10 | R@30 | MRR@10 | ms p50 / p95 (rerank rows: the rerank step) |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for leg, sc in s["legs"].items():
            step = _step_of(leg)
            ms = _ms_cell(s["latency_ms"].get(step)) if step else "–"
            if leg == "hybrid+rerank*":
                ms = _ms_cell(result.get("rerank_fit", {}).get("rerank_latency_ms", {}).get(key))
            lines.append(
                f"| {LEG_LABELS.get(leg, leg)} | {_fmt(sc['recall@1'])} | {_fmt(sc['recall@5'])} "
                f"| {_fmt(sc['recall@10'])} | {_fmt(sc.get('recall@30', float('nan')))} "
                f"| {_fmt(sc['mrr@10'])} | {ms} |"
            )
        for leg in ("hybrid", "hybrid+rerank"):
            sc = s.get("held_out", {}).get(leg)
            if sc:
                lines.append(
                    f"| {LEG_LABELS[leg].split(' (')[0]}, only the {s['held_out']['n']} questions calibration "
                    f"held out | {_fmt(sc['recall@1'])} | {_fmt(sc['recall@5'])} | {_fmt(sc['recall@10'])} "
                    f"| {_fmt(sc.get('recall@30', float('nan')))} | {_fmt(sc['mrr@10'])} | – |"
                )
        if s.get("by_qtype"):
            legs = list(s["legs"])
            lines += [
                "",
                "Recall@5 by question type:",
                "",
                "| qtype (n) | " + " | ".join(legs) + " |",
                "|---|" + "---:|" * len(legs),
            ]
            for qtype, per_leg in s["by_qtype"].items():
                n = s["qtypes"].get(qtype, 0)
                lines.append(f"| {qtype} ({n}) | " + " | ".join(_fmt(per_leg[leg]["recall@5"]) for leg in legs) + " |")
    ablations = {key: s["ablation"] for key, s in result["sets"].items() if s.get("ablation")}
    if ablations:
        keys = list(ablations)
        names = list(dict.fromkeys(n for a in ablations.values() for n in a))
        lines += [
            "",
            "### Ablation (Recall@5 / MRR@10, same questions)",
            "",
            "| variant | " + " | ".join(f"({k})" for k in keys) + " |",
            "|---|" + "---:|" * len(keys),
        ]
        for name in names:
            cells = [
                f"{_fmt(ablations[k][name]['recall@5'])} / {_fmt(ablations[k][name]['mrr@10'])}"
                if name in ablations[k]
                else "–"
                for k in keys
            ]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    fit = result.get("rerank_fit")
    if fit and "weights_all_dev" in fit:
        weights = ", ".join(f"{k} {v:+.2f}" for k, v in fit["weights_all_dev"]["weights"].items())
        lines += [
            "",
            f"Reranker refit (hybrid+rerank*): the offline reranker's weights fitted by tools/rerank_fit.py "
            f"(coordinate ascent on MRR@10 of the first gold document, sets weighted alike, "
            f"then Platt scaling) on the hybrid_search candidates of one fold (crc32 of qid, 2 folds), "
            f"applied to the other fold; {fit['examples']:,} candidates, {fit['positives']:,} from a gold "
            f"doc. Fitted on both folds: intercept {fit['weights_all_dev']['intercept']:+.2f}, {weights}.",
        ]
    elif fit:
        lines += ["", f"Reranker refit skipped: {fit.get('skipped')}."]
    scale = result.get("scale")
    if scale:
        lines += [
            "",
            "### Latency by KB size (ms p50 / p95, real skills, replicated real documents)",
            "",
            "| chunks | dense (semantic_search) | bm25 (keyword_search) | hybrid_search | rerank 30 |",
            "|---:|---:|---:|---:|---:|",
        ]
        for size, row in scale.items():
            if "skipped" in row:
                lines.append(f"| {int(size):,} | skipped: {row['skipped']} | | | |")
            else:
                lines.append(
                    f"| {row['chunks']:,} | {_ms_cell(row['dense'])} | {_ms_cell(row['bm25'])} "
                    f"| {_ms_cell(row['hybrid'])} | {_ms_cell(row['rerank'])} |"
                )
        engines = {size: row["vector_engines"] for size, row in scale.items() if "vector_engines" in row}
        if engines:
            lines += [
                "",
                "Vector search alone, top 70 of the same vectors (ms p50 / p95):",
                "",
                "| chunks | Milvus Lite FLAT (as shipped) | NumPy matmul | faiss IndexFlatIP "
                "| faiss HNSW (recall@10) |",
                "|---:|---:|---:|---:|---:|",
            ]
            for size, e in engines.items():
                hnsw = e["faiss_hnsw"]
                lines.append(
                    f"| {int(size):,} | {_ms_cell(e['milvus_lite_flat'])} | {_ms_cell(e['numpy'])} "
                    f"| {_ms_cell(e['faiss_flat'])} | {_ms_cell(hnsw)} ({hnsw['recall@10']:.3f}) |"
                )
    lines += [
        "",
        "### Targets (Recall@5)",
        "",
        "| set | target | hybrid+rerank | held out | hybrid+rerank* | best single leg | AgentScope | met |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for key, s in result["sets"].items():
        legs = s["legs"]
        r5 = {leg: sc["recall@5"] for leg, sc in legs.items()}
        best_single = max(
            (leg for leg in ("bm25", "dense", "bm25*") if leg in r5), key=lambda leg: r5[leg], default=None
        )
        ours = r5.get("hybrid+rerank", float("nan"))
        unseen = s["held_out"]["hybrid+rerank"]["recall@5"] if s.get("held_out") else ours
        target = TARGETS_R5.get(key)
        # met: the shipped skills on every question and on the questions the weight fit never saw
        met = (
            target is not None
            and min(ours, unseen) >= target
            and (best_single is None or ours > r5[best_single])
            and ours > r5.get("agentscope", -1.0)
        )
        lines.append(
            f"| ({key}) | {target if target is not None else '–'} | {_fmt(ours)} "
            f"| {_fmt(unseen) if s.get('held_out') else '–'} "
            f"| {_fmt(r5.get('hybrid+rerank*', float('nan')))} "
            f"| {_fmt(r5[best_single]) + ' ' + best_single if best_single else '–'} "
            f"| {_fmt(r5.get('agentscope', float('nan')))} | {'yes' if met else 'no'} |"
        )
    return "\n".join(lines)
