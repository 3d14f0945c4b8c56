"""`run.py studio` against a local Studio stand-in that records what the client sends (run
registration, pushed messages, user-input requests answered over socket.io), including Studio
going away while the session waits for input or answers, and coming back. Each run is a
subprocess: agentscope.init installs process-wide hooks that must not leak into other tests."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import httpx
import pytest

from citescope.agents.citations import parse_citations
from citescope.agents.inspector import InspectionReport, UnsupportedClaim
from citescope.knowledge.chinese_script import in_traditional
from citescope.workflows.evaluation.scripted_server import ReplayServer, prompt_text
from citescope.workflows.result import Citation, QAResult
from citescope.workflows.studio_link import ReconnectPolicy, run_url
from citescope.workflows.studio_texts import (
    TEXTS_PATH,
    StudioTexts,
    answer_markdown,
    language_of,
    tool_result_markdown,
    verdict_markdown,
)
from tests.conftest import REPO
from tests.support.studio_standin import WAIT, StudioStandIn

# bounds for a whole subprocess, so a hang fails the test instead of stalling the suite
RUN_TIMEOUT_S = 240
WINDOW = ["--reconnect-attempts", "4", "--reconnect-window", "3"]


@pytest.fixture(scope="module")
def kb_dir(demo_kb, tmp_path_factory):
    kb_dir = tmp_path_factory.mktemp("studio") / "kb"
    shutil.copytree(demo_kb.dir, kb_dir)  # Milvus Lite: one process per KB; sessions are written next to it
    return kb_dir


def _command(kb_dir, studio: StudioStandIn, *args: str) -> list[str]:
    return [
        sys.executable,
        str(REPO / "run.py"),
        "studio",
        "--kb",
        str(kb_dir),
        "--studio-url",
        studio.url,
        "--name",
        "test-run",
        *args,
    ]


def _studio(kb_dir, studio: StudioStandIn, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        _command(kb_dir, studio, *args), cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT_S
    )


def _start(kb_dir, studio: StudioStandIn, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        _command(kb_dir, studio, *args), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _finish(process: subprocess.Popen) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"the session hung; stderr: {err[-2000:]}")
    return process.returncode, out, err


def _turns(messages: list[dict]) -> list[list[dict]]:
    """Pushed messages split at each user message (what comes before the first is left out)."""
    turns: list[list[dict]] = []
    for message in messages:
        if message["replyRole"] == "user":
            turns.append([])
        if turns:
            turns[-1].append(message)
    return turns


def _check_turn(turn: list[dict], question: str, sources: str = "来源：", script=lambda text: text) -> dict:
    """user, planner…, answerer, inspector — the answerer's text cites what its metadata lists
    and ends with exactly one Markdown list item per source (titles in `script`)."""
    names = [m["replyName"] for m in turn]
    assert names[0] == "user" and turn[0]["msg"]["content"] == question
    assert names[-2:] == ["answerer", "inspector"], names
    assert len(names) > 3 and set(names[1:-2]) == {"planner"}, names
    assert any(block.get("type") == "tool_use" for m in turn[1:-2] for block in m["msg"]["content"])
    answer = turn[-2]["msg"]
    citations = answer["metadata"]["citations"]
    cited = [c["id"] for c in citations]
    body, _, listed = answer["content"].partition(f"\n\n{sources}\n\n")
    assert cited and cited == parse_citations(body, known_ids=cited)
    assert listed == "\n".join(
        f"- 【{c['id']}】 {script(c['title'])}" + (f" ({c['updated_at']})" if c["updated_at"] else "")
        for c in citations
    )
    verdict = turn[-1]["msg"]
    assert verdict["metadata"]["passed"] is True and verdict["metadata"]["trace_id"] == answer["metadata"]["trace_id"]
    return answer["metadata"]


def _tool_results(turn: list[dict]) -> list[str]:
    return [
        part["text"]
        for m in turn
        for block in m["msg"]["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
        for part in block["output"]
    ]


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
        assert metadata["usage"]["requests"] == 0 and metadata["usage"]["cost"] == 0.0  # offline: no model tokens
        assert turn[-1]["msg"]["content"].startswith("审核通过：")
        # every tool result reads in Studio's Markdown view as one list item per hit
        results = _tool_results(turn)
        blocks = [block.split("\n") for text in results for block in text.split("\n\n")]
        assert any(len(lines) > 1 for lines in blocks)  # several hits: a list, not one paragraph
        assert all(len(lines) == 1 or all(line.startswith("- 【") for line in lines) for lines in blocks)
        assert studio.input_requests == []  # one question: nothing asked of the user
        # the printed link is the page of this run (Studio's route), not the project's
        link = next(line.split(": ", 1)[1] for line in done.stdout.splitlines() if line.startswith("Studio run: "))
        assert link == f"{studio.url}/dashboard/projects/citescope/runs/{run_id}"
        assert httpx.get(link, timeout=10).json() == {"project": "citescope", "run": "test-run"}
    assert "answerer:" in done.stdout and "inspector:" in done.stdout
    assert "/projects/citescope\n" not in done.stdout + done.stderr  # AgentScope's own (wrong) link is gone


def test_questions_typed_in_studio_form_one_conversation_until_exit(kb_dir):
    typed = ["XZ-3000 充电宝多少钱？", "它有什么颜色？", "   ", "/exit"]
    with StudioStandIn(user_inputs=typed) as studio:
        done = _studio(kb_dir, studio)
        assert done.returncode == 0, done.stderr[-2000:]
        assert len(studio.input_requests) == 4
        assert {r["runId"] for r in studio.input_requests} == {studio.runs[0]["id"]}
        opening = studio.messages[0]["msg"]["content"]
        assert "输入 /exit 结束会话" in opening and "Type /exit to end the session" in opening
        first, second, empty, leaving = _turns(studio.messages)
        one = _check_turn(first, typed[0])
        two = _check_turn(second, typed[1])
        assert one["session_id"] and one["session_id"] == two["session_id"]
        assert "XZ-3000" in second[-2]["msg"]["content"]  # the follow-up kept the product
        assert [m["msg"]["content"] for m in empty][1].startswith("问题是空的")  # in the conversation's language
        assert [m["msg"]["content"] for m in leaving] == ["/exit", "会话已结束，共回答 2 个问题。"]
    assert "2 answers" in done.stdout


def test_each_question_is_answered_in_its_own_language(kb_dir):
    typed = ["can i take the XZ-3000 power bank on a plane?", "", "退貨運費誰承擔？", "你们京东上有旗舰店吗？", "exit"]
    with StudioStandIn(user_inputs=typed) as studio:
        done = _studio(kb_dir, studio)
        assert done.returncode == 0, done.stderr[-2000:]
        english, empty, traditional, declined, _ = _turns(studio.messages)
    _check_turn(english, typed[0], sources="Sources:")
    assert english[-1]["msg"]["content"].startswith("Passed inspection: ")
    assert empty[1]["msg"]["content"].startswith("The question is empty")  # the conversation's language so far
    _check_turn(traditional, typed[2], sources="來源：", script=in_traditional)
    assert traditional[-1]["msg"]["content"].startswith("審核通過：")
    assert declined[-2]["msg"]["metadata"]["refused"]
    verdict = declined[-1]["msg"]["content"]
    reason = declined[-2]["msg"]["metadata"]["refusal_reason"]
    assert "拒答" in verdict and reason not in verdict and "_" not in verdict


def test_an_unreachable_studio_is_a_clear_error(kb_dir):
    with StudioStandIn() as studio:
        url = studio.url
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "run.py"),
            "studio",
            "--kb",
            str(kb_dir),
            "--studio-url",
            url,
            "--question",
            "XZ-3000 充电宝多少钱？",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert done.returncode == 2
    assert "cannot reach AgentScope Studio" in done.stderr and "as_studio" in done.stderr


def test_studio_gone_while_waiting_for_input_ends_the_session_cleanly(kb_dir):
    with StudioStandIn(user_inputs=["XZ-3000 充电宝多少钱？", WAIT]) as studio:
        session = _start(kb_dir, studio, *WINDOW)
        studio.wait_for(lambda s: len(s.input_requests) == 2 or session.poll() is not None)
        studio.close()  # Studio ends while the session waits for the second question
        returncode, out, err = _finish(session)
    assert returncode == 3, err[-2000:]
    assert "Traceback" not in err and "did not come back within 3s" in err
    assert "1 answers" in out


def test_studio_gone_during_an_answer_ends_the_session_cleanly(kb_dir):
    with StudioStandIn(user_inputs=["XZ-3000 充电宝多少钱？", "它有什么颜色？"]) as studio:
        studio.go_away_when(lambda body: body["replyName"] == "planner")
        returncode, out, err = _finish(_start(kb_dir, studio, *WINDOW))
        assert [m["replyName"] for m in studio.messages] == ["answerer", "user"]  # the opening line, the question
    assert returncode == 3, err[-2000:]
    assert "Traceback" not in err and "did not come back within 3s" in err
    assert "1 answers" in out  # the answer was finished and kept in the conversation
    assert "messages could not be delivered to Studio" in err


def test_one_question_answered_after_studio_left_still_ends_cleanly(kb_dir):
    with StudioStandIn() as studio:
        studio.go_away_when(lambda body: body["replyName"] == "planner")
        done = _studio(kb_dir, studio, "--question", "XZ-3000 充电宝多少钱？", *WINDOW)
    assert done.returncode == 3, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "did not come back within 3s" in done.stderr
    assert "299" in done.stdout and "messages could not be delivered to Studio" in done.stderr


def test_a_session_carries_on_when_studio_comes_back_while_it_waits(kb_dir):
    typed = ["XZ-3000 充电宝多少钱？", WAIT, "它有什么颜色？", "exit"]
    with StudioStandIn(user_inputs=typed) as studio:
        session = _start(kb_dir, studio, "--reconnect-window", "120")
        studio.wait_for(lambda s: len(s.input_requests) == 2 or session.poll() is not None)
        studio.close()
        studio.start()  # back on the same address
        returncode, out, err = _finish(session)
        assert returncode == 0, err[-2000:]
        assert studio.connects == 2
        asked = [r["requestId"] for r in studio.input_requests]
        assert asked[1] == asked[2]  # the open question was asked again after the reconnect
        first, second, _ = _turns(studio.messages)
        assert _check_turn(first, typed[0])["session_id"] == _check_turn(second, typed[2])["session_id"]
    assert "reconnected to AgentScope Studio" in err and "Traceback" not in err
    assert "2 answers" in out


def test_messages_printed_while_studio_is_away_arrive_once_it_is_back(kb_dir):
    with StudioStandIn(user_inputs=["XZ-3000 充电宝多少钱？", "exit"]) as studio:
        studio.go_away_when(lambda body: body["replyName"] == "planner")
        session = _start(kb_dir, studio, "--reconnect-window", "120")
        studio.wait_for(lambda s: s._server is None or session.poll() is not None)
        studio.start()
        returncode, out, err = _finish(session)
        assert returncode == 0, err[-2000:]
        (turn, leaving) = _turns(studio.messages)
        _check_turn(turn, "XZ-3000 充电宝多少钱？")  # the whole turn, in order
        ids = [m["msg"]["id"] for m in studio.messages]
        assert len(ids) == len(set(ids))  # nothing delivered twice
    assert "1 answers" in out and "could not be delivered to Studio" not in err


# -- what the messages say, without Studio ---------------------------------------------------
def test_the_run_link_is_the_run_page_with_its_parts_quoted():
    assert (
        run_url("http://h:3000/", "my shop/试", "abc")
        == "http://h:3000/dashboard/projects/my%20shop%2F%E8%AF%95/runs/abc"
    )


def test_the_language_follows_the_question():
    assert language_of("XZ-3000 充电宝多少钱？", "299 元【a】") == "zh"
    assert language_of("退貨運費誰承擔？", "退貨運費……") == "zh-Hant"
    assert language_of("how much is the XZ-3000?", "") == "en"
    assert language_of("AJ1 Retro", "Air Jordan 1 Retro 的价格是 1299 元【p#商品简介-0】") == "zh"  # a product name
    assert language_of("Warranty", "The warranty lasts two years.【w#政策-0】") == "en"


def test_sources_are_a_markdown_list_one_per_line():
    result = QAResult(
        question="q",
        answer="299 元。【x#价格-0】",
        citations=[
            Citation(id="x#价格-0", doc_id="x", title="星择 XZ-3000 充电宝", updated_at="2026-03-01"),
            Citation(id="faq#7", doc_id="faq", title="发票怎么开"),
        ],
    )
    assert answer_markdown(result, "zh") == (
        "299 元。【x#价格-0】\n\n来源：\n\n- 【x#价格-0】 星择 XZ-3000 充电宝 (2026-03-01)\n- 【faq#7】 发票怎么开"
    )
    assert answer_markdown(result, "zh-Hant").endswith(
        "來源：\n\n- 【x#价格-0】 星擇 XZ-3000 充電寶 (2026-03-01)\n- 【faq#7】 發票怎麼開"
    )


def test_a_tool_result_shows_one_hit_per_list_item():
    text = "需要身高和体重\n【a#1】 商品甲 — 说明一\n【b#2】 商品乙 — 说明二\n（降级：rerank 超时）"
    assert tool_result_markdown(text) == (
        "需要身高和体重\n\n- 【a#1】 商品甲 — 说明一\n- 【b#2】 商品乙 — 说明二\n\n（降级：rerank 超时）"
    )


def test_a_verdict_names_no_raw_codes_in_any_language():
    weak = QAResult(question="你们京东上有旗舰店吗？", answer="抱歉……", refused=True, refusal_reason="weak_evidence")
    assert verdict_markdown(weak, "zh") == "未审核：找到的资料与问题关联太弱，不足以可靠作答，直接拒答，没有生成回答。"
    assert verdict_markdown(weak, "en").startswith("Not inspected: the documents found are too loosely related")
    unknown = QAResult(
        question="烈驹火焰8多少钱？",
        answer="抱歉……",
        refused=True,
        refusal_reason="unknown_model",
        features={"unknown_models": ["火焰8"]},
    )
    assert verdict_markdown(unknown, "zh") == "未审核：店内商品中没有所问的型号（火焰8），直接拒答，没有生成回答。"
    failed = QAResult(
        question="q",
        answer="抱歉",
        refused=True,
        refusal_reason="no_supported_answer",
        inspection=InspectionReport(
            passed=False,
            coverage=0.5,
            sentences=2,
            factual_sentences=2,
            uncited=["它是防水的。"],
            unsupported=[UnsupportedClaim(sentence="续航 20 小时。", cited_ids=["a"], missing=["20"])],
        ),
    )
    assert verdict_markdown(failed, "zh") == (
        "审核未通过，已拒答：事实句 2 句，引用覆盖率 50%，引用 0 个（无）\n\n"
        "拒答原因：写出的回答没有得到所引资料的支持\n\n"
        "- 这句事实陈述没有引用：它是防水的。\n- 这句与所引证据不符（证据中没有：20）：续航 20 小时。"
    )
    for language in ("zh", "zh-Hant", "en"):
        for result in (weak, unknown, failed):
            assert result.refusal_reason not in verdict_markdown(result, language)


def test_every_refusal_reason_the_pipeline_sets_is_worded():
    texts = StudioTexts.load()
    sources = [REPO / "workflows" / "pipeline.py", *sorted((REPO / "workflows" / "stages").glob("*.py"))]
    pipeline = "\n".join(path.read_text(encoding="utf-8") for path in sources)
    for code in ("weak_evidence", "no_evidence", "no_supported_answer", "unknown_model", "sensitive"):
        assert f'"{code}"' in pipeline
        assert code in texts.reasons


def test_a_texts_file_missing_a_language_is_named(tmp_path):
    broken = tmp_path / "texts.yaml"
    broken.write_text(
        TEXTS_PATH.read_text(encoding="utf-8").replace('  en: "Hello!', '  fr: "Hello!'), encoding="utf-8"
    )
    with pytest.raises(ValueError, match=r"texts.yaml: entry 'session_start' needs a zh and an en text"):
        StudioTexts.load(broken)


def test_an_invalid_reconnect_policy_is_refused():
    with pytest.raises(ValueError, match="invalid reconnect policy"):
        ReconnectPolicy(first_delay_s=0)


def test_a_model_answer_is_pushed_sentence_by_sentence_as_one_message(kb_dir):
    """With an answerer model, the answerer's message is pushed as each sentence passes (one message
    id, its text growing), then whole; a sentence that failed the inspector is in none of them."""

    def answer(body: dict) -> dict:
        chunk_id, price = re.search(r"【(sku-p-xz3000#[^】]+)】[^\n]*?价格: ([\d.]+)元", prompt_text(body)).groups()
        return {
            "content": f"XZ-3000 的价格是 {price}元【{chunk_id}】。它只要 1元【{chunk_id}】。"
            f"到手价同样是 {price}元【{chunk_id}】。"
        }

    with ReplayServer([answer]) as model, StudioStandIn() as studio:
        done = _studio(
            kb_dir, studio, "--question", "XZ-3000 充电宝多少钱？", "--answerer", f"compatible:m@{model.base_url}"
        )
        assert done.returncode == 0, done.stderr[-2000:]
        (turn,) = _turns(studio.messages)
    answers = [m["msg"] for m in turn if m["replyName"] == "answerer"]
    assert len(answers) == 3 and len({a["id"] for a in answers}) == 1
    first, second, whole = (a["content"] for a in answers)
    assert "价格是" in first and second.startswith(first) and "到手价" in second
    assert whole.startswith(second) and whole != second and "1元" not in whole
    assert whole.partition("\n\n来源：")[0] == second
    assert turn[-1]["replyName"] == "inspector" and turn[-1]["msg"]["metadata"]["passed"] is True
