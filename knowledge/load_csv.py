"""CSV files: SKU tables (product_id, sku, price, stock columns) become one product document per
product with its SKU rows; doc_id/text tables and any other table become a document per row."""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterator
from pathlib import Path

from citescope.knowledge.file_reading import LineDecoder, decoded_lines
from citescope.knowledge.load_records import RecordError, document_or_issue, normalize_date
from citescope.knowledge.markup import normalize_text as normalize  # every field, as in load_records
from citescope.knowledge.schema import Document, LoadIssue, SkuRow

SKU_COLUMNS = frozenset({"product_id", "sku", "price", "stock"})
SKU_SOURCE = "商品SKU表"


def read_csv(file: Path) -> Iterator[Document | LoadIssue]:
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
            yield values if isinstance(values, LoadIssue) else document_or_issue(_by_key(keys, values), where)
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
        yield document_or_issue(
            {"doc_id": f"{file.stem}-{row_number}", "title": file.stem, "text": "\n".join(lines)}, where
        )
