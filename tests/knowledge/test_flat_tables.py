from citescope.knowledge.chunking import chunk_document
from citescope.knowledge.flat_tables import FALLBACK_CAPTION, flat_table_sections
from citescope.knowledge.schema import Document, Section

# A crawled size page: the table's markup is gone, one cell per line, each header cell over two lines.
SIZE_PAGE = "\n".join(
    [
        "羽绒服尺码表",
        "首页",
        "/",
        "尺码对照",
        "尺码",
        "胸围",
        "最小",
        "胸围",
        "最大",
        "衣长",
        "最小",
        "衣长",
        "最大",
        "S",
        "100",
        "104",
        "66",
        "68",
        "M",
        "104",
        "108",
        "68",
        "70",
        "L",
        "108",
        "112",
        "70",
        "72",
        "XL",
        "112",
        "116",  # two values under four columns: which two, the page does not say
        "2024年",
        "2023年",
    ]
)


def test_a_table_written_one_cell_per_line_is_read_back_as_named_rows():
    before, table, after = flat_table_sections(SIZE_PAGE)
    assert before == Section(heading="", text="羽绒服尺码表\n首页\n/")
    assert table.heading == "尺码对照"
    assert table.table[1] == {"尺码": "M", "胸围最小": "104", "胸围最大": "108", "衣长最小": "68", "衣长最大": "70"}
    assert [row["尺码"] for row in table.table] == ["S", "M", "L"]
    assert table.text == "XL：112、116"  # kept, but no column is named for it
    assert after.text == "2024年\n2023年"


def test_a_header_of_one_line_per_cell_and_no_caption():
    text = "\n".join(["型号", "容量", "重量", "A1", "10000", "210", "A2", "20000", "380", "A3", "30000", "520"])
    [table] = flat_table_sections(text)
    assert table.heading == FALLBACK_CAPTION
    assert table.table[2] == {"型号": "A3", "容量": "30000", "重量": "520"}


def test_text_that_is_no_such_table_is_left_alone():
    assert flat_table_sections("退货政策\n自签收次日起15天内可退货。\n运费由买家承担。") is None
    # two rows are no table
    assert flat_table_sections("\n".join(["型号", "容量", "A1", "10000", "A2", "20000"])) is None
    # rows without a header above them: nothing says what the numbers are
    assert flat_table_sections("\n".join(["A1", "10000", "A2", "20000", "A3", "30000"])) is None


def test_a_row_chunk_names_the_columns_of_its_values():
    doc = Document(doc_id="size-page", title="羽绒服尺码表", text=SIZE_PAGE)
    chunks = {c.chunk_id: c.text for c in chunk_document(doc)}
    assert chunks["size-page#尺码对照-r1-0"] == (
        "羽绒服尺码表 尺码对照 — 尺码: M；胸围最小: 104；胸围最大: 108；衣长最小: 68；衣长最大: 70"
    )
    assert "XL：112、116" in chunks["size-page#尺码对照-0"]
    # a document that has sections of its own is chunked by them, as before
    sectioned = Document(doc_id="p", title="t", text=SIZE_PAGE, sections=[Section(heading="说明", text="正文")])
    assert [c.chunk_id for c in chunk_document(sectioned)] == ["p#说明-0"]
