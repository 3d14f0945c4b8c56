"""Routing between models, one-turn plans and the conversation, over real HTTP: AgentScope's OpenAI
client talking to a scripted OpenAI-compatible server on 127.0.0.1 that records every request. The
models of a route are told apart by the model name each request carries."""

from __future__ import annotations

import re
import shutil

import pytest

from citescope.agents.circuit_breaker import forget_providers
from citescope.workflows.assistant import Assistant
from citescope.workflows.evaluation.scripted_server import ReplayServer, prompt_text
from citescope.workflows.pipeline import QAPipeline
from citescope.workflows.pipeline_config import PipelineConfig
from citescope.workflows.traces import build_trace, render_trace

PRICE_QUESTION = "XZ-3000 充电宝多少钱？"
COMPOUND_QUESTION = "XZ-3000 充电宝的价格和保修期分别是多少？"
_SKU_LINE = re.compile(r"【(sku-p-xz3000#[^】]+)】[^\n]*?价格: ([\d.]+)元")
_EVIDENCE_LINE = re.compile(r"^【([^】]+)】\([^)]*\) ([^。\n]+)", re.M)


@pytest.fixture
def server():
    forget_providers()  # a breaker opened on an earlier test's port must not carry over
    with ReplayServer() as replay:
        yield replay


def spec(server: ReplayServer, name: str) -> str:
    return f"compatible:{name}@{server.base_url}"


def make_pipeline(kb, registry, server, planner="offline", answerer="offline", **overrides) -> QAPipeline:
    settings = {"max_retries": 0, "backoff_s": 0.01, "model_timeout_s": 10, **overrides}
    config = PipelineConfig.load(kb.dir, environ={}, planner=planner, answerer=answerer, **settings)
    return QAPipeline(kb, config, registry=registry).warm_up()


def valid_price_answer(body: dict) -> dict:
    chunk_id, price = _SKU_LINE.search(prompt_text(body)).groups()
    return {"content": f"星择 XZ-3000 充电宝的价格是 {price}元【{chunk_id}】。"}


def first_evidence_answer(body: dict) -> dict:
    chunk_id, text = _EVIDENCE_LINE.search(prompt_text(body)).groups()
    return {"content": f"{text}【{chunk_id}】。"}


INVENTED = {"content": "XZ-3000 的价格是 1元【made-up#x-1】。"}


def models_asked(server: ReplayServer) -> list[str]:
    return [request.body["model"] for request in server.chat_requests()]


def route_of(result) -> list[tuple[str, str, str, str]]:
    return [(s.role, s.model.split(":")[1].split("@")[0], s.reason, s.outcome) for s in result.route]


def test_an_answer_the_inspector_rejects_is_rewritten_by_the_stronger_model(demo_kb, registry, server):
    server.push(INVENTED, valid_price_answer)
    pipeline = make_pipeline(demo_kb, registry, server, answerer=[spec(server, "cheap"), spec(server, "strong")])
    result = pipeline.run(PRICE_QUESTION)

    assert models_asked(server) == ["cheap", "strong"] and result.budget.model_calls == 2
    assert (
        result.regenerated and result.answer_source == "llm" and not result.degraded and "made-up" not in result.answer
    )
    assert route_of(result) == [
        ("answerer", "cheap", "first model of the route", "rejected by the inspector"),
        ("answerer", "strong", "the inspector rejected compatible:cheap's draft", "passed the inspector"),
    ]
    retry = server.chat_requests()[1].body
    assert "【审核意见】" in prompt_text(retry) and "made-up#x-1" in prompt_text(retry)
    shown = build_trace(result)
    assert shown["route"][1]["model"] == "compatible:strong"
    assert render_trace(shown) is not None


def test_a_compound_question_starts_on_the_stronger_model(demo_kb, registry, server):
    server.default_step = first_evidence_answer
    pipeline = make_pipeline(demo_kb, registry, server, answerer=[spec(server, "cheap"), spec(server, "strong")])
    result = pipeline.run(COMPOUND_QUESTION)

    assert models_asked(server)[0] == "strong" and "cheap" not in models_asked(server)
    assert result.route[0].reason == "compound question: starts on the strongest model"


def test_a_plain_question_starts_on_the_cheaper_model_and_the_single_spec_still_works(demo_kb, registry, server):
    server.push(valid_price_answer)
    routed = make_pipeline(demo_kb, registry, server, answerer=[spec(server, "cheap"), spec(server, "strong")])
    assert routed.run(PRICE_QUESTION).route[0].model == "compatible:cheap"
    server.push(valid_price_answer)
    single = make_pipeline(demo_kb, registry, server, answerer=spec(server, "only"))
    result = single.run(PRICE_QUESTION)
    assert models_asked(server) == ["cheap", "only"] and result.models["answerer"] == "only"
    assert route_of(result) == [("answerer", "only", "first model of the route", "passed the inspector")]


def test_when_every_model_of_the_route_fails_the_offline_engine_answers(demo_kb, registry, server):
    server.default_step = {"status": 500}
    pipeline = make_pipeline(
        demo_kb,
        registry,
        server,
        planner=[spec(server, "cheap"), spec(server, "strong")],
        answerer=[spec(server, "cheap"), spec(server, "strong")],
    )
    result = pipeline.run(PRICE_QUESTION)

    assert models_asked(server) == ["cheap", "strong", "cheap", "strong"]
    assert result.planner_source == "offline" and result.answer_source == "extractive"
    assert result.degraded and not result.refused and result.citations and result.inspection.passed
    assert [(role, model, outcome.split(" (")[0]) for role, model, _, outcome in route_of(result)] == [
        ("planner", "cheap", "failed: HTTP 500: replayed HTTP 500"),
        ("planner", "strong", "failed: HTTP 500: replayed HTTP 500"),
        ("answerer", "cheap", "failed: HTTP 500: replayed HTTP 500"),
        ("answerer", "strong", "failed: HTTP 500: replayed HTTP 500"),
    ]
    assert result.route[1].reason == "compatible:cheap failed"
    assert result.degradation_reasons[0].endswith("model compatible:strong used")
    assert "offline plan used" in result.degradation_reasons[1]
    assert result.degradation_reasons[-1].endswith("extractive answer used")


def test_settings_of_each_model_reach_its_requests(demo_kb, registry, server):
    server.push(INVENTED, valid_price_answer)
    answerer = [
        {"spec": spec(server, "cheap"), "temperature": 0.1, "seed": 11, "max_tokens": 300},
        {"spec": spec(server, "strong"), "temperature": 0.6, "top_p": 0.9, "enable_thinking": False},
    ]
    make_pipeline(demo_kb, registry, server, answerer=answerer).run(PRICE_QUESTION)
    cheap, strong = (request.body for request in server.chat_requests())
    assert (cheap["temperature"], cheap["seed"], cheap["max_tokens"]) == (0.1, 11, 300) and "top_p" not in cheap
    assert (strong["temperature"], strong["top_p"], strong["enable_thinking"]) == (0.6, 0.9, False)


def test_the_answer_language_setting_reaches_the_prompt(demo_kb, registry, server):
    server.push(valid_price_answer)
    make_pipeline(demo_kb, registry, server, answerer=spec(server, "m"), answer_language="en").run(PRICE_QUESTION)
    told = prompt_text(server.chat_requests()[0].body)
    assert "一律用英文回答" in told and "always answer in English" in told and "使用用户提问的语言回答" not in told


def test_a_whole_plan_in_one_reply_costs_one_planner_request(demo_kb, registry, server):
    server.push(
        {
            "content": "检索完成",
            "tool_calls": [
                {"name": "product_lookup", "arguments": {"product": "XZ-3000"}},
                {"name": "hybrid_search", "arguments": {"query": "XZ-3000 充电宝 价格"}},
            ],
        },
        valid_price_answer,
    )
    pipeline = make_pipeline(demo_kb, registry, server, planner=spec(server, "p"), answerer=spec(server, "a"))
    result = pipeline.run(PRICE_QUESTION)

    assert models_asked(server) == ["p", "a"] and result.budget.model_calls == 2
    assert [(c.name, c.outcome) for c in result.tool_calls] == [("product_lookup", "ran"), ("hybrid_search", "ran")]
    assert result.planner_source == "llm" and not result.degraded and not result.refused
    assert route_of(result)[0] == ("planner", "p", "first model of the route", "gathered evidence")


def test_both_models_read_the_product_a_follow_up_refers_to(demo_kb, tmp_path, server):
    def reply(body: dict) -> dict:
        if body.get("tools"):  # the planner searches the product its context names, in one reply
            told = prompt_text(body).split("【对话上下文】", 1)[1]
            found = re.search(r"（(p-[^）]+)）", told)
            arguments = {"query": "颜色", **({"product_id": found.group(1)} if found else {})}
            return {"content": "检索完成", "tool_calls": [{"name": "hybrid_search", "arguments": arguments}]}
        return first_evidence_answer(body)

    server.default_step = reply
    kb_dir = tmp_path / "kb"
    shutil.copytree(demo_kb.dir, kb_dir, ignore=shutil.ignore_patterns("sessions.sqlite*", "traces.sqlite*"))
    config = PipelineConfig.load(
        kb_dir, environ={}, planner=spec(server, "p"), answerer=spec(server, "a"), max_retries=0, model_timeout_s=10
    )
    with Assistant(kb_dir, config=config, policy="rules") as assistant:
        assistant.ask_sync(PRICE_QUESTION, "s1")
        before = len(server.chat_requests())
        second = assistant.ask_sync("它有几种颜色？", "s1")
    assert not second.refused and second.answer_source == "llm"
    planner, answerer = (r.body for r in server.chat_requests()[before:][:2])
    assert planner.get("tools") and not answerer.get("tools")
    for told in (prompt_text(planner), prompt_text(answerer)):
        context = told.split("【对话上下文】", 1)[1]
        assert "当前讨论的商品：星择 XZ-3000" in context and "(p-xz3000)" not in context
        assert "（p-xz3000）" in context and "顾客：XZ-3000 充电宝多少钱？" in context
    assert "它有几种颜色？" in prompt_text(answerer)


def test_the_conversation_in_a_prompt_keeps_to_its_token_bound(demo_kb, registry, server):
    from citescope.agents.conversation import PastTurn, estimate_tokens

    server.push(valid_price_answer)
    pipeline = make_pipeline(demo_kb, registry, server, answerer=spec(server, "a"), conversation_max_tokens=60)
    long_turns = [PastTurn(f"第{n}轮的问题？", "很长的回答。" * 40) for n in range(5)]
    pipeline.run(PRICE_QUESTION)  # warm, no history: the slot says 无
    assert "【对话上下文】（“无”表示这是对话的第一个问题）\n无" in prompt_text(server.chat_requests()[0].body)
    server.push(valid_price_answer)
    import asyncio

    asyncio.run(pipeline.arun(PRICE_QUESTION, history=long_turns))
    told = prompt_text(server.chat_requests()[1].body)
    context = told.split("【对话上下文】（“无”表示这是对话的第一个问题）\n", 1)[1].split("\n\n【用户问题】", 1)[0]
    assert estimate_tokens(context) <= 60 and "第4轮的问题？" in context and "第3轮" not in context
