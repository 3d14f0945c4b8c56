"""Hostile input at the HTTP API: uvicorn on 127.0.0.1 (a free port) around a real Assistant on a
copy of the demo KB; inputs in tests/support/hostile.py, plus malformed JSON and wrong types.

Properties: never a 5xx; every error is the JSON error body naming the field; a filter never
widens the result set (every shown or cited chunk matches every filter field exactly).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from urllib.parse import quote

import httpx
import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from citescope.workflows.assistant import Assistant
from citescope.workflows.pipeline_config import PipelineConfig
from citescope.workflows.service import BackgroundServer, ServiceSettings, create_app
from tests.support.hostile import (
    HOSTILE,
    INJECTED,
    QUESTION_LIMIT,
    REAL_QUESTIONS,
    SPECIAL_IDS,
    SPECIAL_TEXT,
    any_text,
    assert_within_filters,
    bad_question,
    bad_session_id,
    copy_kb,
    every,
    filter_dicts,
    hostile_ids,
    hostile_text,
    names_a_field,
    wrong_types,
)

MAX_BODY_BYTES = 64 * 1024


# -- the HTTP API -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def url(demo_kb, tmp_path_factory):
    kb = copy_kb(demo_kb, tmp_path_factory, "hostile-http")
    service = create_app(
        Assistant(kb, config=PipelineConfig.load(kb, environ={})),
        ServiceSettings(api_keys="", max_body_bytes=MAX_BODY_BYTES),
    )
    with BackgroundServer(service) as server:
        assert service.state.runner.ready.wait(120) and service.state.runner.error is None
        yield server.url


@pytest.fixture(scope="module")
def http(url):
    with httpx.Client(base_url=url, timeout=60) as client:
        yield client


@pytest.fixture(scope="module")
def http_trace_id(http):
    response = post(http, "/v1/ask", {"question": REAL_QUESTIONS[0]})
    assert response.status_code == 200
    return response.json()["trace_id"]


def post(http: httpx.Client, path: str, payload) -> httpx.Response:
    """JSON as any client may send it: ASCII-escaped, so lone surrogates travel as \\udXXX."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return http.post(path, content=body, headers={"content-type": "application/json"})


def error_message(response: httpx.Response) -> str:
    """The error body every non-2xx answer has: {"error": {"message", "type", "code"}}."""
    assert response.status_code < 500, response.text
    error = response.json()["error"]
    assert error["code"] == response.status_code and error["message"]
    assert error["type"] != "server_error"  # a client's mistake is not labelled as the server's
    return error["message"]


@settings(HOSTILE, max_examples=50)
@given(question=hostile_text, session_id=st.one_of(st.none(), hostile_ids))
@every("question", SPECIAL_TEXT, session_id=None)
@every("session_id", SPECIAL_IDS, question=REAL_QUESTIONS[0])
def test_http_ask_answers_any_text_or_names_what_is_wrong(http, question, session_id):
    payload = {"question": question, **({"session_id": session_id} if session_id is not None else {})}
    response = post(http, "/v1/ask", payload)
    event(f"HTTP {response.status_code}")
    if len(json.dumps(payload).encode()) > MAX_BODY_BYTES:
        assert response.status_code == 413 and "limit" in error_message(response)
        return
    wrong_question, wrong_session = bad_question(question, QUESTION_LIMIT), bad_session_id(session_id)
    if wrong_question or wrong_session:
        message = error_message(response)
        assert response.status_code == 422
        assert (wrong_question and "question" in message) or (wrong_session and "session" in message), message
        return
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["answer"].strip() and all(f"【{c['id']}】" in body["answer"] for c in body["citations"])


@settings(HOSTILE, max_examples=50)
@given(question=st.sampled_from(REAL_QUESTIONS), filters=st.one_of(filter_dicts, wrong_types))
@every("filters", [{field: value} for field, value in INJECTED], question=REAL_QUESTIONS[0])
def test_http_filters_never_widen_the_answer(http, demo_kb, question, filters):
    response = post(http, "/v1/ask", {"question": question, "filters": filters})
    if response.status_code != 200:
        message = error_message(response)
        assert response.status_code == 422 and (names_a_field(message, filters) or "filters" in message), message
        event("filters refused")
        return
    body = response.json()
    event("filtered answer with citations" if body["citations"] else "filtered answer without citations")
    assert isinstance(filters, Mapping)
    assert_within_filters(demo_kb, body["evidence_ids"], [c["id"] for c in body["citations"]], filters)


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), any_text),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.one_of(
                st.sampled_from(
                    [
                        "question",
                        "session_id",
                        "filters",
                        "trace_id",
                        "rating",
                        "comment",
                        "messages",
                        "role",
                        "content",
                        "type",
                        "text",
                        "stream",
                        "metadata",
                        "brand",
                        "doc_type",
                    ]
                ),
                any_text,
            ),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=12,
)
raw_bodies = st.one_of(
    st.binary(max_size=80),
    json_values.map(lambda value: json.dumps(value).encode()),
    st.builds(
        lambda text, cut: text[:cut],
        st.sampled_from(
            [
                b'{"question": "XZ-3000", "filters": {"brand": "\xe6\x98\x9f"}}',
                b'{"trace_id": "x", "rating": "up"}',
                b'{"messages": [{"role": "user", "content": "\\ud800"}]}',
                b'\xef\xbb\xbf{"question": "x"}',
            ]
        ),
        st.integers(0, 60),
    ),
)


@settings(HOSTILE, max_examples=60)
@given(path=st.sampled_from(["/v1/ask", "/v1/feedback", "/v1/chat/completions"]), body=raw_bodies)
@example(path="/v1/ask", body=b'{"question": "\xe9"}')  # Latin-1, not UTF-8
@example(path="/v1/chat/completions", body=b'{"messages": [{"role": "user", "content": [{"type": "text"}, 5]}]}')
def test_http_malformed_bodies_get_a_client_error(http, path, body):
    response = post(http, path, body)
    event(f"HTTP {response.status_code}")
    if response.status_code != 200:
        assert response.status_code in (400, 404, 413, 422)
        error_message(response)


@settings(HOSTILE, max_examples=50)
@given(
    trace_id=st.one_of(st.just("known"), hostile_ids, wrong_types),
    rating=st.one_of(
        st.sampled_from([1, -1, "up", "down", "👎", "+1"]),
        st.sampled_from([0, 2, "", "[/x]", "\ud800", None, 1.0, [1]]),
    ),
    comment=st.one_of(st.none(), hostile_text),
)
@every("trace_id", SPECIAL_IDS, rating="up", comment=None)
@every("comment", SPECIAL_TEXT, trace_id="known", rating="down")
def test_http_feedback_takes_any_payload(http, http_trace_id, trace_id, rating, comment):
    trace_id = http_trace_id if trace_id == "known" else trace_id
    payload = {"trace_id": trace_id, "rating": rating, "comment": comment}
    response = post(http, "/v1/feedback", payload)
    event(f"HTTP {response.status_code}")
    if response.status_code == 200:
        assert trace_id == http_trace_id and response.json()["rating"] in (1, -1)
        return
    message = error_message(response)
    if response.status_code == 404:
        assert trace_id != http_trace_id and "trace id" in message
    elif response.status_code == 413:
        assert len(json.dumps(payload).encode()) > MAX_BODY_BYTES
    else:
        assert response.status_code == 422 and any(f in message for f in ("trace_id", "rating", "comment")), message


@settings(HOSTILE, max_examples=40)
@given(kind=st.sampled_from(["sessions", "traces"]), identifier=hostile_ids.filter(bool))
@every("identifier", [i for i in SPECIAL_IDS if i], kind="sessions")
@every("identifier", [i for i in SPECIAL_IDS if i], kind="traces")
def test_http_session_and_trace_lookups_take_any_id(http, kind, identifier):
    response = http.get(f"/v1/{kind}/" + quote(identifier, safe="", errors="surrogatepass"))
    assert response.status_code in (200, 404), response.text
    if response.status_code == 404:
        error_message(response)


@settings(HOSTILE, max_examples=40)
@given(
    question=hostile_text,
    as_parts=st.booleans(),
    stream=st.booleans(),
    session=st.one_of(st.none(), hostile_ids),
    carrier=st.sampled_from(["user", "session_id", "metadata"]),
)
@every("question", SPECIAL_TEXT, as_parts=False, stream=True, session=None, carrier="user")
@every("session", SPECIAL_IDS, question=REAL_QUESTIONS[0], as_parts=True, stream=False, carrier="metadata")
@every("session", SPECIAL_IDS, question=REAL_QUESTIONS[0], as_parts=False, stream=True, carrier="user")
def test_http_chat_completions_take_any_message(http, question, as_parts, stream, session, carrier):
    content = [{"type": "text", "text": question}, {"type": "image_url"}] if as_parts else question
    payload = {"messages": [{"role": "user", "content": content}], "stream": stream}
    if session is not None:
        payload.update({"metadata": {"session_id": session}} if carrier == "metadata" else {carrier: session})
    # The session the service uses is the one given, whichever field carries it, checked as given ("" too).
    used = session
    wrong_session = used is not None and bad_session_id(used)
    response = post(http, "/v1/chat/completions", payload)
    event(f"HTTP {response.status_code}, stream={stream}")
    if len(json.dumps(payload).encode()) > MAX_BODY_BYTES:
        assert response.status_code == 413
        return
    if response.status_code != 200:
        message = error_message(response)
        assert response.status_code == 422, message
        assert (bad_question(question, QUESTION_LIMIT) and "question" in message) or (
            wrong_session and (carrier in message or "session" in message)
        ), message
        return
    assert not bad_question(question, QUESTION_LIMIT)  # a bad question is refused before any stream starts
    if not stream:
        assert not wrong_session and response.json()["choices"][0]["message"]["content"].strip()
        return
    events = [line[len("data: ") :] for line in response.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"  # every stream ends so, one with an in-stream error too
    assert not wrong_session  # a wrong session id is a 422 before any stream starts, as on /v1/ask
    assert not any("error" in json.loads(e) for e in events[:-1]), events
