"""Milvus Lite repair: a vector index sidecar a kill left half written is dropped and rebuilt,
so the knowledge base opens again with every vector (the SIGKILL trials found this)."""

from __future__ import annotations

import numpy as np

from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.settings import get_settings
from citescope.knowledge.vector_store import _torn_npy, drop_torn_index_files
from citescope.workflows.evaluation.bench.crash import corpus, ingest_in_process, write_jsonl


def test_a_torn_index_file_is_dropped_and_the_kb_opens_with_every_vector(tmp_path):
    kb_dir = tmp_path / "kb"
    ingest_in_process(kb_dir, [write_jsonl(tmp_path / "v1.jsonl", corpus(1))], create=True)
    index_files = sorted((kb_dir / "milvus.db").glob("collections/*/partitions/*/indexes/*.idx"))
    assert index_files, "Milvus Lite wrote no index sidecar to tear"
    torn = index_files[0]
    whole = torn.read_bytes()
    torn.write_bytes(whole[: len(whole) - 512])  # as a kill mid-write leaves it

    kb = KnowledgeBase(kb_dir, get_settings(kb_dir=kb_dir)).warm_up()
    try:
        assert kb.vectors.count() == len(kb)
        first = kb.all_chunks()[0]
        assert kb.search_dense(first.text, k=1)[0].chunk_id == first.chunk_id
    finally:
        kb.close()
    assert not drop_torn_index_files(kb_dir / "milvus.db")  # rebuilt whole on load (or left to rebuild)


def test_only_truncated_npy_files_count_as_torn(tmp_path):
    whole = tmp_path / "whole.idx"
    with open(whole, "wb") as handle:
        np.save(handle, np.ones((3, 384), dtype=np.float32))
    cut = tmp_path / "cut.idx"
    cut.write_bytes(whole.read_bytes()[:-100])
    header_only = tmp_path / "header.idx"
    header_only.write_bytes(whole.read_bytes()[:40])
    other = tmp_path / "faiss.idx"
    other.write_bytes(b"IHNf" + bytes(100))  # not an .npy: another index type's own format
    assert [_torn_npy(p) for p in (whole, cut, header_only, other)] == [False, True, True, False]


def test_a_store_another_process_holds_is_a_one_line_error(tmp_path):
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from citescope.knowledge.vector_store import held_by_another_process

    built = tmp_path / "built"
    ingest_in_process(built, [write_jsonl(tmp_path / "v1.jsonl", corpus(1))], create=True)
    kb_dir = tmp_path / "kb"  # a copy: this process keeps serving (and locking) the path it built
    shutil.copytree(built, kb_dir)
    store = kb_dir / "milvus.db"
    assert not held_by_another_process(store)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pymilvus import MilvusClient; "
            f"MilvusClient({str(store)!r}); print('open', flush=True); time.sleep(120)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "open"
        assert held_by_another_process(store)
        root = Path(__file__).resolve().parents[2]
        asked = subprocess.run(
            [sys.executable, str(root / "run.py"), "ask", "退货多久到账？", "--kb", str(kb_dir)],
            capture_output=True,
            text=True,
            cwd=root,
            timeout=300,
        )
    finally:
        holder.kill()
        holder.wait()
    assert asked.returncode == 2, asked.stderr
    assert "open in another process" in asked.stderr and str(store) in asked.stderr
    assert "Traceback" not in asked.stderr
    assert not held_by_another_process(store)  # the lock goes with the process
