"""KnowledgeBase: one KB folder = catalog (SQLite) + dense vectors (Milvus) + BM25 indexes.

Heavy loading happens in `warm_up`; search methods are plain typed calls that the retrieval
skills wrap. Layout of a KB folder:
  kb.json          what the KB was built with (embedder, dimension, Milvus URI, collection)
  catalog.sqlite   documents, chunks with search tokens, SKU table, generation counter, and the
                   source's lexicon and shop profile (knowledge/shop_profile.py) as meta values
  milvus.db        Milvus Lite store (absent when a Milvus server URI is configured)
  bm25/            BM25 snapshots, rebuilt from the catalog when its generation moves on
  dense/           the live vectors for in-memory exact search (Milvus Lite KBs), per generation
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from citescope.knowledge.bm25 import BM25Index
from citescope.knowledge.catalog import Catalog
from citescope.knowledge.chinese_script import matching_form
from citescope.knowledge.embedders import CachedEmbedder, make_embedder
from citescope.knowledge.filters import SearchFilters, day_number
from citescope.knowledge.lexicon import Lexicon
from citescope.knowledge.schema import Chunk
from citescope.knowledge.settings import Settings, get_settings
from citescope.knowledge.shop_profile import ShopProfile
from citescope.knowledge.text import arabic_numerals, in_vocabulary, tokenize
from citescope.knowledge.vector_store import VectorStore, drop_server_collection

MANIFEST = "kb.json"
SHOP_PROFILE_META = "shop_profile"


class KBError(Exception):
    """A KB that cannot be used as asked (missing, or built with another embedder)."""


@dataclass
class Hit:
    chunk_id: str
    score: float


class KnowledgeBase:
    def __init__(self, kb_dir: Path | str, settings: Settings | None = None, create: bool = False):
        self.dir = Path(kb_dir)
        self.settings = settings or get_settings()
        manifest_path = self.dir / MANIFEST
        if not manifest_path.exists():
            if not create:
                raise KBError(f"no knowledge base at {self.dir} (run: python run.py ingest PATH --kb {self.dir})")
            self.dir.mkdir(parents=True, exist_ok=True)
        self.catalog = Catalog(self.dir / "catalog.sqlite")
        self.manifest = self._read_manifest(manifest_path)
        self.embedder: CachedEmbedder = make_embedder(
            self.manifest.get("embedder_spec", self.settings.embedder),
            self.settings.cache_dir,
            self.settings.embed_batch,
        )
        self._check_embedder()
        self.vectors: VectorStore | None = None
        self._loaded_generation = -1
        self._dense: np.ndarray | None = None  # live vectors in table order (in-memory dense search)
        self._dense_rows: dict[str, int] = {}
        self._dense_prefilter: Float16Prefilter | None = None
        self._load_lock = threading.RLock()
        self._search_lock = threading.Lock()
        self._shop: tuple[str | None, ShopProfile] = (None, ShopProfile())  # (stored JSON, its profile)

    # -- setup ----------------------------------------------------------------------------
    def _read_manifest(self, path: Path) -> dict:
        if path.exists():
            try:
                return json.loads(path.read_text(encoding="utf-8"))
            except ValueError as exc:
                raise KBError(f"{path}: unreadable KB manifest ({exc})") from exc
        return {
            "embedder_spec": self.settings.embedder,
            "milvus_uri": self.settings.milvus_uri,
            "collection": self._new_collection_name(),
        }

    def _new_collection_name(self) -> str:
        """A Milvus server is shared by every KB pointed at it: a new KB gets a collection of its own
        unless one is named (CITESCOPE_COLLECTION), or a KB's reconcile would delete the rows of
        another KB in the same collection as orphans. A Milvus Lite file is this KB's alone."""
        name = self.settings.collection
        if "://" in (self.settings.milvus_uri or "") and "collection" not in self.settings.model_fields_set:
            name = f"{name}_{uuid.uuid4().hex[:16]}"
        return name

    def _check_embedder(self) -> None:
        wanted = self.settings.embedder
        built = self.manifest.get("embedder_spec", wanted)
        if wanted != built and self.settings.model_fields_set.__contains__("embedder"):
            raise KBError(
                f"{self.dir}: built with embedder {built!r}, asked for {wanted!r}; vectors of two models "
                f"cannot be mixed — re-index: python run.py ingest PATH --kb {self.dir} --reindex"
            )

    def _write_manifest(self) -> None:
        self.manifest.update({"embedder": self.embedder.name, "dim": self.embedder.dim})
        tmp = self.dir / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(self.manifest, ensure_ascii=False, indent=2), encoding="utf-8")
        tmp.replace(self.dir / MANIFEST)

    @property
    def milvus_uri(self) -> str:
        return self.manifest.get("milvus_uri") or str(self.dir / "milvus.db")

    def open_vectors(self) -> VectorStore:
        """Warm the embedder and the vector store; records model and dimension on first use."""
        if self.vectors is None:
            self.embedder.warm_up()
            recorded = self.manifest.get("embedder")
            if recorded and recorded != self.embedder.name:
                raise KBError(
                    f"{self.dir}: vectors were made by {recorded!r}, the configured model is "
                    f"{self.embedder.name!r}; re-index with --reindex"
                )
            if recorded is None:
                self._write_manifest()
            self.vectors = VectorStore(
                self.milvus_uri,
                self.manifest.get("collection", "chunks"),
                self.embedder.dim,
                token=self.settings.milvus_token,
            )
            self.vectors.warm_up()
        return self.vectors

    @property
    def lexicon(self) -> Lexicon:
        raw = self.catalog.get_meta("lexicon")
        return Lexicon.model_validate_json(raw) if raw else Lexicon()

    @property
    def shop(self) -> ShopProfile:
        """The shop profile its sources shipped (shop.yaml), or the neutral one; read as stored now,
        parsed once per stored value (prompts and the query analyser ask for it per question)."""
        raw = self.catalog.get_meta(SHOP_PROFILE_META)
        stored, profile = self._shop
        if raw != stored:
            profile = ShopProfile.model_validate_json(raw) if raw else ShopProfile()
            self._shop = (raw, profile)
        return profile

    def set_shop(self, profile: ShopProfile) -> None:
        """Store the shop profile a source shipped (ingest), in place of the one stored before."""
        self.catalog.set_meta(SHOP_PROFILE_META, profile.model_dump_json())

    def warm_up(self) -> KnowledgeBase:
        self.open_vectors()
        self._load_tables()
        return self

    # -- in-memory tables -----------------------------------------------------------------
    def _load_tables(self) -> None:
        with self._load_lock:
            generation = self.catalog.generation()
            if generation == self._loaded_generation:
                return
            chunks, row_ids, body, title = [], [], [], []
            for chunk, row_id, body_tokens, title_tokens in self.catalog.iter_chunks():
                chunks.append(chunk)
                row_ids.append(row_id)
                body.append(body_tokens)
                title.append(title_tokens)
            self._chunks = chunks
            self._index_of = {c.chunk_id: i for i, c in enumerate(chunks)}
            self._rows_of_doc: dict[str, list[int]] = {}  # a document's chunks, in table order
            for i, chunk in enumerate(chunks):
                self._rows_of_doc.setdefault(chunk.doc_id, []).append(i)
            self._index_of_row = {r: i for i, r in enumerate(row_ids)}
            self._columns = metadata_columns(chunks)
            self._bm25_body = self._bm25_snapshot("body", body, generation)
            self._bm25_title = self._bm25_snapshot("title", title, generation)
            self._dense = self._dense_snapshot(row_ids, generation) if self._dense_in_memory() else None
            dense = self._dense
            use_prefilter = dense is not None and len(dense) >= self.settings.dense_prefilter_min_rows
            self._dense_prefilter = Float16Prefilter.build(dense) if dense is not None and use_prefilter else None
            self._lexicon = self.lexicon
            self._loaded_generation = generation
            if self.vectors is not None:  # Milvus searches from now on see the vectors of this generation
                self.vectors.catch_up()

    def _bm25_snapshot(self, name: str, tokens: list[list[str]], generation: int) -> BM25Index:
        path = self.dir / "bm25" / f"{name}-{generation}.npz"
        if path.exists():
            try:
                index = BM25Index.load(path)
                if index.n_docs == len(tokens):
                    return index
            except ValueError:
                pass
        index = BM25Index.build(tokens)
        path.parent.mkdir(exist_ok=True)
        index.save(path)
        _drop_older_snapshots(path, f"{name}-*.npz")
        return index

    def _dense_in_memory(self) -> bool:
        mode = self.settings.dense_search
        return mode == "memory" or (mode == "auto" and "://" not in self.milvus_uri)

    def _dense_snapshot(self, row_ids: list[str], generation: int) -> np.ndarray:
        """The live chunks' vectors in table order, read from Milvus once per catalog generation
        and kept next to the BM25 snapshots (a restart loads the file, not Milvus)."""
        path = self.dir / "dense" / f"vectors-{generation}.npz"
        rows_key = hashlib.sha1("\n".join(row_ids).encode("utf-8")).hexdigest()
        vectors = None
        if path.exists():
            with np.load(path) as saved:  # the same rows in the same order, or rebuild
                if str(saved["rows"]) == rows_key and saved["vectors"].shape == (len(row_ids), self.embedder.dim):
                    vectors = saved["vectors"]
        if vectors is None:
            # A row id is derived from the chunk's content: a row kept from the previous snapshot
            # has the same vector, so only new rows are read from Milvus.
            vectors = np.zeros((len(row_ids), self.embedder.dim), dtype=np.float32)
            known = [(i, self._dense_rows[r]) for i, r in enumerate(row_ids) if r in self._dense_rows]
            if known:
                assert self._dense is not None  # _dense_rows index the previous snapshot's rows
                new_at, old_at = map(list, zip(*known, strict=False))
                vectors[new_at] = self._dense[old_at]
            missing = [i for i, r in enumerate(row_ids) if r not in self._dense_rows]
            if missing:
                vectors[missing] = self.open_vectors().vectors_of([row_ids[i] for i in missing])
            self._save_dense(path, vectors, rows_key)
        self._dense_rows = {r: i for i, r in enumerate(row_ids)}
        return vectors

    @staticmethod
    def _save_dense(path: Path, vectors: np.ndarray, rows_key: str) -> None:
        path.parent.mkdir(exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
        np.savez(tmp, vectors=vectors, rows=np.array(rows_key))
        os.replace(tmp, path)
        _drop_older_snapshots(path, "vectors-*.npz")

    def refresh(self) -> None:
        """Pick up changes another process committed (cheap when nothing changed)."""
        if self.catalog.generation() != self._loaded_generation:
            self._load_tables()

    @property
    def version(self) -> int:
        return self.catalog.generation()

    # -- access ---------------------------------------------------------------------------
    def __len__(self) -> int:
        self._load_tables()
        return len(self._chunks)

    def get(self, chunk_id: str) -> Chunk | None:
        self._load_tables()
        i = self._index_of.get(chunk_id)
        return self._chunks[i] if i is not None else None

    def chunks_of(self, doc_id: str) -> list[Chunk]:
        self._load_tables()
        return [self._chunks[i] for i in self._rows_of_doc.get(doc_id, ())]

    def all_chunks(self) -> list[Chunk]:
        self._load_tables()
        return list(self._chunks)

    def mentions(self, pattern: re.Pattern, hint: str = "") -> bool:
        """Whether any chunk's title or text matches: a full scan, for a rare check, not per search.
        hint: a plain substring every match contains, the same in either script (digits, a model
        number), tested first (30 ms instead of 550 ms at 100k chunks); the pattern is matched against
        the text's matching form (simplified: the question's pattern finds a traditional page)."""
        self._load_tables()
        return any(
            pattern.search(matching_form(text))
            for c in self._chunks
            for text in (c.text, c.title or "")
            if hint in text
        )

    def skus(self, **equals: str) -> list[dict]:
        """SKU rows matching every given column (product_id, sku, brand, category...)."""
        allowed = {"product_id", "sku", "brand", "category", "colour", "size", "doc_id"}
        unknown = set(equals) - allowed
        if unknown:
            raise ValueError(f"unknown SKU column(s): {sorted(unknown)}")
        where = " AND ".join(f"{k}=?" for k in equals)
        return self.catalog.skus(f"WHERE {where}" if where else "", tuple(equals.values()))

    def query_tokens(self, query: str) -> list[str]:
        """The query's search tokens, a run of them the documents never use cut again into words they
        do (knowledge/text.py `in_vocabulary`: 顺丰要 -> 顺丰)."""
        self.refresh()
        tokens = tokenize(query, self.lexicon if self._loaded_generation < 0 else self._lexicon)
        if not self._chunks:
            return tokens
        return in_vocabulary(tokens, _EitherVocabulary(self._bm25_body.vocabulary, self._bm25_title.vocabulary))

    def search_tokens(self, query: str) -> list[str]:
        """The query's tokens, and those of its numerals in digits: a customer writes 七天无理由 or
        保修两年 where the shop's pages write 7天 and 2年."""
        tokens = self.query_tokens(query)
        in_digits = arabic_numerals(query)
        if in_digits != query:
            tokens += [t for t in self.query_tokens(in_digits) if t not in tokens]
        return tokens

    # -- search ---------------------------------------------------------------------------
    def search_keyword(
        self, query: str, k: int = 10, filters: SearchFilters | None = None, title_weight: float = 0.5
    ) -> list[Hit]:
        """BM25 over chunk bodies plus a weighted BM25 over titles (FAQ questions, product names)."""
        scores = self._keyword_scores(self.search_tokens(query), title_weight)
        if scores is None:
            return []
        mask = filters.mask(self._columns) if filters else None
        if mask is not None:
            scores = np.where(mask, scores, 0.0)
        matched = np.flatnonzero(scores > 0)  # most chunks share no term with the query
        return [Hit(self._chunks[i].chunk_id, float(scores[i])) for i in matched[top_k(scores[matched], k)]]

    def keyword_scores(self, query: str, chunk_ids: list[str], title_weight: float = 0.5) -> np.ndarray:
        """search_keyword's score of each given chunk (0 for an unknown id), without ranking the
        whole KB: the reranker needs a few candidates' scores, not a 100k-long ranking. The query is
        read as typed: its numerals in digits find chunks but do not score them (for 七天无理由, the
        trade's name for a return window, the old policy's 7天 would outscore the current 15天)."""
        scores = self._keyword_scores(self.query_tokens(query), title_weight)
        index = [self._index_of.get(chunk_id) for chunk_id in chunk_ids]
        if scores is None:
            return np.zeros(len(chunk_ids))
        return np.array([scores[i] if i is not None else 0.0 for i in index])

    def _keyword_scores(self, tokens: list[str], title_weight: float) -> np.ndarray | None:
        # no refresh here: query_tokens refreshed just before, and the tokens read that generation's vocabulary
        if not tokens or not self._chunks:
            return None
        scores = self._bm25_body.get_scores(tokens)
        if title_weight:
            scores = scores + title_weight * self._bm25_title.get_scores(tokens)
        return scores

    def search_dense(self, query: str, k: int = 10, filters: SearchFilters | None = None) -> list[Hit]:
        self.refresh()
        if not self._chunks:
            return []
        vector = self.embedder.embed_query(self._lexicon.canonicalize(query))
        if self._dense is not None:
            return self._search_dense_in_memory(vector, k, filters)
        expr = filters.milvus_expr() if filters else ""
        # Over-fetch: rows of superseded versions may still sit in Milvus until reconciled.
        with self._search_lock:
            found = self.open_vectors().search(vector, limit=k * 2 + 10, expr=expr)
        hits, seen = [], set()
        for row_id, score in found:
            i = self._index_of_row.get(row_id)
            if i is not None and row_id not in seen:  # a crash can leave a row stored twice
                seen.add(row_id)
                hits.append(Hit(self._chunks[i].chunk_id, score))
        return hits[:k]

    def _search_dense_in_memory(self, vector: np.ndarray, k: int, filters: SearchFilters | None) -> list[Hit]:
        query = np.ascontiguousarray(vector, dtype=np.float32)
        mask = filters.mask(self._columns) if filters else None
        prefilter = self._dense_prefilter
        found: tuple[Sequence[int] | np.ndarray, np.ndarray] | None = (
            prefilter.search(query, k, mask) if prefilter is not None else None
        )
        if found is None:  # a small KB, or the prefilter could not prove its candidates hold the top k
            assert self._dense is not None  # searched in memory only with a snapshot (_dense_in_memory)
            scores = self._dense @ query
            if mask is not None:
                scores = np.where(mask, scores, -np.inf)
            best = [i for i in top_k(scores, k) if np.isfinite(scores[i])]
            found = best, scores[best]
        rows, scores = found
        return [Hit(self._chunks[i].chunk_id, float(score)) for i, score in zip(rows, scores, strict=False)]

    def close(self) -> None:
        if self.vectors is not None:
            self.vectors.close()
        self.catalog.close()


# What ingest builds from the documents, and all `ingest --reindex` drops: the rest of a KB folder is the
# shop's (config.yaml with its thresholds, sessions, traces, the experience store with its customers' ratings)
# and stays, whatever the index is rebuilt with.
INDEX_PATTERNS = (MANIFEST, "catalog.sqlite*", "milvus.db*", ".milvus.db*", "bm25", "dense")


def drop_index(kb_dir: Path, token: str | None = None) -> None:
    """Delete what ingest built in a KB folder (INDEX_PATTERNS) and, when its vectors are on a Milvus
    server, its collection there: the folder's kb.json is the only record of which collection is the
    KB's. The shop's own files beside the index stay."""
    try:
        manifest = json.loads((kb_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        manifest = {}
    uri = manifest.get("milvus_uri") or ""
    if "://" in uri:
        drop_server_collection(uri, manifest.get("collection", "chunks"), token)
    for pattern in INDEX_PATTERNS:
        for entry in kb_dir.glob(pattern):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink(missing_ok=True)


def _drop_older_snapshots(current: Path, pattern: str) -> None:
    """Delete the snapshots of earlier catalog generations beside the one just written."""
    for old in current.parent.glob(pattern):
        if old != current:
            old.unlink(missing_ok=True)


class Float16Prefilter:
    """Exact top-k inner product at half the memory traffic: a one-thread faiss scan of a float16
    copy picks a few times k candidates, rescored in float32 as the full matmul scores them. The
    answer is given only when the float16 error bound proves that no row left out can reach the
    k-th score; otherwise search returns None and the caller runs the full exact search."""

    OVER_FETCH = 4  # candidates per hit wanted: the bound held on all 1,100 real questions tried
    MIN_FETCH = 64

    def __init__(self, vectors: np.ndarray, index):
        self.vectors = vectors
        self._index = index
        dim = vectors.shape[1]
        max_norm = float(np.sqrt(np.einsum("ij,ij->i", vectors, vectors).max(initial=0.0)))
        # How far a float16 score may sit from the full matmul's, per unit of query norm: a float16
        # ulp per component (2^-10 relative, 2^-24 when subnormal), plus the float32 rounding
        # (d * 2^-24 relative each) of four d-term sums: faiss' score of a row left out, the full
        # matmul's score of that row and of the k-th row, and our rescoring of the k-th row.
        self._error_per_query_norm = max_norm * (2.0**-10 + 2 * dim * 2.0**-23) + math.sqrt(dim) * 2.0**-24

    @classmethod
    def build(cls, vectors: np.ndarray) -> Float16Prefilter | None:
        try:
            import faiss  # installed with milvus-lite
        except ImportError:
            return None
        peak = max(float(vectors.max(initial=0.0)), -float(vectors.min(initial=0.0)))
        if not peak < 65504:  # beyond float16's range (or not finite)
            return None
        index = faiss.IndexScalarQuantizer(vectors.shape[1], faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
        index.add(vectors)
        return cls(vectors, index)

    def search(self, query: np.ndarray, k: int, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
        """(rows, float32 scores) of the exact top k among the rows the mask allows, best first
        (ties: lower row first); None when the exact search must decide."""
        import faiss

        fetch = max(self.OVER_FETCH * k, self.MIN_FETCH)
        if k <= 0 or fetch >= len(self.vectors):
            return None
        params = None
        if mask is not None:
            bitmap = np.packbits(mask, bitorder="little")
            selector = faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bitmap))
            params = faiss.SearchParameters(sel=selector)  # type: ignore[call-arg]  # the stubs lack SWIG's keyword
        # One query: faiss would start an OpenMP team whose other threads have nothing to scan.
        # The thread count is this thread's own (an OpenMP ICV), restored for its other faiss calls.
        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)
        try:
            approx, ids = self._index.search(query[None, :], fetch, params=params)
        finally:
            faiss.omp_set_num_threads(threads)
        rows = np.sort(ids[0][ids[0] >= 0])  # row order, so top_k breaks ties as the full search does
        scores = self.vectors[rows] @ query
        best = top_k(scores, k)
        if len(rows) == fetch and len(best):  # rows were left out: each scores at most floor + error
            floor = float(approx[0].min())
            if not floor + self._error_per_query_norm * float(np.linalg.norm(query)) < scores[best[-1]]:
                return None
        return rows[best], scores[best]


def metadata_columns(chunks: list[Chunk]) -> dict[str, np.ndarray]:
    """The metadata columns SearchFilters.mask reads, one entry per chunk."""
    return {
        "doc_type": np.array([c.doc_type for c in chunks], dtype=object),
        "brand": np.array([c.brand or "" for c in chunks], dtype=object),
        "category": np.array([c.category or "" for c in chunks], dtype=object),
        "product_id": np.array([c.product_id or "" for c in chunks], dtype=object),
        "updated_day": np.array([day_number(c.updated_at) for c in chunks], dtype=np.int64),
    }


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best scores, best first, ties by lower index — what a stable argsort
    gives, without sorting all n (at 100k chunks the sort was most of a query's time)."""
    if k <= 0 or not len(scores):
        return np.zeros(0, dtype=np.int64)
    if k >= len(scores):
        return np.argsort(-scores, kind="stable")
    kth = np.partition(scores, len(scores) - k)[len(scores) - k]  # the k-th largest value
    candidates = np.flatnonzero(scores >= kth)  # every tie at the boundary, in index order
    return candidates[np.argsort(-scores[candidates], kind="stable")][:k]


class _EitherVocabulary:
    """A word of the body index or of the title index (without building their union per query)."""

    def __init__(self, body: dict[str, int], title: dict[str, int]):
        self.body, self.title = body, title

    def __contains__(self, word: object) -> bool:
        return word in self.body or word in self.title
