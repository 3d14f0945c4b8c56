"""When `ingest --prune` may remove documents, checked before anything is written.

Prune removes every KB document its paths no longer hold, so a mistyped folder, an unreadable
share or an export cut short would look like "everything was deleted" (one typo removed all 156
documents of the demo KB). Refusing costs a rerun; a wrong prune costs the KB.
"""

from __future__ import annotations

import os
from pathlib import Path

from citescope.knowledge.schema import LoadIssue


class PruneRefused(ValueError):
    """A prune that would remove documents by accident; nothing was written."""

    def __init__(self, reason: str, remedy: str):
        super().__init__(f"--prune refused, nothing changed: {reason}. {remedy}")
        self.reason, self.remedy = reason, remedy


def check_sources(paths: list[Path], documents_per_path: dict[str, int], issues: list[LoadIssue]) -> None:
    """Refuse when a path is missing, unreadable or yields no documents: its documents would all
    look deleted."""
    for path in paths:
        if documents_per_path.get(str(path), 0):
            continue
        own = [i.message for i in issues if i.where == str(path)]
        why = "; ".join(own) if own else "no documents in it"
        raise PruneRefused(
            f"{path}: {why}",
            "Prune only with paths that hold the KB's documents (check the path), or ingest without --prune",
        )


def check_share(removing: int, total: int, max_share: float, allow: bool) -> None:
    """Refuse to remove more than max_share of the KB's documents unless allowed."""
    if allow or not total or removing / total <= max_share:
        return
    raise PruneRefused(
        f"it would remove {removing} of {total} documents ({removing / total:.0%}), more than the "
        f"{max_share:.0%} allowed (--max-prune-share)",
        "See which with --dry-run; pass --yes if that is what you want",
    )


class ProtectedSources:
    """The files and folders that had an issue in this load. A file that failed to parse, in part
    or whole, or a folder that could not be listed, must not make its documents look deleted."""

    def __init__(self, issues: list[LoadIssue]):
        self.paths = {os.path.abspath(file_of(issue.where)) for issue in issues}
        self.folders = tuple(p.rstrip(os.sep) + os.sep for p in self.paths if os.path.isdir(p))

    def __contains__(self, origin: str) -> bool:
        if not origin:
            return False
        source = os.path.abspath(file_of(origin))
        return source in self.paths or source.startswith(self.folders)


def file_of(where: str) -> str:
    """The path of `path:line`, or `where` itself when it names no line."""
    path, _, line = where.rpartition(":")
    return path if path and line.isdigit() else where
