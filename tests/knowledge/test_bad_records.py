"""A bad record is reported as `file:line: why` and skipped, the rest of its file loads (issue #41):
invalid Unicode, a line in neither UTF-8 nor GB18030, files that mix the two, wrong field types,
empty files (one rule for every format) and files over the size limit."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citescope.knowledge.chunking import chunk_document
from citescope.knowledge.file_reading import EMPTY_FILE
from citescope.knowledge.ingest import Ingestor
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.loaders import DEFAULT_MAX_FILE_BYTES, load_path
from citescope.knowledge.settings import get_settings
from tests.support.hostile import HOSTILE, SPECIAL_TEXT, hostile_text, wrong_types

GOOD = '{"doc_id": "a", "text": "七天无理由退货"}'


def loaded(path: Path, **kwargs) -> tuple[dict[str, str], list[str]]:
    docs, issues, _ = load_path(path, **kwargs)
    return {d.doc_id: d.text for d in docs}, [str(i) for i in issues]


def test_a_lone_surrogate_skips_its_line_only(tmp_path):
    """Was: UnicodeEncodeError traceback out of `run.py ingest`, good lines lost, no file:line."""
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text(
        "\n".join(
            [
                GOOD,
                r'{"doc_id": "b", "text": "bad \ud800 x"}',
                r'{"doc_id": "c", "text": "ok", "tags": ["\udfff"]}',
                '{"doc_id": "d", "text": "运费险 \\ud83d\\ude00"}',
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    docs, issues = loaded(corpus)
    assert docs == {"a": "七天无理由退货", "d": "运费险 😀"}  # a surrogate *pair* is a real character
    assert issues == [
        f"{corpus}:2: field 'text': invalid Unicode (lone surrogate U+D800 at character 5)",
        f"{corpus}:3: field 'tags': invalid Unicode (lone surrogate U+DFFF at character 1)",
    ]

    kb = KnowledgeBase(tmp_path / "kb", get_settings(kb_dir=tmp_path / "kb"), create=True)
    summary = Ingestor(kb, show_progress=False).run([corpus])
    assert summary.added == 2 and len(summary.issues) == 2
    kb.close()


def test_front_matter_with_wrong_types_is_reported(tmp_path):
    (tmp_path / "a.md").write_text("---\nversion: [1]\n---\n正文\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("---\ntags: {a: 1}\n---\n正文\n", encoding="utf-8")
    (tmp_path / "c.md").write_text("---\nbrand: [云栈, 山野]\n---\n正文\n", encoding="utf-8")
    docs, issues = loaded(tmp_path)
    assert docs == {}
    assert issues == [
        f"{tmp_path}/a.md: field 'version' must be a whole number from 0 to 2147483647 (got [1])",
        f"{tmp_path}/b.md: field 'tags' must be a list or a comma-separated string, got dict",
        f"{tmp_path}/c.md: field 'brand' must be a string, got list",
    ]


def test_csv_and_jsonl_mixing_utf8_and_gbk_rows_are_read_line_by_line(tmp_path):
    """Was: the whole file decoded as GB18030, so its UTF-8 rows became mojibake (浣犲ソ…)."""
    csv_file = tmp_path / "faq.csv"
    csv_file.write_bytes(
        "doc_id,text\nu1,你好世界\n".encode()
        + "g1,退货政策七天\ng2,运费由买家承担\n".encode("gbk")
        + "u2,再见\n".encode()
    )
    jsonl = tmp_path / "faq.jsonl"
    jsonl.write_bytes(
        json.dumps({"doc_id": "j1", "text": "签收后发货"}, ensure_ascii=False).encode("gbk")
        + b"\n"
        + json.dumps({"doc_id": "j2", "text": "保修一年"}, ensure_ascii=False).encode()
        + b"\n"
    )
    docs, issues = loaded(tmp_path)
    assert docs == {
        "u1": "你好世界",
        "g1": "退货政策七天",
        "g2": "运费由买家承担",
        "u2": "再见",
        "j1": "签收后发货",
        "j2": "保修一年",
    }
    assert issues == [
        f"{csv_file}: mixes encodings: lines 3-4 decoded as GB18030, the rest as UTF-8; "
        "check those lines for garbled text",
        f"{jsonl}: mixes encodings: line 1 decoded as GB18030, the rest as UTF-8; check those lines for garbled text",
    ]


def test_a_line_in_neither_encoding_skips_its_record_only(tmp_path):
    """Was: one such line rejected the whole file ('not text in utf-8-sig or gb18030 encoding')."""
    csv_file = tmp_path / "skus.csv"
    csv_file.write_bytes(
        b"product_id,sku,name,price,stock\nP1,S1,\xe6\xa3\x89\xe8\xa2\x9c,19.9,100\n"
        b"P1,S2,\xff\xfe,19.9,3\nP2,S3,plain,5,1\n"
    )
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_bytes(GOOD.encode() + b"\n" + b'{"doc_id": "b", "text": "\x81\x30"}\n')
    text = tmp_path / "policy.txt"
    text.write_bytes("退货须知\n七天内可退\n".encode() + b"\x80\x80 broken\n")
    docs, issues = loaded(tmp_path)
    assert sorted(docs) == ["a", "sku-P1", "sku-P2"]
    assert issues == [
        f"{jsonl}:2: not text in UTF-8 or GB18030 encoding; record skipped",
        f"{text}:3: not text in UTF-8 or GB18030 encoding; document skipped",
        f"{csv_file}:3: not text in UTF-8 or GB18030 encoding; row skipped",
    ]
    sku_docs, _, _ = load_path(csv_file)
    assert [s.sku for s in sku_docs[0].skus] == ["S1"] and sku_docs[0].skus[0].name == "棉袜"


def test_wrong_field_types_are_named(tmp_path):
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text(
        "\n".join(
            [
                # was: OverflowError in SQLite
                '{"doc_id": "v", "text": "版本号太大", "version": 12345678901234567890123}',
                '{"doc_id": "n", "text": NaN}',
                '{"doc_id": "t", "text": "x", "version": true}',
                "[" * 100_000,
                '{"doc_id": "ok", "text": "x", "version": "2"}',
                '{"doc_id": "s", "text": "x", "version": "²"}',  # a digit int() cannot read
                json.dumps({"doc_id": "l", "text": "x", "version": "9" * 5000}),  # over int()'s 4,300 digits
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    docs, issues = loaded(corpus)
    assert list(docs) == ["ok"]
    assert issues == [
        f"{corpus}:1: field 'version' must be a whole number from 0 to 2147483647 (got 12345678901234567890123)",
        f"{corpus}:2: field 'text' must be a string, got nan",
        f"{corpus}:3: field 'version' must be a whole number from 0 to 2147483647 (got True)",
        f"{corpus}:4: invalid JSON (nested too deeply)",
        f"{corpus}:6: field 'version' must be a whole number from 0 to 2147483647 (got '²')",
        f"{corpus}:7: field 'version' must be a whole number from 0 to 2147483647 (got '" + "9" * 39 + ")",  # cut at 40
    ]


def test_a_file_name_that_is_not_utf8_is_reported_not_crashed_on(tmp_path):
    name = "退货说明.txt".encode("gbk")  # a GBK-named file from a Windows zip
    with open(os.path.join(os.fsencode(tmp_path), name), "wb") as handle:
        handle.write("七天内可退".encode())
    docs, issues = loaded(tmp_path)
    assert docs == {} and len(issues) == 1
    assert issues[0].endswith(".txt: file name is not valid UTF-8; rename the file (skipped)")
    issues[0].encode("utf-8")  # printable: no lone surrogate in the message


def test_a_folder_that_cannot_be_listed_is_an_issue(tmp_path):
    """Was a traceback (Path.rglob raised OSError; with EACCES it skipped the folder silently, and
    `--prune` took its documents for deleted). A path over PATH_MAX fails for root too."""
    (tmp_path / "ok.jsonl").write_text(GOOD + "\n", encoding="utf-8")
    folder = os.open(tmp_path, os.O_RDONLY)
    for level in range(17):  # 17 x 253 characters > PATH_MAX (4,096)
        name = f"{level:02d}" + "d" * 250
        os.mkdir(name, dir_fd=folder)
        deeper = os.open(name, os.O_RDONLY, dir_fd=folder)
        os.close(folder)
        folder = deeper
    os.close(folder)
    docs, issues = loaded(tmp_path)
    assert list(docs) == ["a"] and len(issues) == 1
    assert issues[0].startswith(f"{tmp_path}/00ddd") and issues[0].endswith(": cannot read folder (File name too long)")


EMPTY_FILES = {
    ".jsonl": b"",
    ".txt": b"",
    ".csv": b"",
    ".md": b"",
    ".pdf": b"",
    "blank.jsonl": b"\n  \n",
    "blank.txt": b" \n\t\n",
    "header-only.csv": b"doc_id,text\n",
    "blank.md": b"\n\n",
}


@pytest.mark.parametrize("name", EMPTY_FILES)
def test_an_empty_file_is_the_same_issue_in_every_format(tmp_path, name):
    """Was: an empty .jsonl passed silently (exit 0), an empty .txt/.md said "missing or empty
    field 'text'", an empty .csv "empty CSV file (no header row)" (exit 1)."""
    file = tmp_path / (f"empty{name}" if name.startswith(".") else name)
    file.write_bytes(EMPTY_FILES[name])
    assert loaded(file) == ({}, [f"{file}: empty, nothing ingested"])


def test_a_file_over_the_size_limit_is_skipped_with_its_size_and_the_limit(tmp_path):
    big = tmp_path / "dump.txt"
    with open(big, "wb") as handle:  # sparse: 11 MB on paper, nothing to write
        handle.truncate(DEFAULT_MAX_FILE_BYTES + 1024 * 1024)
    (tmp_path / "ok.jsonl").write_text(GOOD + "\n", encoding="utf-8")
    docs, issues = loaded(tmp_path)
    assert list(docs) == ["a"]
    assert issues == [
        f"{big}: 11.0 MB is over the limit of 10.0 MB per file "
        "(raise it with --max-file-mb or CITESCOPE_MAX_FILE_MB); skipped"
    ]
    small_limit = loaded(tmp_path / "ok.jsonl", max_file_bytes=10)[1]
    assert small_limit == [
        f"{tmp_path}/ok.jsonl: {len(GOOD.encode()) + 1} bytes is over the limit of 10 bytes "
        "per file (raise it with --max-file-mb or CITESCOPE_MAX_FILE_MB); skipped"
    ]


# -- any record, any bytes: never a crash, every record accounted for ------------------------------
FIELDS = ("doc_id", "text", "title", "doc_type", "source", "brand", "updated_at", "version", "authority", "tags")
field_value = st.one_of(hostile_text, wrong_types, st.none(), st.lists(hostile_text, max_size=3))
record_line = st.one_of(
    st.dictionaries(st.sampled_from(FIELDS), field_value, max_size=6).map(json.dumps),  # escapes surrogates
    st.fixed_dictionaries({"doc_id": hostile_text, "text": hostile_text}).map(json.dumps),
    st.binary(max_size=40).map(lambda raw: raw.replace(b"\n", b" ")),  # any bytes, one line
    st.sampled_from(["退货政策".encode("gbk"), b"\xff\xfe\x00", b"{", b"null", b"[]", b"\xef\xbb\xbf{}"]),
)


@settings(HOSTILE, max_examples=80)
@given(lines=st.lists(record_line, max_size=8))
def test_any_jsonl_loads_without_a_crash_and_names_every_bad_line(tmp_path_factory, lines):
    corpus = tmp_path_factory.mktemp("hostile") / "docs.jsonl"
    corpus.write_bytes(b"\n".join(line.encode() if isinstance(line, str) else line for line in lines))
    docs, issues, _ = load_path(corpus)
    for doc in docs:  # what the catalog, the hash and the embedder will do with it
        doc.content_hash()
        for chunk in chunk_document(doc):
            chunk.model_dump_json().encode("utf-8")
    for issue in issues:
        str(issue).encode("utf-8")  # printable
        assert issue.where == str(corpus) or re.fullmatch(rf"{re.escape(str(corpus))}:\d+", issue.where), issue
    line_issues = {i.where for i in issues if i.where != str(corpus)}
    non_blank = sum(1 for line in corpus.read_bytes().split(b"\n") if line.strip())
    assert len(docs) + len(line_issues) == non_blank or (not non_blank and [i.message for i in issues] == [EMPTY_FILE])


def test_hostile_records_ingest_end_to_end(tmp_path):
    """Every named hostile text as a record's text, title and brand, into a real KB: what loads is
    stored and searchable, the rest is an issue, nothing raises."""
    texts = [t for t in SPECIAL_TEXT if len(t) < 10_000]
    corpus = tmp_path / "hostile.jsonl"
    corpus.write_text(
        "\n".join(json.dumps({"doc_id": f"h{i}", "text": t, "title": t, "brand": t}) for i, t in enumerate(texts))
        + "\n",
        encoding="utf-8",
    )
    kb = KnowledgeBase(tmp_path / "kb", get_settings(kb_dir=tmp_path / "kb"), create=True)
    summary = Ingestor(kb, show_progress=False).run([corpus])
    assert summary.added + len(summary.issues) == len(texts) and summary.added >= len(texts) // 2
    assert {i.where for i in summary.issues} <= {f"{corpus}:{n}" for n in range(1, len(texts) + 1)}
    kb.warm_up()
    assert len(kb.catalog.content_hashes()) == summary.added and kb.vectors.count() == len(kb)
    kb.close()
