"""In-memory exact dense search (the default for Milvus Lite KBs) returns what Milvus returns,
filters included, and keeps its per-generation vector snapshot consistent with the catalog; its
float16 prefilter (large KBs) returns exactly what the full search returns, or defers to it."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citescope.knowledge.filters import SearchFilters
from citescope.knowledge.ingest import Ingestor
from citescope.knowledge.kb import Float16Prefilter, KnowledgeBase, top_k
from citescope.knowledge.settings import get_settings
from tests.knowledge.test_ingest import DOCS, write_jsonl

QUERIES = ["AJ1 鞋面什么材质", "充电宝能带上飞机吗", "退货运费谁出", "羽绒服洗了会不会跑绒", "XZ-3000 多少钱"]
FILTERS = [
    None,
    SearchFilters(doc_type=["review"]),
    SearchFilters(brand="星择"),
    SearchFilters(updated_after="2026-03-01"),
    SearchFilters(doc_type=["policy", "faq"], updated_before="2026-06-30"),
]


@pytest.fixture(scope="module", params=["milvus-lite", "milvus-server"])
def two_modes(request, demo_kb, tmp_path_factory):
    """The demo KB searched in memory and, from a copy, in Milvus Lite, or the demo KB ingested
    into a Milvus server (which searches there)."""
    if request.param == "milvus-server":
        yield demo_kb, request.getfixturevalue("demo_kb_on_server")
        return
    copy = tmp_path_factory.mktemp("milvus-mode") / "kb"
    shutil.copytree(demo_kb.dir, copy, ignore=shutil.ignore_patterns("dense"))
    in_milvus = KnowledgeBase(copy, get_settings(kb_dir=copy, dense_search="milvus")).warm_up()
    yield demo_kb, in_milvus
    in_milvus.close()


@pytest.mark.parametrize(
    "filters", FILTERS, ids=lambda f: "none" if f is None else str(f.model_dump(exclude_none=True))
)
def test_memory_and_milvus_agree(two_modes, filters):
    in_memory, in_milvus = two_modes
    assert in_memory._dense is not None and in_milvus._dense is None and in_milvus._dense_prefilter is None
    for query in QUERIES:
        ours = [(h.chunk_id, round(h.score, 4)) for h in in_memory.search_dense(query, k=8, filters=filters)]
        milvus = [(h.chunk_id, round(h.score, 4)) for h in in_milvus.search_dense(query, k=8, filters=filters)]
        assert ours == milvus, (query, filters)
        if filters is not None:
            allowed = filters.mask(in_memory._columns)
            assert all(allowed[in_memory._index_of[chunk_id]] for chunk_id, _ in ours)


@pytest.fixture(scope="module")
def prefiltered(demo_kb, tmp_path_factory):
    """The demo KB (a few hundred chunks: the full search) reopened from a copy, prefilter forced on."""
    copy = tmp_path_factory.mktemp("prefiltered") / "kb"
    shutil.copytree(demo_kb.dir, copy)
    kb = KnowledgeBase(copy, get_settings(kb_dir=copy, dense_prefilter_min_rows=0)).warm_up()
    yield kb
    kb.close()


@pytest.mark.parametrize("k", [1, 8, 30, 50])
def test_the_prefilter_returns_what_the_full_search_returns(demo_kb, prefiltered, k):
    import faiss

    assert demo_kb._dense_prefilter is None and prefiltered._dense_prefilter is not None
    threads = faiss.omp_get_max_threads()
    for filters in FILTERS:
        for query in QUERIES:
            full = demo_kb.search_dense(query, k=k, filters=filters)
            ours = prefiltered.search_dense(query, k=k, filters=filters)
            assert [h.chunk_id for h in ours] == [h.chunk_id for h in full], (query, filters)
            assert np.allclose([h.score for h in ours], [h.score for h in full], rtol=0, atol=1e-6)
    assert faiss.omp_get_max_threads() == threads  # the one-thread scan leaves the setting as it was
    for query in QUERIES:  # unfiltered, the prefilter answered by itself (the full search did not run)
        vector = prefiltered.embedder.embed_query(prefiltered._lexicon.canonicalize(query))
        assert prefiltered._dense_prefilter.search(vector, k, None) is not None


@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 40),
    st.sampled_from([None, 0.5, 0.05]),
    st.sampled_from(["spread", "copies", "cluster"]),
)
@settings(max_examples=200, derandomize=True, deadline=None)
def test_the_prefilter_answers_only_with_the_exact_top_k(seed, k, keep, layout):
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((300, 24)).astype(np.float32)
    if layout == "copies":  # near-copies and copies of rows: ties go to the lower row
        vectors[100:200] = vectors[:100] + 1e-4 * rng.standard_normal((100, 24)).astype(np.float32)
        vectors[200:] = vectors[:100]
    elif layout == "cluster":  # 250 rows closer together than float16 can tell apart
        vectors[50:] = vectors[0] + 1e-4 * rng.standard_normal((250, 24)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    query = vectors[rng.integers(300)] + 0.3 * rng.standard_normal(24).astype(np.float32)
    mask = rng.random(300) < keep if keep else None
    found = Float16Prefilter.build(vectors).search(query, k, mask)
    scores = vectors @ query
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    exact = [i for i in top_k(scores, k) if np.isfinite(scores[i])]
    if found is not None:
        rows, found_scores = found
        assert list(rows) == exact
        assert np.allclose(found_scores, scores[exact], rtol=0, atol=1e-6)


def test_the_prefilter_defers_when_it_cannot_prove_its_candidates_hold_the_top_k():
    query = np.float32([1.0, 0.0, 0.0])
    vectors = np.tile(np.float32([0.0, 0.6, 0.8]), (500, 1))
    vectors[::50] = [0.8, 0.6, 0.0]  # 10 rows score 0.8, the other 490 score 0
    rows, _ = Float16Prefilter.build(vectors).search(query, 5, None)
    assert list(rows) == [0, 50, 100, 150, 200]  # ties go to the lower row, as in the full search
    vectors[:] = [0.6, 0.8, 0.0]  # 500 ties: 64 candidates cannot show that no other row is higher
    assert Float16Prefilter.build(vectors).search(query, 5, None) is None


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

    from citescope.knowledge.vector_store import _Retrying

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
