"""A logging handler that keeps every record as the service's JSON log line, so a test can read
what `run.py serve` would have written (and check that it holds no key or personal data)."""

from __future__ import annotations

import logging

from citescope.workflows.service import JsonLogFormatter


class JsonLogLines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(JsonLogFormatter())
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))
