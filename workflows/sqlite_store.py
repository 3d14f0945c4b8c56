"""The one way the workflow stores (sessions, traces, experience) open their SQLite file."""
from __future__ import annotations

import sqlite3
from pathlib import Path


def open_sqlite(path: Path, schema: str, foreign_keys: bool = False) -> sqlite3.Connection:
    """An autocommit, WAL-mode connection usable from any thread (the store serialises it with
    its own lock), with `schema` applied; the folder is created first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), timeout=30, check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    if foreign_keys:
        conn.execute("PRAGMA foreign_keys=ON")
    conn.executescript(schema)
    return conn
