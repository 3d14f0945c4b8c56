"""A KB's aspects (agents/aspects.py) and the extractive answerer reading them: a question that names a
heading or field label several pages share is answered only by what is said under it."""

from __future__ import annotations

from citescope.agents.aspects import asked_aspects, field_sheet_labels, field_sheets, kb_aspects
from citescope.agents.extractive import ExtractiveAnswerer
from citescope.knowledge.schema import Chunk
from citescope.tools.base import EvidenceHit


def page(doc_id: str, title: str, section: str, text: str, doc_type: str = "product") -> Chunk:
    return Chunk(
        chunk_id=f"{doc_id}#{section}-0", doc_id=doc_id, title=title, section=section, text=text, doc_type=doc_type
    )


SHOP = [
    page("p-a", "星择 XZ-2000 充电宝", "保修", "1 年内提供免费保修。"),
    page("p-a", "星择 XZ-2000 充电宝", "功能特点", "- 充电时间：充满约需 3.5 小时\n- 容量：10000mAh"),
    page("p-a", "星择 XZ-2000 充电宝", "洗涤/保养", "请勿浸水。"),
    page("p-b", "星择 XZ-3000 充电宝", "保修", "2 年内提供免费保修。"),
    page("p-b", "星择 XZ-3000 充电宝", "功能特点", "- 充电时间：充满约需 4 小时"),
    page("p-b", "星择 XZ-3000 充电宝", "洗涤/保养", "请勿挤压。"),
    page("p-b", "星择 XZ-3000 充电宝", "包装清单", "充电宝 1 个，数据线 1 条。"),  # this page's own heading
    page("faq-1", "保修期从哪天算？", "body", "保修：自签收之日起计算。", doc_type="faq"),  # an FAQ names no aspect
]


def test_shared_headings_and_field_labels_are_the_kbs_aspects():
    aspects = kb_aspects(SHOP)
    # a heading two pages share, each part of a joined one, a list item's label
    assert {"保修", "功能特点", "洗涤", "保养", "充电时间"} <= aspects
    assert "包装清单" not in aspects  # one page's heading names no kind of fact
    assert "容量" not in aspects  # one page's label
    assert not any("星择" in a for a in aspects)


def test_a_question_names_an_aspect_by_a_word_that_is_or_holds_it_but_not_inside_a_shop_name():
    assert asked_aspects(["xz-2000", "保修", "保修期"], {"保修", "产地"}) == {"保修"}
    assert asked_aspects(["保修期"], {"保修"}) == {"保修"}
    # the tokenizer gives 拉杆 beside 拉杆箱, a kind of product the shop names: the suitcase, not its handle
    assert asked_aspects(["t24", "拉杆", "拉杆箱", "空箱"], {"拉杆"}, names={"拉杆箱"}) == set()
    assert asked_aspects(["箱子", "拉杆", "结实"], {"拉杆"}, names={"拉杆箱"}) == {"拉杆"}


def hits(chunks: list[Chunk]) -> list[EvidenceHit]:
    return [EvidenceHit.from_chunk(chunk, 0.8 - 0.01 * i) for i, chunk in enumerate(chunks)]


def test_an_aspect_the_page_lacks_is_not_answered_by_its_other_facts():
    aspects = kb_aspects(SHOP)
    without_warranty = [c for c in SHOP if c.doc_id == "p-a" and c.section != "保修"]
    answerer = ExtractiveAnswerer(aspects=aspects)
    # 保修多久 asks a duration; the page's only duration is a charging time, which answers nothing asked
    assert answerer.run("星择XZ-2000充电宝保修多久？", hits(without_warranty)) == answerer.refusal()
    # without the KB's aspects it was quoted
    unaware = ExtractiveAnswerer()
    assert "3.5 小时" in unaware.run("星择XZ-2000充电宝保修多久？", hits(without_warranty))
    # with the section there, it answers from it
    with_warranty = [c for c in SHOP if c.doc_id == "p-a"]
    assert "1 年内提供免费保修" in answerer.run("星择XZ-2000充电宝保修多久？", hits(with_warranty))
    # a question naming no aspect reads the page as before
    assert "3.5 小时" in answerer.run("星择XZ-2000充满电要多久？", hits(without_warranty))


def test_another_word_asked_beside_the_aspect_keeps_a_sentence_on_topic():
    coat = [
        page("p-c", "山野 峰刃 冲锋衣", "功能特点", "- 防水：面料防水指数 20000mm\n- 透气：透湿量 15000g/m²/24h"),
        page("p-d", "山野 暖岩 夹克", "功能特点", "- 防水：表面防泼水处理\n- 透气：透湿量 8000g/m²/24h"),
    ]
    answerer = ExtractiveAnswerer(aspects=kb_aspects(coat))
    # 防水 is an aspect the sentence does not say, but 透湿 is asked too and it says that
    answer = answerer.run("山野峰刃冲锋衣的防水透湿量是多少", hits(coat[:1]))
    assert "15000" in answer


def test_a_shop_rule_that_says_the_aspect_answers_where_the_page_is_silent():
    aspects = kb_aspects(SHOP)
    without_warranty = [c for c in SHOP if c.doc_id == "p-a" and c.section != "保修"]
    rule = page("policy-w", "商品保修说明", "保修期限", "未注明保修期限的，手机配件保修 1 年。", doc_type="policy")
    evidence = [*hits(without_warranty), EvidenceHit.from_chunk(rule, 0.05)]  # ranked far below the page
    answer = ExtractiveAnswerer(aspects=aspects).run("星择XZ-2000充电宝保修多久？", evidence)
    assert "手机配件保修 1 年【policy-w#保修期限-0】" in answer and "3.5 小时" not in answer


def product_page(doc_id: str, title: str, sections: dict[str, str]) -> str:
    body = "\n\n".join(f"## {heading}\n{text}" for heading, text in sections.items())
    return f"---\ndoc_id: {doc_id}\ntitle: {title}\ndoc_type: product\nproduct_id: {doc_id}\n---\n{body}\n"


def test_a_kbs_aspects_follow_its_ingests(tmp_path):
    """A page ingested while the pipeline serves brings its headings: the set is read again when the
    KB's version moves on, as the entity index is."""
    from citescope.agents.aspects import KBAspects
    from citescope.knowledge.ingest import Ingestor
    from tests.conftest import ingested_kb

    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "a.md").write_text(product_page("p-a", "星择 XZ-2000 充电宝", {"保修": "1 年。", "产地": "广东深圳"}))
    (pages / "b.md").write_text(product_page("p-b", "星择 XZ-3000 充电宝", {"保修": "2 年。"}))
    kb, _ = ingested_kb(tmp_path / "kb", [pages])
    try:
        aspects = KBAspects(kb, kb_aspects)
        assert "保修" in aspects() and "产地" not in aspects()  # one page's heading is no aspect yet
        first = aspects()
        assert aspects() is first  # read once while the KB is unchanged
        more = tmp_path / "more"
        more.mkdir()
        (more / "c.md").write_text(product_page("p-c", "星择 XZ-C65 充电器", {"产地": "广东东莞"}))
        Ingestor(kb, show_progress=False).run([more])
        assert "产地" in aspects()
    finally:
        kb.close()


def sheet(doc_id: str, owner: str, lines: list[str]) -> Chunk:
    return page(doc_id, f"{owner}的车辆档案", "body", "\n".join(lines), doc_type="doc")


def test_a_kb_whose_pages_are_field_sheets_reads_their_labels_and_one_of_prose_pages_none():
    sheets = [
        sheet("car-1", "张伟", ["车主：张伟", "保险到期：2026年3月4日", "排量：1.5L", "张伟的车每年保养两次。"]),
        sheet("car-2", "李娜", ["车主：李娜", "保险到期：2026年8月19日", "排量：2.0L"]),
    ]
    assert field_sheet_labels(sheets) == {"车主", "保险到期", "排量"}
    # the shop's pages are sections of prose with a few labelled lines: no sheets, no labels to read
    assert field_sheet_labels(SHOP) == frozenset()
    # a page with fewer than two thirds of its lines fields is no sheet; under half the documents sheets, none
    prose = sheet("car-3", "王强", ["车主：王强", "保险到期：2027年1月11日", "排量：1.5L"] + ["说明。"] * 2)
    assert field_sheet_labels([*sheets, prose]) == {"车主", "保险到期", "排量"}  # two of three are sheets
    notes = [page(f"n-{i}", f"笔记{i}", "body", "车主：某人\n随手记下的一句话。\n又一句话。") for i in range(3)]
    assert field_sheet_labels([*sheets, prose, *notes]) == frozenset()


def test_a_field_sheet_kbs_labels_have_the_kinds_of_their_values_and_a_shops_pages_none():
    patients = [("韩艳", "赵强", "心内科"), ("唐霞", "陈秀", "骨科"), ("吴然", "王芳", "眼科")]
    sheets = [
        sheet(f"r{i}", name, [f"主治医生：{doctor}", f"入院日期：2025年{i}月8日", f"科室：{ward}", "血型：A型"])
        for i, (name, doctor, ward) in enumerate(patients, 1)
    ]
    # people, dates; words (科室, 血型) have no kind
    assert field_sheets(sheets).kinds == {"主治医生": "person", "入院日期": "time"}
    assert field_sheets(sheets).labels == field_sheet_labels(sheets)
    assert field_sheets(SHOP) == (frozenset(), {})
