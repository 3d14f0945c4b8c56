"""Dense vectors in Milvus: Milvus Lite file by default, a Milvus server or cluster by URI.

Rows are keyed by a row id that changes with the chunk's content, so a new version of a
document is written beside the old one and the catalog switches over atomically; rows the
catalog no longer references are orphans, invisible to search and removed by `reconcile`.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import numpy as np
from pymilvus import DataType, MilvusClient, MilvusException

from citescope.knowledge.filters import day_number

log = logging.getLogger(__name__)
# Milvus Lite has no MVCC timestamp to offer; pymilvus warns about it on every iterator.
logging.getLogger("pymilvus").setLevel(logging.ERROR)
# ...and its in-process gRPC shim logs AllocTimestamp as "not implemented" (harmless).
logging.getLogger("grpc._server").setLevel(logging.CRITICAL)
_VARCHAR = 256
# Reads that must see every acknowledged write. A Milvus server's default for a collection is
# "Bounded" (a read may miss writes of the last 5 s); Milvus Lite applies writes at once.
_STRONG = {"consistency_level": "Strong"}


class StoreLockedError(RuntimeError):
    """A Milvus Lite store another process has open (Lite allows one process per store)."""


def _served_here(uri: str) -> bool:
    """Whether this process already serves the Lite store (milvus-lite keeps one in-process server
    per path, holding its lock, and hands it to every later client of that path)."""
    from milvus_lite import server_manager_instance  # milvus-lite 3.x: path -> (server, db, port)

    return os.path.abspath(uri) in server_manager_instance._servers


def held_by_another_process(db: Path) -> bool:
    """Whether the Milvus Lite store at `db` is locked (milvus-lite takes an exclusive flock on
    its data folder's LOCK file for as long as a process has it open; this one too, if it does)."""
    lock = db / "LOCK"
    if not lock.is_file():
        return False
    import fcntl  # Unix only, as Milvus Lite is

    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def drop_torn_index_files(db: Path) -> list[Path]:
    """Delete the vector index sidecars of a Milvus Lite database that a kill left half written.

    Milvus Lite 3.2.2 writes a segment's index sidecar (collections/*/partitions/*/indexes/*.idx,
    an .npy for FLAT) in place; killed mid-write, the file is truncated and the collection can
    never load again ("Failed to read all data for array"). A sidecar is derived data - rebuilt
    from the segment's own vectors when missing - so a torn one is removed. Files that are not
    .npy (other index types) are left alone.
    """
    removed = []
    for path in sorted(db.glob("collections/*/partitions/*/indexes/*.idx")):
        if _torn_npy(path):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def _torn_npy(path: Path) -> bool:
    """An .npy whose header promises more bytes than the file holds (or no readable header)."""
    with open(path, "rb") as handle:
        if handle.read(6) != b"\x93NUMPY":
            return handle.tell() < 6  # shorter than the magic string: cut before it was written
        handle.seek(0)
        try:
            version = np.lib.format.read_magic(handle)
            read_header = (
                np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            )
            shape, _, dtype = read_header(handle)
        except (ValueError, EOFError, SyntaxError):
            return True
        expected = handle.tell() + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    return path.stat().st_size < expected


def drop_server_collection(uri: str, collection: str, token: str | None = None) -> bool:
    """Drop a collection from a Milvus server; whether there was one."""
    client = MilvusClient(uri, token=token or "")
    try:
        if not client.has_collection(collection):
            return False
        client.drop_collection(collection)
        return True
    finally:
        client.close()


class VectorStore:
    def __init__(self, uri: str, collection: str, dim: int, token: str | None = None):
        self.uri = uri
        self.collection = collection
        self.dim = dim
        self._token = token
        self._client: MilvusClient | None = None
        self._remote = "://" in uri  # a Milvus server or cluster; else a Milvus Lite file
        self._read_ts = 0  # the server timestamp searches wait for (catch_up)

    def warm_up(self) -> None:
        if self._client is not None:
            return
        local = not self._remote
        if local:
            Path(self.uri).parent.mkdir(parents=True, exist_ok=True)
            for path in drop_torn_index_files(Path(self.uri)):
                log.warning("removed a half-written Milvus Lite index file (rebuilt on load): %s", path)
        # A Milvus Lite server runs in this process: keepalive pings are pointless, and its gRPC
        # server answers pymilvus's 10 s pings with GOAWAY "too_many_pings", failing a call in flight.
        options = (
            {"grpc_options": {"grpc.keepalive_time_ms": 300_000, "grpc.keepalive_permit_without_calls": 0}}
            if local
            else {}
        )
        if local and not _served_here(self.uri) and held_by_another_process(Path(self.uri)):
            # else milvus-lite logs a traceback and pymilvus says only "Open local milvus failed"
            raise StoreLockedError(
                f"{self.uri}: this Milvus Lite store is open in another process (Milvus Lite allows one "
                "process per store): wait for that run to finish, or serve the KB from a Milvus server by URI"
            )
        client = _Retrying(MilvusClient(self.uri, token=self._token or "", **options))
        self._client = client
        if not client.has_collection(self.collection):
            self._create(client)
        client.load_collection(self.collection)
        self.catch_up()

    def catch_up(self) -> None:
        """Make later searches see every write acknowledged before now: another process's ingest
        whose catalog switch this process has just read. A Milvus server searches at the timestamp
        its clock gives here, waiting (once, at most a time tick: 200 ms) until that time is
        applied; a search at "Strong" would wait so on every call. Milvus Lite applies writes at once."""
        if self._remote and self._client is not None:
            # pymilvus 3.0.2's MilvusClient has no public call for the server's timestamp oracle
            self._read_ts = self._client._get_connection().alloc_timestamp()

    def _create(self, client: MilvusClient) -> None:
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("row_id", DataType.VARCHAR, is_primary=True, max_length=64)
        schema.add_field("chunk_id", DataType.VARCHAR, max_length=_VARCHAR)
        schema.add_field("doc_id", DataType.VARCHAR, max_length=_VARCHAR)
        for field in ("doc_type", "brand", "category", "product_id"):
            schema.add_field(field, DataType.VARCHAR, max_length=_VARCHAR)
        schema.add_field("updated_day", DataType.INT64)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=self.dim)
        index = client.prepare_index_params()
        # FLAT: exact inner product (recall 1.0). Milvus Lite's FLAT takes ~110 ms at 100k x 384 on
        # this machine, so Lite KBs search an in-memory copy instead (KnowledgeBase, dense_search).
        index.add_index("vector", index_type="FLAT", metric_type="IP")
        client.create_collection(self.collection, schema=schema, index_params=index, **_STRONG)

    @property
    def client(self) -> MilvusClient:
        self.warm_up()
        return self._client

    def upsert(self, rows: list[dict], vectors: np.ndarray) -> None:
        """rows: {row_id, chunk_id, doc_id, doc_type, brand, category, product_id, updated_at}."""
        if not rows:
            return
        data = [
            {
                "row_id": r["row_id"],
                "chunk_id": r["chunk_id"][:_VARCHAR],
                "doc_id": r["doc_id"][:_VARCHAR],
                "doc_type": r.get("doc_type") or "",
                "brand": (r.get("brand") or "")[:_VARCHAR],
                "category": (r.get("category") or "")[:_VARCHAR],
                "product_id": (r.get("product_id") or "")[:_VARCHAR],
                "updated_day": day_number(r.get("updated_at")),
                "vector": v.astype(np.float32).tolist(),
            }
            for r, v in zip(rows, vectors, strict=False)
        ]
        for start in range(0, len(data), 500):
            self.client.upsert(self.collection, data[start : start + 500])
        self._flush()

    def delete(self, row_ids: list[str]) -> None:
        for start in range(0, len(row_ids), 500):
            self.client.delete(self.collection, ids=row_ids[start : start + 500])
        if row_ids:
            self._flush()

    def _flush(self) -> None:
        """Milvus Lite: make the writes durable before the catalog refers to them. A server has
        them durable once acknowledged (in its write-ahead log: rocksmq, Pulsar or Kafka); its
        flush only seals segments, 0.5-2.5 s a call on Milvus 2.3.5, and is not for every batch."""
        if not self._remote:
            self.client.flush(self.collection)

    def all_row_ids(self) -> set[str]:
        return set(self.row_copies())

    def rewrite(self, row_ids: list[str]) -> None:
        """Store one copy of each row again: the upsert's delete masks every copy a crash left."""
        if not row_ids:
            return
        rows = {r["row_id"]: r for r in self.client.query(self.collection, ids=row_ids, output_fields=["*"], **_STRONG)}
        self.client.upsert(self.collection, list(rows.values()))
        self._flush()

    def row_copies(self) -> dict[str, int]:
        copies: dict[str, int] = {}
        iterator = self.client.query_iterator(
            self.collection, batch_size=2000, filter='row_id != ""', output_fields=["row_id"], **_STRONG
        )
        while batch := iterator.next():
            for row in batch:
                copies[row["row_id"]] = copies.get(row["row_id"], 0) + 1
        iterator.close()
        return copies

    def count(self) -> int:
        """Rows stored (a server's collection statistics count deleted rows until compaction)."""
        return int(self.client.query(self.collection, filter="", output_fields=["count(*)"], **_STRONG)[0]["count(*)"])

    def vectors_of(self, row_ids: list[str]) -> np.ndarray:
        """The stored vectors of these rows, in their order (a row not stored: zeros)."""
        out = np.zeros((len(row_ids), self.dim), dtype=np.float32)
        position = {row_id: i for i, row_id in enumerate(row_ids)}
        for start in range(0, len(row_ids), 1000):
            batch = row_ids[start : start + 1000]
            for row in self.client.query(self.collection, ids=batch, output_fields=["row_id", "vector"], **_STRONG):
                out[position[row["row_id"]]] = row["vector"]
        return out

    def search(self, vector: np.ndarray, limit: int, expr: str = "") -> list[tuple[str, float]]:
        """(row_id, inner product) best first."""
        result = self.client.search(
            self.collection,
            [vector.astype(np.float32).tolist()],
            limit=limit,
            filter=expr,
            output_fields=["row_id"],
            search_params={"metric_type": "IP"},
            **self._search_consistency(),
        )
        return [(hit["entity"]["row_id"], float(hit["distance"])) for hit in result[0]]

    def _search_consistency(self) -> dict:
        if not self._remote or not self._read_ts:  # pymilvus gives 0 where a server lacks the call
            return _STRONG
        return {"consistency_level": "Customized", "guarantee_timestamp": self._read_ts}

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


class _Retrying:
    """A MilvusClient whose calls are retried once after a MilvusException: a channel to a Milvus
    Lite server is sometimes dropped under a call in flight (seen as gRPC GOAWAY in the logs).
    Safe because every call made here is idempotent: reads, and upserts/deletes by primary key."""

    def __init__(self, client: MilvusClient):
        self._client = client

    def __getattr__(self, name: str):
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            try:
                return attr(*args, **kwargs)
            except MilvusException as exc:
                log.warning("Milvus %s failed (%s); retrying once", name, exc)
                time.sleep(0.2)
                return attr(*args, **kwargs)

        return call
