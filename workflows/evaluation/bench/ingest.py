"""Ingest throughput on real data: a cold run (empty embedding cache), then an unchanged rerun."""

from __future__ import annotations

import json
import os
import platform
import tempfile
import time
from pathlib import Path

from citescope.knowledge.ingest import Ingestor
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.settings import get_settings


def run_ingest_bench(dataset_dir: Path, limit: int = 400) -> dict:
    with tempfile.TemporaryDirectory(prefix="citescope-bench-") as tmp:
        tmp_path = Path(tmp)
        corpus = tmp_path / "corpus.jsonl"
        with open(dataset_dir / "corpus.jsonl", encoding="utf-8") as src, open(corpus, "w", encoding="utf-8") as dst:
            for i, line in enumerate(src):
                if limit and i >= limit:
                    break
                dst.write(line)
        # A private cache: the point is to time the embedding model, not the cache.
        settings = get_settings(cache_dir=tmp_path / "cache")
        kb = KnowledgeBase(tmp_path / "kb", settings, create=True)
        started = time.perf_counter()
        cold = Ingestor(kb, show_progress=False).run([corpus])
        cold_s = time.perf_counter() - started
        started = time.perf_counter()
        warm = Ingestor(kb, show_progress=False).run([corpus])
        warm_s = time.perf_counter() - started
        chars = sum(len(c.text) for c in kb.all_chunks())
        kb.close()
    return {
        "dataset": dataset_dir.name,
        "documents": cold.documents,
        "chunks": cold.chunks,
        "mean_chunk_chars": round(chars / max(cold.chunks, 1), 1),
        "embedder": settings.embedder,
        "cold": {
            "seconds": round(cold_s, 2),
            "chunks_per_s": round(cold.chunks / cold_s, 2),
            "docs_per_s": round(cold.documents / cold_s, 2),
        },
        "unchanged_rerun": {"seconds": round(warm_s, 2), "skipped": warm.skipped, "embedded": warm.embedded},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
    }


def format_ingest_report(result: dict) -> str:
    cold, warm = result["cold"], result["unchanged_rerun"]
    return "\n".join(
        [
            f"Ingest of {result['dataset']} ({result['documents']} documents -> {result['chunks']} chunks, "
            f"mean {result['mean_chunk_chars']} chars, embedder {result['embedder']}, "
            f"{result['machine']['cpus']} CPUs)",
            "",
            "| run | seconds | chunks/s | docs/s | embedded |",
            "|---|---|---|---|---|",
            f"| cold (empty embedding cache) | {cold['seconds']} | {cold['chunks_per_s']} | {cold['docs_per_s']} "
            f"| {result['chunks']} |",
            f"| unchanged rerun | {warm['seconds']} | - | - | {warm['embedded']} (skipped {warm['skipped']}) |",
            "",
            "```json",
            json.dumps(result, ensure_ascii=False),
            "```",
        ]
    )
