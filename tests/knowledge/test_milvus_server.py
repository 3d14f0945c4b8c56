"""A knowledge base whose vectors live on a real Milvus server (CITESCOPE_MILVUS_URI; the test
server of conftest.py): it reopens with what it stored, sees another process's writes at once,
keeps to its own collection, recovers from a SIGKILLed ingest, and answers the demo questions as a
Milvus Lite KB does. Ingest, delete, prune, filters and dense search run on both stores in
test_ingest.py and test_dense_search.py; test_crash_safety.py kills on Milvus Lite."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from citescope.knowledge.ingest import Ingestor
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.settings import get_settings
from citescope.workflows.cli import DEMO_QUESTIONS, app
from citescope.workflows.evaluation.bench.crash import (
    check_consistent,
    corpus,
    ingest_in_process,
    run_cli,
    versions_by_doc,
)
from tests.conftest import REPO
from tests.knowledge.test_ingest import DOCS, write_jsonl
from tests.support.hostile import copy_kb


def server_kb(kb_dir, uri: str, **settings) -> KnowledgeBase:
    return KnowledgeBase(kb_dir, get_settings(kb_dir=kb_dir, milvus_uri=uri, **settings), create=True)


def test_a_reopened_kb_finds_what_it_stored_on_the_server(tmp_path, milvus_server_uri):
    kb = server_kb(tmp_path / "kb", milvus_server_uri)
    Ingestor(kb, show_progress=False).run([write_jsonl(tmp_path / "d.jsonl", DOCS)])
    kb.warm_up()
    assert kb._dense is None  # a server KB searches in Milvus, not in memory
    before = [(h.chunk_id, round(h.score, 5)) for h in kb.search_dense("雨天防滑", k=4)]
    collection, rows = kb.vectors.collection, kb.vectors.count()
    kb.close()
    assert not (tmp_path / "kb" / "milvus.db").exists()  # nothing of Milvus Lite in the folder

    reopened = KnowledgeBase(tmp_path / "kb", get_settings(kb_dir=tmp_path / "kb")).warm_up()  # no URI: kb.json has it
    try:
        assert reopened.milvus_uri == milvus_server_uri and reopened.vectors.collection == collection
        assert reopened.vectors.count() == rows == len(reopened) == len(before)
        assert [(h.chunk_id, round(h.score, 5)) for h in reopened.search_dense("雨天防滑", k=4)] == before
    finally:
        reopened.close()


def test_a_search_right_after_another_process_ingests_sees_its_vectors(tmp_path, milvus_server_uri):
    """The server's default consistency (Bounded) would serve this search from before the write."""
    kb = server_kb(tmp_path / "kb", milvus_server_uri)
    Ingestor(kb, show_progress=False).run([write_jsonl(tmp_path / "v1.jsonl", DOCS)])
    kb.warm_up()
    assert kb.search_dense("多久发货", k=1)  # this process has searched: its read timestamp is set
    changed = [*DOCS[:2], {**DOCS[2], "text": "付款后24小时内发货，预售商品按页面时间发货。"}, DOCS[3]]
    other = subprocess.run(
        [
            sys.executable,
            "run.py",
            "ingest",
            str(write_jsonl(tmp_path / "v2.jsonl", changed)),
            "--kb",
            str(kb.dir),
            "--json",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert other.returncode == 0, other.stderr
    assert json.loads(other.stdout.strip().splitlines()[-1])["replaced"] == 1
    try:
        top = kb.search_dense("多久发货", k=1)[0]  # refreshes to the other process's catalog switch
        assert "24小时" in kb.get(top.chunk_id).text
        assert kb.vectors.count() == len(kb)
    finally:
        kb.close()


def test_two_kbs_on_one_server_keep_their_own_rows(tmp_path, milvus_server_uri):
    first, second = server_kb(tmp_path / "a", milvus_server_uri), server_kb(tmp_path / "b", milvus_server_uri)
    try:
        Ingestor(first, show_progress=False).run([write_jsonl(tmp_path / "a.jsonl", DOCS[:2])])
        Ingestor(second, show_progress=False).run([write_jsonl(tmp_path / "b.jsonl", DOCS[2:])])
        assert first.vectors.collection != second.vectors.collection
        # reconcile deletes the rows its catalog does not know: in a shared collection, the other KB's
        assert Ingestor(first, show_progress=False).reconcile() == 0
        assert second.vectors.count() == len(second) and first.vectors.count() == len(first)
    finally:
        first.close()
        second.close()
    named = server_kb(tmp_path / "c", milvus_server_uri, collection="shop_chunks")
    assert named.manifest["collection"] == "shop_chunks"  # a collection the operator names is kept
    named.close()


def test_reindex_drops_the_kbs_collection_from_the_server(tmp_path, milvus_server_uri):
    from pymilvus import MilvusClient

    corpus = write_jsonl(tmp_path / "d.jsonl", DOCS)
    kb = server_kb(tmp_path / "kb", milvus_server_uri)
    Ingestor(kb, show_progress=False).run([corpus])
    old_collection = kb.vectors.collection
    kb.close()
    # --reindex builds the KB anew from the settings of now, so the URI is given again
    rebuilt = CliRunner(env={"CITESCOPE_MILVUS_URI": milvus_server_uri}).invoke(
        app, ["ingest", str(corpus), "--kb", str(tmp_path / "kb"), "--reindex", "--json"]
    )
    assert rebuilt.exit_code == 0, rebuilt.output
    kb = KnowledgeBase(tmp_path / "kb", get_settings(kb_dir=tmp_path / "kb")).warm_up()
    client = MilvusClient(milvus_server_uri)
    try:
        collections = client.list_collections()
        assert old_collection not in collections and kb.vectors.collection in collections
        assert kb.vectors.count() == len(kb) == json.loads(rebuilt.stdout.strip().splitlines()[-1])["chunks"]
    finally:
        client.close()
        kb.close()


@pytest.mark.slow
def test_sigkill_during_ingest_into_a_server_leaves_old_or_new_and_rerun_converges(tmp_path, milvus_server_uri):
    """test_crash_safety.py's trials on a server: each trial builds its KB anew (a copied folder
    would share the server's collection with its original)."""
    v1, v2 = write_jsonl(tmp_path / "v1.jsonl", corpus(1)), write_jsonl(tmp_path / "v2.jsonl", corpus(2))
    old, new = versions_by_doc(v1), versions_by_doc(v2)
    seen_states = set()
    # right after the first batch's vectors (orphan rows), its catalog switch (superseded rows
    # left) and a later batch's vectors (both, in a half-updated catalog)
    for trial, stage in enumerate((1, 2, 7)):
        kb_dir = tmp_path / f"kb-{trial}"
        kb = server_kb(kb_dir, milvus_server_uri)
        assert not Ingestor(kb, show_progress=False).run([v1]).issues
        kb.close()
        run = run_cli(["ingest", str(v2), "--kb", str(kb_dir), "--json"], kill_after_stage=stage)
        assert run.killed, f"trial {trial}: ingest finished before stage {stage}"
        after_kill = check_consistent(kb_dir, old, new)
        assert not after_kill.violations, after_kill.violations
        seen_states.add(tuple(sorted(set(after_kill.states.values()))))
        if stage == 1:
            assert after_kill.orphan_rows > 0  # killed between the vector write and the catalog switch

        ingest_in_process(kb_dir, [v2])  # reconciles first: the orphans go
        after_rerun = check_consistent(kb_dir, old, new)
        assert after_rerun.converged(), (after_rerun.states, after_rerun.violations)
        assert after_rerun.orphan_rows == 0
        kb = KnowledgeBase(kb_dir, get_settings(kb_dir=kb_dir)).warm_up()
        assert kb.milvus_uri == milvus_server_uri and kb.vectors.count() == len(kb)
        kb.close()
    assert any("old" in s and "new" in s for s in seen_states)


@pytest.mark.slow
def test_the_demo_answers_through_the_server_as_through_milvus_lite(demo_kb, demo_kb_on_server, tmp_path_factory):
    """`ask` on the demo KB served by Milvus: the same answers, cited from the same chunks, as the
    Milvus Lite demo KB gives (both searches are exact inner product)."""
    lite = str(copy_kb(demo_kb, tmp_path_factory, "lite-ask"))
    runner = CliRunner()
    # a disagreement disclosed, numbers from the SKU table, a refusal (the rest of the demo's
    # questions run on Milvus Lite in tests/workflows/test_cli.py)
    for question in (DEMO_QUESTIONS[0], DEMO_QUESTIONS[1], DEMO_QUESTIONS[5]):
        answers = []
        for kb in (lite, str(demo_kb_on_server.dir)):
            asked = runner.invoke(app, ["ask", "--kb", kb, "--json", question])
            assert asked.exit_code == 0, asked.output
            result = json.loads(asked.stdout)
            answers.append((result["answer"], result["refused"], result["evidence_ids"]))
        assert answers[0] == answers[1], question
    # and a fresh process that knows the server only from the KB's kb.json
    asked = subprocess.run(
        [sys.executable, "run.py", "ask", DEMO_QUESTIONS[2], "--kb", str(demo_kb_on_server.dir), "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)["answer"]
    assert "15天" in answer and "7天" in answer and "【" in answer
