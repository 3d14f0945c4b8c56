"""The service under pressure, over real HTTP on 127.0.0.1: questions beyond the slots and the
queue get 503 with Retry-After and an OpenAI-style error, /readyz says "saturated" with the counts,
a question that waited past its deadline is refused with refusal_reason "deadline", and
connections that send nothing, half their headers or half their body are dropped. Waits are
bounded; no assertion is about speed."""

from __future__ import annotations

import asyncio
import shutil
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import httpx
import pytest

from citescope.workflows.assistant import Assistant
from citescope.workflows.evaluation.bench.cost import long_question
from citescope.workflows.pipeline_config import PipelineConfig
from citescope.workflows.service import BackgroundServer, ServiceSettings, create_app

SETTINGS = ServiceSettings(
    max_running_questions=2,
    max_queued_questions=1,
    max_running_long_questions=1,
    retry_after_s=3,
    request_deadline_s=1.0,
    header_timeout_s=0.5,
    body_timeout_s=0.5,
    keep_alive_timeout_s=0.5,
)
WAIT_S = 30  # the longest any step may wait: only a hang gets near it
IDLE_LANE = {"running": 0, "queued": 0, "max_running": 1, "max_queued": 1}


@pytest.fixture(scope="module")
def served(demo_kb, tmp_path_factory):
    kb_dir = tmp_path_factory.mktemp("service-limits") / "kb"
    shutil.copytree(demo_kb.dir, kb_dir)
    app = create_app(Assistant(kb_dir, config=PipelineConfig.load(kb_dir, environ={})), SETTINGS)
    with BackgroundServer(app) as server:
        assert app.state.runner.ready.wait(120)
        yield app, server


@contextmanager
def assistant_thread_busy(app):
    """The Assistant's thread held, as a long computation holds it, until the block ends."""
    release = threading.Event()

    async def hold() -> None:
        release.wait(WAIT_S)

    held = asyncio.run_coroutine_threadsafe(hold(), app.state.runner.loop)
    try:
        yield
    finally:
        release.set()
        held.result(WAIT_S)


def wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        time.sleep(0.05)


def readyz(url: str) -> httpx.Response:
    return httpx.get(f"{url}/readyz", timeout=WAIT_S)


def ask(url: str, question: str) -> httpx.Response:
    return httpx.post(f"{url}/v1/ask", json={"question": question}, timeout=WAIT_S)


def test_a_full_queue_gets_503_and_readyz_reports_saturation(served):
    app, server = served
    url = server.url
    with ThreadPoolExecutor(3) as pool:
        with assistant_thread_busy(app):
            computing = [pool.submit(ask, url, q) for q in ("XZ-3000 充电宝多少钱？", "AJ1 Retro 的鞋面是真皮吗？")]
            wait_until(lambda: readyz(url).json()["running"] == 2)
            waiting = pool.submit(ask, url, "暖岩摇粒绒夹克可以机洗吗？")
            wait_until(lambda: readyz(url).json()["queued"] == 1)

            ready = readyz(url)
            assert ready.status_code == 503 and ready.headers["retry-after"] == "3"
            assert ready.json() == {
                "ready": False,
                "status": "saturated",
                "running": 2,
                "queued": 1,
                "max_running": 2,
                "max_queued": 1,
                "long_questions": IDLE_LANE,
            }
            assert httpx.get(f"{url}/healthz", timeout=WAIT_S).status_code == 200  # liveness only

            turned_away = ask(url, "AJ1 多少钱？")
            assert turned_away.status_code == 503 and turned_away.headers["retry-after"] == "3"
            assert turned_away.json()["error"]["type"] == "service_unavailable"
            chat = {"messages": [{"role": "user", "content": "AJ1 多少钱？"}]}
            for body in (chat, {**chat, "stream": True}):
                response = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=WAIT_S)
                assert response.status_code == 503 and response.headers["retry-after"] == "3"
                assert response.json()["error"]["code"] == 503
            time.sleep(SETTINGS.request_deadline_s + 0.2)  # both have now waited past their deadline
        answers = [future.result(WAIT_S) for future in (*computing, waiting)]
    for answer in answers:  # refused in time, not computed late
        assert answer.status_code == 200
        assert answer.json()["refused"] and answer.json()["refusal_reason"] == "deadline"
    wait_until(lambda: readyz(url).status_code == 200)
    assert readyz(url).json() == {
        "ready": True,
        "status": "ok",
        "running": 0,
        "queued": 0,
        "max_running": 2,
        "max_queued": 1,
        "long_questions": IDLE_LANE,
    }


def test_long_messages_wait_in_their_own_lane_and_a_usual_question_is_computed(served):
    app, server = served
    url = server.url
    with ThreadPoolExecutor(3) as pool:
        with assistant_thread_busy(app):
            first_long = pool.submit(ask, url, long_question(20))
            wait_until(lambda: readyz(url).json()["long_questions"]["running"] == 1)
            second_long = pool.submit(ask, url, long_question(21))
            wait_until(lambda: readyz(url).json()["long_questions"]["queued"] == 1)
            usual = pool.submit(ask, url, "XZ-3000 充电宝多少钱？")
            wait_until(lambda: readyz(url).json()["running"] == 2)  # a slot of its own, not behind the long ones
            load = readyz(url).json()
            assert load["queued"] == 0 and load["long_questions"]["running"] == 1
        for future in (first_long, second_long, usual):
            assert future.result(WAIT_S).status_code == 200
    wait_until(lambda: readyz(url).json()["long_questions"] == IDLE_LANE)


def _raw(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
    sock.settimeout(WAIT_S)
    return sock


def _read_until_closed(sock: socket.socket) -> bytes:
    received = b""
    while chunk := sock.recv(4096):
        received += chunk
    return received


@pytest.mark.parametrize(
    "sent",
    [b"", b"POST /v1/ask HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: applic"],
    ids=["nothing", "half the headers"],
)
def test_a_connection_without_whole_headers_is_dropped(served, sent):
    _, server = served
    with _raw(server.port) as sock:
        sock.sendall(sent)
        assert _read_until_closed(sock) == b""  # closed by the server, nothing answered


def test_a_half_sent_body_gets_408_and_the_connection_closes(served):
    _, server = served
    body = '{"question": "暖岩可以机洗吗？"}'.encode()
    with _raw(server.port) as sock:
        sock.sendall(
            b"POST /v1/ask HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body[:10]
        )
        reply = _read_until_closed(sock)
    assert reply.startswith(b"HTTP/1.1 408") and b"request body not received within 0.5 s" in reply


def test_an_idle_keep_alive_connection_is_closed_after_its_response(served):
    _, server = served
    with _raw(server.port) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        reply = _read_until_closed(sock)
    assert reply.startswith(b"HTTP/1.1 200") and reply.endswith(b'{"status":"ok"}')
