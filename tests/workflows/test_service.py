"""The HTTP service over real HTTP: uvicorn on 127.0.0.1 (a free port) in a background thread,
a real Assistant on a copy of the demo KB, httpx and the official openai client as callers."""

from __future__ import annotations

import json
import logging
import shutil
import time

import httpx
import openai
import pytest

from citescope.agents.citations import parse_citations
from citescope.workflows.assistant import Assistant
from citescope.workflows.pipeline_config import PipelineConfig
from citescope.workflows.service import BackgroundServer, ServiceSettings, create_app
from tests.support.log_lines import JsonLogLines

KEYS = ("key-one-7f3a", "key-two-91bc")
AUTH = {"Authorization": f"Bearer {KEYS[1]}"}
PRICE_QUESTION = "XZ-3000 充电宝多少钱？"


@pytest.fixture(scope="module")
def access_lines():
    handler = JsonLogLines()
    logger = logging.getLogger("citescope.access")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler.lines
    logger.removeHandler(handler)


@pytest.fixture(scope="module")
def url(demo_kb, tmp_path_factory, access_lines):
    kb_dir = tmp_path_factory.mktemp("service") / "kb"
    shutil.copytree(demo_kb.dir, kb_dir)  # the Assistant writes sessions and experience next to the KB
    assistant = Assistant(kb_dir, config=PipelineConfig.load(kb_dir, environ={}))
    app = create_app(assistant, ServiceSettings(api_keys=",".join(KEYS), max_body_bytes=64 * 1024))
    with BackgroundServer(app) as server:
        assert httpx.get(f"{server.url}/healthz").status_code == 200  # alive before warm-up finishes
        app.state.runner.ready.wait(60)
        yield server.url


@pytest.fixture()
def http(url):
    with httpx.Client(base_url=url, timeout=30) as client:
        yield client


def _ask(http, question: str, **extra) -> httpx.Response:
    return http.post("/v1/ask", json={"question": question, **extra}, headers=AUTH)


def test_health_endpoints_are_open_and_ready_after_warm_up(http):
    assert http.get("/healthz").json() == {"status": "ok"}
    ready = http.get("/readyz")
    assert ready.status_code == 200 and ready.json()["ready"] is True


def test_ask_returns_the_cited_result_and_sessions_keep_the_turns(http):
    first = _ask(http, PRICE_QUESTION, session_id="svc-session")
    assert first.status_code == 200
    body = first.json()
    assert not body["refused"] and body["session_id"] == "svc-session"
    ids = [c["id"] for c in body["citations"]]
    assert ids and ids == parse_citations(body["answer"], known_ids=ids)
    assert {"id", "doc_id", "title", "source", "doc_type", "updated_at", "snippet"} <= set(body["citations"][0])
    assert "299" in body["answer"]

    follow_up = _ask(http, "它有什么颜色？", session_id="svc-session").json()
    assert follow_up["features"]["carried_entity"]  # the product of the first turn

    session = http.get("/v1/sessions/svc-session", headers=AUTH)
    assert session.status_code == 200
    assert [t["trace_id"] for t in session.json()["turns"]] == [body["trace_id"], follow_up["trace_id"]]
    assert http.get("/v1/sessions/no-such-session", headers=AUTH).status_code == 404


def test_api_keys_are_required_on_v1_and_checked(http):
    for headers in ({}, {"Authorization": "Bearer wrong-key"}, {"Authorization": KEYS[0]}):
        denied = http.post("/v1/ask", json={"question": PRICE_QUESTION}, headers=headers)
        assert denied.status_code == 401, headers
        assert denied.headers["www-authenticate"] == "Bearer"
        assert denied.json()["error"]["type"] == "authentication_error"
    assert http.get("/v1/sessions/x", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert (
        http.post(
            "/v1/ask", json={"question": PRICE_QUESTION}, headers={"Authorization": f"Bearer {KEYS[0]}"}
        ).status_code
        == 200
    )


def test_oversized_bodies_get_413_and_long_questions_422(http):
    big = json.dumps({"question": "多少钱" * 30000}).encode()
    assert len(big) > 64 * 1024
    declared = http.post("/v1/ask", content=big, headers={**AUTH, "content-type": "application/json"})
    assert declared.status_code == 413 and "limit" in declared.json()["error"]["message"]

    def chunked():  # no Content-Length: counted as it streams in
        for start in range(0, len(big), 8192):
            yield big[start : start + 8192]

    streamed = http.post("/v1/ask", content=chunked(), headers={**AUTH, "content-type": "application/json"})
    assert streamed.status_code == 413

    too_long = _ask(http, "这" * 2001)
    assert too_long.status_code == 422
    assert "2001 characters" in too_long.json()["error"]["message"] and "2000" in too_long.json()["error"]["message"]
    for bad in ({"question": "   "}, {}, {"question": PRICE_QUESTION, "unknown": 1}):
        refused = http.post("/v1/ask", json=bad, headers=AUTH)
        assert refused.status_code == 422 and refused.json()["error"]["type"] == "invalid_request_error", bad
    assert http.get("/v1/no-such-endpoint", headers=AUTH).json()["error"]["code"] == 404
    assert _ask(http, PRICE_QUESTION, filters={"no_such_filter": "x"}).status_code == 422
    assert _ask(http, PRICE_QUESTION, filters={"doc_type": ["no-such-type"]}).status_code == 422


def test_a_body_that_is_not_a_json_object_says_so(http):
    """422 in the error envelope, as every other malformed body (not FastAPI's "0: JSON decode error")."""
    headers = {**AUTH, "content-type": "application/json"}
    for body, expected in (
        (b"not json", "the request body is not valid JSON: Expecting value at character 0"),
        (
            b'{"question": "x",}',
            "the request body is not valid JSON: Expecting property name enclosed in double quotes at character 17",
        ),
        (b'["x"]', "the request body must be a JSON object (Content-Type: application/json)"),
        (b"", "the request body must be a JSON object (Content-Type: application/json)"),
    ):
        refused = http.post("/v1/ask", content=body, headers=headers)
        assert refused.status_code == 422, body
        assert refused.json() == {"error": {"message": expected, "type": "invalid_request_error", "code": 422}}
    as_text = http.post(
        "/v1/chat/completions", content=b'{"messages": []}', headers={**AUTH, "content-type": "text/plain"}
    )
    assert as_text.status_code == 422 and "JSON object" in as_text.json()["error"]["message"]


def test_filters_restrict_the_evidence(http):
    question = "七天无理由退货怎么申请？"
    body = _ask(http, question, filters={"doc_type": ["policy"]}).json()
    assert body["citations"] and {c["doc_type"] for c in body["citations"]} == {"policy"}
    reviews_only = _ask(http, question, filters={"doc_type": ["review"]}).json()
    assert {c["doc_type"] for c in reviews_only["citations"]} <= {"review"}


def test_feedback_by_trace_id(http):
    trace_id = _ask(http, "AJ1 的鞋面是什么材质？").json()["trace_id"]
    up = http.post("/v1/feedback", json={"trace_id": trace_id, "rating": "up", "comment": "准确"}, headers=AUTH)
    assert up.status_code == 200 and up.json() == {"trace_id": trace_id, "rating": 1}
    down = http.post("/v1/feedback", json={"trace_id": trace_id, "rating": -1}, headers=AUTH)
    assert down.json()["rating"] == -1
    trace = http.get(f"/v1/traces/{trace_id}", headers=AUTH).json()
    assert trace["outcome"]["rating"] == -1

    unknown = http.post("/v1/feedback", json={"trace_id": "no-such-trace", "rating": 1}, headers=AUTH)
    assert unknown.status_code == 404
    assert http.post("/v1/feedback", json={"trace_id": trace_id, "rating": "meh"}, headers=AUTH).status_code == 422


def test_openai_client_chat_completion_with_citations(url):
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=KEYS[0])
    completion = client.chat.completions.create(
        model="citescope",
        user="chat-user-1",
        messages=[{"role": "system", "content": "你是客服"}, {"role": "user", "content": PRICE_QUESTION}],
    )
    content = completion.choices[0].message.content
    citations = completion.model_extra["citations"]
    assert citations and [c["id"] for c in citations] == parse_citations(
        content, known_ids=[c["id"] for c in citations]
    )
    assert completion.choices[0].message.model_extra["citations"] == citations
    extension = completion.model_extra["x_citescope"]
    assert extension["session_id"] == "chat-user-1" and extension["refused"] is False
    assert completion.id == f"chatcmpl-{extension['trace_id']}" and completion.choices[0].finish_reason == "stop"

    # the session: `session_id` (extra body) wins over metadata, which wins over `user`
    client.chat.completions.create(
        model="citescope",
        user="chat-user-1",
        messages=[{"role": "user", "content": "它有什么颜色？"}],
        extra_body={"session_id": "chat-explicit"},
    )
    client.chat.completions.create(
        model="citescope",
        user="chat-user-1",
        messages=[{"role": "user", "content": "七天无理由退货怎么申请？"}],
        metadata={"session_id": "chat-meta"},
    )
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEYS[0]}"}) as http:
        assert len(http.get("/v1/sessions/chat-user-1").json()["turns"]) == 1
        assert len(http.get("/v1/sessions/chat-explicit").json()["turns"]) == 1
        assert len(http.get("/v1/sessions/chat-meta").json()["turns"]) == 1
    # each bare key of CITESCOPE_API_KEYS is its own tenant: the other key's sessions are not its own
    with httpx.Client(base_url=url, headers=AUTH) as http:
        assert http.get("/v1/sessions/chat-user-1").status_code == 404

    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"{url}/v1", api_key="wrong").chat.completions.create(
            model="citescope", messages=[{"role": "user", "content": PRICE_QUESTION}]
        )
    with pytest.raises(openai.UnprocessableEntityError):
        client.chat.completions.create(model="citescope", messages=[{"role": "assistant", "content": "您好"}])


def test_openai_client_parses_the_stream(url):
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=KEYS[1])
    question = "风驰轻羽3跑鞋的跟差是多少？"
    chunks = list(
        client.chat.completions.create(model="citescope", stream=True, messages=[{"role": "user", "content": question}])
    )
    assert chunks[0].choices[0].delta.role == "assistant"
    assert len({chunk.id for chunk in chunks}) == 1
    streamed = "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop"
    citation_ids = [c["id"] for c in last.model_extra["citations"]]
    assert citation_ids and citation_ids == parse_citations(streamed, known_ids=citation_ids)

    whole = client.chat.completions.create(model="citescope", messages=[{"role": "user", "content": question}])
    assert streamed == whole.choices[0].message.content
    # the second is answered from the cache, yet each request has a trace id of its own
    assert last.model_extra["x_citescope"]["trace_id"] != whole.model_extra["x_citescope"]["trace_id"]


def test_streamed_chunks_carry_the_id_the_whole_reply_would(http):
    """chatcmpl-<trace id> on every chunk, as on the non-streamed reply; the response starts at
    once with an SSE comment, which clients skip."""
    payload = {"stream": True, "messages": [{"role": "user", "content": "AJ1 Retro 的鞋面是真皮吗？"}]}
    streamed = http.post("/v1/chat/completions", json=payload, headers=AUTH)
    assert streamed.status_code == 200 and streamed.text.startswith(":")
    events = [
        json.loads(line[len("data: ") :])
        for line in streamed.text.splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]
    trace_id = events[-1]["x_citescope"]["trace_id"]
    assert {event["id"] for event in events} == {f"chatcmpl-{trace_id}"}
    assert events[0]["choices"][0]["delta"]["role"] == "assistant"


def test_one_json_log_line_per_request_with_trace_id_and_no_keys(http, access_lines):
    before = len(access_lines)
    answered = _ask(http, PRICE_QUESTION).json()
    http.get("/healthz")
    http.post("/v1/ask", json={"question": PRICE_QUESTION}, headers={"Authorization": "Bearer wrong-key"})
    deadline = time.monotonic() + 10  # a line is written once the response is sent, so it may trail the reply
    while len(access_lines) < before + 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    lines = [json.loads(line) for line in access_lines[before:]]
    assert [(entry["method"], entry["path"], entry["status"]) for entry in lines] == [
        ("POST", "/v1/ask", 200),
        ("GET", "/healthz", 200),
        ("POST", "/v1/ask", 401),
    ]
    assert lines[0]["trace_id"] == answered["trace_id"]
    assert all(isinstance(entry["latency_ms"], float) for entry in lines)
    everything = "\n".join(access_lines)
    assert not any(key in everything for key in (*KEYS, "wrong-key", "Bearer"))


def test_openapi_docs_list_the_endpoints(http):
    assert http.get("/docs").status_code == 200
    paths = http.get("/openapi.json").json()["paths"]
    assert {
        "/v1/ask",
        "/v1/feedback",
        "/v1/chat/completions",
        "/v1/sessions/{session_id}",
        "/healthz",
        "/readyz",
    } <= set(paths)


def test_a_failed_warm_up_keeps_health_up_and_answers_503(demo_kb, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    kb_dir = tmp_path / "kb"
    shutil.copytree(demo_kb.dir, kb_dir)
    config = PipelineConfig.load(kb_dir, environ={}, planner="openai:gpt-4o-mini")  # no key: warm-up fails
    app = create_app(Assistant(kb_dir, config=config), ServiceSettings(api_keys=""))
    with BackgroundServer(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        app.state.runner.ready.wait(60)
        assert http.get("/healthz").status_code == 200
        ready = http.get("/readyz")
        assert ready.status_code == 503 and "API key" in ready.json()["error"]
        refused = http.post("/v1/ask", json={"question": PRICE_QUESTION})  # no keys configured: no auth
        assert refused.status_code == 503 and "could not start" in refused.json()["error"]["message"]
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused")
        with pytest.raises(openai.APIError, match="could not start"):  # headers already sent: the error is in-stream
            list(
                client.chat.completions.create(
                    model="citescope", stream=True, messages=[{"role": "user", "content": PRICE_QUESTION}]
                )
            )
        # a stream that fails after its headers went out still ends as every stream does
        raw = http.post(
            "/v1/chat/completions", json={"stream": True, "messages": [{"role": "user", "content": PRICE_QUESTION}]}
        )
        events = [line[len("data: ") :] for line in raw.text.splitlines() if line.startswith("data: ")]
        assert events[-1] == "[DONE]" and json.loads(events[-2])["error"]["code"] == 503
