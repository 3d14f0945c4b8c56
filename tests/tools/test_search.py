"""Search skills over the real demo KB (Milvus Lite + BM25): filters, attribution, degradation."""

from __future__ import annotations

import inspect

import pytest
from docstring_parser import parse

from citescope.knowledge.kb import KnowledgeBase
from citescope.tools.base import SkillContext
from citescope.tools.search import build_filters, hybrid_search, keyword_search, semantic_search

SKILLS = (keyword_search, semantic_search, hybrid_search)
INJECTION = '运动鞋" or doc_type != "'


class BrokenDenseKB(KnowledgeBase):
    """The real demo KB whose vector search is down (Milvus unreachable)."""

    def search_dense(self, query, k=10, filters=None):
        raise ConnectionError("milvus is down")


@pytest.fixture(scope="module")
def broken_kb(demo_kb):
    kb = BrokenDenseKB(demo_kb.dir, demo_kb.settings)
    yield kb
    kb.catalog.close()


def ctx_for(kb, **config) -> SkillContext:
    return SkillContext(kb, config)


@pytest.mark.parametrize("skill", SKILLS)
def test_doc_type_filter_restricts_every_leg(demo_kb, skill):
    query = "充电宝能带上飞机吗"
    unfiltered = skill(query, top_k=15, ctx=ctx_for(demo_kb))
    assert {h.doc_type for h in unfiltered.hits} - {"review", "post"}, "the filter must have something to remove"
    filtered = skill(query, top_k=15, doc_type="review, post", ctx=ctx_for(demo_kb))
    assert filtered.hits
    assert {h.doc_type for h in filtered.hits} <= {"review", "post"}


def test_hybrid_filters_apply_to_both_legs_with_attribution(demo_kb):
    unfiltered = hybrid_search("充电宝能带上飞机吗", top_k=10, ctx=ctx_for(demo_kb))
    assert {demo_kb.get(h.chunk_id).brand for h in unfiltered.hits} != {"星择"}
    result = hybrid_search(
        "充电宝能带上飞机吗", top_k=10, brand="星择", category="手机配件", ctx=ctx_for(demo_kb, candidates=30)
    )
    assert result.hits and not result.degraded
    chunks = [demo_kb.get(h.chunk_id) for h in result.hits]
    assert {(c.brand, c.category) for c in chunks} == {("星择", "手机配件")}
    legs_seen = set().union(*(h.legs for h in result.hits))
    assert legs_seen == {"bm25", "dense"}
    both = [h for h in result.hits if set(h.legs) == {"bm25", "dense"}]
    assert both, "some hit should be found by both legs"
    for hit in both:
        assert hit.legs["bm25"].rank >= 1 and hit.legs["dense"].rank >= 1


def test_product_and_date_filters(demo_kb):
    result = keyword_search("价格 库存", top_k=20, product_id="p-xz3000", ctx=ctx_for(demo_kb))
    assert result.hits and {h.product_id for h in result.hits} == {"p-xz3000"}
    recent = semantic_search("退货政策", top_k=20, doc_type="policy", updated_after="2026-01-01", ctx=ctx_for(demo_kb))
    assert recent.hits and all(h.updated_at >= "2026-01-01" for h in recent.hits)
    older = semantic_search("退货政策", top_k=20, doc_type="policy", ctx=ctx_for(demo_kb))
    assert any(h.updated_at < "2026-01-01" for h in older.hits)


@pytest.mark.parametrize("skill", SKILLS)
@pytest.mark.parametrize("field", ["brand", "category", "product_id"])
def test_injected_filter_value_gives_a_note_not_an_exception(demo_kb, skill, field):
    result = skill("运动鞋", **{field: INJECTION}, ctx=ctx_for(demo_kb))
    assert result.hits == []
    assert "过滤条件无效" in result.note and field in result.note
    assert INJECTION not in result.text()


@pytest.mark.parametrize("args", [{"doc_type": "faq,shoes"}, {"updated_after": "yesterday"}])
def test_other_invalid_filters_give_a_note(demo_kb, args):
    result = hybrid_search("退货", **args, ctx=ctx_for(demo_kb))
    assert result.hits == [] and "过滤条件无效" in result.note


def test_build_filters_accepts_lists_and_empty_strings():
    filters = build_filters(doc_type="FAQ，policy", brand="", updated_after="2026-03-01")
    assert filters.doc_type == ["faq", "policy"] and filters.brand is None
    assert build_filters(doc_type="", brand=None) is None


def test_hybrid_degrades_to_bm25_when_the_dense_leg_fails(broken_kb, demo_kb):
    query = "星择XZ-3000充电宝多少钱？"
    result = hybrid_search(query, top_k=5, ctx=ctx_for(broken_kb))
    assert result.degraded == ["dense leg failed: ConnectionError"]
    assert result.hits and all(set(h.legs) == {"bm25"} for h in result.hits)
    expected = keyword_search(query, top_k=5, ctx=ctx_for(demo_kb))
    assert [h.chunk_id for h in result.hits] == [h.chunk_id for h in expected.hits]
    assert "降级" in result.text()


def test_single_leg_skill_reports_a_broken_index(broken_kb):
    result = semantic_search("充电宝", ctx=ctx_for(broken_kb))
    assert result.hits == [] and result.degraded == ["dense leg failed: ConnectionError"]
    assert keyword_search("充电宝", ctx=ctx_for(broken_kb)).hits


def test_weighted_fusion_and_top_k(demo_kb):
    ctx = ctx_for(demo_kb, fusion="weighted", weights={"bm25": 0.3, "dense": 0.7}, candidates=20)
    result = hybrid_search("羽绒服的蓬松度", top_k=4, ctx=ctx)
    assert len(result.hits) == 4
    assert all(0.0 <= h.score <= 1.0 for h in result.hits)
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)


def test_title_weight_comes_from_config(demo_kb):
    query = "多久发货"
    plain = keyword_search(query, top_k=5, ctx=ctx_for(demo_kb, title_weight=0.0))
    boosted = keyword_search(query, top_k=5, ctx=ctx_for(demo_kb, title_weight=3.0))
    assert [h.score for h in plain.hits] != [h.score for h in boosted.hits]


@pytest.mark.parametrize("skill", SKILLS)
def test_every_model_visible_argument_is_documented(skill):
    documented = {p.arg_name for p in parse(skill.__doc__).params}
    visible = [n for n, p in inspect.signature(skill).parameters.items() if p.kind != p.KEYWORD_ONLY]
    assert set(visible) == documented
    assert "ctx" in inspect.signature(skill).parameters


def test_a_product_tables_rows_after_the_first_come_after_its_other_sections(demo_kb):
    # every size-table row repeats the page's title, so for a question naming the product they all
    # outscore the section that answers it (功能特点: 跑量达到 600-800 公里后更换); one row stays
    # in place, the others only fill what nothing else does
    question = "轻羽3 跑多少公里就该换新鞋了"
    ctx = ctx_for(demo_kb, candidates=30)
    ids = [h.chunk_id for h in hybrid_search(question, top_k=10, product_id="p-fc-qingyu3", ctx=ctx).hits]
    rows = [i for i in ids if "#尺码表-r" in i]
    assert "prod-fc-qingyu3#功能特点-0" in ids and rows
    assert ids.index("prod-fc-qingyu3#功能特点-0") < ids.index(rows[1]) if len(rows) > 1 else True
    # fused alone, the rows fill the page's share of the list and the section is out of it
    from citescope.tools.search import _dense_leg, _keyword_leg, fuse

    filters = build_filters(product_id="p-fc-qingyu3")
    legs = {"bm25": _keyword_leg(ctx, question, 30, filters), "dense": _dense_leg(ctx, question, 30, filters)}
    assert "prod-fc-qingyu3#功能特点-0" not in [h.chunk_id for h in fuse(legs, ctx.config, 10)]
    # with nothing else to show, every row is still there
    everything = hybrid_search(question, top_k=50, product_id="p-fc-qingyu3", ctx=ctx).hits
    assert sum("#尺码表-r" in h.chunk_id for h in everything) == sum(
        "#尺码表-r" in h.chunk_id for h in fuse(legs, ctx.config, 50)
    )
