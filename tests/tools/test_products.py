"""Product skills on the demo KB: look-up by alias, model number and SKU code; ambiguity and
misses; size recommendation for outerwear (height/weight) and shoes (foot length)."""

from __future__ import annotations

import pytest

from citescope.tools.base import SkillContext
from citescope.tools.products import SizeAdvice, product_lookup, size_recommend


@pytest.fixture()
def ctx(demo_kb) -> SkillContext:
    return SkillContext(demo_kb)


def table_rows(kb, product_id: str) -> dict[str, dict]:
    return {row["sku"]: row for row in kb.skus(product_id=product_id)}


# ----------------------------------------------------------------------------- product_lookup


def test_sizes_asked_about_come_first_with_their_size_table_rows(ctx):
    result = product_lookup("峰刃冲锋衣", sizes=["m", "L", "XXL"], ctx=ctx)  # XXL: no such row, left out
    assert result.data["size_rows"] == {"M": "prod-sy-fengren#尺码表-r1-0", "L": "prod-sy-fengren#尺码表-r2-0"}
    ids = [h.chunk_id for h in result.hits]
    assert ids[:2] == ["prod-sy-fengren#尺码表-r1-0", "prod-sy-fengren#尺码表-r2-0"]
    assert ids[2] == "sku-p-sy-fengren#skus-0"  # then the overview, then those sizes' SKU rows
    assert {i.rsplit("-", 1)[-1] for i in ids[3:7]} == {"M", "L"}
    assert "所问尺码的尺码表：M 码 适合身高(cm) 168-174" in result.note
    assert "size_rows" not in product_lookup("峰刃冲锋衣", ctx=ctx).data


def test_a_named_sku_comes_first_then_the_overview(ctx):
    result = product_lookup("AJ1L-WR-42", ctx=ctx)
    assert result.data["matched_sku"] == "AJ1L-WR-42"
    assert [h.chunk_id for h in result.hits[:2]] == ["sku-p-aj1-low#sku-AJ1L-WR-42", "sku-p-aj1-low#skus-0"]


@pytest.mark.parametrize("asked", ["AJ1 低帮", "aj1 low", "乔丹一代低帮", "AJ1 Low 42码"])
def test_alias_resolves_to_the_low_top(ctx, demo_kb, asked):
    result = product_lookup(asked, ctx=ctx)
    assert result.data["product_id"] == "p-aj1-low"
    rows = table_rows(demo_kb, "p-aj1-low")
    assert {s["sku"]: (s["price"], s["stock"]) for s in result.data["skus"]} == {
        sku: (row["price"], row["stock"]) for sku, row in rows.items()
    }
    assert result.data["price_range"] == [899.0, 899.0]
    assert result.data["in_stock_sizes"] == ["40", "41", "42", "43"]
    assert result.data["out_of_stock"] == ["AJ1L-PANDA-43"]
    # every row, and first the overview of all of them (no SKU code named)
    assert {h.chunk_id for h in result.hits} == {f"sku-p-aj1-low#sku-{sku}" for sku in rows} | {"sku-p-aj1-low#skus-0"}
    assert result.hits[0].chunk_id == "sku-p-aj1-low#skus-0"
    assert [h.legs["sku_table"].rank for h in result.hits] == list(range(1, len(result.hits) + 1))
    assert all(demo_kb.get(h.chunk_id) is not None for h in result.hits)


def test_bare_alias_matching_two_products_lists_candidates_without_guessing(ctx):
    result = product_lookup("AJ1", ctx=ctx)
    assert "product_id" not in result.data
    assert [c["product_id"] for c in result.data["candidates"]] == ["p-aj1-low", "p-aj1-retro"]
    assert not result.hits
    assert "Air Jordan 1 Low" in result.note and "Retro" in result.note


@pytest.mark.parametrize(
    "asked, product_id, price",
    [
        ("XZ-2000", "p-xz2000", 149.0),
        ("xz2000", "p-xz2000", 149.0),
        ("XZ 2000", "p-xz2000", 149.0),
        ("星择 XZ-2000 充电宝", "p-xz2000", 149.0),
        ("XZ-3000", "p-xz3000", 299.0),
        ("xz-3000 笔记本充电宝", "p-xz3000", 299.0),
        ("星择 20000mAh 充电宝", "p-xz3000", 299.0),
    ],
)
def test_model_numbers_are_never_confused(ctx, asked, product_id, price):
    result = product_lookup(asked, ctx=ctx)
    assert result.data["product_id"] == product_id
    assert result.data["price_range"] == [price, price]
    assert all(h.product_id == product_id for h in result.hits)


@pytest.mark.parametrize("asked", ["XZ-2500", "火焰8", "轻羽5", "AJ11"])
def test_an_unknown_model_number_is_not_found_rather_than_a_near_model(ctx, asked):
    result = product_lookup(asked, ctx=ctx)
    assert result.data == {} and not result.hits
    assert "没有找到" in result.note


def test_sku_code_returns_that_sku_first_with_table_numbers(ctx):
    result = product_lookup("AJ1L-WR-42", ctx=ctx)
    assert result.data["product_id"] == "p-aj1-low"
    assert result.data["matched_sku"] == "AJ1L-WR-42"
    assert result.data["skus"][0] == {"sku": "AJ1L-WR-42", "colour": "白红", "size": "42", "price": 899.0, "stock": 14}
    assert result.hits[0].chunk_id == "sku-p-aj1-low#sku-AJ1L-WR-42"
    assert "库存 14 件" in result.note
    assert product_lookup("aj1l-wr-42", ctx=ctx).data["matched_sku"] == "AJ1L-WR-42"


def test_product_id_lookup(ctx):
    result = product_lookup("p-sy-fengren", ctx=ctx)
    assert result.data["name"] == "山野 峰刃 GTX 冲锋衣"
    assert result.data["out_of_stock"] == ["SYFR-BLU-L"]


@pytest.mark.parametrize(
    "asked, expected",
    [
        ("充电宝", ["p-xz2000", "p-xz3000"]),
        ("轻羽", ["p-fc-qingyu3", "p-yd-qingyu-pro"]),
        ("羽绒服", ["p-bjy-jiguang700", "p-xy-jiguangpro"]),
    ],
)
def test_ambiguous_names_give_candidates(ctx, asked, expected):
    result = product_lookup(asked, ctx=ctx)
    assert [c["product_id"] for c in result.data["candidates"]] == expected
    assert not result.hits


def test_unknown_product_is_a_note_not_a_guess(ctx):
    result = product_lookup("宇宙飞船模型", ctx=ctx)
    assert result.data == {} and not result.hits and "没有找到" in result.note


# ----------------------------------------------------------------------------- size_recommend


def test_outerwear_without_body_measures_asks_for_them(ctx):
    result = size_recommend("峰刃冲锋衣", ctx=ctx)
    assert result.data == {"need": ["height_cm", "weight_kg"]}
    assert not result.hits
    assert "身高" in result.note and "体重" in result.note
    assert size_recommend("峰刃冲锋衣", height_cm=176, ctx=ctx).data == {"need": ["weight_kg"]}


def test_outerwear_height_and_weight_in_one_size(ctx):
    result = size_recommend("峰刃冲锋衣", height_cm=176, weight_kg=72, ctx=ctx)
    assert result.data["size"] == "L"
    assert result.data["rows_used"] == ["prod-sy-fengren#尺码表-r2-0"]
    assert result.hits[0].chunk_id == "prod-sy-fengren#尺码表-r2-0"
    assert "175-180" in result.hits[0].text and "175-180" in result.data["reason"]
    assert result.data["in_stock"] is True


def test_outerwear_height_and_weight_disagree_the_larger_wins(ctx):
    result = size_recommend("山野 峰刃 GTX 冲锋衣", height_cm=170, weight_kg=78, ctx=ctx)
    assert result.data["size"] == "L"
    assert set(result.data["rows_used"]) == {"prod-sy-fengren#尺码表-r1-0", "prod-sy-fengren#尺码表-r2-0"}
    assert "M 码" in result.data["reason"] and "较大的 L 码" in result.data["reason"]


def test_outerwear_beyond_the_table_recommends_nothing(ctx):
    result = size_recommend("峰刃冲锋衣", height_cm=195, weight_kg=100, ctx=ctx)
    assert result.data["size"] is None
    assert "超出" in result.note
    # the reason quotes the largest size's ranges, so that row is among the rows it cites
    assert result.data["rows_used"] == ["prod-sy-fengren#尺码表-r3-0"] and "181-186" in result.data["reason"]
    assert SizeAdvice.of(result.data).size is None


def test_size_advice_carries_the_rows_and_the_skus_of_that_size(ctx):
    result = size_recommend("峰刃冲锋衣", height_cm=176, weight_kg=72, ctx=ctx)
    advice = SizeAdvice.of(result.data)
    assert (advice.product, advice.size) == ("山野 峰刃 GTX 冲锋衣", "L")
    assert set(advice.sku_rows) == {"sku-p-sy-fengren#sku-SYFR-BLU-L", "sku-p-sy-fengren#sku-SYFR-BLK-L"}
    assert advice.chunk_ids() == [*advice.rows_used, *advice.sku_rows]
    # asking for facts, or a one-size product, is no advice to state
    assert SizeAdvice.of(size_recommend("峰刃冲锋衣", ctx=ctx).data) is None
    assert SizeAdvice.of(size_recommend("木木 帆布托特包", ctx=ctx).data) is None


def test_shoe_needs_foot_length_even_with_height_and_weight(ctx):
    result = size_recommend("AJ1 低帮", height_cm=175, weight_kg=70, ctx=ctx)
    assert result.data == {"need": ["foot_length_cm"]}
    assert "脚长" in result.note and not result.hits


@pytest.mark.parametrize("foot, size, row", [(25.8, "41", "r2"), (26.0, "41", "r2"), (26.1, "42", "r3")])
def test_shoe_smallest_size_whose_foot_length_fits(ctx, foot, size, row):
    result = size_recommend("AJ1 低帮", foot_length_cm=foot, ctx=ctx)
    assert result.data["size"] == size
    assert result.data["rows_used"] == [f"prod-aj1-low#尺码表-{row}-0"]
    assert result.hits[0].chunk_id == f"prod-aj1-low#尺码表-{row}-0"


def test_a_foot_between_two_sizes_follows_the_size_tables_note(ctx):
    # 白帆: "本款鞋码偏大，脚长介于两个尺码之间时建议选小一码" above its table
    between = size_recommend("白帆帆布鞋", foot_length_cm=24.3, ctx=ctx)
    assert between.data["size"] == "38", between.note
    assert "本款鞋码偏大，脚长介于两个尺码之间时建议选小一码" in between.data["reason"]
    assert between.data["rows_used"] == [
        "prod-bf-classic#尺码表-r3-0",
        "prod-bf-classic#尺码表-r4-0",
        "prod-bf-classic#尺码表-0",
    ]  # both rows and the note, cited
    # a foot that is a size's own length is that size; a table without such a note keeps the rule
    assert size_recommend("白帆帆布鞋", foot_length_cm=24.5, ctx=ctx).data["size"] == "39"
    assert size_recommend("AJ1 低帮", foot_length_cm=25.8, ctx=ctx).data["size"] == "41"


def test_shoe_longer_than_the_table(ctx):
    result = size_recommend("AJ1 低帮", foot_length_cm=30, ctx=ctx)
    assert result.data["size"] is None and "超出" in result.note


def test_size_recommend_on_ambiguous_or_sizeless_products(ctx):
    assert [c["product_id"] for c in size_recommend("AJ1", foot_length_cm=25, ctx=ctx).data["candidates"]] == [
        "p-aj1-low",
        "p-aj1-retro",
    ]
    charger = size_recommend("XZ-2000", ctx=ctx)  # its 尺码表 lists charging modes, not sizes
    assert "size" not in charger.data and "没有找到" in charger.note
    assert size_recommend("木木 帆布托特包", ctx=ctx).data["size"] == "均码"
