"""`run.py studio` against a local Studio stand-in that records what the AgentScope client sends
(run registration, pushed messages, user-input requests answered over socket.io). Each run is
a subprocess: agentscope.init installs process-wide hooks that must not leak into other tests."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from agents.citations import parse_citations
from tests.conftest import REPO
from tests.support.studio_standin import StudioStandIn
from workflows.result import QAResult
from workflows.studio import verdict_text


@pytest.fixture(scope="module")
def kb_dir(demo_kb, tmp_path_factory):
    kb_dir = tmp_path_factory.mktemp("studio") / "kb"
    shutil.copytree(demo_kb.dir, kb_dir)  # Milvus Lite: one process per KB; sessions are written next to it
    return kb_dir


def _studio(kb_dir, studio: StudioStandIn, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "run.py"), "studio", "--kb", str(kb_dir),
                           "--studio-url", studio.url, "--name", "test-run", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=180)


def _turns(messages: list[dict]) -> list[list[dict]]:
    """Pushed messages split at each user message."""
    turns: list[list[dict]] = []
    for message in messages:
        if message["replyRole"] == "user":
            turns.append([])
        turns[-1].append(message)
    return turns


def _check_turn(turn: list[dict], question: str) -> dict:
    """user, planner…, answerer, inspector — the answerer's text cites what its metadata lists."""
    names = [m["replyName"] for m in turn]
    assert names[0] == "user" and turn[0]["msg"]["content"] == question
    assert names[-2:] == ["answerer", "inspector"], names
    assert len(names) > 3 and set(names[1:-2]) == {"planner"}, names
    assert any(block.get("type") == "tool_use" for m in turn[1:-2] for block in m["msg"]["content"])
    answer = turn[-2]["msg"]
    cited = [c["id"] for c in answer["metadata"]["citations"]]
    assert cited and cited == parse_citations(answer["content"].split("\n\n来源：")[0], known_ids=cited)
    verdict = turn[-1]["msg"]
    assert verdict["metadata"]["passed"] is True and verdict["metadata"]["trace_id"] == answer["metadata"]["trace_id"]
    assert "审核通过" in verdict["content"]
    return answer["metadata"]


def test_one_question_arrives_as_one_run_in_agent_order(kb_dir):
    with StudioStandIn() as studio:
        done = _studio(kb_dir, studio, "--question", "XZ-3000 充电宝多少钱？")
        assert done.returncode == 0, done.stderr[-2000:]
        assert [(r["project"], r["name"]) for r in studio.runs] == [("citescope", "test-run")]
        run_id = studio.runs[0]["id"]
        assert {m["runId"] for m in studio.messages} == {run_id}
        (turn,) = _turns(studio.messages)
        metadata = _check_turn(turn, "XZ-3000 充电宝多少钱？")
        assert not metadata["refused"] and "299" in turn[-2]["msg"]["content"]
        assert studio.input_requests == []  # one question: nothing asked of the user
    assert "answerer:" in done.stdout and "inspector:" in done.stdout


def test_questions_typed_in_studio_form_one_conversation_until_exit(kb_dir):
    typed = ["XZ-3000 充电宝多少钱？", "它有什么颜色？", "exit"]
    with StudioStandIn(user_inputs=typed) as studio:
        done = _studio(kb_dir, studio)
        assert done.returncode == 0, done.stderr[-2000:]
        assert len(studio.input_requests) == 3
        assert {r["runId"] for r in studio.input_requests} == {studio.runs[0]["id"]}
        first, second, leaving = _turns(studio.messages)
        one = _check_turn(first, typed[0])
        two = _check_turn(second, typed[1])
        assert one["session_id"] and one["session_id"] == two["session_id"]
        assert "XZ-3000" in second[-2]["msg"]["content"]  # the follow-up kept the product
        assert [m["msg"]["content"] for m in leaving] == ["exit"]
    assert "2 answers" in done.stdout


def test_an_unreachable_studio_is_a_clear_error(kb_dir):
    with StudioStandIn() as studio:
        url = studio.url
    done = subprocess.run([sys.executable, str(REPO / "run.py"), "studio", "--kb", str(kb_dir), "--studio-url", url,
                           "--question", "XZ-3000 充电宝多少钱？"], cwd=REPO, capture_output=True, text=True, timeout=180)
    assert done.returncode == 2
    assert "cannot reach AgentScope Studio" in done.stderr and "as_studio" in done.stderr


def test_the_verdict_says_why_nothing_was_generated():
    unknown = QAResult(question="烈驹火焰8多少钱？", answer="抱歉……", refused=True, refusal_reason="unknown_model",
                       features={"unknown_models": ["火焰8"]})
    assert "没有所问的型号（火焰8）" in verdict_text(unknown) and "证据不足" not in verdict_text(unknown)
    weak = QAResult(question="你们京东上有旗舰店吗？", answer="抱歉……", refused=True, refusal_reason="weak_evidence")
    assert verdict_text(weak).startswith("未审核：证据不足") and "weak_evidence" in verdict_text(weak)
