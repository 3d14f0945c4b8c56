"""Load a knowledge folder (or one file) into Documents, reporting bad input instead of crashing.

Formats: JSONL, CSV (SKU tables, doc_id/text tables, anything else), Markdown with front matter,
plain text and PDF; `lexicon.json` files are merged into one Lexicon. Every malformed record
becomes a LoadIssue naming `path:line` and is skipped, so one bad line never loses the load.
"""

from __future__ import annotations

import csv
import json
import logging
import math
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import suppress
from datetime import date, datetime
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import frontmatter
import yaml
from pydantic import ValidationError
from pypdf import PdfReader

from citescope.knowledge.file_reading import EMPTY_FILE, MB, LineDecoder, decoded_lines, read_document_text, size_issue
from citescope.knowledge.lexicon import Lexicon

# Every field any loader reads goes through this one step: normalised text with HTML markup
# removed (knowledge/markup.py), so no format can carry a <script> or a javascript: link in.
from citescope.knowledge.markup import normalize_text as normalize
from citescope.knowledge.schema import Document, LoadIssue, Section, SkuRow
from citescope.knowledge.settings import Settings

log = logging.getLogger(__name__)

SUPPORTED_SUFFIXES = frozenset({".jsonl", ".csv", ".md", ".txt", ".pdf"})
LEXICON_FILENAME = "lexicon.json"
# Evaluation sets live next to corpora; they are questions, not knowledge.
QUESTION_FILE_PATTERN = "*questions*.jsonl"
DEFAULT_MAX_FILE_BYTES = int(Settings.model_fields["max_file_mb"].default * MB)

SKU_COLUMNS = frozenset({"product_id", "sku", "price", "stock"})
SKU_SOURCE = "商品SKU表"
_STRING_FIELDS = ("title", "text", "source", "product_id", "brand", "category")
_PASSTHROUGH_FIELDS = ("version",)
# Another name exports use for the day a document was last updated (news and site crawls say
# `date`). The canonical field wins; an alias that is not a full date (a bare year "2014") is left
# unread rather than rejecting a document that loads fine without it.
DATE_ALIASES = ("date",)
# Bump when the same file loads into different documents (an alias, a new field): cached dataset
# KBs (workflows/evaluation/datasets.py) are keyed by it and rebuild instead of serving the old reading.
LOADER_VERSION = 3  # 3: HTML markup removed from every field
_TAG_SEPARATORS = re.compile(r"[,，、;；]")
_DATE = re.compile(
    r"^(\d{4})\s*[-/.年]\s*(\d{1,2})\s*[-/.月]\s*(\d{1,2})\s*日?"
    r"(?:[T\s]+\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\s*(?:Z|[+-]\d{2}:?\d{2})?)?$"
)
_COMPACT_DATE = re.compile(r"^(\d{4})(\d{2})(\d{2})$")


class RecordError(ValueError):
    """One record cannot become a Document; the message names the offending field."""


# ----------------------------------------------------------------------------- entry point


def load_path(
    path: Path,
    max_file_bytes: int | None = DEFAULT_MAX_FILE_BYTES,
) -> tuple[list[Document], list[LoadIssue], Lexicon | None]:
    """Load a file or a folder (recursively, in sorted order) into documents.

    Returns the documents, the issues found (each already skipped), and the merged lexicon of
    any `lexicon.json` files (None if there were none). Doc ids are unique within one load:
    a repeated id is reported on the later record and that record is dropped. A file larger than
    `max_file_bytes` (None: no limit) is skipped; a file that yields nothing at all (no bytes,
    blank lines only, a CSV header without rows) is reported as empty, whatever its format.
    """
    path = Path(path)
    documents: list[Document] = []
    issues: list[LoadIssue] = []
    lexicon: Lexicon | None = None
    first_seen: dict[str, str] = {}

    if not path.exists():
        return [], [LoadIssue(where=str(path), message="no such file or folder")], None

    for file in _files_to_load(path, issues):
        too_big_or_empty = size_issue(file, max_file_bytes)
        if too_big_or_empty:
            issues.append(too_big_or_empty)
            continue
        if file.name == LEXICON_FILENAME:
            try:
                loaded = Lexicon.load(file)
            except ValueError as exc:
                issues.append(LoadIssue(where=str(file), message=str(exc).removeprefix(f"{file}: ")))
                continue
            lexicon = loaded if lexicon is None else lexicon.merged(loaded)
            continue
        yielded_before = len(documents) + len(issues)
        for record in _read_file(file):
            if isinstance(record, LoadIssue):
                issues.append(record)
            elif record.doc_id in first_seen:
                first = first_seen[record.doc_id]
                issues.append(
                    LoadIssue(
                        where=record.origin,
                        message=f"duplicate doc_id '{record.doc_id}' (first loaded at {first}); skipped",
                    )
                )
            else:
                first_seen[record.doc_id] = record.origin
                documents.append(record)
        if len(documents) + len(issues) == yielded_before:
            issues.append(LoadIssue(where=str(file), message=EMPTY_FILE))
    return documents, issues, lexicon


def _files_to_load(root: Path, issues: list[LoadIssue]) -> Iterator[Path]:
    candidates = [root] if not root.is_dir() else _files_under(root, issues)
    for file in candidates:
        if _SURROGATE.search(str(file)):
            # Bytes that are not UTF-8 in a file name (a GBK-named file from a Windows zip) become
            # lone surrogates in Python; the origin and doc id made from it could not be stored.
            shown = os.fsencode(file).decode("utf-8", "backslashreplace")
            issues.append(LoadIssue(where=shown, message="file name is not valid UTF-8; rename the file (skipped)"))
            continue
        if fnmatch(file.name, QUESTION_FILE_PATTERN):
            if file == root:  # named explicitly: say why nothing was loaded
                issues.append(LoadIssue(where=str(file), message="evaluation question set, not knowledge; skipped"))
            continue
        if file.name == LEXICON_FILENAME or file.suffix.lower() in SUPPORTED_SUFFIXES:
            yield file
        else:
            issues.append(LoadIssue(where=str(file), message=f"unsupported file type '{file.suffix or file.name}'"))


def _files_under(root: Path, issues: list[LoadIssue]) -> list[Path]:
    """Every file below root, hidden files and folders left out, in sorted order. A folder that
    cannot be listed is an issue (Path.rglob would skip it silently, and `--prune` would then
    take its documents for deleted ones)."""

    def unreadable(exc: OSError) -> None:
        issues.append(LoadIssue(where=str(exc.filename or root), message=f"cannot read folder ({exc.strerror or exc})"))

    files = []
    for folder, subfolders, names in os.walk(root, onerror=unreadable):
        subfolders[:] = [name for name in subfolders if not name.startswith(".")]
        files += [Path(folder) / name for name in names if not name.startswith(".")]
    return sorted(files)


def _read_file(file: Path) -> Iterator[Document | LoadIssue]:
    suffix = file.suffix.lower()
    if suffix == ".pdf":
        yield from _read_pdf(file)
        return
    try:
        if suffix in (".jsonl", ".csv"):  # streamed: one record per line, decoded line by line
            yield from (_read_jsonl if suffix == ".jsonl" else _read_csv)(file)
            return
        text, encoding_issues = read_document_text(file)
    except OSError as exc:
        yield LoadIssue(where=str(file), message=f"cannot read file ({exc.strerror or exc})")
        return
    yield from encoding_issues
    if text is None:
        return
    if not text.strip():
        yield LoadIssue(where=str(file), message=EMPTY_FILE)
        return
    yield from (_read_markdown if suffix == ".md" else _read_plain_text)(file, text)


# ----------------------------------------------------------------------------- JSONL


def _read_jsonl(file: Path) -> Iterator[Document | LoadIssue]:
    decoder = LineDecoder(file)
    for lineno, line in enumerate(decoded_lines(file, decoder), start=1):
        if not line.strip():
            continue
        where = f"{file}:{lineno}"
        if lineno in decoder.bad_lines:
            yield decoder.bad_line_issue(lineno)
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            yield LoadIssue(where=where, message=f"invalid JSON ({exc.msg} at column {exc.colno})")
            continue
        except RecursionError:
            yield LoadIssue(where=where, message="invalid JSON (nested too deeply)")
            continue
        if not isinstance(record, dict):
            yield LoadIssue(where=where, message=f"expected a JSON object, got {type(record).__name__}")
            continue
        yield _document_or_issue(record, where)
    mixed = decoder.mixed_encoding_issue()
    if mixed:
        yield mixed


def _document_or_issue(record: Mapping[str, Any], where: str, **defaults: Any) -> Document | LoadIssue:
    try:
        return build_document(record, origin=where, **defaults)
    except RecordError as exc:
        return LoadIssue(where=where, message=str(exc))


def build_document(record: Mapping[str, Any], origin: str, **defaults: Any) -> Document:
    """A validated, normalised Document from loose key/values (unknown keys are ignored).

    `defaults` fill fields the record lacks (e.g. doc_id = file stem for Markdown). Raises
    RecordError naming the field when a value is missing or invalid.
    """
    _reject_lone_surrogates(record)
    merged = {**defaults, **{k: v for k, v in record.items() if v is not None and v != ""}}
    if "updated_at" not in merged:
        for alias in (a for a in DATE_ALIASES if a in merged):
            with suppress(ValueError):
                merged["updated_at"] = normalize_date(merged[alias])
                break
    fields: dict[str, Any] = {"origin": origin}

    doc_id = _string_field(merged, "doc_id")
    if not doc_id:
        raise RecordError("missing or empty field 'doc_id'")
    fields["doc_id"] = doc_id
    for name in _STRING_FIELDS:
        value = _string_field(merged, name)
        if value:
            fields[name] = value
    if not fields.get("text"):
        raise RecordError("missing or empty field 'text'")

    if "doc_type" in merged:
        fields["doc_type"] = _string_field(merged, "doc_type").lower()
    if "authority" in merged:
        fields["authority"] = _string_field(merged, "authority").lower()
    if "updated_at" in merged:
        try:
            fields["updated_at"] = normalize_date(merged["updated_at"])
        except ValueError as exc:
            raise RecordError(f"field 'updated_at': {exc}") from None
    if "tags" in merged:
        fields["tags"] = _tags(merged["tags"])
    for name in _PASSTHROUGH_FIELDS:
        if name in merged:
            fields[name] = merged[name]
    if "version" in fields:
        fields["version"] = _version(fields["version"])
    for name in ("sections", "skus"):
        if name in defaults:
            fields[name] = defaults[name]

    try:
        return Document(**fields)
    except ValidationError as exc:
        raise RecordError(_describe_validation_error(exc)) from None


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _reject_lone_surrogates(record: Mapping[str, Any]) -> None:
    """A JSON or YAML escape such as \\ud800 makes a string no encoder can write (SQLite, hashing,
    the embedder all fail on it), so such a record is refused by name instead of failing later.
    Fields are strings or lists of strings (tags); deeper values are never read."""
    for key, value in record.items():
        for item in value if isinstance(value, (list, tuple)) else [value]:
            found = _SURROGATE.search(item) if isinstance(item, str) else None
            if found:
                name = str(key).encode("utf-8", "backslashreplace").decode("utf-8")
                raise RecordError(
                    f"field '{name}': invalid Unicode (lone surrogate "
                    f"U+{ord(found.group()):04X} at character {found.start() + 1})"
                )


def _string_field(record: Mapping[str, Any], name: str) -> str:
    value = record.get(name)
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise RecordError(f"field '{name}' must be a string, got {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):  # JSON's NaN / Infinity
        raise RecordError(f"field '{name}' must be a string, got {value}")
    return normalize(str(value))


# SQLite and Milvus store the version as a 64-bit integer; Python's ints are unbounded, and one
# out of range failed the whole ingest at the catalog write. A version is a small count anyway.
MAX_VERSION = 2**31 - 1


def _version(value: Any) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    elif isinstance(value, str) and re.fullmatch(r"[0-9]{1,10}", value.strip()):  # not "²", not 5,000 digits
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_VERSION:
        raise RecordError(f"field 'version' must be a whole number from 0 to {MAX_VERSION} (got {value!r:.40})")
    return value


def _tags(value: Any) -> list[str]:
    if isinstance(value, str):
        items: list[Any] = _TAG_SEPARATORS.split(value)
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise RecordError(f"field 'tags' must be a list or a comma-separated string, got {type(value).__name__}")
    if any(isinstance(item, (dict, list)) for item in items):
        raise RecordError("field 'tags' must contain only strings")
    return [tag for tag in (normalize(str(item)) for item in items) if tag]


def _describe_validation_error(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"]) or "record"
        problems.append(f"field '{field}': {error['msg']} (got {error.get('input')!r})")
    return "; ".join(problems)


def normalize_date(value: Any) -> str:
    """YYYY-MM-DD from a date, 2026-03-05, 2026/3/5, 2026-03-05T10:00, 2026年3月5日 or 20260305."""
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):  # YAML front matter parses bare dates itself
        return value.isoformat()
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"cannot read {value!r} as a date (expected YYYY-MM-DD)")
    text = normalize(str(value))
    match = _DATE.match(text) or _COMPACT_DATE.match(text)
    if match:
        try:
            return date(*(int(part) for part in match.groups())).isoformat()
        except ValueError:
            pass
    raise ValueError(f"cannot read {value!r} as a date (expected YYYY-MM-DD)")


# ----------------------------------------------------------------------------- CSV


def _read_csv(file: Path) -> Iterator[Document | LoadIssue]:
    decoder = LineDecoder(file)
    reader = csv.reader(decoded_lines(file, decoder))
    try:
        header_row = next(reader)
    except StopIteration:
        return  # no lines: reported as an empty file
    except csv.Error as exc:
        yield LoadIssue(where=f"{file}:1", message=f"malformed CSV header ({exc})")
        return
    if decoder.bad_lines:
        yield decoder.bad_line_issue(min(decoder.bad_lines), what="header row (and so the file)")
        return
    header = [normalize(column) for column in header_row]
    keys = [column.lower() for column in header]
    if not any(header):
        yield LoadIssue(where=f"{file}:1", message="empty CSV header")
        return

    rows = _csv_rows(file, reader, len(header), decoder)
    if SKU_COLUMNS <= set(keys):
        yield from _sku_documents(rows, keys)
    elif {"doc_id", "text"} <= set(keys):
        for where, _, values in rows:
            yield values if isinstance(values, LoadIssue) else _document_or_issue(_by_key(keys, values), where)
    else:
        yield from _generic_row_documents(file, rows, header)
    mixed = decoder.mixed_encoding_issue()
    if mixed:
        yield mixed


def _by_key(keys: list[str], values: list[str]) -> dict[str, str]:
    return {key: value for key, value in zip(keys, values, strict=False) if key}


CsvRow = tuple[str, int, list[str] | LoadIssue]


def _csv_rows(file: Path, reader, width: int, decoder: LineDecoder) -> Iterator[CsvRow]:
    """(path:line, data row number, normalised values) per non-empty row; bad rows as issues."""
    row_number = 0
    line_before = reader.line_num
    while True:
        start_line = line_before + 1  # a quoted field may span lines; report where the row starts
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            line_before = reader.line_num
            where = f"{file}:{start_line}"
            yield where, row_number, LoadIssue(where=where, message=f"malformed CSV row ({exc})")
            continue
        line_before = reader.line_num
        if not any(value.strip() for value in values):
            continue
        row_number += 1
        where = f"{file}:{start_line}"
        bad = [line for line in range(start_line, line_before + 1) if line in decoder.bad_lines]
        if bad:
            yield where, row_number, decoder.bad_line_issue(bad[0], what="row")
            continue
        if len(values) != width:
            yield (
                where,
                row_number,
                LoadIssue(where=where, message=f"row has {len(values)} fields but the header has {width}; skipped"),
            )
            continue
        yield where, row_number, [normalize(value) for value in values]


def _sku_documents(rows: Iterator[CsvRow], keys: list[str]) -> Iterator[Document | LoadIssue]:
    """One product Document per product_id, its SKU rows in file order."""
    products: dict[str, list[tuple[str, SkuRow]]] = {}
    seen_skus: dict[str, str] = {}
    for where, _, values in rows:
        if isinstance(values, LoadIssue):
            yield values
            continue
        try:
            sku_row = _sku_row(_by_key(keys, values))
        except RecordError as exc:
            yield LoadIssue(where=where, message=str(exc))
            continue
        if sku_row.sku in seen_skus:
            first = seen_skus[sku_row.sku]
            yield LoadIssue(where=where, message=f"duplicate sku '{sku_row.sku}' (first at {first}); skipped")
            continue
        seen_skus[sku_row.sku] = where
        products.setdefault(sku_row.product_id, []).append((where, sku_row))

    for product_id, entries in products.items():
        skus = [sku for _, sku in entries]
        dates = [sku.updated_at for sku in skus if sku.updated_at]
        yield Document(
            doc_id=f"sku-{product_id}",
            doc_type="product",
            title=next((sku.name for sku in skus if sku.name), product_id),
            text="",
            source=SKU_SOURCE,
            product_id=product_id,
            brand=next((sku.brand for sku in skus if sku.brand), None),
            category=next((sku.category for sku in skus if sku.category), None),
            updated_at=max(dates) if dates else None,
            skus=skus,
            origin=entries[0][0],
        )


def _sku_row(row: dict[str, str]) -> SkuRow:
    for required in ("product_id", "sku"):
        if not row.get(required):
            raise RecordError(f"missing or empty field '{required}'")
    updated_at = None
    if row.get("updated_at"):
        try:
            updated_at = normalize_date(row["updated_at"])
        except ValueError as exc:
            raise RecordError(f"field 'updated_at': {exc}") from None
    return SkuRow(
        product_id=row["product_id"],
        sku=row["sku"],
        name=row.get("name", ""),
        brand=row.get("brand", ""),
        category=row.get("category", ""),
        colour=row.get("colour") or row.get("color", ""),
        size=row.get("size", ""),
        price=_price(row.get("price", "")),
        stock=_stock(row.get("stock", "")),
        updated_at=updated_at,
    )


def _price(raw: str) -> float:
    cleaned = raw.replace(",", "").removeprefix("¥").removeprefix("￥").removesuffix("元").strip()
    try:
        price = float(cleaned)
    except ValueError:
        raise RecordError(f"field 'price': {raw!r} is not a number") from None
    if not math.isfinite(price) or price < 0:
        raise RecordError(f"field 'price': {raw!r} is not a non-negative amount")
    return price


def _stock(raw: str) -> int:
    cleaned = raw.replace(",", "").removesuffix("件").strip()
    if not re.fullmatch(r"\d+", cleaned):
        raise RecordError(f"field 'stock': {raw!r} is not a whole non-negative number")
    return int(cleaned)


def _generic_row_documents(file: Path, rows: Iterator[CsvRow], header: list[str]) -> Iterator[Document | LoadIssue]:
    """A table we know nothing about: each row becomes a document of `列名: 值` lines."""
    for where, row_number, values in rows:
        if isinstance(values, LoadIssue):
            yield values
            continue
        lines = [f"{name}: {value}" for name, value in zip(header, values, strict=False) if name and value]
        yield _document_or_issue(
            {"doc_id": f"{file.stem}-{row_number}", "title": file.stem, "text": "\n".join(lines)}, where
        )


# ----------------------------------------------------------------------------- Markdown

# ATX headings; a closing run of # only counts after a space, so "# C#" keeps its "#".
_H1 = re.compile(r"^#\s+(.+?)(?:\s+#+)?\s*$")
_H2 = re.compile(r"^##\s+(.+?)(?:\s+#+)?\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def _split_front_matter(text: str) -> tuple[Any, str]:
    """(front matter data, body) via python-frontmatter's handlers; ({}, text) when there is none.

    frontmatter.loads() silently drops a front matter that is not a mapping; we want to report it.
    """
    handler = frontmatter.detect_format(text, frontmatter.handlers)
    if handler is None:
        return {}, text
    try:
        raw, body = handler.split(text)
    except ValueError:  # an opening --- without a closing one: all of it is body
        return {}, text
    return handler.load(raw) or {}, body


def _read_markdown(file: Path, text: str) -> Iterator[Document | LoadIssue]:
    try:
        metadata, body = _split_front_matter(text.strip())
    except (yaml.YAMLError, ValueError) as exc:  # ValueError: JSON front matter
        mark = getattr(exc, "problem_mark", None)
        where = f"{file}:{mark.line + 2}" if mark else str(file)  # +1 for 1-based, +1 for the opening ---
        yield LoadIssue(where=where, message=f"invalid front matter ({getattr(exc, 'problem', None) or exc})")
        return
    if not isinstance(metadata, dict):
        yield LoadIssue(where=f"{file}:1", message="front matter must be a mapping of field: value")
        return
    body = body.strip("\n")
    first_body_line = text[: text.find(body)].count("\n") + 1 if body and body in text else 1

    lines = body.splitlines()
    title_line = _first_h1(lines)
    h1 = _H1.match(lines[title_line]) if title_line is not None else None  # _first_h1 found a match there
    h1_text = normalize(h1.group(1)) if h1 else ""
    metadata = {str(key).lower(): value for key, value in metadata.items()}
    title = normalize(str(metadata.get("title") or h1_text or file.stem))

    issues: list[LoadIssue] = []
    # The H1 that only repeats the title is a field, not content of the first section.
    skip_line = title_line if h1_text and h1_text == title else None
    sections = _markdown_sections(lines, first_body_line, skip_line, file, issues)
    yield from issues
    has_structure = any(section.heading or section.table for section in sections)
    yield _document_or_issue(
        {**metadata, "title": title, "text": body},
        str(file),
        doc_id=file.stem,
        sections=sections if has_structure else None,
    )


def _first_h1(lines: list[str]) -> int | None:
    in_fence = False
    for index, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and _H1.match(line):
            return index
    return None


def _markdown_sections(
    lines: list[str], first_line: int, skip_line: int | None, file: Path, issues: list[LoadIssue]
) -> list[Section]:
    """Split at `## ` headings; pipe tables become Section.table rows, the rest stays prose."""
    sections: list[Section] = []
    heading = ""
    prose: list[str] = []
    table: list[dict[str, str]] = []
    in_fence = False
    index = 0

    def close_section() -> None:
        text = normalize("\n".join(prose))
        if heading or text or table:
            sections.append(Section(heading=heading, text=text, table=list(table) or None))

    while index < len(lines):
        line = lines[index]
        if index == skip_line:
            index += 1
            continue
        if _FENCE.match(line):
            in_fence = not in_fence
        if in_fence or _FENCE.match(line):  # code blocks are prose, whatever they contain
            prose.append(line)
            index += 1
            continue
        h2 = _H2.match(line)
        if h2:
            close_section()
            heading, prose, table = normalize(h2.group(1)), [], []
            index += 1
            continue
        if "|" in line and index + 1 < len(lines) and _is_table_separator(lines[index + 1]):
            index = _parse_table(lines, index, first_line, file, table, issues)
            continue
        prose.append(line)
        index += 1
    close_section()
    return sections


def _is_table_separator(line: str) -> bool:
    # The pipe requirement keeps a setext underline or a `---` rule from reading as a table.
    return "|" in line and "-" in line and bool(_TABLE_SEPARATOR.match(line))


def _parse_table(
    lines: list[str], start: int, first_line: int, file: Path, rows: list[dict[str, str]], issues: list[LoadIssue]
) -> int:
    """Append the table at lines[start] to rows; return the index of the first line after it."""
    header = [cell or f"列{i + 1}" for i, cell in enumerate(_table_cells(lines[start]))]
    index = start + 2  # header + separator row
    while index < len(lines) and lines[index].strip() and "|" in lines[index]:
        cells = _table_cells(lines[index])
        if len(cells) != len(header):
            issues.append(
                LoadIssue(
                    where=f"{file}:{first_line + index}",
                    message=f"table row has {len(cells)} cells but the header has {len(header)}; row skipped",
                )
            )
        elif any(cells):
            rows.append(dict(zip(header, cells, strict=False)))
        index += 1
    return index


def _table_cells(line: str) -> list[str]:
    stripped = line.strip()
    if stripped.startswith("|"):
        stripped = stripped[1:]
    if stripped.endswith("|") and not stripped.endswith("\\|"):
        stripped = stripped[:-1]
    return [normalize(cell.replace("\\|", "|")) for cell in _UNESCAPED_PIPE.split(stripped)]


# ----------------------------------------------------------------------------- plain text and PDF

_SHORT_TITLE = 40
_SENTENCE_ENDINGS = tuple("。！？.!?；;，,：:")


def _read_plain_text(file: Path, text: str) -> Iterator[Document | LoadIssue]:
    content = normalize(text)
    first_line = content.split("\n", 1)[0]
    # A short first line that is not a sentence, followed by more text, reads as a heading.
    # The text keeps it; the chunker drops a leading title line so chunks do not repeat it.
    looks_like_heading = len(first_line) <= _SHORT_TITLE and not first_line.endswith(_SENTENCE_ENDINGS)
    title = first_line if "\n" in content and looks_like_heading else file.stem
    yield _document_or_issue({"doc_id": file.stem, "title": title, "text": content}, str(file))


def _read_pdf(file: Path) -> Iterator[Document | LoadIssue]:
    try:
        reader = PdfReader(file)
        if reader.is_encrypted and not reader.decrypt(""):
            yield LoadIssue(where=str(file), message="encrypted PDF (password required); skipped")
            return
        pages = [page.extract_text() or "" for page in reader.pages]
        title = (reader.metadata.title if reader.metadata else None) or file.stem
    except Exception as exc:  # pypdf raises many types for broken files; any of them means unreadable
        yield LoadIssue(where=str(file), message=f"unreadable PDF ({type(exc).__name__}: {exc}); skipped")
        return
    text = "\n\n".join(normalize(page) for page in pages if page.strip())
    if not text:
        yield LoadIssue(where=str(file), message="PDF has no extractable text (scanned images?); skipped")
        return
    yield _document_or_issue({"doc_id": file.stem, "title": str(title), "text": text}, str(file))
