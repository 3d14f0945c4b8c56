"""detect_conflicts on hand-written Chinese evidence, on the demo KB's documents, and a small
real-data check on rgb_zh (floors and ceilings set from the measured bench, minus a margin)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from citescope.agents.conflicts import canonical_text, detect_conflicts, one_subject, parse_value
from citescope.agents.conflicts.passages import Passage
from citescope.agents.conflicts.values import VALUE
from citescope.knowledge.loaders import load_path
from citescope.tools.base import EvidenceHit, hits_from_chunks
from citescope.workflows.evaluation.bench.conflicts import evidence_for, run_conflict_bench

DEMO_DIR = Path(__file__).resolve().parents[2] / "knowledge" / "demo"


def hit(chunk_id: str, text: str, **fields) -> EvidenceHit:
    fields.setdefault("doc_id", chunk_id.split("#")[0])
    return EvidenceHit(chunk_id=chunk_id, text=text, score=fields.pop("score", 1.0), **fields)


def policy(version: int, date: str, text: str, section: str = "无理由退换") -> EvidenceHit:
    return hit(
        f"policy-returns-v{version}#{section}-0",
        f"{section}：{text}",
        title=f"退换货政策（{date[:4]}版）",
        section=section,
        doc_type="policy",
        updated_at=date,
        version=version,
    )


# ----------------------------------------------------------------------------- conflicts found
def test_two_policy_versions_give_one_conflict_newest_first():
    evidence = [
        policy(1, "2024-05-01", "自签收之日起 7天无理由退换。申请无理由退换的商品需保持原包装。"),
        policy(2, "2026-06-01", "自签收次日起 15天无理由退换。申请无理由退换的商品需保持原包装。"),
    ]
    conflicts = detect_conflicts("现在买的东西几天之内可以无理由退换？", evidence)
    assert len(conflicts) == 1
    values = conflicts[0].values
    assert [v.value for v in values] == ["15天", "7天"]
    assert [v.chunk_id for v in values] == ["policy-returns-v2#无理由退换-0", "policy-returns-v1#无理由退换-0"]
    assert values[0].updated_at == "2026-06-01" and "15天无理由退换" in values[0].sentence


def test_a_question_about_a_given_time_puts_the_value_nearest_it_first():
    evidence = [
        policy(2, "2026-06-01", "自签收次日起 15天无理由退换。申请无理由退换的商品需保持原包装。"),
        policy(1, "2024-05-01", "自签收之日起 7天无理由退换。申请无理由退换的商品需保持原包装。"),
    ]
    asked = detect_conflicts("买的东西几天之内可以无理由退换？", evidence, as_of="2024")
    assert [v.value for v in asked[0].values] == ["7天", "15天"] and asked[0].as_of == "2024"
    later = detect_conflicts("买的东西几天之内可以无理由退换？", evidence, as_of="2027-01")
    assert [v.value for v in later[0].values] == ["15天", "7天"]
    assert detect_conflicts("买的东西几天之内可以无理由退换？", evidence)[0].as_of is None


def test_versions_that_reword_a_rule_report_the_clauses_that_differ():
    evidence = [
        policy(1, "2024-05-01", "- 无理由退换产生的退货运费由买家承担；换货时，店铺承担寄出新商品的运费。", "运费说明"),
        policy(
            2,
            "2026-06-01",
            "- 每笔订单均赠送退货运费险，无理由退货的运费由运费险赔付，超出部分由买家承担。",
            "运费说明",
        ),
    ]
    conflicts = detect_conflicts("无理由退货的运费是谁承担？", evidence)
    assert len(conflicts) == 1
    first, second = conflicts[0].values
    assert "运费险" in first.value and first.updated_at == "2026-06-01"
    assert "买家承担" in second.value and second.updated_at == "2024-05-01"


def test_review_contradicting_the_product_page_on_material_lists_official_first():
    evidence = [
        hit(
            "rev-1#body-0",
            "收到后仔细看了鞋面，摸起来很硬，我觉得就是人造革，根本不像宣传的真皮。",
            product_id="p-aj1",
            authority="community",
            doc_type="review",
            updated_at="2026-04-03",
        ),
        hit(
            "prod-aj1#材质-0",
            "材质：\n- 鞋面：头层牛皮（全粒面）\n- 内里：透气网布与合成材料",
            product_id="p-aj1",
            authority="official",
            doc_type="product",
            updated_at="2026-04-03",
        ),
    ]
    conflicts = detect_conflicts("AJ1芝加哥的鞋面是真皮的吗？", evidence)
    assert len(conflicts) == 1
    assert conflicts[0].entity == "p-aj1"
    assert [(v.value, v.authority) for v in conflicts[0].values] == [("头层牛皮", "official"), ("人造革", "community")]


def test_review_saying_it_leaks_contradicts_a_waterproof_product_page():
    evidence = [
        hit(
            "prod-fr#功能特点-0",
            "功能特点：- 防水：面料防水指数 20000mm，可应对暴雨和持续降雪。",
            product_id="p-fr",
            doc_type="product",
            updated_at="2026-01-10",
        ),
        hit(
            "rev-18#body-0",
            "宣传说防水，结果上周爬山遇到中雨，走了不到一个小时就湿透了，一下雨就渗水。",
            product_id="p-fr",
            authority="community",
            doc_type="review",
            updated_at="2026-04-18",
        ),
    ]
    conflicts = detect_conflicts("山野峰刃冲锋衣下雨天会渗水吗？", evidence)
    assert [c.attribute for c in conflicts] == ["防水"]
    assert {v.chunk_id for v in conflicts[0].values} == {"prod-fr#功能特点-0", "rev-18#body-0"}


def test_a_counterfeit_copy_of_a_news_passage_conflicts_on_the_changed_number_and_name():
    true_text = "第六届立法会共有70个议席，经2016年9月4日的选举产生。"
    fake_text = "第六届立法会共有170个议席，经2016年9月4日的选举产生。"
    conflicts = detect_conflicts(
        "香港第六届立法会选举有多少个议席？", [hit("news-1#body-0", true_text), hit("news-2#body-0", fake_text)]
    )
    assert len(conflicts) == 1 and {v.value for v in conflicts[0].values} == {"70个", "170个"}

    conflicts = detect_conflicts(
        "2019年军运会在哪个城市举办？",
        [
            hit("news-3#body-0", "2019年军运会在中国武汉举办，这是中国首次承办世界军人运动会。"),
            hit("news-4#body-0", "2019年军运会在中国成都举办，这是中国首次承办世界军人运动会。"),
        ],
    )
    assert len(conflicts) == 1 and {v.value for v in conflicts[0].values} == {"武汉", "成都"}


def english(doc_id: str, title: str, text: str, **fields) -> EvidenceHit:
    return hit(f"{doc_id}#body-0", text, title=title, **fields)


@pytest.mark.parametrize(
    ("question", "left", "right", "values"),
    [
        (
            "How many days does standard delivery take?",
            "Standard delivery takes 7 days after payment.",
            "Standard delivery takes 15 days after payment.",
            ["7 days", "15 days"],
        ),
        (
            "Which courier ships my order?",
            "Orders ship with DHL from our Shenzhen warehouse.",
            "Orders ship with UPS from our Shenzhen warehouse.",
            ["DHL", "UPS"],
        ),
        (
            "When does the summer sale start?",
            "The summer sale starts on Jun 1, 2026 and ends on Jun 20, 2026.",
            "The summer sale starts on Jun 5, 2026 and ends on Jun 20, 2026.",
            ["Jun 1, 2026", "Jun 5, 2026"],
        ),
        (
            "How long is the warranty?",
            "All chargers come with a 12 months warranty. Keep the receipt.",
            "All chargers come with a 2 years warranty. Keep the receipt.",
            ["12 months", "2 years"],
        ),
        (
            "What is the capacity of the bottle?",
            "The bottle holds 500 ml. It weighs 200 g.",
            "The bottle holds 750 ml. It weighs 200 g.",
            ["500 ml", "750 ml"],
        ),
    ],
)
def test_english_statements_that_differ_in_one_value_conflict(question, left, right, values):
    conflicts = detect_conflicts(question, [english("a", "Shop notes", left), english("b", "Shop news", right)])
    assert [[v.value for v in c.values] for c in conflicts] == [values]
    assert all(not re.search(r"[\u4e00-\u9fff]", c.attribute + c.entity) for c in conflicts)  # labelled in English


@pytest.mark.parametrize(
    ("question", "left", "right"),
    [
        # another kind of delivery; the same duration in other units
        ("How many days does delivery take?", "Standard delivery takes 7 days.", "Express delivery takes 2 days."),
        (
            "How long is the warranty?",
            "All chargers come with a 12 months warranty.",
            "All chargers come with a 1 year warranty.",
        ),
    ],
)
def test_english_statements_that_do_not_contradict_each_other(question, left, right):
    assert detect_conflicts(question, [english("a", "Shop notes", left), english("b", "Shop news", right)]) == []


def test_english_sentences_end_at_a_full_stop_and_keep_their_spaces():
    passage = Passage.of(
        english("a", "Notes", "Founded in the U.S. on Jan. 6, 2022 at 3.5 yuan. Now 4 yuan, e.g. online."), None
    )
    assert [passage.text[s:e].strip() for s, e in passage.sentences] == [
        "founded in the u.s. on jan. 6, 2022 at 3.5 yuan",
        "now 4 yuan, e.g. online",
    ]
    assert canonical_text("Keep the receipt. Jun 1, 2026") == "Keep the receipt. Jun 1, 2026"
    # an ASCII unit is a whole word: the g of "5 g" and 5g网络, not of "5 great"
    assert [VALUE.match(t).group("unit") for t in ("5 g", "5g网络", "5 great", "10 days later")] == [
        "g",
        "g",
        None,
        "days",
    ]
    assert canonical_text("自签收之日起 7 天") == "自签收之日起7天"


def test_a_semicolon_inside_brackets_ends_no_sentence_and_only_a_snippet_cut_is_kept_as_one():
    passage = Passage.of(
        hit(
            "f-88#body-0",
            "维多利亚女王（英语：Queen Victoria；1819年5月24日—1901年1月22日），全名亚历山德 ..."
            "。第二句；第三句（未闭合；第四句",
        ),
        None,
    )
    assert [passage.show(span) for span in passage.sentences] == [
        "维多利亚女王（英语：Queen Victoria；1819年5月24日—1901年1月22日），全名亚历山德",
        "第二句",
        "第三句（未闭合",
        "第四句",
    ]
    assert passage.sentence_text(3).endswith("全名亚历山德 ...")
    # a writer's own "..." ends a sentence and is not taken for a cut, whatever else the page holds
    passage = Passage.of(hit("r-1#body-0", "质量还行吧...物流很快。搜索摘要 ..."), None)
    assert passage.sentence_text(0) == "质量还行吧"
    assert passage.sentence_text(passage.text.index("物流")) == "物流很快"
    assert passage.sentence_text(passage.text.index("搜索")) == "搜索摘要 ..."


# ----------------------------------------------------------------------------- no conflict
def test_different_products_with_different_prices_are_not_a_conflict():
    evidence = [
        hit("sku-xz2000#sku-1", "商品: 星择XZ-2000 充电宝；价格: 149.00元；库存: 12件", product_id="p-xz2000"),
        hit("sku-xz3000#sku-1", "商品: 星择XZ-3000 充电宝；价格: 299.00元；库存: 12件", product_id="p-xz3000"),
    ]
    assert detect_conflicts("XZ-2000和XZ-3000两款充电宝各卖多少钱？", evidence) == []
    # Without product ids the differing model code still says they are two things.
    for item in evidence:
        item.product_id = None
    assert detect_conflicts("XZ-2000和XZ-3000两款充电宝各卖多少钱？", evidence) == []


def test_yearly_editions_state_their_own_years_figures():
    text = "艺术团招生计划{}人，面向全国招收具有艺术特长的高中毕业生。"
    question = "高水平艺术团招生计划多少人？"
    editions = [
        hit("drag-a#0", text.format(20), title="中国人民大学2017年高水平艺术团招生简章"),
        hit("drag-b#0", text.format(18), title="中国人民大学2015年高水平艺术团招生简章"),
    ]
    assert detect_conflicts(question, editions) == []
    # The same two passages under one title, or under no title, are one subject that disagrees.
    for item in editions:
        item.title = "中国人民大学2017年高水平艺术团招生简章"
    assert len(detect_conflicts(question, editions)) == 1
    for item in editions:
        item.title = ""
    assert len(detect_conflicts(question, editions)) == 1


def test_pages_of_one_series_about_other_names_state_their_own_figures():
    text = "金融学类专业最低录取分数{}分。"
    question = "2021年金融学类的最低录取分数是多少？"
    pages = [
        hit("drag-gs#0", text.format(633), title="2021年甘肃省录取分数线"),
        hit("drag-ah#0", text.format(648), title="2021年安徽省录取分数线"),
    ]
    assert detect_conflicts(question, pages) == []
    # the same series and place on two pages that disagree is a conflict
    pages[1].title = "2021年甘肃省录取分数线（转载）"
    assert len(detect_conflicts(question, pages)) == 1


def test_size_table_rows_are_different_facts():
    rows = ["尺码: 39；脚长(cm): 24.5", "尺码: 40；脚长(cm): 25.0", "尺码: 41；脚长(cm): 25.5"]
    same_doc = [
        hit(f"prod-shoe#尺码表-r{i}-0", f"跑鞋 尺码表 — {row}", product_id="p-shoe") for i, row in enumerate(rows)
    ]
    assert detect_conflicts("这双跑鞋的脚长多少厘米？", same_doc) == []
    two_docs = [
        hit("prod-shoe#尺码表-r0-0", f"跑鞋 尺码表 — {rows[0]}", product_id="p-shoe"),
        hit("guide-shoe#尺码表-r1-0", f"跑鞋 尺码表 — {rows[1]}", product_id="p-shoe"),
    ]
    assert detect_conflicts("这双跑鞋的脚长多少厘米？", two_docs) == []


def test_a_sku_overview_and_a_size_table_row_naming_one_model_are_different_facts(demo_kb):
    # the SKU overview's "缺货: 磨砂黑 iPhone 15 Pro Max" against the size table's "型号: iPhone 15 Pro Max"
    # differ in their labels (缺货: / 型号:), not in a value
    evidence = hits_from_chunks(
        demo_kb,
        [
            (i, 1.0)
            for i in (
                "prod-gk-case15#尺码表-r3-0",
                "sku-p-gk-case15#skus-0",
                "prod-gk-case15#尺码表-table-0",
                "sku-p-gk-case15#sku-GKC15-BLK-15PM",
            )
        ],
        "rerank",
    )
    assert detect_conflicts("果壳手机壳iPhone15 Pro Max黑色还有吗", evidence) == []


def test_a_price_and_its_discounted_price_in_one_chunk_are_not_a_conflict():
    evidence = [
        hit("prod-tote#价格-0", "价格：原价 199 元，活动价 149 元。", product_id="p-tote"),
        hit("faq-9#body-0", "托特包活动价 149 元，原价 199 元。", product_id="p-tote"),
    ]
    assert detect_conflicts("托特包多少钱？", evidence) == []


def test_the_same_value_written_differently_is_not_a_conflict():
    evidence = [
        hit("faq-1#body-0", "自签收次日起 15天内可以无理由退货。"),
        hit("faq-2#body-0", "自签收次日起十五天内可以无理由退货。"),
        hit("faq-3#body-0", "自签收次日起15 天内可以无理由退货。"),
    ]
    assert detect_conflicts("几天内可以无理由退货？", evidence) == []


def test_a_difference_the_question_does_not_ask_about_is_ignored():
    evidence = [
        hit("faq-a#body-0", "无理由退货：签收后7天内可申请。\n退款时效：退款在1-3个工作日内原路退回。"),
        hit("faq-b#body-0", "无理由退货：签收后15天内可申请。\n退款时效：退款在1-3个工作日内原路退回。"),
    ]
    assert detect_conflicts("退款多久能到账？", evidence) == []
    conflicts = detect_conflicts("签收后多少天内可以申请无理由退货？", evidence)
    assert len(conflicts) == 1 and {v.value for v in conflicts[0].values} == {"7天", "15天"}


def test_two_replies_numbering_one_list_item_differently_are_not_a_conflict():
    # baoxianzhidao's replies about one service: ② / 2、 numbers the same advantage
    evidence = [
        hit(
            "bx-35#body-0",
            "您好，小额快赔服务是针对3000元金额以内小额理赔的绿色快速通道。优势主要体现在以下三个方面："
            "①比非闪赔产品更少的材料；②绿色通道闪电般审核速度；③全程线上操作更便捷。",
        ),
        hit(
            "bx-149#body-0",
            "您好，小额快赔服务是针对3000元金额以内小额理赔的绿色快速通道。小额快赔优势：1、比非闪赔产品"
            "更少的材料；2、绿色通道闪电般审核速度；3、全程线上操作更便捷",
        ),
    ]
    assert detect_conflicts("huts的小额快赔服务是什么意思？", evidence) == []


def test_one_name_in_two_scripts_is_not_a_conflict():
    evidence = [
        hit("n-1#body-0", "张译王俊凯《重生之门》开机，据北青网报道，导演为杨冬。"),
        hit("n-2#body-0", "张译王俊凯《重生之门》开机，据北青網报道，导演为杨冬。"),
    ]
    assert detect_conflicts("《重生之门》的导演是谁？", evidence) == []


def test_two_photo_captions_of_one_template_are_two_pictures_not_a_conflict():
    caption = "新华社照片，2022年8月19日，张帅在比赛中{}。记者李明摄"
    evidence = [hit("n-1#body-0", caption.format("回球")), hit("n-2#body-0", caption.format("发球"))]
    assert detect_conflicts("张帅在2022年辛辛那提赛中做了什么？", evidence) == []
    # the same statement outside a caption is a changed name in an otherwise identical sentence
    statement = "据报道，2022年8月19日，{}在辛辛那提赛中晋级八强。"
    evidence = [hit("n-1#body-0", statement.format("张帅")), hit("n-2#body-0", statement.format("王蔷"))]
    assert len(detect_conflicts("2022年辛辛那提赛谁晋级八强？", evidence)) == 1


def test_a_changed_number_beside_another_reworded_number_is_two_facts():
    question = "2021年高技术制造业的占比比2012年上升了多少？"
    export = "2021年，高技术制造业占出口交货值的比重为51.5%，比2012年上升{}个百分点。"
    profit = "2021年，高技术制造业实现利润占比为20.8%，比2012年上升10.7个百分点。"
    assert detect_conflicts(question, [hit("a#body-0", export.format("8.7")), hit("b#body-0", profit)]) == []
    conflicts = detect_conflicts(
        question, [hit("a#body-0", export.format("8.7")), hit("b#body-0", export.format("10.7"))]
    )
    assert [{v.value for v in c.values} for c in conflicts] == [{"8.7个百分点", "10.7个百分点"}]


def test_one_subject_is_one_product_or_one_title_without_its_version_mark():
    assert one_subject([policy(1, "2024-05-01", "7天"), policy(2, "2026-06-01", "15天")])
    assert one_subject([hit("n-1#body-0", "a"), hit("n-2#body-0", "b")])  # untitled news passages
    assert one_subject(
        [hit("p#0", "a", title="AJ1", product_id="aj1"), hit("r#0", "b", title="评价", product_id="aj1")]
    )
    assert not one_subject([hit("w-1#body-0", "a", title="斯温登"), hit("w-2#body-0", "b", title="诺丁汉")])
    assert not one_subject(
        [hit("d-1#body-0", "a", title="2021年甘肃省录取分数线"), hit("d-2#body-0", "b", title="2020年甘肃省录取分数线")]
    )
    assert not one_subject(
        [hit("p#0", "a", title="XZ", product_id="xz-2000"), hit("q#0", "b", title="XZ", product_id="xz-3000")]
    )


# ----------------------------------------------------------------------------- canonical values
@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("15天", "十五天"),
        ("15 天", "15天"),
        ("1年", "12个月"),
        ("149.00元", "149元"),
        ("1周", "7天"),
        ("12月20日", "2021年12月20日"),
        ("90个", "90名"),
        ("1051.41亿元", "1051.42亿元"),
        ("1.5个百分点", "1.5百分点"),
        ("7 days", "1 week"),
        ("12 months", "1 year"),
        ("2 weeks", "14天"),
        ("$39.99", "39.99 USD"),
        ("48 hours", "2 days"),
    ],
)
def test_values_written_differently_are_the_same(left, right):
    assert parse_value(canonical_text(left)).same_as(parse_value(canonical_text(right)))


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("7天", "15天"),
        ("15天", "15个月"),
        ("2021年12月20日", "2021年12月19日"),
        ("70个", "170个"),
        ("3-5个工作日", "1-3个工作日"),
        ("1.11个千分点", "1.11个"),
        ("0.34‰", "0.34%"),
        ("$39", "¥39"),
        ("7 days", "7 months"),
        ("5 business days", "5 days"),
    ],
)
def test_different_values_differ(left, right):
    assert not parse_value(canonical_text(left)).same_as(parse_value(canonical_text(right)))


# ----------------------------------------------------------------------------- real data
def test_demo_returns_policies_disagree_on_the_return_window():
    documents, _, lexicon = load_path(DEMO_DIR)
    by_id = {doc.doc_id: doc for doc in documents}
    question = "现在买的东西几天之内可以无理由退换？"
    evidence = evidence_for(question, [by_id["policy-returns-2024"], by_id["policy-returns-2026"]], lexicon)
    conflicts = detect_conflicts(question, evidence, lexicon)
    assert len(conflicts) == 1
    assert [(v.value, v.chunk_id.split("#")[0]) for v in conflicts[0].values] == [
        ("15天", "policy-returns-2026"),
        ("7天", "policy-returns-2024"),
    ]


def test_rgb_zh_sample_flags_conflicts_and_little_else(datasets_dir):
    # First 10 questions of each type: measured 9/10 conflicting flagged and 0/40 other questions.
    report = run_conflict_bench(datasets_dir, demo_dir=None, limit=10, datasets=("rgb_zh",))["rgb_zh"]["by_qtype"]
    assert report["conflicting_evidence"]["rate"] >= 0.7
    others = [stats for qtype, stats in report.items() if not stats["expect_conflict"]]
    assert sum(s["n"] for s in others) >= 30
    assert sum(s["flagged"] for s in others) / sum(s["n"] for s in others) <= 0.1
    assert report["conflicting_evidence"]["fake_in_conflict"] == report["conflicting_evidence"]["flagged"]


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("十五天无理由退换", "15天无理由退换"),
        ("一百二十天", "120天"),
        ("在队两年多", "在队2年多"),
        # a numeral inside a longer one, or a bare 百/千 that is part of a name, stays as written
        ("《社会保险法》第五十八条", "《社会保险法》第五十八条"),
        ("向百年人寿提供资料", "向百年人寿提供资料"),
    ],
)
def test_chinese_numerals_become_arabic_only_where_they_count_something(text, canonical):
    assert canonical_text(text) == canonical


def test_pages_about_a_sibling_of_the_named_thing_give_no_conflict():
    """The question names one page's title; a page titled otherwise that never mentions it states
    another thing's value (another species' depth), which is no disagreement about the asked one."""
    page = "{name}，俗名为厚壳仔，为雀鲷科的其中一种。本鱼分布于印度西太平洋区等海域。水深{depth}公尺。"
    asked = hit("cmrc-147#body-0", page.format(name="班卡雀鲷", depth="1至12"), title="班卡雀鲷")
    sibling = hit("cmrc-169#body-0", page.format(name="胸斑眶锯雀鲷", depth="0.5至10"), title="蓝纹高身雀鲷")
    question = "班卡雀鲷生活在水深多少的海域？"
    assert detect_conflicts(question, [asked, sibling]) == []
    # a page that mentions the named thing still counts, and so do untitled passages
    mentions = hit("cmrc-170#body-0", page.format(name="班卡雀鲷", depth="0.5至10"), title="雀鲷属")
    assert detect_conflicts(question, [asked, mentions])
    untitled = [
        hit("s-1#body-0", page.format(name="本种", depth="1至12")),
        hit("s-2#body-0", page.format(name="本种", depth="0.5至10")),
    ]
    assert detect_conflicts(question, untitled)
    # an FAQ entry's title is a customer's question, not the name of a thing
    faq = hit("faq-017#body-0", "仓库验货通过后 1-3 个工作日原路退回。", title="退款多久能到账？", doc_type="faq")
    policies = [
        hit("policy-2026#退款-0", "退款：验货通过后 1-3 个工作日原路退回。", title="退换货政策（2026版）"),
        hit("policy-2024#退款-0", "退款：验货通过后 3-5 个工作日原路退回。", title="退换货政策（2024版）"),
    ]
    assert detect_conflicts("退货后退款多久能到账？", [faq, *policies])


def test_a_question_asking_how_many_days_takes_working_days_as_its_answer(demo_kb):
    # 退款几天到账: the policies answer in 工作日 (1-3 / 3-5 个工作日), and they disagree
    evidence = hits_from_chunks(
        demo_kb, [(i, 1.0) for i in ("policy-returns-2026#退款时效-0", "policy-returns-2024#退款时效-0")], "rerank"
    )
    conflicts = detect_conflicts("退款要几天到账 急用钱", evidence, demo_kb.lexicon)
    assert [[v.value for v in c.values] for c in conflicts] == [["1-3个工作日", "3-5个工作日"]]


def test_a_changed_clock_time_is_a_value_not_a_label():
    # a counterfeit copy of an admissions page: its time is written 2021年12月19日11:00, the page's
    # own segmented text reads 2021 年 12 月 20 日 11 : 00; the colon between digits is no label
    page = hit(
        "drag-1#body-0",
        "（一） 网上 报名 ： 即日起 至 2021 年 12 月 20 日 11 : 00 。",
        title="2022年外语类保送生招生简章",
        updated_at="2021-12-17",
    )
    fake = hit(
        "dragcf-1#body-0",
        "（一） 网上 报名 ： 即日起 至 2021年12月19日11:00 。",
        title="2022年外语类保送生招生简章",
        updated_at="2021-12-17",
    )
    conflicts = detect_conflicts("2022年外语类保送生报名截止时间是什么时候？", [page, fake])
    assert len(conflicts) == 1, conflicts
