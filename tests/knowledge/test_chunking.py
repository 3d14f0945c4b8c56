"""split_recursive sizes, boundaries and overlap; chunk_document ids, rows and metadata."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from citescope.knowledge.chunking import SKU_OVERVIEW_SECTION, chunk_document, render_sku_overview, split_recursive
from citescope.knowledge.loaders import load_path
from citescope.knowledge.schema import Document, Section, SkuRow

SIZE, OVERLAP = 320, 48
TOLERANCE = 0  # chunks are never longer than chunk_size; kept explicit for readers

SENTENCES = [
    "本店所有商品支持七天无理由退货，退货时请保持商品完好、吊牌齐全。",
    "质量问题产生的退货运费由本店承担，非质量问题由买家承担。",
    "定制商品、贴身衣物以及已拆封的食品不支持无理由退货。",
    "退款将在收到退货后的三个工作日内原路退回，信用卡退款可能需要更长时间。",
    "如需换货，请在订单页面申请，并注明需要更换的尺码或颜色。",
    "节假日期间物流可能延迟，请耐心等待，我们会尽快处理您的申请。",
]


def _sentence(number: int) -> str:
    # Numbered, so no two sentences are equal and a chunk's place in the text is unambiguous.
    return f"第{number}条：{SENTENCES[number % len(SENTENCES)]}"


def _sentences(count: int) -> str:
    return "".join(_sentence(number) for number in range(count))


def _long_text(paragraphs: int = 6) -> str:
    # Paragraphs of 3 sentences (~100 chars): several fit in one chunk, all of them do not.
    return "\n\n".join("".join(_sentence(p * 3 + i) for i in range(3)) for p in range(paragraphs))


def _overlap_length(previous: str, following: str) -> int:
    for length in range(min(len(previous), len(following)), 0, -1):
        if previous[-length:] == following[:length]:
            return length
    return 0


# ----------------------------------------------------------------------------- split_recursive


def test_short_text_is_one_stripped_chunk_and_blank_text_none() -> None:
    assert split_recursive("  退货政策：七天无理由。\n", SIZE, OVERLAP) == ["退货政策：七天无理由。"]
    assert split_recursive("x" * SIZE, SIZE, OVERLAP) == ["x" * SIZE]
    assert split_recursive(" \n\n ", SIZE, OVERLAP) == []


@pytest.mark.parametrize(
    "text",
    [
        _long_text(),
        _sentences(30),  # no newlines at all
        "，".join(f"分句内容第{i}段比较长" for i in range(120)),  # clauses only
        "".join(f"无标点长文本{i}" for i in range(200)),  # hard cuts only
        " ".join(f"word{i}" for i in range(400)),  # space-separated
        "".join(f"短{i}。\n" for i in range(300)),
    ],
)
def test_chunks_fit_overlap_cover_the_text_and_are_never_empty(text: str) -> None:
    chunks = split_recursive(text, SIZE, OVERLAP)
    assert len(chunks) > 1
    assert all(chunk and chunk == chunk.strip() for chunk in chunks)
    assert max(len(chunk) for chunk in chunks) <= SIZE + TOLERANCE
    # Every chunk is a piece of the text, in order, and together they cover all of it.
    cursor = 0
    for chunk in chunks:
        found = text.find(chunk, max(0, cursor - SIZE))
        assert found != -1 and found <= cursor + 2, "gap or reordering between chunks"
        cursor = found + len(chunk)
    assert cursor == len(text.rstrip())
    # Consecutive chunks share about `overlap` characters: 10-20% of the chunk size.
    for previous, following in zip(chunks, chunks[1:], strict=False):
        assert 0.10 * SIZE <= _overlap_length(previous, following) <= 0.20 * SIZE


def test_overlap_is_made_of_whole_sentences_when_possible() -> None:
    chunks = split_recursive(_sentences(24), SIZE, OVERLAP)
    for previous, following in zip(chunks, chunks[1:], strict=False):
        shared = following[: _overlap_length(previous, following)]
        start = len(previous) - len(shared)
        assert previous[start - 1] in "。，", f"overlap starts mid-clause: {shared!r}"


def test_paragraph_breaks_win_over_sentence_breaks() -> None:
    first = "".join(SENTENCES[:4])  # ~120 chars: a chunk could take 200 more from the next paragraph
    second = _sentences(12)
    chunks = split_recursive(first + "\n\n" + second, SIZE, OVERLAP)
    assert chunks[0] == first


def test_sentence_breaks_win_over_clause_breaks_and_separators_stay_attached() -> None:
    chunks = split_recursive(_sentences(24), SIZE, OVERLAP)
    assert all(chunk.endswith("。") for chunk in chunks)


def test_decimal_points_and_thousands_separators_are_not_boundaries() -> None:
    text = ("价格1,299.00元，脚长26.5cm，see example.com for more，" * 40) + "结束."
    chunks = split_recursive(text, 100, 15)
    for chunk in chunks[:-1]:
        assert re.search(r"[，.]$", chunk), chunk
        assert not chunk.endswith(("1,", "26.", "1,299."))


def test_english_sentences_end_at_dot_space() -> None:
    text = " ".join(f"Sentence number {i} explains the return policy in some detail." for i in range(40))
    chunks = split_recursive(text, 200, 30)
    assert all(chunk.endswith(".") for chunk in chunks)
    assert max(len(chunk) for chunk in chunks) <= 200


def test_invalid_sizes_are_rejected() -> None:
    with pytest.raises(ValueError):
        split_recursive("text", 0, 0)
    with pytest.raises(ValueError):
        split_recursive("text", 100, 50)


# ----------------------------------------------------------------------------- chunk_document


SAFE_ID = re.compile(r"^[^\s【】\[\]]{1,200}$")


def _doc(**fields) -> Document:
    base = dict(
        doc_id="d1",
        title="标题",
        source="测试",
        doc_type="policy",
        brand="Nike",
        category="鞋",
        product_id="P1",
        updated_at="2026-03-05",
        version=3,
        authority="official",
        tags=["a", "b"],
    )
    return Document(**{**base, **fields})


def test_sku_document_gives_one_chunk_per_row_and_an_overview() -> None:
    rows = [
        SkuRow(product_id="P100", sku="AJ1-RED-42", name="Air Jordan 1", colour="红", size="42", price=899, stock=12),
        SkuRow(product_id="P100", sku="AJ1-RED-43", name="Air Jordan 1", colour="红", size="43", price=899.5, stock=0),
    ]
    doc = Document(doc_id="sku-P100", title="Air Jordan 1", doc_type="product", skus=rows, source="商品SKU表")
    chunks = chunk_document(doc)
    assert [c.chunk_id for c in chunks] == ["sku-P100#sku-AJ1-RED-42", "sku-P100#sku-AJ1-RED-43", "sku-P100#skus-0"]
    assert chunks[0].text == "商品: Air Jordan 1；SKU: AJ1-RED-42；颜色: 红；尺码: 42；价格: 899.00元；库存: 12件"
    assert "价格: 899.50元；库存: 0件" in chunks[1].text
    # the price differs by size alone, so the overview gives each size its price
    assert chunks[2].text == (
        "商品: Air Jordan 1；规格数: 2；颜色: 红；尺码: 42、43；价格: 42 899.00元、43 899.50元；"
        "有货: 红 42；缺货: 红 43"
    )
    assert [(c.section, c.position, c.doc_type) for c in chunks] == [
        ("SKU", 0, "product"),
        ("SKU", 1, "product"),
        (SKU_OVERVIEW_SECTION, 0, "product"),
    ]


def test_a_single_sku_has_no_overview() -> None:
    row = SkuRow(product_id="P1", sku="S1", name="胸包", colour="黑", size="均码", price=159, stock=3)
    chunks = chunk_document(Document(doc_id="sku-P1", title="胸包", doc_type="product", skus=[row]))
    assert [c.section for c in chunks] == ["SKU"]


def test_sku_overview_lists_colours_sizes_prices_and_stock() -> None:
    def row(sku, colour, size, price, stock):
        return SkuRow(product_id="P", sku=sku, name="数据线", colour=colour, size=size, price=price, stock=stock)

    # sizes in size order whatever the table order; one-size products list colours alone
    cable = [row("B2", "黑色", "2m", 59, 4), row("B1", "黑色", "1m", 49, 0), row("W1", "白色", "1m", 49, 7)]
    assert render_sku_overview(cable) == (
        "商品: 数据线；规格数: 3；颜色: 黑色、白色；尺码: 1m、2m；"
        "价格: 2m 59.00元、1m 49.00元；有货: 黑色 2m，白色 1m；缺货: 黑色 1m"
    )
    bag = [row("A", "原色", "均码", 129, 5), row("B", "墨绿", "均码", 129, 0)]
    assert render_sku_overview(bag) == (
        "商品: 数据线；规格数: 2；颜色: 原色、墨绿；尺码: 均码；价格: 129.00元；有货: 原色；缺货: 墨绿"
    )
    # price set by neither colour nor size alone: each variant's
    mixed = [row("A", "红", "S", 10, 1), row("B", "红", "M", 12, 1), row("C", "蓝", "S", 12, 1)]
    assert "价格: 红 S 10.00元、红 M 12.00元、蓝 S 12.00元" in render_sku_overview(mixed)
    # a long table keeps counts and what is out of stock
    big = [row(f"K{i}", f"色{i % 7}", str(30 + i), 99, 0 if i == 3 else 1) for i in range(40)]
    text = render_sku_overview(big)
    assert "有货规格数: 39" in text and text.endswith("缺货: 色3 33") and "有货:" not in text
    # so many out of stock that even their list is too long: counts alone
    sold_out = [row(f"K{i}", f"色{i % 7}", str(30 + i), 99, 0 if i % 2 else 1) for i in range(60)]
    assert render_sku_overview(sold_out).endswith("有货规格数: 30；缺货规格数: 30")


def test_plain_document_chunks_copy_metadata_and_have_body_ids() -> None:
    doc = _doc(text=_long_text())
    chunks = chunk_document(doc, SIZE, OVERLAP)
    assert [c.chunk_id for c in chunks] == [f"d1#body-{i}" for i in range(len(chunks))]
    assert [c.position for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert chunk.model_dump(
            include={
                "doc_id",
                "title",
                "source",
                "doc_type",
                "product_id",
                "brand",
                "category",
                "updated_at",
                "version",
                "authority",
                "tags",
            }
        ) == doc.model_dump(
            include={
                "doc_id",
                "title",
                "source",
                "doc_type",
                "product_id",
                "brand",
                "category",
                "updated_at",
                "version",
                "authority",
                "tags",
            }
        )
        assert chunk.section == ""


def test_faq_chunk_does_not_repeat_the_title() -> None:
    faq = Document(doc_id="faq-7", title="退货运费谁承担？", text="质量问题由本店承担运费。", doc_type="faq")
    (chunk,) = chunk_document(faq)
    assert chunk.text == "质量问题由本店承担运费。" and chunk.title == "退货运费谁承担？"
    # A text file whose first line is its title does not repeat it either.
    notice = Document(doc_id="n", title="发货通知", text="发货通知\n\n下单后48小时内发货。")
    assert [c.text for c in chunk_document(notice)] == ["下单后48小时内发货。"]


def test_sections_tables_and_rows(tmp_path: Path) -> None:
    (tmp_path / "aj1.md").write_text(
        "# Air Jordan 1\n\n经典高帮。\n\n## 尺码表\n\n鞋型偏大。\n\n"
        "| 尺码 | 脚长(cm) |\n|---|---|\n| 42 | 26.5 |\n| 43 | 27 |\n\n## 保养\n\n" + _long_text(),
        encoding="utf-8",
    )
    (doc,), issues, _ = load_path(tmp_path)
    assert not issues
    chunks = chunk_document(doc, SIZE, OVERLAP)
    by_id = {c.chunk_id: c for c in chunks}

    assert by_id["aj1#body-0"].text == "经典高帮。"
    assert by_id["aj1#尺码表-0"].text == "尺码表：鞋型偏大。"
    assert by_id["aj1#尺码表-r0-0"].text == "Air Jordan 1 尺码表 — 尺码: 42；脚长(cm): 26.5"
    assert by_id["aj1#尺码表-r1-0"].text == "Air Jordan 1 尺码表 — 尺码: 43；脚长(cm): 27"
    assert by_id["aj1#尺码表-table-0"].text == "Air Jordan 1 尺码表\n尺码: 42；脚长(cm): 26.5\n尺码: 43；脚长(cm): 27"
    assert {c.section for c in chunks if c.chunk_id.startswith("aj1#尺码表")} == {"尺码表"}
    assert [c.position for c in chunks if c.section == "尺码表"] == [0, 1, 2, 3]

    care = [c for c in chunks if c.section == "保养"]
    assert len(care) > 1 and all(c.text.startswith("保养：") for c in care)
    assert all(len(c.text) <= SIZE + TOLERANCE for c in chunks if "-table-" not in c.chunk_id)
    assert all(len(c.text) <= 2 * SIZE for c in chunks)


def test_large_table_keeps_rows_but_drops_whole_table_chunk() -> None:
    rows = [{"尺码": str(size), "说明": "这一行的说明文字比较长，用来把整张表撑大。" * 2} for size in range(30, 50)]
    doc = _doc(sections=[Section(heading="尺码表", table=rows)])
    chunks = chunk_document(doc, SIZE, OVERLAP)
    assert not any("-table-" in c.chunk_id for c in chunks)
    assert len(chunks) == len(rows) and all("尺码: " in c.text and "说明: " in c.text for c in chunks)


def test_long_table_row_is_split_and_each_piece_keeps_its_label() -> None:
    doc = _doc(sections=[Section(heading="参数", table=[{"名称": "鞋", "描述": _sentences(12)}])])
    row_chunks = [c for c in chunk_document(doc, SIZE, OVERLAP) if "-r0-" in c.chunk_id]
    assert len(row_chunks) > 1
    assert all(c.text.startswith("标题 参数 — ") and len(c.text) <= SIZE for c in row_chunks)


def test_chunk_ids_are_stable_unique_and_safe(tmp_path: Path) -> None:
    sections = [
        Section(heading="", text="前言。"),
        Section(heading="body", text="名为 body 的小节。"),
        Section(heading="注意事项", text="第一处。"),
        Section(heading="注意事项", text="同名的第二处。"),
        Section(heading="Air Jordan 1 【官方】尺码 [EU]", text="有空格和括号的标题。", table=[{"尺码": "42"}]),
        Section(heading="退换-规则", text="带连字符的标题。"),
        Section(heading="很长的标题" * 20, text="长标题。"),
    ]
    docs = [
        _doc(doc_id="d1", sections=sections),
        _doc(doc_id="带 空格【的】id", text="正文。"),
        _doc(doc_id="x" * 500, text=_long_text()),
    ]
    first = [c.chunk_id for d in docs for c in chunk_document(d, SIZE, OVERLAP)]
    second = [c.chunk_id for d in docs for c in chunk_document(d.model_copy(deep=True), SIZE, OVERLAP)]
    assert first == second
    assert len(set(first)) == len(first)
    assert all(SAFE_ID.match(chunk_id) for chunk_id in first), first
    assert "d1#body-0" in first and "d1#注意事项-0" in first


def test_chunk_ids_do_not_depend_on_other_documents(tmp_path: Path) -> None:
    # Ids come from the document alone, never from its index in a corpus.
    a, b = _doc(doc_id="a", text="甲。"), _doc(doc_id="b", text="乙。")
    alone = [c.chunk_id for c in chunk_document(b)]
    in_corpus = [c.chunk_id for d in (a, b) for c in chunk_document(d)]
    assert in_corpus[-len(alone) :] == alone == ["b#body-0"]


def test_a_rendered_row_is_told_from_prose() -> None:
    from citescope.knowledge.chunking import is_rendered_row, render_sku_row, render_table_row

    row = SkuRow(product_id="P1", sku="S1", name="胸包", colour="黑", size="均码", price=159, stock=3)
    assert is_rendered_row(render_sku_row(row)) and is_rendered_row(render_sku_overview([row]))
    assert is_rendered_row(render_table_row({"尺码": "S", "适合身高(cm)": "155-165", "胸围(cm)": "112"}))
    assert not is_rendered_row("尺码表：鞋型正常，按平时穿着的运动鞋尺码选择即可；脚宽的顾客建议选大半码。")
    assert not is_rendered_row("颜色: 黑；尺码: 均码")  # two cells read as a sentence as easily as a row
    assert not is_rendered_row("功能: 快充；注意：不支持视频传输；耐用: 30000 次")  # one piece is prose
