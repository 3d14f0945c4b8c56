"""Batch Q&A on a copy of the demo KB: input formats, per-item errors, session order, and resuming
after a crash (a real `run.py batch` subprocess killed with SIGKILL, then the same command again)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from citescope.workflows.assistant import Assistant
from citescope.workflows.batch import AnswerLog, BatchRunner, read_items
from citescope.workflows.cli import app
from citescope.workflows.pipeline_config import PipelineConfig
from tests.conftest import DEMO_DIR, REPO

DEMO_QUESTIONS = [
    json.loads(line) for line in (DEMO_DIR / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()
]


def _kb_copy(demo_kb, tmp_path_factory):
    """The Assistant writes sessions and experience next to the KB, and Milvus Lite lets one
    process at a time open a KB: each user of a KB here gets its own copy."""
    kb_dir = tmp_path_factory.mktemp("batch") / "kb"
    shutil.copytree(demo_kb.dir, kb_dir)
    return kb_dir


@pytest.fixture(scope="module")
def assistant(demo_kb, tmp_path_factory):
    kb_dir = _kb_copy(demo_kb, tmp_path_factory)
    assistant = Assistant(kb_dir, config=PipelineConfig.load(kb_dir, environ={})).warm_up()
    yield assistant
    assistant.close()


def _write_jsonl(path, rows) -> None:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


def _lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_reads_jsonl_csv_and_the_dataset_format(tmp_path):
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text(
        '{"id": "a", "question": "Q1", "session_id": "s"}\n'
        '{"qid": "b", "question": "Q2", "session": "t", "answers": ["x"]}\n'
        "\n"
        "not json\n"
        '{"id": "c"}\n'
        '{"question": "Q3"}\n',
        encoding="utf-8",
    )
    items = read_items(jsonl)
    assert [(i.id, i.question, i.session_id, i.problem is None) for i in items] == [
        ("a", "Q1", "s", True),
        ("b", "Q2", "t", True),
        ("line-4", "", None, False),
        ("c", "", None, False),
        ("line-6", "Q3", None, True),
    ]
    assert "not JSON" in items[2].problem and "no question" in items[3].problem

    csv_file = tmp_path / "in.csv"
    csv_file.write_text("\ufeffid,question,session_id\nr1,XZ-3000 多少钱？,\nr2,它有什么颜色？,s1\n", encoding="utf-8")
    assert [(i.id, i.question, i.session_id) for i in read_items(csv_file)] == [
        ("r1", "XZ-3000 多少钱？", None),
        ("r2", "它有什么颜色？", "s1"),
    ]
    with pytest.raises(ValueError, match="unsupported"):
        read_items(tmp_path / "in.txt")


def test_a_question_that_is_not_text_and_a_bad_as_of_are_named_with_the_line(tmp_path):
    jsonl = tmp_path / "in.jsonl"
    _write_jsonl(
        jsonl,
        [
            {"id": "n", "question": 123},
            {"id": "l", "question": ["退货"]},
            {"id": "m"},
            {"id": "d", "question": "退货政策是什么？", "as_of": "2024-13"},
        ],
    )
    problems = [item.problem for item in read_items(jsonl)]
    assert problems[:3] == [
        "line 1: the question must be text, got int 123",
        "line 2: the question must be text, got list ['退货']",
        "line 3: no question",
    ]
    assert problems[3].startswith("line 4: as_of: '2024-13' is not a real date") and "Value error" not in problems[3]


def test_every_id_gets_one_line_errors_included_and_sessions_keep_their_order(assistant, tmp_path):
    source, output = tmp_path / "questions.jsonl", tmp_path / "answers.jsonl"
    _write_jsonl(
        source,
        [
            {"id": "price", "question": "XZ-3000 充电宝多少钱？", "session_id": "b-1"},
            {"id": "lone", "question": "七天无理由退货怎么申请？"},
            {"id": "colour", "question": "它有什么颜色？", "session_id": "b-1"},
            {"id": "empty", "question": "  "},
            {"id": "long", "question": "这" * 2001},
            {"id": "price", "question": "重复的 id"},
            {"id": "dated", "question": "退货政策是什么？", "as_of": "2026-03"},
            {"id": "bad-date", "question": "退货政策是什么？", "as_of": "去年"},
        ],
    )
    summary = BatchRunner(assistant, concurrency=3, show_progress=False).run(source, output)
    lines = _lines(output)
    assert sorted(line["id"] for line in lines) == ["bad-date", "colour", "dated", "empty", "lone", "long", "price"]
    by_id = {line["id"]: line for line in lines}
    assert by_id["dated"]["error"] is None and by_id["dated"]["as_of"] == "2026-03"
    assert by_id["bad-date"]["error"].startswith("line 8: as_of: '去年' must be a year")
    assert by_id["long"]["error"].startswith("QuestionError") and "2000" in by_id["long"]["error"]
    assert "no question" in by_id["empty"]["error"]
    assert by_id["price"]["error"] is None and by_id["price"]["citations"] and by_id["price"]["trace_id"]
    assert by_id["colour"]["features"]["carried_entity"]  # asked after "price" in session b-1
    assert [t.trace_id for t in assistant.session("b-1").turns] == [
        by_id["price"]["trace_id"],
        by_id["colour"]["trace_id"],
    ]
    assert (summary.items, summary.written, summary.errors, summary.duplicate_ids) == (7, 7, 3, ["price"])
    assert summary.answered + summary.refused == 4 and summary.p50_ms is not None

    again = BatchRunner(assistant, show_progress=False).run(source, output)  # nothing left to do
    assert (again.skipped, again.written) == (7, 0) and len(_lines(output)) == 7
    retried = BatchRunner(assistant, show_progress=False).run(source, output, retry_errors=True)
    assert retried.written == 3 and sorted(line["id"] for line in _lines(output)) == sorted(by_id)


def test_a_torn_last_line_is_dropped_and_its_item_redone(assistant, tmp_path):
    source, output = tmp_path / "questions.jsonl", tmp_path / "answers.jsonl"
    _write_jsonl(
        source, [{"id": "q1", "question": "XZ-3000 充电宝多少钱？"}, {"id": "q2", "question": "AJ1 的鞋面是什么材质？"}]
    )
    BatchRunner(assistant, show_progress=False).run(source, output)
    whole = output.read_bytes().splitlines(keepends=True)
    output.write_bytes(whole[0] + whole[1][: len(whole[1]) // 2])  # a crash in the middle of the second append
    assert [r["id"] for r in AnswerLog(output).records()] == ["q1"]

    summary = BatchRunner(assistant, show_progress=False).run(source, output)
    assert (summary.skipped, summary.written) == (1, 1)
    assert [line["id"] for line in _lines(output)] == ["q1", "q2"]


def test_sigkill_mid_run_then_the_same_command_finishes_without_duplicates(demo_kb, tmp_path_factory, tmp_path):
    kb_dir = _kb_copy(demo_kb, tmp_path_factory)
    source, output = tmp_path / "questions.jsonl", tmp_path / "answers.jsonl"
    _write_jsonl(source, DEMO_QUESTIONS[:40])  # dataset format: qid, session, turn
    command = ["batch", str(source), "-o", str(output), "--kb", str(kb_dir), "--concurrency", "2", "--no-progress"]
    process = subprocess.Popen(
        [sys.executable, str(REPO / "run.py"), *command], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 120
        while not (output.exists() and output.read_bytes().count(b"\n") >= 5):
            assert process.poll() is None, process.stderr.read().decode()[-3000:]
            assert time.monotonic() < deadline, "no answers written in time"
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    killed_at = AnswerLog(output).records()
    assert 5 <= len(killed_at) < 40

    rerun = CliRunner().invoke(app, command)
    assert rerun.exit_code == 0, rerun.output
    assert f"({len(killed_at)} already done, {40 - len(killed_at)} written now" in rerun.output
    lines = _lines(output)  # every line whole JSON
    assert sorted(line["id"] for line in lines) == sorted(q["qid"] for q in DEMO_QUESTIONS[:40])
    assert all(line["error"] is None for line in lines)


def test_cancelling_stops_at_once_and_writes_no_cut_short_answer(assistant, tmp_path):
    """Ctrl-C cancels the run; AgentScope agents swallow a cancellation (they reply
    "interrupted"), so the runner must stop by itself and drop the answers in flight."""
    source, output = tmp_path / "questions.jsonl", tmp_path / "answers.jsonl"
    _write_jsonl(source, DEMO_QUESTIONS[40:70])

    async def cancel_after_three_lines() -> int:
        run = asyncio.create_task(BatchRunner(assistant, concurrency=2, show_progress=False).arun(source, output))
        while not (output.exists() and output.read_bytes().count(b"\n") >= 3):
            assert not run.done()
            await asyncio.sleep(0.005)
        written = output.read_bytes().count(b"\n")
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        return written

    written = asyncio.run(cancel_after_three_lines())
    assert len(_lines(output)) == written < 30
