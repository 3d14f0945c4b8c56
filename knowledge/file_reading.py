"""A knowledge file's bytes as text, bounded in size and decoded line by line.

Why line by line: a shop's CSV or JSONL export is often stitched together from several systems,
so one file can mix UTF-8 and GBK rows. Decoding the whole file at once either rejects all of it
or, worse, reads its UTF-8 rows as GB18030 (which accepts almost any bytes) and stores mojibake.
Each line is tried as UTF-8 first, then as GB18030 (GBK's superset); a file whose non-ASCII lines
are all GB18030 is simply a GBK file, and only a file that mixes both is reported.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

from citescope.knowledge.schema import LoadIssue

FALLBACK_ENCODING = "gb18030"
MB = 1024 * 1024
EMPTY_FILE = "empty, nothing ingested"
# How to raise the limit, named in every refusal so the message is enough to act on.
SIZE_LIMIT_HINT = "raise it with --max-file-mb or CITESCOPE_MAX_FILE_MB"


def size_issue(file: Path, max_bytes: int | None) -> LoadIssue | None:
    """Why `file` is not read at all (empty, over the size limit, cannot be statted), or None."""
    try:
        size = file.stat().st_size
    except OSError as exc:
        return LoadIssue(where=str(file), message=f"cannot read file ({exc.strerror or exc})")
    if size == 0:
        return LoadIssue(where=str(file), message=EMPTY_FILE)
    if max_bytes is not None and size > max_bytes:
        return LoadIssue(
            where=str(file),
            message=(f"{_size(size)} is over the limit of {_size(max_bytes)} per file ({SIZE_LIMIT_HINT}); skipped"),
        )
    return None


def _size(n_bytes: int) -> str:
    return f"{n_bytes / MB:.1f} MB" if n_bytes >= MB // 10 else f"{n_bytes:,} bytes"


class LineDecoder:
    """Decodes one file's lines, remembering which needed GB18030 and which neither encoding read.

    An undecodable line still comes back (bytes GB18030 cannot read replaced by U+FFFD) so that
    line counting, e.g. the csv module's, stays right; callers skip the record it belongs to.
    """

    def __init__(self, file: Path):
        self.file = file
        self.fallback_lines: list[int] = []
        self.bad_lines: set[int] = set()
        self._utf8_non_ascii = 0

    def decode(self, lineno: int, raw: bytes) -> str:
        try:
            text = raw.decode("utf-8")
            if not raw.isascii():
                self._utf8_non_ascii += 1
        except UnicodeDecodeError:
            try:
                text = raw.decode(FALLBACK_ENCODING)
                self.fallback_lines.append(lineno)
            except UnicodeDecodeError:
                self.bad_lines.add(lineno)
                text = raw.decode(FALLBACK_ENCODING, errors="replace")
        return text.removeprefix("\ufeff") if lineno == 1 else text

    def bad_line_issue(self, lineno: int, what: str = "record") -> LoadIssue:
        return LoadIssue(
            where=f"{self.file}:{lineno}",
            message=f"not text in UTF-8 or {FALLBACK_ENCODING.upper()} encoding; {what} skipped",
        )

    def mixed_encoding_issue(self) -> LoadIssue | None:
        """One issue listing the GB18030 lines of a file whose other lines are UTF-8, else None."""
        if not self.fallback_lines or not self._utf8_non_ascii:
            return None
        return LoadIssue(
            where=str(self.file),
            message=(
                f"mixes encodings: {_line_ranges(self.fallback_lines)} decoded as GB18030, the rest as UTF-8; "
                "check those lines for garbled text"
            ),
        )


def decoded_lines(file: Path, decoder: LineDecoder) -> Iterator[str]:
    """The file's lines, decoded, line endings kept (the csv module needs them), streamed."""
    with file.open("rb") as handle:
        # Split on b"\n" only: neither UTF-8 nor GB18030 uses that byte inside a character, and
        # str.splitlines() would also split a JSON string at U+2028 or \x1c.
        for lineno, raw in enumerate(handle, start=1):
            yield decoder.decode(lineno, raw)


def _line_ranges(lines: list[int], shown: int = 20) -> str:
    ranges: list[str] = []
    start = previous = lines[0]
    for line in [*lines[1:], None]:
        if line is not None and line == previous + 1:
            previous = line
            continue
        ranges.append(str(start) if start == previous else f"{start}-{previous}")
        if line is not None:
            start = previous = line
    more = f" and {len(ranges) - shown} more ranges" if len(ranges) > shown else ""
    noun = "line" if len(lines) == 1 else "lines"
    return f"{noun} {', '.join(ranges[:shown])}{more}"


def read_document_text(file: Path) -> tuple[str | None, list[LoadIssue]]:
    """A one-document file's text (Markdown, plain text) and what was wrong with its encoding.

    The file is one record, so a line neither encoding reads skips the whole document (dropping
    the line could change what a policy says); the text is None then. Raises OSError.
    """
    raw = file.read_bytes()
    try:
        return raw.decode("utf-8-sig"), []
    except UnicodeDecodeError:
        pass
    decoder = LineDecoder(file)
    # the same splitting at b"\n" as decoded_lines
    text = "".join(decoder.decode(lineno, line) for lineno, line in enumerate(io.BytesIO(raw), start=1))
    if decoder.bad_lines:
        return None, [decoder.bad_line_issue(min(decoder.bad_lines), what="document")]
    mixed = decoder.mixed_encoding_issue()
    return text, [mixed] if mixed else []
