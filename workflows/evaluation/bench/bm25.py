"""Benchmark: knowledge.bm25.BM25Index against rank_bm25.BM25Okapi on real chunked datasets.

Measures per-query latency of a top-10 search and whether both return the same top-10 docs,
at 10k and 100k chunks cut from the shared datasets (real text only, nothing generated).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import platform
import random
import re
import statistics
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from rank_bm25 import BM25Okapi

from citescope.knowledge.bm25 import BM25Index
from citescope.knowledge.text import tokenize

PRIMARY_DATASETS = ("cmrc2018_dev", "baoxianzhidao", "domainrag", "rgb_zh")
# Used only when the primary corpora cannot supply enough chunks; holdout corpora repeat ~90%
# of their primary corpus, so these add many duplicate chunks (still real text).
FALLBACK_CORPORA = ("corpus_alt_replies.jsonl", "corpus_holdout.jsonl")
TARGET_CHUNK_CHARS = 150
MIN_CHUNK_CHARS = 60
TOP_K = 10
# rank-bm25 takes a large fraction of a second per query at this size, so it is timed on fewer queries.
LARGE_SIZE = 50_000
REFERENCE_QUERIES_AT_LARGE_SIZE = 30
CACHE_DIR = Path.home() / ".cache" / "citescope" / "bench"
_CACHE_FORMAT = 1
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;\n])")


def run_bm25_bench(
    datasets_dir: Path,
    sizes: Sequence[int] = (10_000, 100_000),
    n_queries: int = 200,
    seed: int = 0,
) -> dict:
    datasets_dir = Path(datasets_dir)
    corpus_info, chunk_tokens = _load_or_build_chunks(datasets_dir, max(sizes), seed)
    if len(chunk_tokens) < max(sizes):
        raise ValueError(f"only {len(chunk_tokens)} chunks available under {datasets_dir}, need {max(sizes)}")
    queries = _sample_queries(datasets_dir, n_queries, seed)

    result: dict = {}
    for size in sizes:
        result[size] = _bench_one_size(chunk_tokens[:size], queries)
    result["corpus"] = corpus_info
    result["machine"] = {
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
    }
    return result


def _bench_one_size(corpus_tokens: list[list[str]], queries: list[list[str]]) -> dict:
    started = time.perf_counter()
    ours = BM25Index.build(corpus_tokens)
    build_s = time.perf_counter() - started
    started = time.perf_counter()
    reference = BM25Okapi(corpus_tokens)
    reference_build_s = time.perf_counter() - started

    n_reference = REFERENCE_QUERIES_AT_LARGE_SIZE if len(corpus_tokens) >= LARGE_SIZE else len(queries)
    reference_queries = queries[:n_reference]
    ours.top_k(queries[0], TOP_K)  # warm caches before timing
    reference.get_scores(queries[0])

    ours_ms, ours_tops = [], []
    for query in queries:
        started = time.perf_counter()
        docs, _ = ours.top_k(query, TOP_K)
        ours_ms.append((time.perf_counter() - started) * 1000)
        ours_tops.append(docs)

    reference_ms, agreements = [], []
    for query, our_docs in zip(reference_queries, ours_tops, strict=False):
        started = time.perf_counter()
        scores = reference.get_scores(query)
        # Stable argsort: same tie rule as ours (lower index first) so equal scores agree.
        top = np.argsort(-scores, kind="stable")[:TOP_K]
        reference_ms.append((time.perf_counter() - started) * 1000)
        expected = {int(doc) for doc in top if scores[doc] > 0}
        agreements.append(expected == {int(doc) for doc in our_docs})

    ours_p50_same_queries = statistics.median(ours_ms[:n_reference])
    return {
        "ours_ms": _summary(ours_ms),
        "rank_bm25_ms": _summary(reference_ms),
        "speedup_p50": statistics.median(reference_ms) / ours_p50_same_queries,
        "speedup_basis": f"p50 over the same {n_reference} queries for both",
        "top10_agreement": sum(agreements) / len(agreements),
        "n_queries": len(queries),
        "rank_bm25_n_queries": n_reference,
        "build_s": build_s,
        "rank_bm25_build_s": reference_build_s,
        "n_postings": int(ours.doc_ids.shape[0]),
        "vocabulary_size": len(ours.vocabulary),
    }


def _summary(milliseconds: list[float]) -> dict:
    return {
        "p50": float(np.percentile(milliseconds, 50)),
        "p95": float(np.percentile(milliseconds, 95)),
        "mean": float(np.mean(milliseconds)),
    }


def format_bm25_report(result: dict) -> str:
    lines = [
        "| chunks | build s (ours / rank-bm25) | ours ms p50 / p95 / mean | rank-bm25 ms p50 / p95 / mean "
        "| speedup p50 | top-10 agreement |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for size, row in result.items():
        if not isinstance(size, int):
            continue
        ours, reference = row["ours_ms"], row["rank_bm25_ms"]
        lines.append(
            f"| {size:,} | {row['build_s']:.2f} / {row['rank_bm25_build_s']:.2f} "
            f"| {ours['p50']:.2f} / {ours['p95']:.2f} / {ours['mean']:.2f} ({row['n_queries']} q) "
            f"| {reference['p50']:.1f} / {reference['p95']:.1f} / {reference['mean']:.1f} "
            f"({row['rank_bm25_n_queries']} q) "
            f"| {row['speedup_p50']:.0f}x | {row['top10_agreement']:.1%} |"
        )
    corpus, machine = result.get("corpus", {}), result.get("machine", {})
    if corpus:
        lines.append("")
        lines.append(
            f"Chunks: ≤{corpus['chunk_chars']} chars, split on sentence punctuation; "
            f"{corpus['n_primary_chunks']:,} from corpus.jsonl, {corpus['n_fallback_chunks']:,} from "
            f"alt-reply/holdout corpora; {corpus['n_duplicate_chunks']:,} duplicate texts. "
            "Speedup compares p50 over the queries timed for both."
        )
    if machine:
        lines.append(
            f"Machine: {machine['cpu_count']} CPUs, Python {machine['python']}, numpy {machine['numpy']}, "
            f"{machine['platform']}."
        )
    return "\n".join(lines)


def _load_or_build_chunks(datasets_dir: Path, n_needed: int, seed: int) -> tuple[dict, list[list[str]]]:
    """Tokenised chunks, cached because jieba takes about a minute for 100k chunks."""
    fingerprint = hashlib.sha256(
        json.dumps([_CACHE_FORMAT, n_needed, seed, TARGET_CHUNK_CHARS, _dataset_stamp(datasets_dir)]).encode()
    ).hexdigest()[:16]
    cache_path = CACHE_DIR / f"bm25_chunks_{n_needed}_seed{seed}_{fingerprint}.json.gz"
    if cache_path.exists():
        with gzip.open(cache_path, "rt", encoding="utf-8") as cached:
            payload = json.load(cached)
        return payload["info"], payload["tokens"]

    info, texts = _chunk_corpora(datasets_dir, n_needed, seed)
    tokens = [tokenize(text) for text in texts]
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    tmp_path = cache_path.with_name(cache_path.name + f".{os.getpid()}.tmp")
    with gzip.open(tmp_path, "wt", encoding="utf-8") as cache:
        json.dump({"info": info, "tokens": tokens}, cache, ensure_ascii=False)
    os.replace(tmp_path, cache_path)
    return info, tokens


def _dataset_stamp(datasets_dir: Path) -> list:
    return sorted(
        (str(path.relative_to(datasets_dir)), path.stat().st_size, int(path.stat().st_mtime))
        for path in datasets_dir.glob("*/corpus*.jsonl")
    )


def _chunk_corpora(datasets_dir: Path, n_needed: int, seed: int) -> tuple[dict, list[str]]:
    """The first n_needed chunks: primary corpora first (shuffled), then fallback corpora.

    The datasets hold ~8M characters, so 100k chunks of a full 150 characters do not exist;
    the chunk size steps down from 150 until there are enough, and the result says which.
    """
    primary_files = [datasets_dir / name / "corpus.jsonl" for name in PRIMARY_DATASETS]
    fallback_files = [datasets_dir / name / file_name for name in PRIMARY_DATASETS for file_name in FALLBACK_CORPORA]
    missing = [str(path) for path in primary_files if not path.exists()]
    if missing:
        raise FileNotFoundError(f"missing dataset corpora: {', '.join(missing)}")
    primary_texts = list(_corpus_texts(primary_files))
    fallback_texts = list(_corpus_texts([path for path in fallback_files if path.exists()]))

    for chunk_chars in range(TARGET_CHUNK_CHARS, MIN_CHUNK_CHARS - 1, -10):
        primary = [piece for text in primary_texts for piece in _split_into_pieces(text, chunk_chars)]
        fallback = (
            []
            if len(primary) >= n_needed
            else [piece for text in fallback_texts for piece in _split_into_pieces(text, chunk_chars)]
        )
        if len(primary) + len(fallback) >= n_needed:
            break
    shuffler = random.Random(seed)
    shuffler.shuffle(primary)  # so any prefix mixes all four datasets
    shuffler.shuffle(fallback)
    chunks = (primary + fallback)[:n_needed]
    n_primary = min(len(primary), len(chunks))
    info = {
        "chunk_chars": chunk_chars,
        "n_chunks": len(chunks),
        "n_primary_chunks": n_primary,
        "n_fallback_chunks": len(chunks) - n_primary,
        "n_duplicate_chunks": len(chunks) - len(set(chunks)),
        "mean_chunk_chars": round(sum(map(len, chunks)) / max(len(chunks), 1), 1),
    }
    return info, chunks


def _corpus_texts(paths: list[Path]) -> Iterator[str]:
    for path in paths:
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                if line.strip():
                    doc = json.loads(line)
                    yield f"{doc.get('title') or ''}\n{doc.get('text') or ''}".strip()


def _split_into_pieces(text: str, max_chars: int) -> list[str]:
    """Greedily pack whole sentences into pieces of at most max_chars; cut longer sentences."""
    pieces: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(text):
        sentence = sentence.strip()
        if not sentence:
            continue
        if current and len(current) + len(sentence) > max_chars:
            pieces.append(current)
            current = ""
        while len(sentence) > max_chars:
            pieces.append(sentence[:max_chars])
            sentence = sentence[max_chars:]
        current += sentence
    if current:
        pieces.append(current)
    return pieces


def _sample_queries(datasets_dir: Path, n_queries: int, seed: int) -> list[list[str]]:
    questions: list[str] = []
    for name in PRIMARY_DATASETS:
        path = datasets_dir / name / "questions.jsonl"
        if path.exists():
            with path.open(encoding="utf-8") as lines:
                questions.extend(json.loads(line)["question"] for line in lines if line.strip())
    tokenised = [tokens for tokens in map(tokenize, sorted(set(questions))) if tokens]
    if len(tokenised) < n_queries:
        raise ValueError(f"only {len(tokenised)} usable questions under {datasets_dir}, need {n_queries}")
    return random.Random(seed).sample(tokenised, n_queries)
