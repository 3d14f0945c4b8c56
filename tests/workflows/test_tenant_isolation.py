"""Trust and safety over real HTTP (uvicorn on 127.0.0.1, a real Assistant on a copy of the demo
KB): two tenants, every id-bearing route tried by one on the other's ids; a conversation full of
personal data, then the SQLite files and the server log scanned for it; one session's concurrent
replies to a clarifying question; the per-tenant rate limit; and the small HTTP fixes."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from citescope.workflows.assistant import Assistant
from citescope.workflows.pipeline_config import PipelineConfig
from citescope.workflows.service import BackgroundServer, ServiceSettings, create_app
from tests.support.log_lines import JsonLogLines

KEY_A, KEY_B = "key-tenant-a-51d2", "key-tenant-b-93e7"
AS_A, AS_B = {"Authorization": f"Bearer {KEY_A}"}, {"Authorization": f"Bearer {KEY_B}"}
PENDING_QUESTION = "AJ1多少钱？"  # two products fit AJ1: a clarifying question, waiting for the pick
# A customer's personal data, as typed: a mobile (with +86 and dashes), an order number, an ID card,
# a bank card (Luhn-valid), an email; each also as bare digits, as a scan of raw bytes looks for it
PERSONAL = {
    "mobile": "+86 139-1234-5678",
    "order": "DD20260105123456",
    "id_card": "11010519491231002X",
    "card": "6222021234567890128",
    "email": "li.ming@example.com",
}
RAW_FORMS = [
    "13912345678",
    "139-1234-5678",
    "DD20260105123456",
    "20260105123456",
    "11010519491231002X",
    "6222021234567890128",
    "li.ming@example.com",
]


@pytest.fixture(scope="module")
def server_log():
    """Every log line the process writes while these tests run, formatted as `serve` writes them."""
    handler, root = JsonLogLines(), logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield handler.lines
    root.removeHandler(handler)
    root.setLevel(level)


@pytest.fixture(scope="module")
def service(demo_kb, tmp_path_factory, server_log):
    kb_dir = tmp_path_factory.mktemp("tenants") / "kb"
    shutil.copytree(demo_kb.dir, kb_dir)
    assistant = Assistant(kb_dir, config=PipelineConfig.load(kb_dir, environ={}))
    app = create_app(assistant, ServiceSettings(api_keys=f"{KEY_A}:shop-a,{KEY_B}:shop-b"))
    with BackgroundServer(app) as server:
        assert app.state.runner.ready.wait(120) and app.state.runner.error is None
        yield server.url, kb_dir


@pytest.fixture(scope="module")
def http(service):
    with httpx.Client(base_url=service[0], timeout=120) as client:
        yield client


def _ask(http, headers, question, **extra) -> dict:
    response = http.post("/v1/ask", json={"question": question, **extra}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def _chat(http, headers, question, stream=False, **carrier) -> httpx.Response:
    return http.post(
        "/v1/chat/completions",
        headers=headers,
        json={"messages": [{"role": "user", "content": question}], "stream": stream, **carrier},
    )


def test_no_cross_tenant_read_or_rating_over_every_id_bearing_route(http):
    # tenant A: a conversation with a pending clarifying question, an answer, a rating
    asked_back = _ask(http, AS_A, PENDING_QUESTION, session_id="conv-a")
    assert asked_back["clarification"] is not None
    answered = _ask(http, AS_A, "退货要几天？", session_id="conv-a2")
    assert (
        http.post("/v1/feedback", json={"trace_id": answered["trace_id"], "rating": "up"}, headers=AS_A).status_code
        == 200
    )
    a_traces = [asked_back["trace_id"], answered["trace_id"]]
    before = {sid: http.get(f"/v1/sessions/{sid}", headers=AS_A).json() for sid in ("conv-a", "conv-a2")}
    rating_before = http.get(f"/v1/traces/{answered['trace_id']}", headers=AS_A).json()["outcome"]["rating"]

    leaks: list[str] = []  # each attempt of B that read or changed A's data
    attempts = 0

    def attempt(what: str, leaked: bool) -> None:
        nonlocal attempts
        attempts += 1
        if leaked:
            leaks.append(what)

    for sid in before:
        response = http.get(f"/v1/sessions/{sid}", headers=AS_B)
        attempt(f"GET /v1/sessions/{sid}", response.status_code != 404)
    for trace_id in a_traces:
        response = http.get(f"/v1/traces/{trace_id}", headers=AS_B)
        attempt(f"GET /v1/traces/{trace_id}", response.status_code != 404)
        for rating in ("down", "up"):
            response = http.post(
                "/v1/feedback", json={"trace_id": trace_id, "rating": rating, "comment": "x"}, headers=AS_B
            )
            attempt(f"POST /v1/feedback {trace_id} {rating}", response.status_code != 404)
    # B continues "A's" conversation by its id, on every carrier: "2" would pick A's pending product
    replies = [("/v1/ask", _ask(http, AS_B, "2", session_id="conv-a"))]
    for carrier in ({"session_id": "conv-a"}, {"metadata": {"session_id": "conv-a"}}, {"user": "conv-a"}):
        reply = _chat(http, AS_B, "2", **carrier)
        assert reply.status_code == 200, reply.text
        replies.append((f"chat {carrier}", reply.json()["x_citescope"]))
        streamed = _chat(http, AS_B, "2", stream=True, **carrier)
        events = [json.loads(line[6:]) for line in streamed.text.splitlines() if line.startswith("data: {")]
        replies.append((f"stream {carrier}", events[-1]["x_citescope"]))
    for what, reply in replies:
        trace = http.get(f"/v1/traces/{reply['trace_id']}", headers=AS_B).json()
        attempt(what, PENDING_QUESTION in trace["question"] or reply["trace_id"] in a_traces)
    # the same question A asked, answered from the shared cache: B's own trace id, B's own session
    cached = _ask(http, AS_B, "退货要几天？", session_id="conv-b")
    assert cached["timings_ms"].get("cached") == 1.0
    attempt("cached answer's trace id", cached["trace_id"] in a_traces)
    own = http.get(f"/v1/traces/{cached['trace_id']}", headers=AS_B).json()
    attempt("cached answer's trace shows A's session", own["session_id"] != "conv-b")
    attempt(
        "A's trace via B's cached copy", http.get(f"/v1/traces/{cached['trace_id']}", headers=AS_A).status_code != 404
    )

    # A's data is as A left it
    after = {sid: http.get(f"/v1/sessions/{sid}", headers=AS_A).json() for sid in before}
    attempt("A's sessions changed", after != before)
    attempt(
        "A's rating changed",
        http.get(f"/v1/traces/{answered['trace_id']}", headers=AS_A).json()["outcome"]["rating"] != rating_before,
    )
    # and A still completes its own clarifying question
    completed = _ask(http, AS_A, "2", session_id="conv-a")
    assert PENDING_QUESTION in completed["question"] and "Retro" in completed["question"]
    print(f"cross-tenant: {len(leaks)} successes of {attempts} attempts")  # the docs/reliability.md figure
    assert leaks == [] and attempts == 20


def test_stored_copies_and_the_log_hold_no_personal_data(http, service, server_log):
    _, kb_dir = service
    typed = (
        f"订单号：{PERSONAL['order']}，东西坏了怎么申请保修？",
        f"我手机 {PERSONAL['mobile']}，退货要几天？",
        f"身份证 {PERSONAL['id_card']} 银行卡 {PERSONAL['card']} 能开发票吗？",
        f"邮箱 {PERSONAL['email']} 能收电子发票吗",
    )
    replies = [_ask(http, AS_A, question, session_id="pii-conv") for question in typed]
    # the customer's own request is answered from the question as typed: retrieval still finds the policy
    assert not replies[0]["refused"] and {"policy-warranty", "faq-021"} & {c["doc_id"] for c in replies[0]["citations"]}
    assert PERSONAL["order"] in replies[0]["question"]  # the reply may echo what they typed
    http.post(
        "/v1/feedback",
        headers=AS_A,
        json={"trace_id": replies[0]["trace_id"], "rating": "down", "comment": f"请打 {PERSONAL['mobile']} 联系我"},
    )
    _chat(http, AS_A, f"我的订单 {PERSONAL['order']} 到哪了", stream=True, session_id="pii-conv")
    http.post("/v1/ask", headers=AS_A, json={"question": f"手机 {PERSONAL['mobile']}", "session_id": "\x00"})
    stored = http.get("/v1/sessions/pii-conv", headers=AS_A).json()
    assert stored["turns"][0]["question"] == "订单号：[订单号]，东西坏了怎么申请保修？"
    assert stored["turns"][1]["question"] == "我手机 [手机号]，退货要几天？"

    files = sorted(kb_dir.glob("*.sqlite*"))
    assert {"sessions.sqlite", "traces.sqlite", "experience.sqlite"} <= {f.name for f in files}
    found = [(f.name, form) for f in files for form in RAW_FORMS if form.encode() in f.read_bytes()]
    logged = [form for form in RAW_FORMS if any(form in line for line in server_log)]
    print(
        f"personal data: {len(found)} copies in {len(files)} SQLite files, {len(logged)} in {len(server_log)} log lines"
    )  # the docs/reliability.md figure
    assert found == [] and logged == []
    assert any('"/v1/ask"' in line for line in server_log)  # the log was captured


def test_one_session_s_concurrent_replies_run_in_arrival_order(http):
    """Three replies to one clarifying question at once: the first to arrive completes it, the
    others are ordinary turns after it, and the turns are stored in the order they ran."""
    assert _ask(http, AS_A, PENDING_QUESTION, session_id="race")["clarification"] is not None
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda reply: _ask(http, AS_A, reply, session_id="race"), ["2", "1", "Retro"]))
    completions = [r for r in results if PENDING_QUESTION in r["question"]]
    assert len(completions) == 1, [r["question"] for r in results]
    turns = http.get("/v1/sessions/race", headers=AS_A).json()["turns"]
    assert sorted(t["question"] for t in turns[1:]) == ["1", "2", "Retro"]
    assert turns[1]["trace_id"] == completions[0]["trace_id"]  # the completion ran first, so it is stored first
    assert [t["at"] for t in turns] == sorted(t["at"] for t in turns)


def test_the_python_api_runs_one_session_s_turns_in_call_order(service):
    _, kb_dir = service
    with Assistant(kb_dir, config=PipelineConfig.load(kb_dir, environ={})) as assistant:

        async def race() -> list:
            await assistant.ask(PENDING_QUESTION, "py-race")
            return await asyncio.gather(*(assistant.ask(reply, "py-race") for reply in ("2", "1", "Retro")))

        results = asyncio.run(race())
        assert PENDING_QUESTION in results[0].question and "Retro" in results[0].question  # "2": the Retro
        assert not any(PENDING_QUESTION in r.question for r in results[1:])
        assert [t.question for t in assistant.session("py-race").turns] == [PENDING_QUESTION, "2", "1", "Retro"]


def test_each_tenant_has_its_requests_per_minute(demo_kb, tmp_path):
    kb_dir = tmp_path / "kb"
    shutil.copytree(demo_kb.dir, kb_dir)
    tenants = tmp_path / "tenants.yaml"
    tenants.write_text(
        f"tenants:\n  shop-a: {{keys: [{KEY_A}], requests_per_minute: 2}}\n  shop-b: {{keys: [{KEY_B}]}}\n",
        encoding="utf-8",
    )
    app = create_app(
        Assistant(kb_dir, config=PipelineConfig.load(kb_dir, environ={})),
        ServiceSettings(tenants_file=tenants, requests_per_minute=100),
    )
    with BackgroundServer(app) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        assert [client.get("/v1/models", headers=AS_A).status_code for _ in range(2)] == [200, 200]
        limited = client.get("/v1/models", headers=AS_A)
        assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
        assert limited.json()["error"]["type"] == "rate_limit_error" and limited.json()["error"]["code"] == 429
        assert client.get("/v1/models", headers=AS_B).status_code == 200  # the other tenant is not held back
        assert client.get("/healthz").status_code == 200


def test_the_small_http_fixes(http, demo_kb, tmp_path):
    # a key list that names no key is refused, not run open
    with pytest.raises(ValueError, match="names no key"):
        create_app(
            Assistant(demo_kb.dir, config=PipelineConfig.load(demo_kb.dir, environ={})), ServiceSettings(api_keys=" , ")
        )
    # a body that is not JSON, without a key: 401 before anything about the body
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        denied = http.post("/v1/ask", content=b"{not json", headers={**headers, "content-type": "application/json"})
        assert denied.status_code == 401 and denied.json()["error"]["type"] == "authentication_error"
    # session_id "" or with NUL: 422 on /v1/ask and on a streamed chat alike, before any stream starts
    for session_id in ("", "a\x00b"):
        assert (
            http.post("/v1/ask", json={"question": "退货要几天？", "session_id": session_id}, headers=AS_A).status_code
            == 422
        )
        for carrier in ({"session_id": session_id}, {"metadata": {"session_id": session_id}}):
            refused = _chat(http, AS_A, "退货要几天？", stream=True, **carrier)
            assert refused.status_code == 422 and "session" in refused.json()["error"]["message"], carrier
    assert http.get("/v1/sessions/a%00b", headers=AS_A).status_code == 404
    # a wrong method is the client's mistake
    wrong = http.get("/v1/ask", headers=AS_A)
    assert wrong.status_code == 405 and wrong.json()["error"]["type"] == "invalid_request_error"
