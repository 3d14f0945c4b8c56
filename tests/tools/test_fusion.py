"""Fusion math on hand-computed examples: weighted RRF, weighted min-max, ties, attribution."""

from __future__ import annotations

import pytest

from citescope.tools.base import EvidenceHit, LegScore
from citescope.tools.fusion import rrf_fuse, weighted_fuse


def leg(name: str, scored: list[tuple[str, float]]) -> list[EvidenceHit]:
    return [
        EvidenceHit(chunk_id=cid, doc_id=cid.split("#")[0], score=s, legs={name: LegScore(score=s, rank=r)})
        for r, (cid, s) in enumerate(scored, start=1)
    ]


BM25 = leg("bm25", [("a#0", 12.0), ("b#0", 9.0), ("c#0", 3.0)])
DENSE = leg("dense", [("b#0", 0.93), ("d#0", 0.91)])


def test_weighted_rrf_matches_hand_computation():
    fused = rrf_fuse({"bm25": BM25, "dense": DENSE}, {"bm25": 1.0, "dense": 2.0}, k=60, top_k=10)
    expected = {
        "b#0": 1 / 62 + 2 / 61,  # 2nd in bm25, 1st in dense
        "d#0": 2 / 62,
        "a#0": 1 / 61,
        "c#0": 1 / 63,
    }
    assert [h.chunk_id for h in fused] == ["b#0", "d#0", "a#0", "c#0"]
    for hit in fused:
        assert hit.score == pytest.approx(expected[hit.chunk_id], abs=1e-12)
    b = fused[0]
    assert b.legs["bm25"] == LegScore(score=9.0, rank=2)
    assert b.legs["dense"] == LegScore(score=0.93, rank=1)
    assert set(fused[1].legs) == {"dense"} and set(fused[2].legs) == {"bm25"}


def test_rrf_default_weights_and_top_k():
    fused = rrf_fuse({"bm25": BM25, "dense": DENSE}, None, k=60, top_k=2)
    assert [h.chunk_id for h in fused] == ["b#0", "a#0"]
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61)


def test_ties_are_broken_by_chunk_id_whatever_the_input_order():
    x = leg("bm25", [("z#0", 5.0)])
    y = leg("dense", [("m#0", 0.9)])
    forward = rrf_fuse({"bm25": x, "dense": y}, None, top_k=5)
    backward = rrf_fuse({"dense": y, "bm25": x}, None, top_k=5)
    assert [h.chunk_id for h in forward] == [h.chunk_id for h in backward] == ["m#0", "z#0"]


def test_repeated_chunk_in_a_leg_counts_once_at_its_best_rank():
    dup = leg("bm25", [("a#0", 3.0), ("a#0", 2.0), ("b#0", 1.0)])
    fused = rrf_fuse({"bm25": dup}, None, k=0, top_k=5)
    assert [(h.chunk_id, h.score) for h in fused] == [("a#0", 1.0), ("b#0", 0.5)]
    assert fused[1].legs["bm25"].rank == 2


def test_zero_weight_leg_contributes_nothing_and_negative_weight_is_refused():
    fused = rrf_fuse({"bm25": BM25, "dense": DENSE}, {"dense": 0.0}, top_k=10)
    assert [h.chunk_id for h in fused] == ["a#0", "b#0", "c#0"]
    with pytest.raises(ValueError):
        rrf_fuse({"bm25": BM25}, {"bm25": -1.0})


def test_weighted_minmax_matches_hand_computation():
    fused = weighted_fuse({"bm25": BM25, "dense": DENSE}, {"bm25": 0.4, "dense": 0.6}, top_k=10)
    # bm25 normalised: a 1, b (9-3)/9 = 2/3, c 0; dense: b 1, d 0.
    expected = {"b#0": 0.4 * 2 / 3 + 0.6, "a#0": 0.4, "c#0": 0.0, "d#0": 0.0}
    assert [h.chunk_id for h in fused] == ["b#0", "a#0", "c#0", "d#0"]  # c, d: last in their leg
    for hit in fused:
        assert hit.score == pytest.approx(expected[hit.chunk_id])
    assert fused[0].legs["dense"].score == pytest.approx(0.93)


def test_weighted_single_hit_leg_counts_as_full_score():
    fused = weighted_fuse({"dense": leg("dense", [("q#0", 0.8)])}, None, top_k=3)
    assert [(h.chunk_id, h.score) for h in fused] == [("q#0", 1.0)]


def test_inputs_are_not_modified():
    before = [h.model_dump() for h in BM25]
    rrf_fuse({"bm25": BM25, "dense": DENSE}, None)
    weighted_fuse({"bm25": BM25, "dense": DENSE}, None)
    assert [h.model_dump() for h in BM25] == before
