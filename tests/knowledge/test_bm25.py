"""BM25Index must score exactly like rank_bm25.BM25Okapi, on real text and on edge cases."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from citescope.knowledge.bm25 import BM25Index
from citescope.knowledge.text import tokenize


def _find_datasets_dir() -> Path | None:
    # The datasets live in shared/datasets next to the repository, whatever its depth here.
    for folder in Path(__file__).resolve().parents:
        candidate = folder / "shared" / "datasets"
        if candidate.is_dir():
            return candidate
    return None


DATASETS_DIR = _find_datasets_dir()
CMRC_DIR = DATASETS_DIR / "cmrc2018_dev" if DATASETS_DIR else None


def _read_jsonl(path: Path, limit: int) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if len(rows) == limit:
                break
            rows.append(json.loads(line))
    return rows


@pytest.fixture(scope="module")
def cmrc_sample() -> tuple[list[list[str]], list[list[str]]]:
    if CMRC_DIR is None or not CMRC_DIR.is_dir():
        pytest.skip("shared/datasets/cmrc2018_dev not found next to the repository")
    docs = _read_jsonl(CMRC_DIR / "corpus.jsonl", 300)
    questions = _read_jsonl(CMRC_DIR / "questions.jsonl", 30)
    corpus_tokens = [tokenize(f"{doc['title']}\n{doc['text']}") for doc in docs]
    query_tokens = [tokenize(row["question"]) for row in questions]
    return corpus_tokens, query_tokens


def _reference_top(scores: np.ndarray, k: int) -> np.ndarray:
    order = np.argsort(-scores, kind="stable")
    return order[scores[order] > 0][:k]


def _assert_same_top_k(ours: np.ndarray, reference_scores: np.ndarray, k: int) -> None:
    """Tie-aware: same score sequence, and every doc of ours scores at least the k-th best."""
    expected = _reference_top(reference_scores, k)
    assert len(ours) == len(expected)
    np.testing.assert_allclose(reference_scores[ours], reference_scores[expected], rtol=1e-9)
    if len(expected):
        assert reference_scores[ours].min() >= reference_scores[expected[-1]] - 1e-9


def test_scores_and_top10_match_rank_bm25_on_real_text(cmrc_sample):
    corpus_tokens, query_tokens = cmrc_sample
    index = BM25Index.build(corpus_tokens)
    reference = BM25Okapi(corpus_tokens)
    assert index.n_docs == len(corpus_tokens)
    for query in query_tokens:
        reference_scores = reference.get_scores(query)
        np.testing.assert_allclose(index.get_scores(query), reference_scores, rtol=1e-9, atol=1e-12)
        ours, ours_scores = index.top_k(query, 10)
        _assert_same_top_k(ours, reference_scores, 10)
        np.testing.assert_allclose(ours_scores, reference_scores[ours], rtol=1e-9)
        assert np.all(np.diff(ours_scores) <= 0)


def test_mask_excludes_the_best_doc(cmrc_sample):
    corpus_tokens, query_tokens = cmrc_sample
    index = BM25Index.build(corpus_tokens)
    query = query_tokens[0]
    best, _ = index.top_k(query, 10)
    mask = np.ones(index.n_docs, dtype=bool)
    mask[best[0]] = False
    masked, _ = index.top_k(query, 10, mask=mask)
    assert best[0] not in masked
    np.testing.assert_array_equal(masked[:9], best[1:10])


def test_save_load_round_trip(cmrc_sample, tmp_path):
    corpus_tokens, query_tokens = cmrc_sample
    index = BM25Index.build(corpus_tokens, k1=1.2, b=0.6, epsilon=0.3)
    path = tmp_path / "nested" / "bm25.npz"
    index.save(path)
    assert [p.name for p in path.parent.iterdir()] == ["bm25.npz"]  # no temp file left behind
    loaded = BM25Index.load(path)
    assert (loaded.k1, loaded.b, loaded.epsilon) == (1.2, 0.6, 0.3)
    assert loaded.vocabulary == index.vocabulary
    assert loaded.n_docs == index.n_docs
    for query in query_tokens:
        np.testing.assert_array_equal(loaded.get_scores(query), index.get_scores(query))


SMALL_CORPUS = [
    ["退货", "运费", "谁", "承担"],
    ["退货", "流程", "退货", "地址"],
    ["发票", "开具", "运费"],
    ["会员", "积分", "兑换", "退货"],
    ["尺码", "偏大", "偏小"],
]


def test_empty_query_and_unknown_tokens_score_zero():
    index = BM25Index.build(SMALL_CORPUS)
    for query in ([], ["不存在的词"], ["不存在的词", "另一个"]):
        np.testing.assert_array_equal(index.get_scores(query), np.zeros(len(SMALL_CORPUS)))
        docs, scores = index.top_k(query, 3)
        assert docs.size == 0 and scores.size == 0
    reference = BM25Okapi(SMALL_CORPUS)
    query = ["运费", "不存在的词"]
    np.testing.assert_allclose(index.get_scores(query), reference.get_scores(query))


def test_repeated_query_tokens_count_each_time():
    index = BM25Index.build(SMALL_CORPUS)
    reference = BM25Okapi(SMALL_CORPUS)
    query = ["发票", "发票", "运费"]
    np.testing.assert_allclose(index.get_scores(query), reference.get_scores(query))
    np.testing.assert_allclose(index.get_scores(["发票", "发票"]), 2 * index.get_scores(["发票"]))


def test_term_in_most_docs_gets_the_epsilon_floor():
    corpus = [["通用", "a"], ["通用", "b"], ["通用", "c"], ["d"]]
    index = BM25Index.build(corpus, epsilon=0.25)
    reference = BM25Okapi(corpus)
    assert index.idf[index.vocabulary["通用"]] == pytest.approx(0.25 * reference.average_idf)
    assert index.idf[index.vocabulary["通用"]] > 0
    for query in (["通用"], ["通用", "a"], ["d", "通用", "通用"]):
        np.testing.assert_allclose(index.get_scores(query), reference.get_scores(query))


def test_single_doc_corpus_matches_rank_bm25():
    corpus = [["唯一", "文档", "文档"]]
    index = BM25Index.build(corpus)
    reference = BM25Okapi(corpus)
    for query in (["文档"], ["唯一", "文档"], ["缺失"]):
        np.testing.assert_allclose(index.get_scores(query), reference.get_scores(query))
    # Every idf is negative here, so the floor is negative too and nothing scores above 0.
    assert index.top_k(["文档"], 5)[0].size == 0


def test_ties_rank_lower_index_first_and_k_cuts():
    corpus = [["x"], ["y"], ["x"], ["z"], ["x"], ["w"], ["v"]]
    index = BM25Index.build(corpus)
    docs, scores = index.top_k(["x"], 2)
    np.testing.assert_array_equal(docs, [0, 2])
    assert scores[0] == scores[1] > 0
    assert index.top_k(["x"], 0)[0].size == 0


def test_mask_of_wrong_length_is_rejected():
    index = BM25Index.build(SMALL_CORPUS)
    with pytest.raises(ValueError, match="mask"):
        index.top_k(["退货"], 3, mask=np.ones(2, dtype=bool))


def test_empty_corpus_builds_an_empty_index(tmp_path):
    index = BM25Index.build([])
    assert index.n_docs == 0
    assert index.get_scores(["退货"]).shape == (0,)
    index.save(tmp_path / "empty.npz")
    assert BM25Index.load(tmp_path / "empty.npz").n_docs == 0


@pytest.mark.parametrize(
    "content",
    [b"", b"not an index at all", b"PK\x03\x04 truncated zip"],
    ids=["empty", "garbage", "truncated-zip"],
)
def test_load_of_corrupt_file_raises_value_error_naming_the_path(tmp_path, content):
    path = tmp_path / "broken.npz"
    path.write_bytes(content)
    with pytest.raises(ValueError, match="broken.npz"):
        BM25Index.load(path)


def test_load_of_npz_with_missing_arrays_raises_value_error(tmp_path):
    path = tmp_path / "partial.npz"
    np.savez(path, idf=np.zeros(3))
    with pytest.raises(ValueError, match="partial.npz"):
        BM25Index.load(path)


def test_load_of_truncated_index_raises_value_error(tmp_path):
    path = tmp_path / "cut.npz"
    BM25Index.build(SMALL_CORPUS).save(path)
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match="cut.npz"):
        BM25Index.load(path)
