"""A question answers or refuses by its deadline: a refusal with refusal_reason "deadline" and the
message of prompts/refusal_deadline.md, never cached and never taught to the strategy policy; a
~2,000-character message is read by what it asks and answered or refused like any other."""

from __future__ import annotations

import asyncio
import shutil
import time

import pytest

from citescope.agents.prompts import load_prompt
from citescope.workflows.assistant import Assistant
from citescope.workflows.evaluation.bench.cost import long_question
from citescope.workflows.pipeline_config import PipelineConfig

QUESTION = "暖岩摇粒绒夹克可以机洗吗？"


@pytest.fixture(scope="module")
def assistant(demo_kb, tmp_path_factory):
    kb_dir = tmp_path_factory.mktemp("deadline") / "kb"
    shutil.copytree(demo_kb.dir, kb_dir)  # the Assistant writes sessions, traces and experience
    with Assistant(kb_dir, config=PipelineConfig.load(kb_dir, environ={})) as assistant:
        yield assistant


def ask(assistant: Assistant, question: str, **kwargs) -> object:
    return asyncio.run(assistant.ask(question, **kwargs))


def test_a_question_past_its_deadline_is_refused_with_the_reason(assistant):
    learned = dict(assistant.learner.policy.count)
    result = ask(assistant, QUESTION, arrived=time.monotonic() - 5, deadline_s=2)
    assert result.refused and result.refusal_reason == "deadline" and result.answer_source == "refusal"
    assert result.answer == load_prompt("refusal_deadline").strip() and not result.citations
    assert result.degraded and "deadline of 2s passed before" in result.degradation_reasons[0]
    assert result.budget.limits.deadline_s == 2  # the shorter of the request's and the config's
    assert assistant.learner.policy.count == learned  # for want of time: nothing learned about the arm
    again = ask(assistant, QUESTION)  # not cached: asked in time, it is computed and answered
    assert "cached" not in again.timings_ms and not again.refused and again.citations


def test_the_refusal_speaks_the_language_and_script_of_the_question(assistant):
    past = {"arrived": time.monotonic() - 5, "deadline_s": 1}
    english = ask(assistant, "can I wash the fleece jacket in a washing machine?", **past)
    assert english.refusal_reason == "deadline" and english.answer == load_prompt("refusal_deadline_en").strip()
    traditional = ask(assistant, "退貨運費誰承擔？", **past)
    assert traditional.refusal_reason == "deadline" and "諮詢" in traditional.answer


def test_a_deadline_in_the_pipeline_config_refuses_at_the_next_stage(assistant):
    pipeline = assistant.pipeline
    slow = pipeline.config.model_copy(update={"deadline_s": 1e-9})
    original, pipeline.config = pipeline.config, slow
    try:
        result = pipeline.run("XZ-3000 充电宝多少钱？")
    finally:
        pipeline.config = original
    assert result.refusal_reason == "deadline" and result.tool_calls == []  # no search started


def test_a_2000_character_message_is_read_by_what_it_asks(assistant):
    message = long_question(12)
    started = time.monotonic()
    result = assistant.pipeline.run(message)
    assert time.monotonic() - started < 120  # only catches a hang; the cost is measured by `bench cost`
    assert result.question == message  # the whole message stays the question
    assert result.features["length"] <= assistant.config.retrieval_max_chars
    assert result.refusal_reason != "deadline"
    for call in result.tool_calls:  # every search read the capped question, not the story
        query = str(call.arguments.get("query", ""))
        assert len(query) <= 2 * assistant.config.retrieval_max_chars and "表扬" not in query


def test_a_cut_message_is_embedded_once(assistant, monkeypatch):
    """The search's reading of a long message is the one the rerank scores: its query embedding, most
    of what the message costs, is computed once (it was three near-identical readings: 150-155 characters)."""
    embedded: list[str] = []
    inner = assistant.kb.embedder.inner
    original = inner.embed_query
    monkeypatch.setattr(inner, "embed_query", lambda text: embedded.append(text) or original(text))
    result = assistant.pipeline.run(long_question(14))
    assert result.refusal_reason != "deadline" and result.tool_calls
    assert len(embedded) == 1 and len(embedded[0]) <= 2 * assistant.config.retrieval_max_chars


def test_a_long_message_gives_way_to_a_usual_question_until_its_deadline(assistant):
    pipeline = assistant.pipeline
    with pipeline.priority.usual():  # a usual question computing the whole time
        usual = pipeline.run("XZ-3000 充电宝多少钱？")  # usual questions never wait for each other
        assert usual.refusal_reason != "deadline" and usual.tool_calls
        started = time.monotonic()
        long = asyncio.run(pipeline.arun(long_question(15), arrived=time.monotonic(), deadline_s=1.0))
        assert time.monotonic() - started < 60  # only catches a hang
    assert long.refusal_reason == "deadline" and long.tool_calls == []  # it gave way before its search
    assert "before the search stage" in long.degradation_reasons[0]
    assert not pipeline.priority.busy and pipeline.priority.waiting == 0
    again = pipeline.run(long_question(15))  # no usual question computing: it goes on at once
    assert again.refusal_reason != "deadline" and again.tool_calls
