"""Tables a web page lost its markup from, one cell per line, read back as rows.

A crawled admissions page keeps 专业名称 / 文史/历史类 / 最高 / 文史/历史类 / 最低 / … / 金融学类 / 634 / 630 /
675 / 673 / 法学 / … as plain lines: a row chunk of it would be four bare numbers. Read back, a row
says 专业名称: 金融学类；文史/历史类最高: 634；… and a question about one cell finds its row.
Only a row with a value for every column is named so; a shorter row (国际政治 / 630 / 628 under four
columns) cannot say which columns it fills, and is kept as its label and values alone.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from citescope.knowledge.schema import Section

_VALUE = re.compile(r"[-+]?\d+(?:\.\d+)?%?")
_WORD = re.compile(r"[\u4e00-\u9fffA-Za-z]")  # a caption says something (各专业录取分数线), not "/"
_MAX_LABEL_CHARS = 40  # a row label (金融学类(国家专项)) or a header cell, not a sentence
_MAX_HEADER_CHARS = 20
_MIN_ROWS = 3
FALLBACK_CAPTION = "表格"


class _Row(NamedTuple):
    start: int  # line index of its label
    label: str
    values: list[str]


def flat_table_sections(text: str) -> list[Section] | None:
    """The text as prose before, the table, prose after; None when it holds no such table."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    rows = _longest_row_run(lines)
    if rows is None:
        return None
    width = max(len(row.values) for row in rows)
    if width == 1 and _numbered(rows):
        return None  # 1 / 本溪市高级中学 / 2 / …: a numbered list read one line off, not a table
    header = _header(lines[: rows[0].start], width)
    if header is None:
        return None
    header_start, label_column, columns = header
    caption_line = header_start - 1
    has_caption = caption_line >= 0 and _is_cell(lines[caption_line]) and bool(_WORD.search(lines[caption_line]))
    before = lines[: caption_line if has_caption else header_start]
    after_start = rows[-1].start + 1 + len(rows[-1].values)
    table = [
        {label_column: row.label, **dict(zip(columns, row.values, strict=False))}
        for row in rows
        if len(row.values) == width
    ]
    partial = [f"{row.label}：{'、'.join(row.values)}" for row in rows if len(row.values) < width]
    sections = [Section(heading="", text="\n".join(before))] if before else []
    sections.append(
        Section(heading=lines[caption_line] if has_caption else FALLBACK_CAPTION, text="\n".join(partial), table=table)
    )
    if after_start < len(lines):
        sections.append(Section(heading="", text="\n".join(lines[after_start:])))
    return sections


def _longest_row_run(lines: list[str]) -> list[_Row] | None:
    """The longest run of consecutive rows (a label line, then value lines), if _MIN_ROWS long."""
    best: list[_Row] = []
    run: list[_Row] = []
    index = 0
    while index < len(lines):
        end = index + 1
        while end < len(lines) and _VALUE.fullmatch(lines[end]):
            end += 1
        if end > index + 1 and _is_cell(lines[index], _MAX_LABEL_CHARS):
            run.append(_Row(index, lines[index], lines[index + 1 : end]))
            index = end
            continue
        best, run = max(best, run, key=len), []
        index += 1
    best = max(best, run, key=len)
    return best if len(best) >= _MIN_ROWS else None


def _header(before: list[str], width: int) -> tuple[int, str, list[str]] | None:
    """(first line, label column, value columns) of the header right above the rows: width cells,
    or 2 x width lines that pair up (文史/历史类 + 最高) when one half repeats; then the label
    column's name (专业名称)."""
    for span in (2 * width, width) if width > 1 else (width,):
        start = len(before) - span - 1
        if start < 0 or not all(_is_cell(cell) for cell in before[start:]):
            continue
        cells = before[start + 1 :]
        if span == 2 * width:
            groups, kinds = cells[0::2], cells[1::2]
            if len(set(groups)) == width and len(set(kinds)) == width:
                continue  # nothing repeats: not one header cell split over two lines
            cells = [group + kind for group, kind in zip(groups, kinds, strict=False)]
        return start, before[start], cells
    return None


def _numbered(rows: list[_Row]) -> bool:
    numbers = [row.values[0] for row in rows]
    return all(n.isdigit() for n in numbers) and [int(n) for n in numbers] == list(
        range(int(numbers[0]), int(numbers[0]) + len(numbers))
    )


def _is_cell(line: str, limit: int = _MAX_HEADER_CHARS) -> bool:
    """A table cell: short, not a value, not a "key：value" line (点击数：3793)."""
    return len(line) <= limit and not _VALUE.fullmatch(line) and not re.search(r"[:：]", line)
