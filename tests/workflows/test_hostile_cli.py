"""Hostile input at the CLI: typer's CliRunner in process against workflows.cli's app (Milvus
Lite locks a KB folder to one process), on a copy of the demo KB; inputs in tests/support/hostile.py.

Property: every command exits 0, or 2 with one stderr line "error: ..." naming what is wrong;
never a traceback (rich markup in the input is text, not markup).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from citescope.workflows.cli import app as cli_app
from tests.support.hostile import (
    HOSTILE,
    QUESTION_LIMIT,
    REAL_QUESTIONS,
    SPECIAL_IDS,
    SPECIAL_TEXT,
    any_text,
    bad_question,
    bad_session_id,
    copy_kb,
    every,
    has_surrogate,
    hostile_ids,
    hostile_text,
)


# -- the CLI ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cli_kb(demo_kb, tmp_path_factory):
    """Its own copy: every command opens the KB itself, one at a time, as separate runs would."""
    return str(copy_kb(demo_kb, tmp_path_factory, "hostile-cli"))


@pytest.fixture(scope="module")
def cli_trace_id(cli_kb):
    answered = CliRunner().invoke(
        cli_app, ["ask", "--kb", cli_kb, "--session", "cli-known", "--json", "--", REAL_QUESTIONS[0]]
    )
    assert answered.exit_code == 0, answered.output
    return json.loads(answered.stdout)["trace_id"]


def run_cli(*args: str):
    return CliRunner().invoke(cli_app, list(args))


def assert_clean_exit(result, error_names: tuple[str, ...] | None) -> None:
    """Exit 0, or exit 2 with one stderr line "error: ..." naming the field; never a traceback."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    event(f"exit {result.exit_code}")
    if error_names is None:
        assert result.exit_code == 0, result.output
        return
    line = result.stderr.strip()
    assert result.exit_code == 2 and "\n" not in line and line.startswith("error:"), result.stderr
    assert any(name in line for name in error_names), line


@settings(HOSTILE, max_examples=15)
@given(question=hostile_text)
@every("question", SPECIAL_TEXT)
def test_cli_ask_answers_any_text_or_names_what_is_wrong(cli_kb, question):
    shown = run_cli("ask", "--kb", cli_kb, "--", question)
    assert_clean_exit(shown, ("question",) if bad_question(question, QUESTION_LIMIT) else None)
    if shown.exit_code == 0:
        assert shown.stdout.strip()


@settings(HOSTILE, max_examples=12)
@given(session_id=hostile_ids)
@every("session_id", SPECIAL_IDS)
def test_cli_ask_takes_any_session_id(cli_kb, session_id):
    shown = run_cli("ask", "--kb", cli_kb, f"--session={session_id}", "--", REAL_QUESTIONS[0])
    assert_clean_exit(shown, ("session id",) if bad_session_id(session_id) else None)


@settings(HOSTILE, max_examples=15)
@given(query=hostile_text)
@every("query", SPECIAL_TEXT)
def test_cli_search_takes_any_query(cli_kb, query):
    assert_clean_exit(
        run_cli("search", "--kb", cli_kb, "--", query), ("question",) if bad_question(query, QUESTION_LIMIT) else None
    )


@settings(HOSTILE, max_examples=25)
@given(
    trace_id=st.one_of(st.just("known"), hostile_ids),
    rating=st.one_of(st.sampled_from(["up", "down", "👍", "-1", "", "0", "[/red]", "\udc80"]), any_text),
    comment=st.one_of(st.just(""), hostile_text.filter(lambda text: len(text) < 3000)),
)
@every("trace_id", SPECIAL_IDS, rating="up", comment="")
@every("rating", ["[/red]", "\udc80", "", " UP ", "👎"], trace_id="known", comment="")
@every("comment", SPECIAL_TEXT, trace_id="known", rating="down")
def test_cli_feedback_and_trace_take_any_id(cli_kb, cli_trace_id, trace_id, rating, comment):
    trace_id = cli_trace_id if trace_id == "known" else trace_id
    known = trace_id == cli_trace_id
    rating_ok = rating.strip().lower() in ("up", "down", "+1", "1", "-1", "👍", "👎")
    comment_ok = not has_surrogate(comment)
    rated = run_cli("feedback", "--kb", cli_kb, f"--comment={comment}", "--", trace_id, rating)
    expected = None if known and rating_ok and comment_ok else ("rating", "comment", "trace id")
    assert_clean_exit(rated, expected)
    if rating_ok and comment_ok and not known:
        assert "trace id" in rated.stderr
    assert_clean_exit(run_cli("trace", "--kb", cli_kb, "--", trace_id), None if known else ("no trace",))
