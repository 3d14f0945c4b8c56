"""The SQLite stores own their rows by tenant: files written before tenants existed open with
every row readable as the default tenant, another tenant sees nothing, and what is stored is
redacted of personal data."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import pytest

from citescope.workflows.experience import ExperienceRound, ExperienceStore
from citescope.workflows.sessions import PendingTask, SessionStore, Turn
from citescope.workflows.tenants import DEFAULT_TENANT
from citescope.workflows.traces import TraceStore

# The schemas as released before tenants (workflows/*.py at 677cd0b)
OLD_SESSIONS = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, created_at REAL NOT NULL, updated_at REAL NOT NULL, entity TEXT,
    pending TEXT);
CREATE TABLE turns (session_id TEXT NOT NULL REFERENCES sessions(id), number INTEGER NOT NULL, question TEXT NOT NULL,
    answer TEXT NOT NULL, trace_id TEXT NOT NULL, refused INTEGER NOT NULL, clarification TEXT, at REAL NOT NULL,
    PRIMARY KEY (session_id, number));
INSERT INTO sessions VALUES ('old-1', 1.0, 2.0, NULL, NULL);
INSERT INTO turns VALUES ('old-1', 1, '退货要几天？', '7天【faq-001#0】', 'trace-old-1', 0, NULL, 1.0);
INSERT INTO turns VALUES ('old-1', 2, '运费谁出？', '店铺承担', 'trace-old-2', 0, NULL, 2.0);
"""
OLD_TRACES = """
CREATE TABLE traces (trace_id TEXT PRIMARY KEY, session_id TEXT, created_at REAL NOT NULL, question TEXT NOT NULL,
    trace TEXT NOT NULL);
CREATE INDEX traces_session ON traces(session_id, created_at);
INSERT INTO traces VALUES ('trace-old-1', 'old-1', 1.0, '退货要几天？',
    '{"trace_id": "trace-old-1", "question": "退货要几天？"}');
"""
OLD_ROUNDS = """
CREATE TABLE rounds (
    trace_id TEXT PRIMARY KEY, session_id TEXT, created_at REAL NOT NULL, question TEXT NOT NULL,
    features TEXT NOT NULL, vector TEXT NOT NULL, arm TEXT NOT NULL, policy_source TEXT NOT NULL,
    scores TEXT NOT NULL, reason TEXT NOT NULL, plan TEXT NOT NULL, tool_calls TEXT NOT NULL,
    evidence_ids TEXT NOT NULL, inspection TEXT, refused INTEGER NOT NULL, refusal_reason TEXT NOT NULL,
    degraded INTEGER NOT NULL, degradation_reasons TEXT NOT NULL, conflicts INTEGER NOT NULL,
    latency_ms REAL, implicit_reward REAL, reward REAL, applied_reward REAL);
CREATE INDEX rounds_session ON rounds(session_id, created_at);
CREATE TABLE feedback (id INTEGER PRIMARY KEY AUTOINCREMENT, trace_id TEXT NOT NULL REFERENCES rounds(trace_id),
    rating INTEGER NOT NULL CHECK (rating IN (-1, 1)), comment TEXT NOT NULL, created_at REAL NOT NULL);
INSERT INTO rounds VALUES ('trace-old-1', 'old-1', 1.0, '退货要几天？', '{}', '{}', 'lookup', 'rules', '{}', '',
    '[]', '[]', '[]', NULL, 0, '', 0, '[]', 0, 10.0, 0.5, 0.5, 0.5);
"""


def _old_file(path, script: str) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.close()


def _turn(question: str, trace_id: str, answer: str = "好的") -> Turn:
    return Turn(question=question, answer=answer, trace_id=trace_id, at=datetime.now(UTC))


def test_files_from_before_tenants_open_with_their_rows_in_the_default_tenant(tmp_path):
    _old_file(tmp_path / "sessions.sqlite", OLD_SESSIONS)
    _old_file(tmp_path / "traces.sqlite", OLD_TRACES)
    _old_file(tmp_path / "experience.sqlite", OLD_ROUNDS)
    sessions, traces = SessionStore(tmp_path / "sessions.sqlite"), TraceStore(tmp_path / "traces.sqlite")
    experience = ExperienceStore(tmp_path / "experience.sqlite")
    try:
        old = sessions.get("old-1")
        assert [t.trace_id for t in old.turns] == ["trace-old-1", "trace-old-2"]
        assert sessions.get("old-1", "shop-b") is None
        sessions.add_turn("old-1", _turn("还有别的吗", "trace-old-3"), None, None)  # continues, numbered on
        assert [t.trace_id for t in sessions.get("old-1").turns][-1] == "trace-old-3"
        assert traces.get("trace-old-1", DEFAULT_TENANT)["question"] == "退货要几天？"
        assert traces.get("trace-old-1", "shop-b") is None
        assert experience.get("trace-old-1", DEFAULT_TENANT).arm == "lookup"
        experience.add_feedback("trace-old-1", -1, "", DEFAULT_TENANT)
        with pytest.raises(KeyError):
            experience.add_feedback("trace-old-1", -1, "", "shop-b")
    finally:
        sessions.close(), traces.close(), experience.close()
    # opening again migrates nothing twice
    again = SessionStore(tmp_path / "sessions.sqlite")
    assert len(again.get("old-1").turns) == 3
    again.close()


def test_two_tenants_same_session_id_are_two_conversations_stored_redacted(tmp_path):
    store = SessionStore(tmp_path / "sessions.sqlite")
    pending = PendingTask(kind="product", need=["product"], question="手机13812345678的订单到哪了", trace_id="t0")
    store.add_turn("s1", _turn("我手机 138-1234-5678，订单号 DD20240501123456", "t1"), None, pending, "shop-a")
    store.add_turn("s1", _turn("退货要几天？", "t2"), None, None, "shop-b")
    a, b = store.get("s1", "shop-a"), store.get("s1", "shop-b")
    assert [t.trace_id for t in a.turns] == ["t1"] and [t.trace_id for t in b.turns] == ["t2"]
    assert a.turns[0].question == "我手机 [手机号]，订单号 [订单号]"
    assert a.pending.question == "手机[手机号]的订单到哪了"
    assert store.get("s1") is None  # the default tenant has no s1
    store.close()
    raw = b"".join(path.read_bytes() for path in tmp_path.glob("sessions.sqlite*"))
    assert b"13812345678" not in raw and b"1234-5678" not in raw


def test_rounds_and_feedback_comments_are_owned_and_redacted(tmp_path):
    store = ExperienceStore(tmp_path / "experience.sqlite")
    store.log(
        ExperienceRound(
            trace_id="t1",
            question="电话13812345678能改地址吗",
            arm="lookup",
            tenant="shop-a",
            features={"canonical": "电话13812345678能改地址吗"},
        )
    )
    assert store.get("t1", "shop-b") is None and store.rounds(tenant="shop-b") == []
    with pytest.raises(KeyError):
        store.add_feedback("t1", -1, "x", "shop-b")
    rated = store.add_feedback("t1", 1, "请打 13912345678 联系我", "shop-a")
    assert rated.comment == "请打 [手机号] 联系我"
    assert rated.question == "电话[手机号]能改地址吗" and rated.features["canonical"] == "电话[手机号]能改地址吗"
    store.close()
