"""Answers read off the product tables (agents/product_answers.py), through the extractive
answerer on the real demo KB: the SKU overview for a product's variants, the size size_recommend
worked out, the rows of sizes a question names. Every answer passes the inspector."""

from __future__ import annotations

from citescope.agents.citations import split_sentences
from citescope.agents.product_answers import quoted_row_cells, row_sentence
from citescope.tools.base import SkillContext
from citescope.tools.products import SizeAdvice, size_recommend
from tests.agents.test_extractive import answerer, chunks, inspector  # noqa: F401 - the same fixtures


def inspected_answer(answerer, inspector, question: str, evidence) -> str:
    """The answer to the question, which the inspector passes."""
    answer = answerer.run(question, evidence)
    assert inspector.run(answer, evidence, question=question).passed, answer
    return answer


def test_a_question_about_all_variants_is_answered_by_the_sku_overview(demo_kb, answerer, inspector):
    evidence = chunks(demo_kb, "sku-p-xz3000#sku-XZ3000-SLV", "sku-p-xz3000#skus-0", "prod-xz3000#商品简介-0")
    for question in ("星择XZ-3000充电宝有哪些颜色？", "XZ-3000多少钱？有货吗？"):
        answer = answerer.run(question, evidence)
        assert answer == (
            "星择 XZ-3000 笔记本充电宝 20000mAh 共 2 个规格：颜色有深空灰、月光银；价格 299.00元；"
            "有货：深空灰、月光银；缺货：无【sku-p-xz3000#skus-0】。"
        ), question
        assert inspector.run(answer, evidence, question=question).passed
    # a colour the question names is answered by that colour's own row
    named = answerer.run("XZ-3000月光银多少钱？", evidence)
    assert named.endswith("【sku-p-xz3000#sku-XZ3000-SLV】。") and "库存 13件" in named


def test_out_of_stock_variants_come_from_the_overview(demo_kb, answerer):
    evidence = chunks(demo_kb, "sku-p-fc-qingyu3#sku-FCQY3-BLU-43", "sku-p-fc-qingyu3#skus-0")
    answer = answerer.run("风驰轻羽3跑鞋哪个颜色哪个码没货了？", evidence)
    assert "缺货：雾霾蓝 41【sku-p-fc-qingyu3#skus-0】" in answer


def test_variants_of_two_products_need_both_overviews(demo_kb, answerer, inspector):
    question = "XZ-2000和XZ-3000分别有哪些颜色？"
    both = answerer.run(
        question, chunks(demo_kb, "sku-p-xz2000#skus-0", "sku-p-xz3000#skus-0", "sku-p-xz2000#sku-XZ2000-WHT")
    )
    assert "颜色有白色、黑色、雾紫" in both and "颜色有深空灰、月光银" in both
    # one overview missing: the sentence scorer answers from what there is (the overview is one
    # more candidate sentence there), and nothing is said of the product's other colours
    evidence = chunks(demo_kb, "sku-p-xz2000#skus-0", "sku-p-xz3000#sku-XZ3000-GRY", "sku-p-xz2000#sku-XZ2000-WHT")
    partial = answerer.run(question, evidence)
    assert partial.startswith("根据现有资料，") and "月光银" not in partial
    assert inspector.run(partial, evidence, question=question).passed


def test_a_size_asked_after_is_answered_by_its_row_in_every_colour(demo_kb, answerer, inspector):
    blue, black = "sku-p-sy-fengren#sku-SYFR-BLU-XL", "sku-p-sy-fengren#sku-SYFR-BLK-XL"
    # the size-table row first, as the search ranks it: "有没有XL码" asks whether XL is to be had
    evidence = chunks(
        demo_kb,
        "prod-sy-fengren#尺码表-r3-0",
        blue,
        "sku-p-sy-fengren#skus-0",
        black,
        "sku-p-sy-fengren#sku-SYFR-BLU-L",
    )
    for question in ("峰刃冲锋衣有没有XL码", "峰刃冲锋衣XL码还有吗？", "峰刃冲锋衣有XL码吗"):
        answer = answerer.run(question, evidence)
        assert answer == (
            "山野 峰刃 GTX 冲锋衣（冰川蓝，XL）：价格 1599.00元，库存 3件【sku-p-sy-fengren#sku-SYFR-BLU-XL】。"
            "山野 峰刃 GTX 冲锋衣（曜石黑，XL）：价格 1599.00元，库存 6件【sku-p-sy-fengren#sku-SYFR-BLK-XL】。"
        ), question
        assert inspector.run(answer, evidence, question=question).passed
    # a colour and a size name one row; a size's measurements asked are the size table's, not stock
    assert answerer.run("峰刃冲锋衣冰川蓝XL码有货吗", evidence).count("【") == 1
    assert "尺码表-r3-0" in answerer.run("峰刃冲锋衣XL码胸围多少", evidence)


def test_two_named_sizes_are_answered_by_their_rows_and_stock_by_the_overview(demo_kb, answerer, inspector):
    m, large, xl = "prod-sy-fengren#尺码表-r1-0", "prod-sy-fengren#尺码表-r2-0", "prod-sy-fengren#尺码表-r3-0"
    # the whole-table chunk first: a row's own chunk is what answers (and is cited) for each size
    evidence = chunks(
        demo_kb,
        "prod-sy-fengren#尺码表-table-0",
        "sku-p-sy-fengren#skus-0",
        xl,
        large,
        m,
        "sku-p-sy-fengren#sku-SYFR-BLU-M",
    )
    question = "山野峰刃冲锋衣M码和L码差多少？它现在有货吗？"
    answer = answerer.run(question, evidence)
    sentences = [s.text for s in split_sentences(answer)]
    assert sentences[0].startswith("山野 峰刃 GTX 冲锋衣 M 码：适合身高(cm) 168-174，") and f"【{m}】" in answer
    assert sentences[1].startswith("山野 峰刃 GTX 冲锋衣 L 码：") and f"【{large}】" in answer and xl not in answer
    assert "尺码表-table-0" not in answer
    assert "缺货：冰川蓝 L【sku-p-sy-fengren#skus-0】" in answer
    assert inspector.run(answer, evidence, question=question).passed
    # no stock asked: the rows alone; a named size without its row in the evidence: not this path
    assert "skus-0" not in answerer.run("山野峰刃冲锋衣M码和L码胸围差多少？", evidence)
    assert f"【{xl}】" not in answerer.run("山野峰刃冲锋衣M码和XL码胸围差多少？", chunks(demo_kb, m, large))


def test_size_advice_is_stated_with_its_rows_and_the_stock_of_that_size(demo_kb, answerer, inspector):
    advice = SizeAdvice.of(size_recommend("峰刃冲锋衣", height_cm=175, weight_kg=70, ctx=SkillContext(demo_kb)).data)
    row, blue, black = (
        "prod-sy-fengren#尺码表-r2-0",
        "sku-p-sy-fengren#sku-SYFR-BLU-L",
        "sku-p-sy-fengren#sku-SYFR-BLK-L",
    )
    evidence = chunks(demo_kb, "prod-sy-fengren#尺码表-r0-0", row, blue, black)
    question = "身高175厘米、体重70公斤，山野峰刃冲锋衣穿什么码？"
    answer = answerer.run(question, evidence, advice=advice)
    assert answer.startswith("山野 峰刃 GTX 冲锋衣建议选 L 码：身高 175cm 在 L 码的适合身高 175-180cm 内")
    assert f"【{row}】。" in answer and "库存 0件" in answer and "库存 11件" in answer
    assert "尺码表-r0-0" not in answer
    assert inspector.run(answer, evidence, question=question).passed
    # the rows it read are not in the evidence: no advice is stated
    assert "建议选" not in answerer.run(question, chunks(demo_kb, "prod-sy-fengren#尺码表-r0-0"), advice=advice)


def test_a_question_about_what_a_product_is_like_quotes_its_page_opening(demo_kb, answerer, inspector):
    opening = "prod-sy-fengren#商品简介-0"
    evidence = chunks(demo_kb, "sku-p-sy-fengren#skus-0", "sku-p-sy-fengren#sku-SYFR-BLU-L", opening)
    question = "山野峰刃冲锋衣怎么样？"
    answer = answerer.run(question, evidence, overview=[opening])
    assert answer == (
        f"山野峰刃 GTX 是一款三层压胶冲锋衣，面向高海拔徒步、雪山登山以及雨雪天气下的户外活动【{opening}】。"
    )  # the heading 商品简介： is not quoted
    assert inspector.run(answer, evidence, question=question).passed
    # without the opening in the evidence this path says nothing (the sentence scorer decides)
    assert opening not in answerer.run(question, evidence[:2], overview=[opening])


def test_a_part_the_product_tables_leave_is_answered_from_the_page(demo_kb, answerer, inspector):
    # the price part is the SKU overview's; 容量多大 is no part of it and used to go unanswered
    evidence = chunks(
        demo_kb,
        "sku-p-sy-panyue40#skus-0",
        "sku-p-sy-panyue40#sku-SYPY40-GRY",
        "prod-sy-panyue40#尺码表-table-0",
        "prod-sy-panyue40#商品简介-0",
    )
    question = "攀越40登山包多少钱，容量多大"
    answer = answerer.run(question, evidence)
    assert "699.00元" in answer and "40" in answer.split("【sku-p-sy-panyue40#skus-0】")[1], answer
    assert inspector.run(answer, evidence, question=question).passed
    # two parts about one table row: the row once, holding both values
    row = "prod-xl-t20#尺码表-r0-0"
    answer = answerer.run("T20登机箱容量多大，多重", chunks(demo_kb, row, "prod-xl-t20#商品简介-0"))
    assert answer.count(f"【{row}】") == 1 and "容量(L) 35" in answer and "空箱重量(kg) 2.9" in answer, answer


def test_a_product_s_name_in_what_the_tables_said_answers_no_part(demo_kb, answerer, inspector):
    # 降噪 of 声屿 S1 真无线降噪耳机 is the name: 开着降噪能听多久 is still to be answered, from the page
    evidence = chunks(demo_kb, "sku-p-shy-s1#skus-0", "prod-shy-s1#商品简介-0", "prod-shy-s1#功能特点-0")
    question = "声屿s1多少钱 开着降噪能听多久"
    answer = answerer.run(question, evidence)
    assert "399.00元" in answer and "5 小时（开启降噪）" in answer, answer
    assert inspector.run(answer, evidence, question=question).passed
    # the 20000mAh of XZ-3000's name states no 容量; its page does
    evidence = chunks(demo_kb, "sku-p-xz3000#skus-0", "prod-xz3000#功能特点-0")
    answer = answerer.run("XZ-3000多少钱？容量多大？", evidence)
    assert "299.00元" in answer and "74Wh" in answer, answer
    # a part asking a price is answered by the price, whatever else its words (a typo: 冲峰衣) name
    evidence = chunks(
        demo_kb, "sku-p-sy-fengren#skus-0", "sku-p-sy-fengren#sku-SYFR-BLK-S", "prod-sy-fengren#洗涤/保养-0"
    )
    answer = answerer.run("峰刃冲峰衣多少钱 可以机洗不", evidence)
    assert answer.count("1599.00元") == 1 and "可机洗" in answer, answer


def test_how_many_are_left_of_a_named_variant_is_its_stock(demo_kb, answerer, inspector):
    # 还有多少双 asks the stock (STOCK_ASKED), not the size table's 37 row
    evidence = chunks(
        demo_kb, "prod-bf-classic#尺码表-r2-0", "sku-p-bf-classic#sku-BFCL-WHT-37", "sku-p-bf-classic#skus-0"
    )
    answer = inspected_answer(answerer, inspector, "白帆米白37码还有多少双", evidence)
    assert "库存 30件" in answer and "尺码表" not in answer, answer


def test_the_price_of_something_of_the_products_is_not_the_products_price(demo_kb, answerer, inspector):
    # 补一只耳机 is priced on the page (保修: 129 元), not by the SKU table's 399.00元
    evidence = chunks(demo_kb, "sku-p-shy-s1#skus-0", "sku-p-shy-s1#sku-SHYS1-BLK", "prod-shy-s1#保修-0")
    answer = inspected_answer(answerer, inspector, "声屿耳机丢了一只补一只多少钱", evidence)
    assert "129 元【prod-shy-s1#保修-0】" in answer and "399" not in answer, answer
    # nothing on the pages prices a spare cable: refused, not answered with the power bank's price
    cable = chunks(demo_kb, "sku-p-xz3000#skus-0", "sku-p-xz3000#sku-XZ3000-SLV", "prod-xz3000#商品简介-0")
    assert answerer.run("XZ-3000充电宝的数据线丢了 单买一根多少钱", cable) == answerer.refusal()
    # the product's own price, however it is asked (卖多少钱一双, A跟B差多少钱, a mistyped name), is the table's
    for asked in ("星择XZ-3000充电宝现在卖多少钱一个", "XZ-3000充电宝多少钱", "xz3000冲电宝多少钱"):
        answer = answerer.run(asked, cable)
        assert "价格 299.00元" in answer and answer.endswith("【sku-p-xz3000#skus-0】。"), (asked, answer)
    # a size asked as 2米 (the table says 2m) and 多少钱一根 ask the variant's price
    rows = chunks(
        demo_kb, "sku-p-xz-l100#sku-XZL100-BLK-2M", "sku-p-xz-l100#sku-XZL100-BLK-1M", "prod-xz-l100#商品简介-0"
    )
    for asked in ("星择XZ-L100数据线2米的多少钱？", "星择编织线2米的多少钱一根"):
        assert "（黑色，2m）：价格 59.00元" in answerer.run(asked, rows), asked


def test_a_table_row_is_answered_as_a_sentence_not_as_the_chunk_stores_it(demo_kb, answerer, inspector):
    # a product's size table: the page's name and the table's heading, then the row's cells
    row = "prod-fc-qingyu3#尺码表-r3-0"
    answer = inspected_answer(answerer, inspector, "风驰轻羽3的42码脚长多少？", chunks(demo_kb, row))
    assert answer == f"风驰 轻羽3 缓震跑鞋的尺码表：尺码 42，脚长(cm) 26.0，脚宽(cm) 9.9【{row}】。"
    # a policy's table: its title in 《》 as its prose is framed
    level = "policy-membership#会员等级-r2-0"
    answer = inspected_answer(answerer, inspector, "金卡会员打几折？", chunks(demo_kb, level))
    assert answer.startswith("《会员等级与积分规则》的会员等级：等级 金卡会员，") and "会员折扣 95折" in answer
    assert " — " not in answer and "；" not in answer, answer
    # a line of a whole table's chunk has no prefix to say whose table it is: the page's title does
    whole = "prod-xl-d45#尺码表-table-0"
    answer = inspected_answer(answerer, inspector, "行旅D45折叠旅行袋容量多大？", chunks(demo_kb, whole))
    assert answer.startswith("行旅 D45 折叠旅行袋的尺码表：") and "容量(L) 45" in answer, answer


def test_only_a_table_s_cells_count_as_a_row():
    cells = {"尺码": "42", "脚长(cm)": "26.0"}
    assert quoted_row_cells("跑鞋 尺码表 — 尺码: 42；脚长(cm): 26.0", "p#尺码表-r3-0") == cells
    assert quoted_row_cells("尺码: 42；脚长(cm): 26.0", "p#尺码表-table-0") == cells
    # prose with a colon, in a section's text or after a dash, is not a row
    assert quoted_row_cells("注意: 不要干洗", "p#洗涤-0") is None
    assert quoted_row_cells("跑鞋 尺码表 — 偏大一码，建议选小一码", "p#尺码表-r0-0") is None
    assert row_sentence({"尺码": "42"}, "", "", policy=False) == "尺码 42"
