"""Retrieval latency at scale: each leg over a corpus of N chunks made by repeating real documents
(every vector from the embedding cache), and the vector engines' own search latency.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from citescope.knowledge.chunking import chunk_document
from citescope.knowledge.ingest import embedding_text
from citescope.knowledge.loaders import load_path
from citescope.knowledge.settings import get_settings
from citescope.knowledge.vector_store import VectorStore
from citescope.workflows.evaluation.bench.retrieval_legs import (
    BENCH_DIR,
    SCALE_QUERIES,
    SETS,
    LegRunner,
    forget_query_vectors,
    ms_since,
)
from citescope.workflows.evaluation.datasets import (
    dataset_kb,
    load_questions,
    missing_embeddings,
    sample,
)
from citescope.workflows.metrics import latency_summary


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
            times.append(ms_since(started))
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
