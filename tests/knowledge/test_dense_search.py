"""In-memory exact dense search (the default for Milvus Lite KBs) returns what Milvus returns,
filters included, and keeps its per-generation vector snapshot consistent with the catalog."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge.filters import SearchFilters
from knowledge.ingest import Ingestor
from knowledge.kb import KnowledgeBase, top_k
from knowledge.settings import get_settings
from tests.knowledge.test_ingest import DOCS, write_jsonl

QUERIES = ["AJ1 鞋面什么材质", "充电宝能带上飞机吗", "退货运费谁出", "羽绒服洗了会不会跑绒", "XZ-3000 多少钱"]
FILTERS = [None, SearchFilters(doc_type=["review"]), SearchFilters(brand="星择"),
           SearchFilters(updated_after="2026-03-01"), SearchFilters(doc_type=["policy", "faq"], updated_before="2026-06-30")]


@pytest.fixture(scope="module")
def two_modes(demo_kb, tmp_path_factory):
    """The demo KB searched in memory and, from a copy, in Milvus."""
    copy = tmp_path_factory.mktemp("milvus-mode") / "kb"
    shutil.copytree(demo_kb.dir, copy, ignore=shutil.ignore_patterns("dense"))
    in_milvus = KnowledgeBase(copy, get_settings(kb_dir=copy, dense_search="milvus")).warm_up()
    yield demo_kb, in_milvus
    in_milvus.close()


@pytest.mark.parametrize("filters", FILTERS, ids=lambda f: "none" if f is None else str(f.model_dump(exclude_none=True)))
def test_memory_and_milvus_agree(two_modes, filters):
    in_memory, in_milvus = two_modes
    assert in_memory._dense is not None and in_milvus._dense is None
    for query in QUERIES:
        ours = [(h.chunk_id, round(h.score, 4)) for h in in_memory.search_dense(query, k=8, filters=filters)]
        milvus = [(h.chunk_id, round(h.score, 4)) for h in in_milvus.search_dense(query, k=8, filters=filters)]
        assert ours == milvus, (query, filters)
        if filters is not None:
            allowed = filters.mask(in_memory._columns)
            assert all(allowed[in_memory._index_of[chunk_id]] for chunk_id, _ in ours)


def test_the_snapshot_follows_the_catalog_and_rereads_only_new_rows(tmp_path, monkeypatch):
    kb_dir = tmp_path / "kb"
    kb = KnowledgeBase(kb_dir, get_settings(kb_dir=kb_dir), create=True)
    Ingestor(kb, show_progress=False).run([write_jsonl(tmp_path / "v1.jsonl", DOCS)])
    kb.warm_up()
    assert kb.search_dense("雨天防滑", k=1)[0].chunk_id.startswith(("shoe-1", "rev-1", "shoe-2"))
    first = sorted((kb_dir / "dense").glob("vectors-*.npz"))
    assert len(first) == 1

    read: list[int] = []
    original = type(kb.vectors).vectors_of
    monkeypatch.setattr(type(kb.vectors), "vectors_of", lambda self, ids: read.append(len(ids)) or original(self, ids))
    changed = [*DOCS[:3], {**DOCS[3], "text": "下雨天穿了一周，鞋底抓地很好，没有打滑。"}]
    Ingestor(kb, show_progress=False).run([write_jsonl(tmp_path / "v2.jsonl", changed)])
    kb.refresh()
    assert read == [1]  # only the changed review's new row came from Milvus
    assert [p.name for p in (kb_dir / "dense").glob("vectors-*.npz")] != [p.name for p in first]
    stored = kb.vectors.vectors_of([r for r in kb._dense_rows])
    assert np.allclose(stored, kb._dense)
    kb.close()

    # a restart loads the snapshot; a snapshot of other rows (a rebuilt catalog) is not trusted
    reopened = KnowledgeBase(kb_dir, get_settings(kb_dir=kb_dir)).warm_up()
    assert np.allclose(reopened._dense, stored)
    reopened.close()
    snapshot = next((kb_dir / "dense").glob("vectors-*.npz"))
    np.savez(snapshot, vectors=np.zeros_like(stored), rows=np.array("other rows"))
    again = KnowledgeBase(kb_dir, get_settings(kb_dir=kb_dir)).warm_up()
    assert np.allclose(again._dense, stored)
    again.close()


@given(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, -np.inf]), max_size=60), st.integers(0, 70))
@settings(max_examples=200, derandomize=True, deadline=None)
def test_top_k_is_a_stable_argsort_cut(values, k):
    scores = np.array(values, dtype=float)
    assert list(top_k(scores, k)) == list(np.argsort(-scores, kind="stable")[:k])


def test_the_reranker_reads_keyword_scores_of_its_candidates_only(demo_kb):
    query = "AJ1 鞋面什么材质"
    ranked = {h.chunk_id: h.score for h in demo_kb.search_keyword(query, k=len(demo_kb))}
    ids = list(ranked)[:5] + ["no-such-chunk", demo_kb.all_chunks()[-1].chunk_id]
    expected = [ranked.get(chunk_id, 0.0) for chunk_id in ids]
    assert np.allclose(demo_kb.keyword_scores(query, ids), expected)


def test_a_milvus_call_that_fails_once_is_retried_once():
    from pymilvus import MilvusException

    from knowledge.vector_store import _Retrying

    class FlakyClient:  # fails like a dropped gRPC channel: the first call of each kind only
        def __init__(self):
            self.calls = []

        def search(self, *args):
            self.calls.append(args)
            if len(self.calls) == 1:
                raise MilvusException(message="UNAVAILABLE: GOAWAY received")
            return ["hit"]

        def delete(self, *args):
            raise MilvusException(message="collection not found")

    client = FlakyClient()
    assert _Retrying(client).search("chunks") == ["hit"] and len(client.calls) == 2
    with pytest.raises(MilvusException, match="collection not found"):  # a lasting error is not hidden
        _Retrying(client).delete("chunks")
