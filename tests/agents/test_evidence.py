"""EvidencePool: dedup by chunk id, best score and all legs kept, bounded top, exact rendering."""

from __future__ import annotations

import pytest

from citescope.agents.evidence import SIBLING_MARK, EvidencePool, render_conflicts, render_line
from citescope.tools.base import EvidenceHit, LegScore, SkillContext


def hit(chunk_id: str, score: float, legs: dict[str, float] | None = None, text: str = "正文", **fields) -> EvidenceHit:
    return EvidenceHit(
        chunk_id=chunk_id,
        doc_id=chunk_id.partition("#")[0],
        score=score,
        text=text,
        legs={leg: LegScore(score=value, rank=1) for leg, value in (legs or {}).items()},
        **fields,
    )


def test_a_chunk_found_twice_is_kept_once_with_best_score_legs_and_skills():
    pool = EvidencePool()
    pool.add("keyword_search", [hit("a#x-0", 7.5, {"bm25": 7.5}), hit("b#x-0", 3.0, {"bm25": 3.0})])
    pool.add("semantic_search", [hit("a#x-0", 0.91, {"dense": 0.91})])
    pool.add("hybrid_search", [hit("a#x-0", 2.0, {"bm25": 2.0, "dense": 0.95})])
    assert len(pool) == 2 and "a#x-0" in pool
    merged = pool.get("a#x-0")
    assert merged.score == 7.5
    assert {leg: s.score for leg, s in merged.legs.items()} == {"bm25": 7.5, "dense": 0.95}
    assert merged.found_by == {"keyword_search", "semantic_search", "hybrid_search"}
    assert pool.get("b#x-0").found_by == {"keyword_search"}


def test_adding_does_not_change_the_callers_hits():
    original = hit("a#x-0", 1.0, {"bm25": 1.0})
    pool = EvidencePool()
    pool.add("s", [original])
    pool.add("t", [hit("a#x-0", 5.0, {"bm25": 5.0})])
    assert original.score == 1.0 and original.legs["bm25"].score == 1.0


def test_from_hits_wraps_a_skill_context_pool():
    context = SkillContext(kb=None)
    context.remember([hit("a#x-0", 0.5, {"dense": 0.5}), hit("b#x-0", 0.7, {"dense": 0.7})])
    pool = EvidencePool.from_hits(context.pool, skill="planner")
    assert [h.chunk_id for h in pool.hits()] == ["b#x-0", "a#x-0"]
    assert pool.get("a#x-0").found_by == {"planner"}
    assert EvidencePool.from_hits(list(context.pool.values())).get("a#x-0").found_by == set()


def test_top_orders_reranked_hits_first_by_calibrated_score():
    pool = EvidencePool.from_hits(
        [
            hit("bm25-only#x-0", 12.0, {"bm25": 12.0}),
            hit("low#x-0", 0.3, {"rerank": 0.3}),
            hit("high#x-0", 0.2, {"bm25": 9.0, "rerank": 0.9}),
            hit("dense-only#x-0", 0.93, {"dense": 0.93}),
        ]
    )
    assert [h.chunk_id for h in pool.top(10)] == ["high#x-0", "low#x-0", "bm25-only#x-0", "dense-only#x-0"]
    assert [h.chunk_id for h in pool.top(2)] == ["high#x-0", "low#x-0"]


def test_top_is_bounded_by_characters_and_skips_what_does_not_fit():
    long_text, short_text = "长" * 300, "短" * 20
    pool = EvidencePool.from_hits(
        [
            hit("a#x-0", 0.9, {"rerank": 0.9}, text=long_text),
            hit("b#x-0", 0.8, {"rerank": 0.8}, text=long_text),
            hit("c#x-0", 0.7, {"rerank": 0.7}, text=short_text),
        ]
    )
    budget = len(render_line(pool.get("a#x-0"))) + len(render_line(pool.get("c#x-0")))
    chosen = pool.top(10, max_chars=budget)
    assert [h.chunk_id for h in chosen] == ["a#x-0", "c#x-0"]
    assert sum(len(render_line(h)) for h in chosen) <= budget
    # the best hit is kept even when it alone exceeds the budget
    assert [h.chunk_id for h in pool.top(10, max_chars=10)] == ["a#x-0"]
    # hits chosen before from another pool come first and count against both bounds
    first = EvidencePool.from_hits([hit("d#x-0", 0.95, {"rerank": 0.95}, text=short_text)]).top(10)
    assert [h.chunk_id for h in pool.top(10, max_chars=budget, after=first)] == ["d#x-0", "a#x-0"]
    assert [h.chunk_id for h in pool.top(2, after=first)] == ["d#x-0", "a#x-0"]
    assert [h.chunk_id for h in pool.top(10, max_chars=10, after=first)] == ["d#x-0"]


def test_render_is_one_line_per_hit_in_the_exact_format():
    hits = [
        hit(
            "policy-returns-2026#无理由退换-0",
            1.0,
            text="无理由退换：自签收次日起 15天无理由退换。\n- 保持包装完整；",
            doc_type="policy",
            updated_at="2026-06-01",
            source="店铺政策",
            title="退换货政策（2026版）",
        ),
        hit("faq-001#body-0", 1.0, text="当天发货。", doc_type="faq", title="当天发货"),
    ]
    assert EvidencePool.render(hits) == (
        "【policy-returns-2026#无理由退换-0】(policy, 2026-06-01, 店铺政策) "
        "退换货政策（2026版）｜无理由退换：自签收次日起 15天无理由退换。 - 保持包装完整；\n"
        "【faq-001#body-0】(faq, 日期未知, 来源未知) 当天发货。"
    )


def test_render_marks_a_siblings_line_and_no_other():
    hits = [
        hit(
            "spec-1#body-0",
            1.0,
            text="型号：逐光X3\n续航：26小时",
            doc_type="product",
            title="风行 逐光X3 无线降噪耳机",
        ),
        hit(
            "spec-2#body-0",
            0.9,
            text="型号：听澜X3\n电池容量：320mAh",
            doc_type="product",
            title="极岚 听澜X3 头戴式耳机",
        ),
    ]
    own, sibling = EvidencePool.render(hits, siblings={"spec-2#body-0"}).split("\n")
    assert SIBLING_MARK not in own
    assert sibling == (
        f"【spec-2#body-0】(product, 日期未知, 来源未知) {SIBLING_MARK}"
        "极岚 听澜X3 头戴式耳机｜型号：听澜X3 电池容量：320mAh"
    )
    assert EvidencePool.render(hits) == EvidencePool.render(hits, siblings={"spec-9#body-0"})  # ids not shown: no mark


def test_render_conflicts_lists_every_value_with_date_authority_and_id():
    conflicts = pytest.importorskip("citescope.agents.conflicts")
    conflict = conflicts.Conflict(
        attribute="无理由退换期限",
        entity="退换货政策",
        values=[
            conflicts.ConflictValue(
                value="15天",
                chunk_id="p26#a-0",
                updated_at="2026-06-01",
                authority="official",
                sentence="15天无理由退换",
            ),
            conflicts.ConflictValue(
                value="人造革", chunk_id="rev-1#body-0", updated_at=None, authority="community", sentence="感觉是人造革"
            ),
        ],
    )
    assert render_conflicts([conflict]) == (
        "- 退换货政策 的 无理由退换期限：15天（2026-06-01，官方）【p26#a-0】；人造革（日期未知，用户）【rev-1#body-0】"
    )
    assert render_conflicts([]) == "无"
