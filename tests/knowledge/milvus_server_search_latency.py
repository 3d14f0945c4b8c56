"""Dense search latency on the demo KB served by a Milvus 2.3.5 server (the test server of
milvus_server.py): searches at the timestamp taken when the KB loaded its catalog generation
(VectorStore.catch_up, what the KB does) against searches at "Strong". Not a test; run from the
repository root:  PYTHONPATH=. python tests/knowledge/milvus_server_search_latency.py"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

from citescope.knowledge.ingest import Ingestor
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.settings import get_settings
from citescope.knowledge.vector_store import VectorStore
from tests.conftest import DEMO_DIR
from tests.knowledge.milvus_server import MilvusServerProcess

QUERIES = ["退货运费谁出", "充电宝能带上飞机吗", "羽绒服洗了会不会跑绒", "AJ1 鞋面什么材质", "XZ-3000 多少钱"] * 4


def median_ms(kb: KnowledgeBase) -> float:
    kb.search_dense(QUERIES[0], k=8)  # the first search after a catch-up waits for the timestamp
    times = []
    for query in QUERIES:
        started = time.perf_counter()
        kb.search_dense(query, k=8)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="milvus-latency-"))
    server = MilvusServerProcess(work / "server")
    try:
        uri = server.start(timeout_s=180)
        print(f"server answered after {server.started_in_s:.1f} s")
        kb = KnowledgeBase(work / "kb", get_settings(kb_dir=work / "kb", milvus_uri=uri), create=True)
        started = time.perf_counter()
        summary = Ingestor(kb, show_progress=False).run([DEMO_DIR])
        print(f"demo ingest: {summary.documents} docs, {summary.chunks} chunks, {time.perf_counter() - started:.1f} s")
        kb.warm_up()
        print(f"catch-up timestamp: median {median_ms(kb):.1f} ms a search ({len(QUERIES)}, query embedding included)")
        VectorStore._search_consistency = lambda self: {"consistency_level": "Strong"}
        print(f"Strong: median {median_ms(kb):.1f} ms a search")
        kb.close()
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
