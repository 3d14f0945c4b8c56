"""load_path on real files of every format: good records load, bad ones are reported and skipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter

from citescope.knowledge.loaders import load_path, normalize_date
from citescope.knowledge.schema import LoadIssue


def _write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode(encoding))
    return path


def _jsonl(*records: object) -> str:
    return "\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records) + "\n"


def _issue_at(issues: list[LoadIssue], where: str) -> LoadIssue:
    found = [issue for issue in issues if issue.where == where]
    assert found, f"no issue at {where}; issues: {[str(i) for i in issues]}"
    return found[0]


def _minimal_pdf(text: str) -> bytes:
    """A one-page PDF whose page shows `text` (ASCII) in Helvetica, with a correct xref table."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode("ascii")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    pdf = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(pdf))
        pdf += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref_at = len(pdf)
    pdf += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        pdf += b"%010d 00000 n \n" % offset
    pdf += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref_at)
    return bytes(pdf)


# ----------------------------------------------------------------------------- JSONL


def test_jsonl_loads_fields_and_reports_bad_lines_with_path_and_line(tmp_path: Path) -> None:
    file = _write(
        tmp_path / "kb.jsonl",
        _jsonl(
            {
                "doc_id": "faq-1",
                "title": "能退货吗？",
                "text": "七天无理由退货。",
                "doc_type": "faq",
                "source": "客服FAQ",
                "tags": ["退货"],
                "version": 2,
                "is_best": True,
            },
            "{not json",
            "",  # blank lines are not records
            "[1, 2]",
            {"title": "no id", "text": "x"},
            {"doc_id": "faq-2", "text": "   "},
            {"doc_id": "faq-3", "text": "ok", "doc_type": "manual"},
            {"doc_id": "faq-1", "text": "again"},
            {"doc_id": "faq-4", "text": "ok", "updated_at": "last week"},
            {"doc_id": "faq-5", "text": "ok", "authority": "rumour"},
            {"doc_id": "faq-6", "text": "尾行照常加载", "product_id": 1001, "updated_at": "2026/3/5"},
        ),
    )
    docs, issues, lexicon = load_path(file)

    assert [d.doc_id for d in docs] == ["faq-1", "faq-6"]
    faq = docs[0]
    assert (faq.title, faq.text, faq.doc_type, faq.source, faq.tags, faq.version) == (
        "能退货吗？",
        "七天无理由退货。",
        "faq",
        "客服FAQ",
        ["退货"],
        2,
    )
    assert faq.origin == f"{file}:1"
    assert docs[1].product_id == "1001" and docs[1].updated_at == "2026-03-05"
    assert lexicon is None

    assert "invalid JSON" in _issue_at(issues, f"{file}:2").message
    assert "JSON object" in _issue_at(issues, f"{file}:4").message
    assert "doc_id" in _issue_at(issues, f"{file}:5").message
    assert "text" in _issue_at(issues, f"{file}:6").message
    assert "doc_type" in _issue_at(issues, f"{file}:7").message
    duplicate = _issue_at(issues, f"{file}:8").message
    assert "duplicate doc_id 'faq-1'" in duplicate and f"{file}:1" in duplicate
    assert "updated_at" in _issue_at(issues, f"{file}:9").message
    assert "authority" in _issue_at(issues, f"{file}:10").message
    assert len(issues) == 8


def test_date_is_read_as_updated_at_unless_updated_at_is_given(tmp_path: Path) -> None:
    # Site crawls and news sets (DomainRAG) name the publication day `date`.
    file = _write(
        tmp_path / "kb.jsonl",
        _jsonl(
            {"doc_id": "page-1", "text": "招生简章", "date": "2023-12-20"},
            {"doc_id": "page-2", "text": "旧简章", "date": "2014-06-07", "updated_at": "2015-01-01"},
            {"doc_id": "page-3", "text": "坏日期", "date": "去年"},
        ),
    )
    docs, issues, _ = load_path(file)

    assert not issues  # a `date` that is no day (去年, a bare year) is left unread, the page still loads
    assert [(d.doc_id, d.updated_at) for d in docs] == [
        ("page-1", "2023-12-20"),
        ("page-2", "2015-01-01"),
        ("page-3", None),
    ]


def test_every_text_field_is_normalised(tmp_path: Path) -> None:
    file = _write(
        tmp_path / "kb.jsonl",
        _jsonl(
            {
                "doc_id": " ｄｏｃ１ ",
                "title": "ＡＪ１\u3000尺码",
                "text": "第一行  \n\n\n\n第二行\u200b",
                "brand": "Ｎｉｋｅ",
            }
        ),
    )
    (doc,), issues, _ = load_path(file)
    assert not issues
    assert (doc.doc_id, doc.title, doc.text, doc.brand) == ("doc1", "AJ1 尺码", "第一行\n\n第二行", "Nike")


@pytest.mark.parametrize(
    "raw",
    [
        "2026-03-05",
        "2026/3/5",
        "2026-03-05T10:00",
        "2026-03-05 10:00:00",
        "2026年3月5日",
        "2026.3.5",
        "20260305",
        "２０２６-０３-０５",
    ],
)
def test_dates_are_normalised_to_iso(raw: str) -> None:
    assert normalize_date(raw) == "2026-03-05"


@pytest.mark.parametrize("raw", ["2026-02-30", "March 5", "2026-03", "", "2026-03-05 noon"])
def test_unparseable_dates_are_rejected(raw: str) -> None:
    with pytest.raises(ValueError):
        normalize_date(raw)


def test_shared_dataset_format_loads(tmp_path: Path) -> None:
    # The shape of ../shared/datasets/*/corpus.jsonl: extra keys, empty titles.
    file = _write(
        tmp_path / "corpus.jsonl",
        _jsonl(
            {"doc_id": "rgb-1", "title": "", "text": "新闻正文。", "source": "RGB", "url": "http://x", "date": "2014"},
            {"doc_id": "bx-1", "title": "问题？", "text": "回答。", "source": "baoxianzhidao", "is_best": True},
        ),
    )
    docs, issues, _ = load_path(file)
    assert not issues
    assert [(d.doc_id, d.title, d.source) for d in docs] == [("rgb-1", "", "RGB"), ("bx-1", "问题？", "baoxianzhidao")]
    assert docs[0].updated_at is None  # "date": "2014" is a year, not a day


# ----------------------------------------------------------------------------- folders


def test_folder_is_recursive_sorted_and_skips_questions_hidden_and_unknown(tmp_path: Path) -> None:
    _write(tmp_path / "b" / "two.jsonl", _jsonl({"doc_id": "two", "text": "2"}))
    _write(tmp_path / "a.jsonl", _jsonl({"doc_id": "one", "text": "1"}))
    _write(tmp_path / "questions.jsonl", _jsonl({"qid": "q1", "question": "?"}))
    _write(tmp_path / "b" / "questions_holdout.jsonl", _jsonl({"qid": "q2", "question": "?"}))
    _write(tmp_path / ".hidden.jsonl", _jsonl({"doc_id": "hidden", "text": "h"}))
    _write(tmp_path / ".git" / "x.jsonl", _jsonl({"doc_id": "git", "text": "g"}))
    _write(tmp_path / "notes.docx", "binary-ish")

    docs, issues, _ = load_path(tmp_path)
    assert [d.doc_id for d in docs] == ["one", "two"]
    assert [(i.where, i.message) for i in issues] == [(str(tmp_path / "notes.docx"), "unsupported file type '.docx'")]
    assert load_path(tmp_path)[0] == docs  # deterministic


def test_duplicate_doc_ids_across_files_keep_the_first(tmp_path: Path) -> None:
    _write(tmp_path / "a.txt", "甲的内容")
    _write(tmp_path / "b" / "a.txt", "乙的内容")
    docs, issues, _ = load_path(tmp_path)
    assert [d.text for d in docs] == ["甲的内容"]
    assert issues[0].where == str(tmp_path / "b" / "a.txt") and "duplicate doc_id 'a'" in issues[0].message


def test_missing_path_is_an_issue_not_a_crash(tmp_path: Path) -> None:
    docs, issues, lexicon = load_path(tmp_path / "nope")
    assert docs == [] and lexicon is None and "no such file" in issues[0].message


def test_lexicon_files_are_merged_not_loaded_as_documents(tmp_path: Path) -> None:
    _write(tmp_path / "lexicon.json", json.dumps({"aliases": {"AJ1": "Air Jordan 1"}, "terms": ["高帮"]}))
    _write(tmp_path / "shoes" / "lexicon.json", json.dumps({"aliases": {"乔一": "Air Jordan 1"}, "terms": ["气垫"]}))
    _write(tmp_path / "broken" / "lexicon.json", "{oops")
    _write(tmp_path / "doc.txt", "内容")
    docs, issues, lexicon = load_path(tmp_path)
    assert [d.doc_id for d in docs] == ["doc"]
    assert lexicon is not None
    assert lexicon.aliases == {"AJ1": "Air Jordan 1", "乔一": "Air Jordan 1"}
    assert lexicon.terms == ["气垫", "高帮"]
    assert [i.where for i in issues] == [str(tmp_path / "broken" / "lexicon.json")]


# ----------------------------------------------------------------------------- CSV


SKU_CSV = (
    "product_id,sku,name,brand,category,colour,size,price,stock,updated_at\n"
    "P100,AJ1-RED-42,Air Jordan 1,Nike,篮球鞋,红,42,899,12,2026/3/5\n"
    "P100,AJ1-RED-43,Air Jordan 1,Nike,篮球鞋,红,43,899.00,0,2026-03-07\n"
    "P100,AJ1-RED-44,Air Jordan 1,Nike,篮球鞋,红,44,八百,3,2026-03-06\n"
    "P200,TEE-W-M,纯棉T恤,优衣库,服饰,白,M,79,-1,2026-03-01\n"
    "P200,TEE-W-L,纯棉T恤,优衣库,服饰,白,L,79,40,2026-03-01\n"
)


def test_sku_csv_groups_rows_into_one_product_document(tmp_path: Path) -> None:
    file = _write(tmp_path / "skus.csv", "\ufeff" + SKU_CSV)  # Excel writes a BOM
    docs, issues, _ = load_path(file)

    assert [d.doc_id for d in docs] == ["sku-P100", "sku-P200"]
    shoe = docs[0]
    assert (shoe.doc_type, shoe.title, shoe.source, shoe.brand, shoe.category, shoe.product_id, shoe.text) == (
        "product",
        "Air Jordan 1",
        "商品SKU表",
        "Nike",
        "篮球鞋",
        "P100",
        "",
    )
    assert shoe.updated_at == "2026-03-07"  # the newest row
    assert [(s.sku, s.size, s.price, s.stock) for s in shoe.skus] == [
        ("AJ1-RED-42", "42", 899.0, 12),
        ("AJ1-RED-43", "43", 899.0, 0),
    ]
    assert [s.sku for s in docs[1].skus] == ["TEE-W-L"]

    price_issue = _issue_at(issues, f"{file}:4")
    assert "'price'" in price_issue.message and "八百" in price_issue.message
    assert "'stock'" in _issue_at(issues, f"{file}:5").message
    assert len(issues) == 2


def test_sku_csv_reports_short_rows_and_duplicate_skus(tmp_path: Path) -> None:
    file = _write(tmp_path / "skus.csv", "product_id,sku,price,stock\nP1,S1,10,1\nP1,S2,10\nP1,S1,12,2\n,S3,1,1\n")
    docs, issues, _ = load_path(file)
    assert [s.sku for s in docs[0].skus] == ["S1"]
    assert "3 fields" in _issue_at(issues, f"{file}:3").message
    assert "duplicate sku 'S1'" in _issue_at(issues, f"{file}:4").message
    assert "product_id" in _issue_at(issues, f"{file}:5").message


def test_csv_with_doc_id_and_text_is_read_like_jsonl(tmp_path: Path) -> None:
    file = _write(
        tmp_path / "faq.csv",
        'doc_id,title,text,doc_type,tags\nf1,运费?,"满99包邮，\n偏远地区除外。",faq,"运费,包邮"\nf2,,,faq,\n',
    )
    docs, issues, _ = load_path(file)
    assert [(d.doc_id, d.text, d.doc_type, d.tags) for d in docs] == [
        ("f1", "满99包邮，\n偏远地区除外。", "faq", ["运费", "包邮"])
    ]
    assert "'text'" in _issue_at(issues, f"{file}:4").message  # the multi-line row above ends on line 3


def test_other_csv_becomes_one_document_per_row(tmp_path: Path) -> None:
    file = _write(tmp_path / "stores.csv", "城市,门店,电话\n上海,南京路店,021-1234\n\n北京,,010-5678\n")
    docs, issues, _ = load_path(file)
    assert not issues
    assert [(d.doc_id, d.title, d.text) for d in docs] == [
        ("stores-1", "stores", "城市: 上海\n门店: 南京路店\n电话: 021-1234"),
        ("stores-2", "stores", "城市: 北京\n电话: 010-5678"),
    ]


# ----------------------------------------------------------------------------- encodings


def test_gbk_files_are_decoded(tmp_path: Path) -> None:
    _write(tmp_path / "退货说明.txt", "退货须知\n七天内可退，运费由买家承担。", encoding="gbk")
    _write(tmp_path / "skus.csv", "product_id,sku,name,price,stock\nP1,S1,棉袜,19.9,100\n", encoding="gbk")
    docs, issues, _ = load_path(tmp_path)
    assert not issues
    assert docs[0].skus[0].name == "棉袜"
    assert docs[1].title == "退货须知" and "运费由买家承担" in docs[1].text


def test_undecodable_file_is_reported(tmp_path: Path) -> None:
    file = tmp_path / "binary.txt"
    file.write_bytes(b"\xff\xfe\x80\x00garbage\xff")
    docs, issues, _ = load_path(tmp_path)
    assert docs == []
    assert issues[0].where == f"{file}:1" and "encoding" in issues[0].message  # the first line neither encoding reads


# ----------------------------------------------------------------------------- Markdown and text


MARKDOWN = """\
---
doc_type: product
brand: Nike
product_id: P100
tags: 篮球鞋, 高帮
updated_at: 2026-03-05
---
# Air Jordan 1

经典高帮篮球鞋，皮革鞋面。

## 尺码表

脚长对照如下：

| 尺码 | 脚长(cm) | 备注 |
|:---|:---:|---|
| 42 | 26.5 | |
| 43 | 27 | 偏大 | 多余 |
| 44 | 27.5 | 半码 \\| 宽脚 |

鞋型偏大，建议选小半码。

## 保养

避免暴晒。

```
## 这不是标题
```
"""


def test_markdown_front_matter_sections_and_tables(tmp_path: Path) -> None:
    file = _write(tmp_path / "aj1.md", MARKDOWN)
    (doc,), issues, _ = load_path(file)

    assert (doc.doc_id, doc.title, doc.doc_type, doc.brand, doc.product_id) == (
        "aj1",
        "Air Jordan 1",
        "product",
        "Nike",
        "P100",
    )
    assert doc.tags == ["篮球鞋", "高帮"] and doc.updated_at == "2026-03-05"
    assert doc.text.startswith("# Air Jordan 1") and "避免暴晒。" in doc.text

    intro, sizes, care = doc.sections
    assert (intro.heading, intro.text, intro.table) == ("", "经典高帮篮球鞋，皮革鞋面。", None)
    assert sizes.heading == "尺码表"
    assert sizes.text == "脚长对照如下：\n\n鞋型偏大，建议选小半码。"
    assert sizes.table == [
        {"尺码": "42", "脚长(cm)": "26.5", "备注": ""},
        {"尺码": "44", "脚长(cm)": "27.5", "备注": "半码 | 宽脚"},
    ]
    assert care.heading == "保养" and "## 这不是标题" in care.text

    (issue,) = issues
    assert issue.where == f"{file}:19" and "4 cells" in issue.message


def test_markdown_defaults_and_front_matter_overrides(tmp_path: Path) -> None:
    _write(tmp_path / "plain.md", "没有标题的说明。\n\n第二段。")
    _write(
        tmp_path / "named.md",
        "---\ndoc_id: policy-return\ntitle: 退货政策\ntags: [退货, 售后]\n---\n# 旧标题\n\n正文。",
    )
    docs, issues, _ = load_path(tmp_path)
    assert not issues
    named, plain = docs
    assert (named.doc_id, named.title, named.tags) == ("policy-return", "退货政策", ["退货", "售后"])
    assert named.sections is None  # no ## headings and no table: plain text for the chunker
    assert (plain.doc_id, plain.title, plain.sections) == ("plain", "plain", None)


def test_markdown_bad_front_matter_is_reported(tmp_path: Path) -> None:
    _write(tmp_path / "bad.md", "---\ntitle: [unclosed\n---\n正文")
    _write(tmp_path / "bad_date.md", "---\nupdated_at: someday\n---\n正文")
    _write(tmp_path / "list.md", "---\n- a\n- b\n---\n正文")
    docs, issues, _ = load_path(tmp_path)
    assert docs == []
    assert "front matter" in issues[0].message and issues[0].where.startswith(str(tmp_path / "bad.md"))
    assert issues[1].where == str(tmp_path / "bad_date.md") and "updated_at" in issues[1].message
    assert issues[2].where == f"{tmp_path / 'list.md'}:1" and "mapping" in issues[2].message


def test_plain_text_title_is_short_first_line_or_stem(tmp_path: Path) -> None:
    _write(tmp_path / "notice.txt", "发货通知\n\n下单后48小时内发货。")
    _write(tmp_path / "one_line.txt", "下单后48小时内发货。")
    docs, issues, _ = load_path(tmp_path)
    assert not issues
    assert [(d.doc_id, d.title, d.text) for d in docs] == [
        ("notice", "发货通知", "发货通知\n\n下单后48小时内发货。"),
        ("one_line", "one_line", "下单后48小时内发货。"),
    ]


# ----------------------------------------------------------------------------- PDF


def test_pdf_text_is_extracted(tmp_path: Path) -> None:
    file = tmp_path / "warranty.pdf"
    file.write_bytes(_minimal_pdf("Warranty: two years for all shoes."))
    (doc,), issues, _ = load_path(file)
    assert not issues
    assert (doc.doc_id, doc.title) == ("warranty", "warranty")
    assert "Warranty: two years for all shoes." in doc.text


def test_pdf_with_empty_user_password_is_readable(tmp_path: Path) -> None:
    source = tmp_path / "src.pdf"
    source.write_bytes(_minimal_pdf("Open with no password"))
    writer = PdfWriter(clone_from=PdfReader(source))
    writer.encrypt(user_password="", owner_password="owner", algorithm="AES-128")
    (tmp_path / "kb").mkdir()
    with (tmp_path / "kb" / "open.pdf").open("wb") as out:
        writer.write(out)
    (doc,), issues, _ = load_path(tmp_path / "kb")
    assert not issues and "Open with no password" in doc.text


def test_encrypted_garbage_and_blank_pdfs_are_reported(tmp_path: Path) -> None:
    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    writer.encrypt(user_password="secret", algorithm="AES-128")
    with (tmp_path / "locked.pdf").open("wb") as out:
        writer.write(out)
    blank = PdfWriter()
    blank.add_blank_page(width=200, height=200)
    with (tmp_path / "blank.pdf").open("wb") as out:
        blank.write(out)
    (tmp_path / "garbage.pdf").write_bytes(b"this is not a pdf at all")

    docs, issues, _ = load_path(tmp_path)
    assert docs == []
    messages = {Path(i.where).name: i.message for i in issues}
    assert "encrypted" in messages["locked.pdf"]
    assert "unreadable PDF" in messages["garbage.pdf"]
    assert "no extractable text" in messages["blank.pdf"]


# ----------------------------------------------------------------------------- the demo KB


DEMO_DIR = Path(__file__).resolve().parents[2] / "knowledge" / "demo"


@pytest.mark.skipif(not DEMO_DIR.is_dir() or not any(DEMO_DIR.iterdir()), reason="no demo KB yet")
def test_demo_knowledge_base_loads_without_issues() -> None:
    docs, issues, _ = load_path(DEMO_DIR)
    assert docs
    assert [str(i) for i in issues] == []
