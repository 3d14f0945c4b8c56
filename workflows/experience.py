"""Experience: every answered round, its later feedback, and the bandit that learns from them.

`ExperienceStore` is one SQLite file per KB (`<kb>/experience.sqlite`, WAL, safe across threads
and processes): rounds (features, arm, scores, tool calls, evidence, inspector report, flags,
latency, trace and session ids, rewards), feedback (rating, comment, time) and the policy's
learned state. `ExperienceLearner` wires the store to the bandit and the rewards: it is the
pipeline's policy (`choose`) and its experience log (`record`, `feedback`). Every update runs in
one write transaction that first reloads the state another process may have saved, so the
service and the `feedback` command never overwrite each other's learning.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from citescope.agents.arms import PlanBudget
from citescope.agents.policy import PolicyDecision
from citescope.agents.query_analysis import QueryFeatures
from citescope.workflows.bandit import LinUCBPolicy
from citescope.workflows.personal_data import redact_personal, redact_personal_in
from citescope.workflows.rewards import RewardSignals, RewardWeights, implicit_reward, missed_skill, reward
from citescope.workflows.sqlite_store import add_missing_column, open_sqlite
from citescope.workflows.tenants import DEFAULT_TENANT

FILE_NAME = "experience.sqlite"
DEFAULT_POLICY_NAME = "linucb"

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS rounds (
    trace_id TEXT PRIMARY KEY, session_id TEXT, created_at REAL NOT NULL, question TEXT NOT NULL,
    features TEXT NOT NULL, vector TEXT NOT NULL, arm TEXT NOT NULL, policy_source TEXT NOT NULL,
    scores TEXT NOT NULL, reason TEXT NOT NULL, plan TEXT NOT NULL, tool_calls TEXT NOT NULL,
    evidence_ids TEXT NOT NULL, inspection TEXT, refused INTEGER NOT NULL, refusal_reason TEXT NOT NULL,
    degraded INTEGER NOT NULL, degradation_reasons TEXT NOT NULL, conflicts INTEGER NOT NULL,
    latency_ms REAL, implicit_reward REAL, reward REAL, applied_reward REAL,
    tenant TEXT NOT NULL DEFAULT '{DEFAULT_TENANT}', cited_ids TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS rounds_session ON rounds(session_id, created_at);
CREATE TABLE IF NOT EXISTS feedback (
    id INTEGER PRIMARY KEY AUTOINCREMENT, trace_id TEXT NOT NULL REFERENCES rounds(trace_id),
    rating INTEGER NOT NULL CHECK (rating IN (-1, 1)), comment TEXT NOT NULL, created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS feedback_trace ON feedback(trace_id, id);
CREATE TABLE IF NOT EXISTS policy_state (
    name TEXT PRIMARY KEY, state TEXT NOT NULL, version INTEGER NOT NULL, updated_at REAL NOT NULL
);
"""


def _migrate(conn) -> None:
    """Rounds logged before tenants belong to the default tenant; before citations were kept, cited none."""
    add_missing_column(conn, "rounds", "tenant", f"TEXT NOT NULL DEFAULT '{DEFAULT_TENANT}'")
    # the chunks an answer cited: a round rated up pairs its question with them to retrain the retriever
    add_missing_column(conn, "rounds", "cited_ids", "TEXT NOT NULL DEFAULT '[]'")


_JSON_COLUMNS = (
    "features",
    "vector",
    "scores",
    "plan",
    "tool_calls",
    "evidence_ids",
    "cited_ids",
    "inspection",
    "degradation_reasons",
)


class ExperienceRound(BaseModel):
    """One question as the policy saw it and as it turned out."""

    trace_id: str
    session_id: str | None = None
    tenant: str = DEFAULT_TENANT  # who asked: only that tenant reads and rates the round
    created_at: float = Field(default_factory=time.time)
    question: str
    features: dict[str, Any] = Field(default_factory=dict)  # QueryFeatures, as JSON
    vector: dict[str, float] = Field(default_factory=dict)  # feature name -> value
    arm: str
    policy_source: str = "rules"
    scores: dict[str, float] = Field(default_factory=dict)
    reason: str = ""
    plan: list[dict] = Field(default_factory=list)
    tool_calls: list[dict] = Field(default_factory=list)
    evidence_ids: list[str] = Field(default_factory=list)
    cited_ids: list[str] = Field(default_factory=list)  # chunk ids the answer cited, in order
    inspection: dict | None = None
    refused: bool = False
    refusal_reason: str = ""
    degraded: bool = False
    degradation_reasons: list[str] = Field(default_factory=list)
    conflicts: int = 0
    latency_ms: float | None = None
    implicit_reward: float | None = None
    reward: float | None = None  # implicit, or blended with the latest feedback
    applied_reward: float | None = None  # the reward the policy has learned for this round (None: not yet)
    rating: int | None = None  # latest feedback
    comment: str = ""
    feedback_at: float | None = None

    @classmethod
    def from_result(
        cls, result: Any, features: QueryFeatures, session_id: str | None = None, tenant: str = DEFAULT_TENANT
    ) -> ExperienceRound:
        """From a workflows.result.QAResult and the QueryFeatures the policy chose with."""
        policy = result.policy
        return cls(
            trace_id=result.trace_id,
            session_id=session_id,
            tenant=tenant,
            question=result.question,
            features=features.model_dump(mode="json"),
            vector=dict(zip(QueryFeatures.feature_names(), features.vector().tolist(), strict=False)),
            arm=policy.arm if policy else "",
            policy_source=policy.source if policy else "",
            scores=dict(policy.scores) if policy else {},
            reason=policy.reason if policy else "",
            plan=[call.model_dump(mode="json") for call in result.plan],
            tool_calls=[call.model_dump(mode="json") for call in result.tool_calls],
            evidence_ids=list(result.evidence_ids),
            cited_ids=[citation.id for citation in result.citations],
            inspection=result.inspection.model_dump(mode="json") if result.inspection else None,
            refused=result.refused,
            refusal_reason=result.refusal_reason,
            degraded=result.degraded,
            degradation_reasons=list(result.degradation_reasons),
            conflicts=len(result.conflicts),
            latency_ms=result.timings_ms.get("total"),
        )

    def signals(self) -> RewardSignals:
        inspection = self.inspection or {}
        return RewardSignals(
            passed=bool(inspection.get("passed", False)),
            coverage=float(inspection.get("coverage", 0.0)),
            refused=self.refused,
            refusal_expected=self.features.get("intent") == "out_of_scope" or self.refusal_reason == "unknown_model",
            degraded=self.degraded,
            rating=self.rating,
            skill_missed=missed_skill(self.features, self.skills_called()) is not None,
        )

    def skills_called(self) -> set[str]:
        return {call.get("name", "") for call in self.tool_calls if call.get("outcome") != "over_budget"}

    def vector_for(self, feature_names: tuple[str, ...] | list[str]) -> np.ndarray:
        return np.array([float(self.vector.get(name, 0.0)) for name in feature_names])


class ExperienceStore:
    """SQLite store of rounds, feedback and policy state. One connection, serialised by a lock;
    `transaction()` groups reads and writes into one IMMEDIATE (write-locked) transaction."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self._conn = open_sqlite(self.path, _SCHEMA, foreign_keys=True, migrate=_migrate)
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        self._depth = 0

    @classmethod
    def for_kb(cls, kb_dir: Path | str) -> ExperienceStore:
        return cls(Path(kb_dir) / FILE_NAME)

    @contextmanager
    def transaction(self) -> Iterator[ExperienceStore]:
        """All-or-nothing; nested use joins the outer transaction."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self
                finally:
                    self._depth -= 1
                return
            self._conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")
            finally:
                self._depth = 0

    def _execute(self, sql: str, params: tuple | dict = ()) -> sqlite3.Cursor:
        with self.transaction():
            return self._conn.execute(sql, params)

    # -- rounds -----------------------------------------------------------------------------
    def log(self, round_: ExperienceRound) -> None:
        """Store a round, personal data redacted from its texts (question, features, plan, calls)."""
        row = round_.model_dump(exclude={"rating", "comment", "feedback_at"})
        for column in ("question", "reason", "refusal_reason", *_JSON_COLUMNS):
            row[column] = redact_personal_in(row[column])
        for column in _JSON_COLUMNS:
            row[column] = json.dumps(row[column], ensure_ascii=False)
        columns = ", ".join(row)
        marks = ", ".join(f":{name}" for name in row)
        self._execute(f"INSERT INTO rounds ({columns}) VALUES ({marks})", row)

    def get(self, trace_id: str, tenant: str | None = None) -> ExperienceRound | None:
        """The round; with `tenant`, only when that tenant owns it."""
        found = self.rounds(trace_id=trace_id, tenant=tenant)
        return found[0] if found else None

    def rounds(
        self,
        session_id: str | None = None,
        trace_id: str | None = None,
        limit: int | None = None,
        tenant: str | None = None,
    ) -> list[ExperienceRound]:
        """Rounds oldest first, each with its latest feedback (of one tenant, or of all: None)."""
        where, params = [], []
        if tenant is not None:
            where.append("r.tenant = ?")
            params.append(tenant)
        if session_id is not None:
            where.append("r.session_id = ?")
            params.append(session_id)
        if trace_id is not None:
            where.append("r.trace_id = ?")
            params.append(trace_id)
        sql = (
            "SELECT r.*, f.rating, f.comment, f.created_at AS feedback_at FROM rounds r LEFT JOIN feedback f "
            "ON f.id = (SELECT MAX(id) FROM feedback WHERE trace_id = r.trace_id)"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY r.created_at, r.rowid"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._lock:
            rows = self._conn.execute(sql, tuple(params)).fetchall()
        return [_round_of(row) for row in rows]

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM rounds").fetchone()[0]

    def add_feedback(self, trace_id: str, rating: int, comment: str = "", tenant: str | None = None) -> ExperienceRound:
        """Record 👍 (+1) or 👎 (-1) on a round (its comment redacted of personal data); KeyError for
        an unknown trace id, and, with `tenant`, for another tenant's round (it must not learn that
        the id exists)."""
        if rating not in (1, -1):
            raise ValueError(f"a rating is +1 (👍) or -1 (👎), got {rating!r}")
        with self.transaction():
            if (
                self._conn.execute(
                    "SELECT 1 FROM rounds WHERE trace_id = ? AND (? IS NULL OR tenant = ?)", (trace_id, tenant, tenant)
                ).fetchone()
                is None
            ):
                raise KeyError(f"no round with trace id {trace_id!r} in {self.path}")
            self._conn.execute(
                "INSERT INTO feedback (trace_id, rating, comment, created_at) VALUES (?, ?, ?, ?)",
                (trace_id, rating, redact_personal(comment or ""), time.time()),
            )
            found = self.get(trace_id)
            assert found is not None  # checked just above, in this transaction
            return found

    def set_rewards(self, trace_id: str, implicit: float | None, current: float | None, applied: float | None) -> None:
        self._execute(
            "UPDATE rounds SET implicit_reward = ?, reward = ?, applied_reward = ? WHERE trace_id = ?",
            (implicit, current, applied, trace_id),
        )

    # -- policy state -----------------------------------------------------------------------
    def state_version(self, name: str = DEFAULT_POLICY_NAME) -> int:
        with self._lock:
            row = self._conn.execute("SELECT version FROM policy_state WHERE name = ?", (name,)).fetchone()
        return row[0] if row else 0

    def load_state(self, name: str = DEFAULT_POLICY_NAME) -> tuple[dict | None, int]:
        """(state, version); (None, 0) when nothing was saved yet."""
        with self._lock:
            row = self._conn.execute("SELECT state, version FROM policy_state WHERE name = ?", (name,)).fetchone()
        return (json.loads(row["state"]), row["version"]) if row else (None, 0)

    def save_state(self, state: dict, name: str = DEFAULT_POLICY_NAME) -> int:
        """Save and return the new version."""
        with self.transaction():
            version = self.state_version(name) + 1
            self._conn.execute(
                "INSERT INTO policy_state (name, state, version, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET state = excluded.state, version = excluded.version, "
                "updated_at = excluded.updated_at",
                (name, json.dumps(state), version, time.time()),
            )
            return version

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _round_of(row: sqlite3.Row) -> ExperienceRound:
    data = dict(row)
    for column in _JSON_COLUMNS:
        data[column] = json.loads(data[column]) if data[column] is not None else None
    data["comment"] = data.get("comment") or ""
    return ExperienceRound(**data)


class ExperienceLearner:
    """The learning policy: chooses with the bandit, logs each round, learns its reward at once
    (implicit signals) and again when feedback arrives (a delta update of the same round)."""

    def __init__(
        self,
        store: ExperienceStore,
        policy: LinUCBPolicy | None = None,
        weights: RewardWeights | None = None,
        name: str = DEFAULT_POLICY_NAME,
    ):
        self.store = store
        self.policy = policy or LinUCBPolicy()
        self.weights = weights or RewardWeights()
        self.name = name
        self._version = 0
        self._lock = threading.RLock()

    @classmethod
    def for_kb(cls, kb_dir: Path | str, policy: LinUCBPolicy | None = None) -> ExperienceLearner:
        """The learner of one KB: its store is `<kb_dir>/experience.sqlite`."""
        return cls(ExperienceStore.for_kb(kb_dir), policy)

    def warm_up(self) -> ExperienceLearner:
        """Load the learned state (the policy starts from the rules when there is none)."""
        self._sync()
        return self

    def _sync(self) -> None:
        """Reload the learned state when another learner (thread or process) saved a newer one."""
        with self._lock:
            if self.store.state_version(self.name) == self._version:
                return
            state, version = self.store.load_state(self.name)
            if state is not None:
                self.policy.load_state_dict(state)
            self._version = version

    def choose(self, features: QueryFeatures, budget: PlanBudget | None = None) -> PolicyDecision:
        with self._lock:
            self._sync()
            return self.policy.choose(features, budget)

    def record(
        self,
        result: Any,
        features: QueryFeatures,
        session_id: str | None = None,
        tenant: str = DEFAULT_TENANT,
        learn: bool = True,
    ) -> ExperienceRound:
        """Log a finished round (a QAResult) and learn its implicit reward. learn=False (an answer
        served again from the result cache) logs the round so it can be read and rated, but the
        policy learns nothing until it is rated: the same outcome counted twice would overstate it."""
        round_ = ExperienceRound.from_result(result, features, session_id, tenant)
        with self._lock, self.store.transaction():
            self._sync()
            self.store.log(round_)
            return self._learn(round_, update_policy=learn)

    def feedback(self, trace_id: str, rating: int, comment: str = "", tenant: str | None = None) -> ExperienceRound:
        """Record 👍/👎 on a logged round (of `tenant` only, when given) and re-learn that round."""
        with self._lock, self.store.transaction():
            self._sync()
            return self._learn(self.store.add_feedback(trace_id, rating, comment, tenant))

    def _learn(self, round_: ExperienceRound, update_policy: bool = True) -> ExperienceRound:
        signals = round_.signals()
        implicit, current = implicit_reward(signals, self.weights), reward(signals, self.weights)
        applied = round_.applied_reward
        # a refusal for want of time says how busy the service was, not how well the arm does
        if update_policy and round_.arm in self.policy.arms and round_.refusal_reason != "deadline":
            vector = round_.vector_for(self.policy.feature_names)
            if applied is None:
                self.policy.update(vector, round_.arm, current)
            else:  # the round is already counted: correct its reward only
                self.policy.update(vector, round_.arm, current - applied, count=False)
            applied = current
            self._version = self.store.save_state(self.policy.state_dict(), self.name)
        self.store.set_rewards(round_.trace_id, implicit, current, applied)
        return round_.model_copy(update={"implicit_reward": implicit, "reward": current, "applied_reward": applied})
