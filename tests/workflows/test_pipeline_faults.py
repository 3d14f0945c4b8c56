"""Whole questions against a sick provider, over real HTTP: a stalled endpoint answers from the
offline engine inside the deadline, an open breaker costs later questions no request, refused keys
are not retried, malformed tool arguments get one correction turn, a cut stream is no answer, and
the sync entry point runs question after question on one event loop."""

from __future__ import annotations

import pytest
from dashscope.api_entities import aio_session

from citescope.agents.circuit_breaker import forget_providers
from citescope.workflows.evaluation.scripted_server import ReplayServer
from citescope.workflows.pipeline import QAPipeline
from citescope.workflows.pipeline_config import PipelineConfig
from tests.workflows.test_assistant import kb_dir  # noqa: F401  # a module-scoped ingested copy of the demo
from tests.workflows.test_pipeline_llm import PRICE_QUESTION, make_pipeline, valid_price_answer


@pytest.fixture
def server():
    forget_providers()
    with ReplayServer() as replay:
        yield replay


def test_a_stalled_provider_leaves_the_offline_engine_its_time(demo_kb, registry, server):
    server.default_step = {"hang": True}
    pipeline = make_pipeline(
        demo_kb, registry, server, planner=True, answerer=True, deadline_s=3, model_timeout_s=30, max_retries=1
    )
    result = pipeline.run(PRICE_QUESTION)

    assert not result.refused and result.citations and result.inspection.passed
    assert result.planner_source == "offline" and result.answer_source == "extractive"
    planner_reason, answerer_reason = result.degradation_reasons
    assert "timed out after" in planner_reason and "(x2)" not in planner_reason  # no time left for a retry
    assert "the last 1s of the deadline are the offline fallback's" in answerer_reason
    assert len(server.chat_requests()) == 1
    assert [c.outcome for c in result.tool_calls] == ["ran"] * len(result.plan)  # the fallback's own tool budget


def test_an_open_breaker_sends_later_questions_straight_to_the_offline_engine(demo_kb, registry, server):
    server.default_step = {"status": 500}
    pipeline = make_pipeline(demo_kb, registry, server, planner=True, answerer=True, max_retries=1, breaker_failures=2)
    first = pipeline.run(PRICE_QUESTION)
    assert "circuit open" in first.degradation_reasons[1] and len(server.chat_requests()) == 2

    second = pipeline.run("无理由退货的运费是谁承担？")

    assert len(server.chat_requests()) == 2  # no request at all
    assert second.degraded and all("circuit open" in reason for reason in second.degradation_reasons)
    assert second.planner_source == "offline" and second.answer_source == "extractive" and not second.refused


def test_a_refused_key_is_not_retried(demo_kb, registry, server):
    server.default_step = {"status": 401}
    result = make_pipeline(demo_kb, registry, server, planner=True, answerer=True, max_retries=3).run(PRICE_QUESTION)

    assert [reason.split("(", 1)[1][:8] for reason in result.degradation_reasons] == ["HTTP 401", "HTTP 401"]
    assert len(server.chat_requests()) == result.budget.model_calls == 2  # one per stage
    assert not result.refused and result.citations


def test_malformed_tool_arguments_get_one_correction_turn(demo_kb, registry, server):
    truncated = '{"query": "XZ-3000 充电宝 价格", "product_id": "p-xz3'
    server.push(
        {"malformed_tool_args": truncated, "name": "hybrid_search"},
        {"tool_calls": [{"name": "hybrid_search", "arguments": {"query": "XZ-3000 充电宝 价格"}}]},
        {"content": "检索完成"},
    )
    result = make_pipeline(demo_kb, registry, server, planner=True).run(PRICE_QUESTION)

    assert result.planner_source == "llm" and not result.degraded, result.degradation_reasons
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("hybrid_search", {"query": "XZ-3000 充电宝 价格"})]
    correction = server.chat_requests()[1].body["messages"][-2:]
    assert correction[0]["tool_calls"][0]["function"]["arguments"] == truncated  # shown as sent
    assert correction[1]["role"] == "tool"
    assert "工具调用失败" in correction[1]["content"] and "not valid JSON" in correction[1]["content"]


def test_a_cut_stream_is_no_answer(demo_kb, registry, server):
    server.default_step = {"content": "星择 XZ-3000 充电宝的价格是 299元", "cut_stream": True}
    result = make_pipeline(demo_kb, registry, server, answerer=True).run(PRICE_QUESTION)

    assert result.answer_source == "extractive" and result.degraded
    assert "the model stream ended without a finish reason" in result.degradation_reasons[0]


def test_run_answers_question_after_question_on_one_loop_over_kept_alive_connections(demo_kb, registry):
    forget_providers()
    with ReplayServer(default_step=valid_price_answer, keep_alive=True) as server:
        pipeline = make_pipeline(demo_kb, registry, server, answerer=True)
        pipeline.answerer.model.stream = False  # JSON replies keep the connection open (a stream ends by closing)
        results = [pipeline.run(PRICE_QUESTION) for _ in range(3)]
        pipeline.close()

    assert [r.answer_source for r in results] == ["llm"] * 3 and not any(r.degraded for r in results)
    assert len(server.chat_requests()) == 3


def test_dashscope_questions_share_one_sdk_session_that_close_closes(demo_kb, registry, monkeypatch):
    forget_providers()
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-replay-key-1")
    with ReplayServer(default_step=lambda body: valid_price_answer(body["input"])) as server:
        spec = f"dashscope:qwen-plus@{server.dashscope_base_url}"
        config = PipelineConfig.load(demo_kb.dir, environ={}, answerer=spec, max_retries=0)
        pipeline = QAPipeline(demo_kb, config, registry=registry).warm_up()
        sessions = []
        for _ in range(2):
            assert pipeline.run(PRICE_QUESTION).answer_source == "llm"
            assert pipeline._loop.loop is not None
            sessions.append(aio_session._aio_sessions[pipeline._loop.loop])
        pipeline.close()

    assert sessions[0] is sessions[1] and sessions[0].closed


def test_the_assistants_model_sessions_close_with_it(kb_dir, monkeypatch):
    """ask_sync runs on the Assistant's own loop: closing the Assistant closes dashscope's session there."""
    from citescope.workflows.assistant import Assistant

    forget_providers()
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-replay-key-1")
    with ReplayServer(default_step=lambda body: valid_price_answer(body["input"])) as server:
        spec = f"dashscope:qwen-plus@{server.dashscope_base_url}"
        config = PipelineConfig.load(kb_dir, environ={}, answerer=spec, max_retries=0)
        assistant = Assistant(kb_dir, config=config).warm_up()
        assert assistant.ask_sync(PRICE_QUESTION).answer_source == "llm"
        loop = assistant._loop
        assert loop is not None
        session = aio_session._aio_sessions[loop]
        assert not session.closed
        assistant.close()
    assert session.closed
