"""The progress bar of the record-by-record runners (batch, eval): rich, on stderr, with ETA."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


class RecordProgress:
    """`with RecordProgress(label, total, enabled) as advance:` then advance(record) per record.

    The bar's description counts the records flagged with each of `counted` ("error",
    "refused"); an error record is counted as an error only. Disabled: advance does nothing.
    """

    def __init__(self, label: str, total: int, enabled: bool, counted: Sequence[str] = ("error",)):
        self.label, self.total, self.enabled = label, total, enabled
        self.counts = {flag: 0 for flag in counted}

    def __enter__(self) -> Callable[[dict], None]:
        if not self.enabled:
            return lambda record: None
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.bar = Progress(
            TextColumn(f"[bold]{self.label}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.description}"),
            console=Console(stderr=True),
        )
        self.task = self.bar.add_task("", total=self.total)
        self.bar.start()
        return self.advance

    def advance(self, record: dict) -> None:
        flag = "error" if record.get("error") else next((f for f in self.counts if record.get(f)), None)
        if flag in self.counts:
            self.counts[flag] += 1
        description = "  ".join(f"{'errors' if f == 'error' else f} {n}" for f, n in self.counts.items() if n)
        self.bar.update(self.task, advance=1, description=description)

    def __exit__(self, *exc: Any) -> None:
        if self.enabled:
            self.bar.stop()
