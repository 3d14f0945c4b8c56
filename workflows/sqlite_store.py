"""The one way the workflow stores (sessions, traces, experience) open their SQLite file."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path


def open_sqlite(
    path: Path, schema: str, foreign_keys: bool = False, migrate: Callable[[sqlite3.Connection], None] | None = None
) -> sqlite3.Connection:
    """An autocommit, WAL-mode connection usable from any thread (the store serialises it with
    its own lock), with `schema` applied; the folder is created first. `migrate` runs before the
    schema, so it can bring a file written by an older version up to the columns the schema's
    indexes name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), timeout=30, check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    if foreign_keys:
        conn.execute("PRAGMA foreign_keys=ON")
    if migrate is not None:
        conn.execute("BEGIN IMMEDIATE")  # two processes opening an old file migrate it once
        try:
            migrate(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    conn.executescript(schema)
    return conn


def columns_of(conn: sqlite3.Connection, table: str) -> set[str]:
    """The table's column names (empty when the table does not exist yet)."""
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def add_missing_column(conn: sqlite3.Connection, table: str, column: str, definition: str) -> None:
    """ALTER TABLE ADD COLUMN when an existing table lacks it; existing rows get its DEFAULT."""
    present = columns_of(conn, table)
    if present and column not in present:
        conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")
