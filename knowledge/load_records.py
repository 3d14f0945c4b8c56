"""Records -> Documents: the one checked reading of a record's fields that every format ends in
(JSONL lines directly; CSV rows, Markdown and plain-text files through a record they build).
A record that cannot become a Document is a LoadIssue naming `path:line` and its field."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from contextlib import suppress
from datetime import date, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from citescope.knowledge.file_reading import LineDecoder, decoded_lines

# Every field any loader reads goes through this one step: normalised text with HTML markup
# removed (knowledge/markup.py), so no format can carry a <script> or a javascript: link in.
from citescope.knowledge.markup import normalize_text as normalize
from citescope.knowledge.schema import Document, LoadIssue

_STRING_FIELDS = ("title", "text", "source", "product_id", "brand", "category")
_PASSTHROUGH_FIELDS = ("version",)
# Another name exports use for the day a document was last updated (news and site crawls say
# `date`). The canonical field wins; an alias that is not a full date (a bare year "2014") is left
# unread rather than rejecting a document that loads fine without it.
DATE_ALIASES = ("date",)
_TAG_SEPARATORS = re.compile(r"[,，、;；]")
_DATE = re.compile(
    r"^(\d{4})\s*[-/.年]\s*(\d{1,2})\s*[-/.月]\s*(\d{1,2})\s*日?"
    r"(?:[T\s]+\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\s*(?:Z|[+-]\d{2}:?\d{2})?)?$"
)
_COMPACT_DATE = re.compile(r"^(\d{4})(\d{2})(\d{2})$")


class RecordError(ValueError):
    """One record cannot become a Document; the message names the offending field."""


def read_jsonl(file: Path) -> Iterator[Document | LoadIssue]:
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
        yield document_or_issue(record, where)
    mixed = decoder.mixed_encoding_issue()
    if mixed:
        yield mixed


def document_or_issue(record: Mapping[str, Any], where: str, **defaults: Any) -> Document | LoadIssue:
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


LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _reject_lone_surrogates(record: Mapping[str, Any]) -> None:
    """A JSON or YAML escape such as \\ud800 makes a string no encoder can write (SQLite, hashing,
    the embedder all fail on it), so such a record is refused by name instead of failing later.
    Fields are strings or lists of strings (tags); deeper values are never read."""
    for key, value in record.items():
        for item in value if isinstance(value, (list, tuple)) else [value]:
            found = LONE_SURROGATE.search(item) if isinstance(item, str) else None
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
