"""Inverted-index BM25 that scores exactly like rank_bm25.BM25Okapi, only much faster.

rank_bm25 walks every document for every query term; here each term's postings are stored in
CSR form with their final BM25 weight precomputed, so a query touches only the documents that
contain its terms. Weights are computed with the same float64 operations in the same order as
rank_bm25 (and idf with math.log, as it does), so scores match it bit for bit, which keeps
ties -- e.g. duplicate chunks -- ranked identically.
"""

from __future__ import annotations

import math
import os
import tempfile
import zipfile
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

_FORMAT_VERSION = 1


class BM25Index:
    def __init__(self, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25):
        self.k1 = float(k1)
        self.b = float(b)
        self.epsilon = float(epsilon)
        self.vocabulary: dict[str, int] = {}
        self.idf = np.zeros(0, dtype=np.float64)  # per term id, after the epsilon floor
        self.average_idf = 0.0
        self.avgdl = 0.0
        self.doc_lengths = np.zeros(0, dtype=np.int64)
        # Postings of term t are doc_ids[indptr[t]:indptr[t+1]] (ascending) with their weights.
        self.indptr = np.zeros(1, dtype=np.int64)
        self.doc_ids = np.zeros(0, dtype=np.int32)
        self.weights = np.zeros(0, dtype=np.float64)

    @classmethod
    def build(
        cls,
        corpus_tokens: Sequence[Sequence[str]],
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
    ) -> BM25Index:
        index = cls(k1=k1, b=b, epsilon=epsilon)
        n_docs = len(corpus_tokens)
        # Ids in order of first occurrence: the order rank_bm25 sums idfs in for average_idf.
        # dict.fromkeys and map keep the per-token work in C (3x faster than a Python loop).
        first_seen = dict.fromkeys(chain.from_iterable(corpus_tokens))
        index.vocabulary = {term: term_id for term_id, term in enumerate(first_seen)}
        doc_lengths = np.fromiter(map(len, corpus_tokens), dtype=np.int64, count=n_docs)
        index.doc_lengths = doc_lengths
        n_terms = len(index.vocabulary)
        if n_docs == 0 or n_terms == 0:  # nothing to score (rank_bm25 would divide by zero)
            index.idf = np.zeros(n_terms, dtype=np.float64)
            index.indptr = np.zeros(n_terms + 1, dtype=np.int64)
            return index
        n_tokens = int(doc_lengths.sum())
        index.avgdl = n_tokens / n_docs

        # One (term, doc) key per token; np.unique sorts by term then doc and counts tf.
        term_of_token = np.fromiter(
            map(index.vocabulary.__getitem__, chain.from_iterable(corpus_tokens)),
            dtype=np.int64,
            count=n_tokens,
        )
        doc_of_token = np.repeat(np.arange(n_docs, dtype=np.int64), doc_lengths)
        pair_keys, term_freqs = np.unique(term_of_token * n_docs + doc_of_token, return_counts=True)
        posting_terms = pair_keys // n_docs
        index.doc_ids = (pair_keys % n_docs).astype(np.int32)
        doc_freqs = np.bincount(posting_terms, minlength=n_terms)
        index.indptr = np.concatenate(([0], np.cumsum(doc_freqs))).astype(np.int64)

        index.idf, index.average_idf = _okapi_idf(doc_freqs, n_docs, epsilon)
        # Same expression and evaluation order as BM25Okapi.get_scores, for identical floats.
        tf = term_freqs.astype(np.float64)
        posting_lengths = doc_lengths[index.doc_ids]
        length_norm = (1 - index.b) + index.b * posting_lengths / index.avgdl
        index.weights = index.idf[posting_terms] * (tf * (index.k1 + 1) / (tf + index.k1 * length_norm))
        return index

    @property
    def n_docs(self) -> int:
        return int(self.doc_lengths.shape[0])

    def get_scores(self, query_tokens: Sequence[str]) -> np.ndarray:
        """BM25 score of every document; a repeated query token counts once per repetition."""
        scores = np.zeros(self.n_docs, dtype=np.float64)
        for token in query_tokens:
            term_id = self.vocabulary.get(token)
            if term_id is None:
                continue
            start, end = self.indptr[term_id], self.indptr[term_id + 1]
            # Fancy-index += is safe: a term's postings hold each doc id at most once.
            scores[self.doc_ids[start:end]] += self.weights[start:end]
        return scores

    def top_k(
        self, query_tokens: Sequence[str], k: int, mask: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(doc indices, scores) of the k best docs with score > 0, ties by lower index.

        mask: optional bool array of length n_docs; False excludes a doc (metadata filters).
        """
        scores = self.get_scores(query_tokens)
        eligible = scores > 0
        if mask is not None:
            mask = np.asarray(mask, dtype=bool)
            if mask.shape != (self.n_docs,):
                raise ValueError(f"mask must have shape ({self.n_docs},), got {mask.shape}")
            eligible &= mask
        candidates = np.flatnonzero(eligible)  # ascending, so a stable sort keeps ties by index
        if k <= 0 or candidates.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        if candidates.size > k:
            # argpartition picks an arbitrary member of a tie at the cut, so keep every doc
            # scoring at least the k-th best and let the stable sort decide.
            kth_best = np.partition(scores[candidates], candidates.size - k)[candidates.size - k]
            candidates = candidates[scores[candidates] >= kth_best]
        order = np.argsort(-scores[candidates], kind="stable")[:k]
        best = candidates[order]
        return best, scores[best]

    def save(self, path: Path) -> None:
        """Write atomically (temp file in the same folder, then os.replace); no pickled data."""
        path = Path(path)
        terms = list(self.vocabulary)  # ids are 0..n-1 in insertion order
        encoded = [term.encode("utf-8") for term in terms]
        term_offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        term_offsets[1:] = np.cumsum(np.array([len(raw) for raw in encoded], dtype=np.int64))
        arrays: dict[str, Any] = {
            "format_version": np.array(_FORMAT_VERSION, dtype=np.int64),
            "params": np.array([self.k1, self.b, self.epsilon, self.avgdl, self.average_idf]),
            "term_bytes": np.frombuffer(b"".join(encoded), dtype=np.uint8),
            "term_offsets": term_offsets,
            "idf": self.idf,
            "doc_lengths": self.doc_lengths,
            "indptr": self.indptr,
            "doc_ids": self.doc_ids,
            "weights": self.weights,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            # A file object stops np.savez from appending ".npz" to the temp name.
            with os.fdopen(fd, "wb") as handle:
                np.savez(handle, **arrays)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp_name, path)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: Path) -> BM25Index:
        path = Path(path)
        try:
            with np.load(path, allow_pickle=False) as stored:
                arrays = {name: stored[name] for name in stored.files}
            index = cls._from_arrays(arrays)
        except FileNotFoundError:
            raise
        except (OSError, ValueError, KeyError, IndexError, EOFError, zipfile.BadZipFile) as exc:
            raise ValueError(f"{path}: not a valid BM25 index file ({exc})") from exc
        return index

    @classmethod
    def _from_arrays(cls, arrays: dict[str, np.ndarray]) -> BM25Index:
        version = int(arrays["format_version"])
        if version != _FORMAT_VERSION:
            raise ValueError(f"format version {version}, expected {_FORMAT_VERSION}")
        k1, b, epsilon, avgdl, average_idf = (float(value) for value in arrays["params"])
        index = cls(k1=k1, b=b, epsilon=epsilon)
        index.avgdl, index.average_idf = avgdl, average_idf
        term_blob = arrays["term_bytes"].tobytes()
        offsets = arrays["term_offsets"].tolist()
        terms = [term_blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(len(offsets) - 1)]
        index.vocabulary = {term: term_id for term_id, term in enumerate(terms)}
        index.idf = arrays["idf"].astype(np.float64, copy=False)
        index.doc_lengths = arrays["doc_lengths"].astype(np.int64, copy=False)
        index.indptr = arrays["indptr"].astype(np.int64, copy=False)
        index.doc_ids = arrays["doc_ids"].astype(np.int32, copy=False)
        index.weights = arrays["weights"].astype(np.float64, copy=False)
        index._check_consistent()
        return index

    def _check_consistent(self) -> None:
        """Catch truncated or mismatched arrays now rather than as wrong scores later."""
        n_terms, n_postings = len(self.vocabulary), self.doc_ids.shape[0]
        problems = []
        if len(self.vocabulary) != self.idf.shape[0]:
            problems.append("vocabulary and idf sizes differ (duplicate terms?)")
        if self.indptr.shape != (n_terms + 1,) or self.indptr[-1] != n_postings:
            problems.append("postings pointer does not match the vocabulary")
        elif np.any(np.diff(self.indptr) < 0):
            problems.append("postings pointer is not ascending")
        if self.weights.shape != (n_postings,):
            problems.append("postings weights and doc ids differ in length")
        if n_postings and (self.doc_ids.min() < 0 or self.doc_ids.max() >= self.n_docs):
            problems.append("postings refer to documents outside the index")
        if problems:
            raise ValueError("; ".join(problems))


def _okapi_idf(doc_freqs: np.ndarray, n_docs: int, epsilon: float) -> tuple[np.ndarray, float]:
    """BM25Okapi idf per term, negative ones floored to epsilon * (mean of all raw idfs)."""
    # math.log on the few distinct df values reproduces rank_bm25's floats exactly.
    distinct_dfs, df_slot = np.unique(doc_freqs, return_inverse=True)
    distinct_idf = np.array([math.log(n_docs - df + 0.5) - math.log(df + 0.5) for df in distinct_dfs.tolist()])
    raw_idf = distinct_idf[df_slot]
    # cumsum adds left to right like rank_bm25's loop (np.sum's pairwise sum differs in the last bits).
    average_idf = float(np.cumsum(raw_idf)[-1]) / raw_idf.shape[0]
    idf = np.where(raw_idf < 0, epsilon * average_idf, raw_idf)
    return idf, average_idf
