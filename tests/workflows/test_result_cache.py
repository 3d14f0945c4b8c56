"""ResultCache: hits on the normalised question with the same carried product, filters and KB
version; misses otherwise; a new KB version empties it; bounded LRU; hits are marked copies that
keep the original trace id."""

from __future__ import annotations

import pytest

from citescope.agents.query_analysis import Entity
from citescope.workflows.result import QAResult
from citescope.workflows.result_cache import ResultCache, normalized_question

PRODUCT = Entity(name="星择 XZ-3000 笔记本充电宝 20000mAh", product_id="p-xz3000")


def answer(question: str = "XZ-3000 充电宝多少钱？", total: float = 120.0) -> QAResult:
    return QAResult(
        question=question,
        answer="XZ-3000 售价 299 元【sku-p-xz3000#0】。",
        answer_source="extractive",
        evidence_ids=["sku-p-xz3000#0"],
        timings_ms={"planner": 100.0, "total": total},
    )


def test_normalised_question_ignores_width_case_and_spacing():
    assert normalized_question("  ＸＺ－３０００  充电宝\n多少钱？ ") == normalized_question("xz-3000 充电宝 多少钱?")
    assert normalized_question("XZ-3000 充电宝多少钱") != normalized_question("XZ-2000 充电宝多少钱")


def test_hit_is_a_marked_copy_with_the_original_trace_id():
    cache = ResultCache()
    stored = answer()
    cache.put(stored.question, None, 7, stored)
    hit = cache.get("ｘｚ-3000  充电宝多少钱?", None, 7)
    assert hit is not None and hit.trace_id == stored.trace_id and hit.answer == stored.answer
    assert hit.timings_ms == {"cached": 1.0, "original_total": 120.0}
    hit.answer = "changed"
    hit.evidence_ids.append("x")
    again = cache.get(stored.question, None, 7)
    assert again.answer == stored.answer and again.evidence_ids == ["sku-p-xz3000#0"]
    stored.answer = "changed after put"
    assert cache.get(stored.question, None, 7).answer != "changed after put"


def test_carried_product_and_filters_are_part_of_the_key():
    cache = ResultCache()
    cache.put("它多少钱？", PRODUCT, 1, answer("它多少钱？"))
    assert cache.get("它多少钱？", None, 1) is None
    assert cache.get("它多少钱？", Entity(name="星择 XZ-2000", product_id="p-xz2000"), 1) is None
    assert cache.get("它多少钱？", PRODUCT.model_copy(update={"surface": "它"}), 1) is not None  # same product id

    cache.put("退货政策是几天？", None, 1, answer("退货政策是几天？"), filters={"doc_type": ["policy"]})
    assert cache.get("退货政策是几天？", None, 1) is None
    assert cache.get("退货政策是几天？", None, 1, filters={"doc_type": ["faq"]}) is None
    assert cache.get("退货政策是几天？", None, 1, filters={"doc_type": ["policy"], "brand": None}) is not None
    cache.put("XZ-3000 充电宝多少钱？", None, 1, answer())
    assert cache.get("XZ-3000 充电宝多少钱？", None, 1, filters={}) is not None  # no filter either way


def test_the_topic_a_follow_up_carries_is_part_of_the_key():
    cache = ResultCache()
    cache.put("保研率是多少", None, 1, answer("保研率是多少"), topic="国学院有哪些下设系别")
    assert cache.get("保研率是多少", None, 1) is None
    assert cache.get("保研率是多少", None, 1, topic="文学院有哪些下设系别") is None
    assert cache.get("保研率是多少？", None, 1, topic="国学院有哪些下设系别？") is not None


def test_a_new_kb_version_empties_the_cache():
    cache = ResultCache()
    stored = answer()
    cache.put(stored.question, None, 3, stored)
    assert cache.get(stored.question, None, 4) is None
    assert len(cache) == 0
    assert cache.get(stored.question, None, 3) is None  # gone for good, not kept per version


def test_bounded_least_recently_used():
    cache = ResultCache(max_entries=2)
    for question in ("a 多少钱", "b 多少钱"):
        cache.put(question, None, 1, answer(question))
    assert cache.get("a 多少钱", None, 1) is not None  # a is now the most recent
    cache.put("c 多少钱", None, 1, answer("c 多少钱"))
    assert len(cache) == 2
    assert cache.get("b 多少钱", None, 1) is None
    assert cache.get("a 多少钱", None, 1) is not None and cache.get("c 多少钱", None, 1) is not None
    with pytest.raises(ValueError):
        ResultCache(max_entries=0)
