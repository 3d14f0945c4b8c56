"""Prices and stock counts in strangers' text against the product's SKU table (conflict rule 4)."""

from __future__ import annotations

import pytest

from citescope.agents.conflicts import detect_conflicts
from citescope.agents.table_claims import PRICE, STOCK, claimed_numbers, table_numbers
from citescope.tools.base import EvidenceHit

ROW = "商品: 星择 XZ-3000 笔记本充电宝 20000mAh；SKU: XZ3000-GRY；颜色: 深空灰；价格: 299.00元；库存: 28件"
OTHER_ROW = "商品: 星择 XZ-3000 笔记本充电宝 20000mAh；SKU: XZ3000-SLV；颜色: 月光银；价格: 299.00元；库存: 13件"
TITLE = "星择 XZ-3000 笔记本充电宝 20000mAh"


@pytest.mark.parametrize(
    "text, claims",
    [
        ("XZ-3000 今天免费送，价格 0 元", [(PRICE, 0.0)]),
        ("限时特价，现在只要 9 元，库存 999 件", [(PRICE, 9.0), (STOCK, 999.0)]),
        ("售价是1,299.00元", [(PRICE, 1299.0)]),
        ("The XZ-3000 power bank costs ¥0 today and there are 999 in stock.", [(PRICE, 0.0), (STOCK, 999.0)]),
        # amounts that are something else's
        ("运费才 10 元，比实体店便宜了 100 元", []),
        ("只要 99 元，还送 50元优惠券", [(PRICE, 99.0)]),
        ("买了两个，一共花了不少钱", []),
        ("续航 20000mAh，充电 65W", []),
    ],
)
def test_claimed_prices_and_stock(text, claims):
    assert [(c.kind, c.number) for c in claimed_numbers(text)] == claims


def hit(chunk_id: str, text: str, **fields) -> EvidenceHit:
    defaults = {"doc_type": "product", "authority": "official", "product_id": "p-xz3000", "title": TITLE}
    return EvidenceHit(
        chunk_id=chunk_id, doc_id=chunk_id.partition("#")[0], score=1.0, text=text, **(defaults | fields)
    )


TABLE = [
    hit("sku-p-xz3000#sku-XZ3000-GRY", ROW, section="SKU"),
    hit("sku-p-xz3000#sku-XZ3000-SLV", OTHER_ROW, section="SKU"),
]


def test_table_numbers_read_a_row():
    assert table_numbers(TABLE[0]) == {PRICE: [(299.0, "299.00元")], STOCK: [(28.0, "28件")]}


@pytest.mark.parametrize(
    "claim",
    [
        dict(doc_type="doc", authority="community"),  # an untyped record
        dict(doc_type="review", authority="community"),
        dict(doc_type="post", authority="community", product_id=None),  # found by its model number
    ],
)
def test_an_untrusted_false_price_is_a_conflict_the_table_leads(claim):
    review = hit("rv-1#body-0", "XZ-3000 今天免费送，价格 0 元", section="", title="活动", **claim)
    conflicts = detect_conflicts("XZ-3000 今天免费送吗？", [*TABLE, review])
    assert len(conflicts) == 1
    values = conflicts[0].values
    assert [(v.chunk_id, v.authority) for v in values] == [
        (TABLE[0].chunk_id, "official"),
        (review.chunk_id, "community"),
    ]
    assert values[0].value == "299.00元" and values[1].value == "0元"


def test_a_stock_count_is_held_to_the_row_of_the_variant_it_names():
    question = "XZ-3000 还有库存吗？"
    false = hit(
        "rv-2#body-0", "XZ-3000 月光银库存 999 件，随便买", section="", doc_type="review", authority="community"
    )
    stock = detect_conflicts(question, [*TABLE, false])
    assert [(v.value, v.chunk_id) for v in stock[0].values] == [("13件", TABLE[1].chunk_id), ("999件", false.chunk_id)]
    true = hit("rv-3#body-0", "XZ-3000 月光银只剩 13 件了", section="", doc_type="review", authority="community")
    assert detect_conflicts(question, [*TABLE, true]) == []
    # naming no variant: no row to hold it to when several are shown; the only row when one is
    unnamed = hit("rv-4#body-0", "XZ-3000 库存 999 件", section="", doc_type="review", authority="community")
    assert detect_conflicts(question, [*TABLE, unnamed]) == []
    assert {v.value for v in detect_conflicts(question, [TABLE[0], unnamed])[0].values} == {"28件", "999件"}
    assert detect_conflicts("XZ-3000 好用吗？", [TABLE[0], unnamed]) == []  # not asked about stock or price


def test_the_shop_and_agreeing_or_unrelated_text_are_no_conflict():
    question = "XZ-3000 多少钱？"
    official_page = hit("prod-xz3000#商品简介-0", "XZ-3000 原价 399 元，现价以SKU表为准", section="商品简介")
    agreeing = hit("rv-5#body-0", "XZ-3000 到手价 299 元，值", section="", doc_type="review", authority="community")
    other_product = hit(
        "rv-6#body-0",
        "XZ-2000 只要 9 元",
        section="",
        doc_type="review",
        authority="community",
        product_id="p-xz2000",
        title="星择 XZ-2000",
    )
    for extra in (official_page, agreeing, other_product):
        assert detect_conflicts(question, [*TABLE, extra]) == [], extra.chunk_id
    lone_review = hit("rv-7#body-0", "XZ-3000 价格 0 元", section="", doc_type="review", authority="community")
    assert (
        detect_conflicts(question, [lone_review, official_page]) == []
    )  # no table in the evidence: nothing to hold it to
