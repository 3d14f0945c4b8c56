"""Load a knowledge folder (or one file) into Documents, reporting bad input instead of crashing.

Formats: JSONL, CSV (SKU tables, doc_id/text tables, anything else), Markdown with front matter,
plain text and PDF, each read by its own module (load_records for JSONL and the record checks
every format shares, load_csv, load_markdown, load_text); `lexicon.json` files are merged into
one Lexicon. Every malformed record becomes a LoadIssue naming `path:line` and is skipped, so one
bad line never loses the load.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path

from citescope.knowledge.file_reading import EMPTY_FILE, MB, read_document_text, size_issue
from citescope.knowledge.lexicon import Lexicon
from citescope.knowledge.load_csv import read_csv
from citescope.knowledge.load_markdown import read_markdown
from citescope.knowledge.load_records import LONE_SURROGATE, build_document, normalize_date, read_jsonl
from citescope.knowledge.load_text import read_pdf, read_plain_text
from citescope.knowledge.schema import Document, LoadIssue
from citescope.knowledge.settings import Settings
from citescope.knowledge.shop_profile import SHOP_PROFILE_FILENAME

SUPPORTED_SUFFIXES = frozenset({".jsonl", ".csv", ".md", ".txt", ".pdf"})
LEXICON_FILENAME = "lexicon.json"
# Evaluation sets live next to corpora; they are questions, not knowledge.
QUESTION_FILE_PATTERN = "*questions*.jsonl"
DEFAULT_MAX_FILE_BYTES = int(Settings.model_fields["max_file_mb"].default * MB)

# Bump when the same file loads into different documents (an alias, a new field): cached dataset
# KBs (workflows/evaluation/datasets.py) are keyed by it and rebuild instead of serving the old reading.
LOADER_VERSION = 3  # 3: HTML markup removed from every field


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
        if LONE_SURROGATE.search(str(file)):
            # Bytes that are not UTF-8 in a file name (a GBK-named file from a Windows zip) become
            # lone surrogates in Python; the origin and doc id made from it could not be stored.
            shown = os.fsencode(file).decode("utf-8", "backslashreplace")
            issues.append(LoadIssue(where=shown, message="file name is not valid UTF-8; rename the file (skipped)"))
            continue
        if fnmatch(file.name, QUESTION_FILE_PATTERN):
            if file == root:  # named explicitly: say why nothing was loaded
                issues.append(LoadIssue(where=str(file), message="evaluation question set, not knowledge; skipped"))
            continue
        if file.name == SHOP_PROFILE_FILENAME:
            continue  # the shop's profile: the ingest reads it (knowledge/shop_profile.py); no document
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
        yield from read_pdf(file)
        return
    try:
        if suffix in (".jsonl", ".csv"):  # streamed: one record per line, decoded line by line
            yield from (read_jsonl if suffix == ".jsonl" else read_csv)(file)
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
    yield from (read_markdown if suffix == ".md" else read_plain_text)(file, text)


# imported from here by callers that read documents from records (bench, tests)
__all__ = ["LOADER_VERSION", "DEFAULT_MAX_FILE_BYTES", "build_document", "load_path", "normalize_date"]
