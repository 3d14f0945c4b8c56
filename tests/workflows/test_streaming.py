"""The streamed answer (workflows/stages/stream.py) over real HTTP: AgentScope's OpenAI client
streaming from the scripted server on 127.0.0.1, through QAPipeline.astream. Each sentence is
sent once it has passed the inspector's per-sentence checks; one that fails is never sent; what
was sent is the answer."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import threading
from collections.abc import Iterator

import httpx
import pytest

from citescope.agents.citations import parse_citations
from citescope.workflows.answer_events import AnswerEvent, SentenceEvent
from citescope.workflows.assistant import Assistant
from citescope.workflows.evaluation.scripted_server import ReplayServer, prompt_text
from citescope.workflows.pipeline import QAPipeline
from citescope.workflows.pipeline_config import PipelineConfig
from citescope.workflows.service import BackgroundServer, ServiceSettings, create_app

PRICE_QUESTION = "XZ-3000 充电宝多少钱？"
_SKU_LINE = re.compile(r"【(sku-p-xz3000#[^】]+)】[^\n]*?价格: ([\d.]+)元")


@pytest.fixture
def server():
    with ReplayServer() as replay:
        yield replay


def make_pipeline(kb, registry, server, answerer=True, **overrides) -> QAPipeline:
    spec = f"compatible:test@{server.base_url}"
    settings = {"max_retries": 0, "backoff_s": 0.01, "model_timeout_s": 10, **overrides}
    config = PipelineConfig.load(
        kb.dir, environ={}, planner="offline", answerer=spec if answerer else "offline", **settings
    )
    return QAPipeline(kb, config, registry=registry).warm_up()


def priced(body: dict) -> tuple[str, str]:
    """A SKU chunk id and its price, from the evidence the server was shown."""
    return _SKU_LINE.search(prompt_text(body)).groups()


async def streamed(pipeline: QAPipeline, question: str) -> tuple[list[SentenceEvent], AnswerEvent]:
    events = [event async for event in pipeline.astream(question)]
    *sentences, last = events
    assert isinstance(last, AnswerEvent) and all(isinstance(e, SentenceEvent) for e in sentences)
    return sentences, last


def test_sentences_that_fail_are_never_sent_while_the_others_are(demo_kb, registry, server):
    def answer(body: dict) -> dict:
        chunk_id, price = priced(body)
        return {
            "content": f"您好！星择 XZ-3000 充电宝的价格是 {price}元【{chunk_id}】。"
            f"它今天打五折，只要 1元【{chunk_id}】。"  # a number the chunk does not hold
            f"它的售后由官方负责【made-up#x-1】。"  # an id that was never shown
            f"到手价同样是 {price}元【{chunk_id}】。",
            "tokens_per_s": 400,
        }

    server.push(answer)
    pipeline = make_pipeline(demo_kb, registry, server)
    sentences, last = asyncio.run(streamed(pipeline, PRICE_QUESTION))
    result = last.result

    texts = [s.text for s in sentences]
    assert "".join(texts) == result.answer
    assert not any("1元" in t or "made-up" in t for t in texts), texts
    assert texts[0] == "您好！" and "价格是" in texts[1] and "到手价" in texts[-1]
    assert result.answer_source == "llm" and not result.refused and result.inspection.passed
    assert result.degraded and "2 sentence(s) withheld" in " ".join(result.degradation_reasons)
    assert [c.id for c in sentences[1].citations] == [c.id for c in result.citations]
    assert server.remaining == 0 and len(server.chat_requests()) == 1  # nothing regenerated


def test_a_first_sentence_that_fails_is_regenerated_before_anything_is_sent(demo_kb, registry, server):
    def valid(body: dict) -> dict:
        chunk_id, price = priced(body)
        return {"content": f"XZ-3000 的价格是 {price}元【{chunk_id}】。"}

    server.push({"content": "XZ-3000 的价格是 1元【made-up#x-1】。后面的话不会被读到。", "tokens_per_s": 400}, valid)
    sentences, last = asyncio.run(streamed(make_pipeline(demo_kb, registry, server), PRICE_QUESTION))

    assert last.result.regenerated and last.result.answer_source == "llm" and not last.result.degraded
    assert "".join(s.text for s in sentences) == last.result.answer and "made-up" not in last.result.answer
    assert "【审核意见】" in prompt_text(server.chat_requests()[1].body)


def test_a_reply_that_breaks_before_anything_was_shown_is_asked_again_from_the_start(demo_kb, registry, server):
    """The first attempt writes a greeting (held: no factual sentence yet) and stalls past the call
    timeout; the retry's reply is read from its own start, and is the whole answer."""

    def valid(body: dict) -> dict:
        chunk_id, price = priced(body)
        return {"content": f"XZ-3000 的价格是 {price}元【{chunk_id}】。"}

    never = threading.Event()
    server.push({"content": "您好！稍等", "hold_after": 3, "hold_until": never}, valid)
    pipeline = make_pipeline(demo_kb, registry, server, max_retries=1, model_timeout_s=1)
    sentences, last = asyncio.run(streamed(pipeline, PRICE_QUESTION))

    assert last.result.answer.startswith("XZ-3000 的价格是") and "您好" not in last.result.answer
    assert "".join(s.text for s in sentences) == last.result.answer and last.result.answer_source == "llm"
    assert last.result.budget.model_calls == 2 and len(server.chat_requests()) == 2


def test_offline_streaming_gives_the_answer_it_would_give_whole(demo_kb, registry):
    pipeline = QAPipeline(demo_kb, PipelineConfig.load(demo_kb.dir, environ={}), registry=registry).warm_up()
    whole = pipeline.run(PRICE_QUESTION)
    sentences, last = asyncio.run(streamed(pipeline, PRICE_QUESTION))

    assert "".join(s.text for s in sentences) == last.result.answer == whole.answer
    assert len(sentences) >= 1 and {c.id for s in sentences for c in s.citations} == {c.id for c in whole.citations}


def test_the_first_sentence_is_sent_while_the_model_is_still_writing(demo_kb, registry, server):
    """Ordering, not timing: the model holds its reply after the first sentence until the test has
    received that sentence; a pipeline that waited for the whole reply would get it only after the
    hold timed out, when the model's stream had finished."""
    release = threading.Event()

    def answer(body: dict) -> dict:
        chunk_id, price = priced(body)
        first = f"XZ-3000 的价格是 {price}元【{chunk_id}】。"
        return {
            "content": first + f"颜色请以页面为准【{chunk_id}】。",
            "hold_after": len(first) + 1,
            "hold_until": release,
        }

    server.push(answer)
    pipeline = make_pipeline(demo_kb, registry, server)

    async def first_then_rest() -> tuple[int, SentenceEvent, list]:
        events = pipeline.astream(PRICE_QUESTION)
        first = await anext(events)
        finished_at_first = server.streams_finished
        release.set()
        return finished_at_first, first, [e async for e in events]

    finished_at_first, first, rest = asyncio.run(first_then_rest())
    assert finished_at_first == 0 and isinstance(first, SentenceEvent) and "价格是" in first.text
    assert first.text + "".join(e.text for e in rest[:-1]) == rest[-1].result.answer


# -- the service: /v1/chat/completions with stream=true ----------------------------------------
KEY = "stream-key-5c1e"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module")
def service(demo_kb, tmp_path_factory):
    """The service over the demo KB with its answerer on the scripted server (the planner offline)."""
    kb_dir = tmp_path_factory.mktemp("streaming") / "kb"
    shutil.copytree(demo_kb.dir, kb_dir)  # the Assistant writes sessions and experience next to the KB
    with ReplayServer() as replay:
        spec = f"compatible:test@{replay.base_url}"
        config = PipelineConfig.load(kb_dir, environ={}, answerer=spec, max_retries=0, model_timeout_s=10)
        app = create_app(Assistant(kb_dir, config=config), ServiceSettings(api_keys=KEY))
        with BackgroundServer(app) as server:
            app.state.runner.ready.wait(60)
            yield server.url, replay


def sse_events(lines) -> Iterator[dict]:
    for line in lines:
        if line.startswith("data: {"):
            yield json.loads(line[len("data: ") :])


def test_the_service_sends_the_first_sentence_before_the_model_has_finished(service):
    url, replay = service
    release = threading.Event()

    def answer(body: dict) -> dict:
        chunk_id, price = priced(body)
        first = f"XZ-3000 的价格是 {price}元【{chunk_id}】。"
        rest = f"它的售后由官方负责【made-up#x-1】。到手价同样是 {price}元【{chunk_id}】。"
        return {"content": first + rest, "hold_after": len(first) + 1, "hold_until": release}

    replay.push(answer)
    finished_before = replay.streams_finished
    payload = {"stream": True, "messages": [{"role": "user", "content": "星择XZ-3000充电宝卖多少钱？"}]}
    with (
        httpx.Client(base_url=url, timeout=30) as http,
        http.stream("POST", "/v1/chat/completions", json=payload, headers=AUTH) as response,
    ):
        events = sse_events(response.iter_lines())
        assert next(events)["choices"][0]["delta"]["role"] == "assistant"
        first = next(events)["choices"][0]["delta"]["content"]
        model_finished_at_first = replay.streams_finished - finished_before
        release.set()
        rest = list(events)

    assert model_finished_at_first == 0 and "价格是" in first
    streamed = first + "".join(e["choices"][0]["delta"].get("content") or "" for e in rest)
    assert "made-up" not in streamed and "售后" not in streamed and "到手价" in streamed
    last = rest[-1]
    assert last["choices"][0]["finish_reason"] == "stop" and not last["x_citescope"]["refused"]
    assert [c["id"] for c in last["citations"]] == parse_citations(streamed)
    assert {e["id"] for e in rest} == {f"chatcmpl-{last['x_citescope']['trace_id']}"}
