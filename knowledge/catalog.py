"""The catalog: SQLite source of truth for documents, chunks (with their search tokens) and
the SKU table. A document's chunks and SKU rows are replaced in one transaction, so after any
crash each document is present in exactly its old or its new version.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from citescope.knowledge.schema import Chunk, Document, SkuRow

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY, content_hash TEXT NOT NULL, title TEXT, doc_type TEXT, origin TEXT,
    updated_at TEXT, version INTEGER, ingested_at TEXT NOT NULL, chunk_count INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    chunk_id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, row_id TEXT NOT NULL UNIQUE, ord INTEGER NOT NULL,
    text TEXT NOT NULL, meta TEXT NOT NULL, body_tokens TEXT NOT NULL, title_tokens TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks (doc_id);
CREATE TABLE IF NOT EXISTS skus (
    sku TEXT PRIMARY KEY, product_id TEXT NOT NULL, doc_id TEXT NOT NULL, chunk_id TEXT, name TEXT,
    brand TEXT, category TEXT, colour TEXT, size TEXT, price REAL NOT NULL, stock INTEGER NOT NULL,
    updated_at TEXT);
CREATE INDEX IF NOT EXISTS skus_by_product ON skus (product_id);
"""
_TOKEN_SEP = "\t"


@dataclass
class IndexedChunk:
    chunk: Chunk
    row_id: str
    body_tokens: list[str]
    title_tokens: list[str]


@dataclass
class DocumentVersion:
    doc: Document
    content_hash: str
    chunks: list[IndexedChunk]
    skus: list[SkuRow] = field(default_factory=list)


class Catalog:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._conn = sqlite3.connect(str(path), timeout=60, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.executescript(_SCHEMA)
        self._lock = threading.RLock()

    # -- meta -----------------------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def generation(self) -> int:
        """Bumped by every committed change: caches and snapshots are keyed by it."""
        value = self.get_meta("generation")
        return int(value) if value is not None else 0

    # -- documents ------------------------------------------------------------------------
    def content_hashes(self) -> dict[str, str]:
        return dict(self._conn.execute("SELECT doc_id, content_hash FROM documents"))

    def origins(self) -> dict[str, str]:
        return dict(self._conn.execute("SELECT doc_id, COALESCE(origin, '') FROM documents"))

    def document_count(self) -> int:
        return self._conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]

    def row_ids_of(self, doc_ids: list[str]) -> list[str]:
        out: list[str] = []
        for start in range(0, len(doc_ids), 500):
            part = doc_ids[start : start + 500]
            marks = ",".join("?" * len(part))
            out += [r[0] for r in self._conn.execute(f"SELECT row_id FROM chunks WHERE doc_id IN ({marks})", part)]
        return out

    def all_row_ids(self) -> set[str]:
        return {r[0] for r in self._conn.execute("SELECT row_id FROM chunks")}

    def replace_documents(self, versions: list[DocumentVersion]) -> list[str]:
        """Swap in new versions atomically; returns the row ids no longer referenced."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        with self._lock:
            old_rows = set(self.row_ids_of([v.doc.doc_id for v in versions]))
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                for v in versions:
                    self._delete_doc_rows(cur, v.doc.doc_id)
                    cur.execute(
                        "INSERT INTO documents VALUES (?,?,?,?,?,?,?,?,?)",
                        (
                            v.doc.doc_id,
                            v.content_hash,
                            v.doc.title,
                            v.doc.doc_type,
                            v.doc.origin,
                            v.doc.updated_at,
                            v.doc.version,
                            now,
                            len(v.chunks),
                        ),
                    )
                    cur.executemany(
                        "INSERT INTO chunks VALUES (?,?,?,?,?,?,?,?)",
                        [
                            (
                                c.chunk.chunk_id,
                                v.doc.doc_id,
                                c.row_id,
                                i,
                                c.chunk.text,
                                json.dumps(c.chunk.metadata(), ensure_ascii=False),
                                _TOKEN_SEP.join(c.body_tokens),
                                _TOKEN_SEP.join(c.title_tokens),
                            )
                            for i, c in enumerate(v.chunks)
                        ],
                    )
                    sku_chunks = {c.chunk.chunk_id for c in v.chunks}
                    cur.executemany(
                        "INSERT OR REPLACE INTO skus VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                        [
                            (
                                s.sku,
                                s.product_id,
                                v.doc.doc_id,
                                f"{v.doc.doc_id}#sku-{s.sku}" if f"{v.doc.doc_id}#sku-{s.sku}" in sku_chunks else None,
                                s.name,
                                s.brand,
                                s.category,
                                s.colour,
                                s.size,
                                s.price,
                                s.stock,
                                s.updated_at,
                            )
                            for s in v.skus
                        ],
                    )
                self._bump(cur)
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
        new_rows = {c.row_id for v in versions for c in v.chunks}
        return sorted(old_rows - new_rows)

    def delete_documents(self, doc_ids: list[str]) -> list[str]:
        """Remove documents; returns their row ids (now orphans in the vector store)."""
        with self._lock:
            rows = self.row_ids_of(doc_ids)
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                for doc_id in doc_ids:
                    self._delete_doc_rows(cur, doc_id)
                self._bump(cur)
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
        return rows

    @staticmethod
    def _delete_doc_rows(cur: sqlite3.Cursor, doc_id: str) -> None:
        cur.execute("DELETE FROM chunks WHERE doc_id=?", (doc_id,))
        cur.execute("DELETE FROM skus WHERE doc_id=?", (doc_id,))
        cur.execute("DELETE FROM documents WHERE doc_id=?", (doc_id,))

    @staticmethod
    def _bump(cur: sqlite3.Cursor) -> None:
        cur.execute(
            "INSERT INTO meta VALUES ('generation', '1') ON CONFLICT(key) DO UPDATE "
            "SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)"
        )

    # -- reads ----------------------------------------------------------------------------
    def iter_chunks(self):
        """(chunk, row_id, body_tokens, title_tokens) in a stable order."""
        for _chunk_id, row_id, text, meta, body, title in self._conn.execute(
            "SELECT chunk_id, row_id, text, meta, body_tokens, title_tokens FROM chunks ORDER BY doc_id, ord"
        ):
            chunk = Chunk(text=text, **json.loads(meta))
            yield chunk, row_id, body.split(_TOKEN_SEP) if body else [], title.split(_TOKEN_SEP) if title else []

    def skus(self, where: str = "", params: tuple = ()) -> list[dict]:
        cur = self._conn.execute(f"SELECT * FROM skus {where} ORDER BY product_id, sku", params)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=False)) for row in cur.fetchall()]

    def close(self) -> None:
        self._conn.close()
