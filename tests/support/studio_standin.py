"""A stand-in for AgentScope Studio on 127.0.0.1 that records what the AgentScope client sends.

The real Studio is a Node program (`as_studio`) this workplace cannot install, so tests check the
client side against the three things AgentScope 1.0.21 talks to:
  POST /trpc/registerRun       agentscope.init(studio_url=...) registers the run
  POST /trpc/pushMessage       the pre_print hook forwards every message an agent prints
  POST /trpc/requestUserInput  StudioUserInput asks for input; the answer comes back over
                               socket.io (namespace /python, event forwardUserInput)
plus POST /v1/traces (OTLP spans; accepted and counted). Scripted user inputs answer
requestUserInput in order, the way a person typing in the Studio page would; when they run out
the stand-in types "exit", so a test never waits forever.

    with StudioStandIn(user_inputs=["XZ-3000 多少钱？", "exit"]) as studio:
        studio.url          # "http://127.0.0.1:PORT"
        studio.runs         # registerRun bodies
        studio.messages     # pushMessage bodies, in arrival order
"""
from __future__ import annotations

import collections
import threading
from typing import Any

import socketio
from fastapi import FastAPI, Request

from workflows.service import BackgroundServer

NAMESPACE = "/python"


class StudioStandIn:
    def __init__(self, user_inputs: list[str] | tuple = ()) -> None:
        self._inputs: collections.deque[str] = collections.deque(user_inputs)
        self._lock = threading.Lock()
        self.runs: list[dict] = []
        self.messages: list[dict] = []
        self.input_requests: list[dict] = []
        self.trace_posts = 0
        self.connected_runs: dict[str, str] = {}  # run id -> socket.io sid
        self._sio = socketio.AsyncServer(async_mode="asgi", cors_allowed_origins="*")
        self._server = BackgroundServer(socketio.ASGIApp(self._sio, other_asgi_app=self._http_app()))
        self._sio.on("connect", self._on_connect, namespace=NAMESPACE)
        self._sio.on("disconnect", self._on_disconnect, namespace=NAMESPACE)

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> "StudioStandIn":
        self._server.start()
        return self

    def close(self) -> None:
        self._server.stop()

    def __enter__(self) -> "StudioStandIn":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def url(self) -> str:
        return self._server.url

    def push_input(self, *texts: str) -> None:
        with self._lock:
            self._inputs.extend(texts)

    # -- the routes the AgentScope client calls --------------------------------------------
    def _http_app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/trpc/registerRun")
        async def register_run(request: Request) -> dict:
            with self._lock:
                self.runs.append(await request.json())
            return {"result": {"data": None}}

        @app.post("/trpc/pushMessage")
        async def push_message(request: Request) -> dict:
            with self._lock:
                self.messages.append(await request.json())
            return {"result": {"data": None}}

        @app.post("/trpc/requestUserInput")
        async def request_user_input(request: Request) -> dict:
            body = await request.json()
            with self._lock:
                self.input_requests.append(body)
                text = self._inputs.popleft() if self._inputs else "exit"
                sid = self.connected_runs.get(body.get("runId", ""))
            if sid is not None:  # what Studio does when the person presses enter
                await self._sio.emit("forwardUserInput", (body["requestId"], [{"type": "text", "text": text}], None),
                                     namespace=NAMESPACE, to=sid)
            return {"result": {"data": None}}

        @app.post("/v1/traces")
        async def traces(request: Request) -> dict:
            await request.body()
            with self._lock:
                self.trace_posts += 1
            return {}

        return app

    async def _on_connect(self, sid: str, environ: dict, auth: Any = None) -> None:
        run_id = (auth or {}).get("run_id", "")
        with self._lock:
            self.connected_runs[run_id] = sid

    async def _on_disconnect(self, sid: str, *args: Any) -> None:
        with self._lock:
            for run_id, known in list(self.connected_runs.items()):
                if known == sid:
                    del self.connected_runs[run_id]
