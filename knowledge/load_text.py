"""Plain text and PDF files: one document each, titled by a short first line or the file name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pypdf import PdfReader

from citescope.knowledge.load_records import document_or_issue
from citescope.knowledge.markup import normalize_text as normalize  # every field, as in load_records
from citescope.knowledge.schema import Document, LoadIssue

_SHORT_TITLE = 40
_SENTENCE_ENDINGS = tuple("。！？.!?；;，,：:")


def read_plain_text(file: Path, text: str) -> Iterator[Document | LoadIssue]:
    content = normalize(text)
    first_line = content.split("\n", 1)[0]
    # A short first line that is not a sentence, followed by more text, reads as a heading.
    # The text keeps it; the chunker drops a leading title line so chunks do not repeat it.
    looks_like_heading = len(first_line) <= _SHORT_TITLE and not first_line.endswith(_SENTENCE_ENDINGS)
    title = first_line if "\n" in content and looks_like_heading else file.stem
    yield document_or_issue({"doc_id": file.stem, "title": title, "text": content}, str(file))


def read_pdf(file: Path) -> Iterator[Document | LoadIssue]:
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
    yield document_or_issue({"doc_id": file.stem, "title": str(title), "text": text}, str(file))
