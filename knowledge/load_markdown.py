"""Markdown files: front matter for the fields, the first H1 as the title, `## ` sections, pipe
tables as section rows."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import frontmatter
import yaml

from citescope.knowledge.load_records import document_or_issue
from citescope.knowledge.markup import normalize_text as normalize  # every field, as in load_records
from citescope.knowledge.schema import Document, LoadIssue, Section

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


def read_markdown(file: Path, text: str) -> Iterator[Document | LoadIssue]:
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
    yield document_or_issue(
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
