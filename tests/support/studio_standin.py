"""A stand-in for AgentScope Studio on 127.0.0.1 that records what the AgentScope client sends.

The real Studio is a Node program (`as_studio`) this workplace cannot install, so tests check the
client side against what Studio 1.0.x serves (agentscope-ai/agentscope-studio, packages/server):
  POST /trpc/registerRun       the run is registered (id, project, name)
  POST /trpc/pushMessage       every message an agent prints
  POST /trpc/requestUserInput  the session asks for input; the answer comes back over socket.io
                               (namespace /python, event forwardUserInput, sent to every python socket)
  GET  /dashboard/projects/{project}/runs/{run_id}   the page of one run (Studio's client route);
                               here 200 for a registered run of that project, 404 otherwise
plus POST /v1/traces (OTLP spans; accepted and counted). As in Studio, a python socket that
disconnects takes its run's open input requests with it.

Scripted user inputs answer requestUserInput in order, the way a person typing in the Studio page
would; when they run out the stand-in types "exit", so a test never waits forever. An input of
WAIT answers nothing (the person is away), which is when a test takes Studio away: close() stops
the server; start() brings it back on the same port. go_away_when(predicate) closes it from
inside the pushMessage that matches, before that message is answered, so "Studio went away in the
middle of an answer" happens at a chosen message rather than at a racing moment.

    with StudioStandIn(user_inputs=["XZ-3000 多少钱？", "exit"]) as studio:
        studio.url          # "http://127.0.0.1:PORT"
        studio.runs         # registerRun bodies
        studio.messages     # pushMessage bodies, in arrival order
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from typing import Any

import socketio
from fastapi import FastAPI, HTTPException, Request

from citescope.workflows.service import BackgroundServer

NAMESPACE = "/python"
WAIT = object()  # a scripted input that answers nothing


class StudioStandIn:
    def __init__(self, user_inputs: list | tuple = ()) -> None:
        self._inputs: collections.deque = collections.deque(user_inputs)
        self._lock = threading.Lock()
        self.runs: list[dict] = []
        self.messages: list[dict] = []
        self.input_requests: list[dict] = []
        self.trace_posts = 0
        self.connected_runs: dict[str, str] = {}  # run id -> socket.io sid
        self.connects = 0  # python sockets that connected, reconnections included
        self._open_requests: dict[str, dict] = {}  # request id -> body, until answered or its socket left
        self._go_away: Callable[[dict], bool] | None = None
        self._down = threading.Event()  # set from the moment go_away_when fires until start()
        self._port = 0
        self._server: BackgroundServer | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> StudioStandIn:
        """Serve (again): the first start takes a free port, a restart the same one."""
        sio = socketio.AsyncServer(async_mode="asgi", cors_allowed_origins="*")
        sio.on("connect", self._on_connect, namespace=NAMESPACE)
        sio.on("disconnect", self._on_disconnect, namespace=NAMESPACE)
        self._sio = sio
        self._server = BackgroundServer(socketio.ASGIApp(sio, other_asgi_app=self._http_app()), port=self._port)
        self._server.start()
        self._port = self._server.port
        self._down.clear()
        return self

    def close(self) -> None:
        """Stop serving, as when the Studio process ends: sockets drop, connections are refused."""
        if self._server is not None:
            self._down.set()
            self._server.stop()
            self._server = None
            with self._lock:
                self.connected_runs.clear()
                self._open_requests.clear()

    def go_away_when(self, predicate: Callable[[dict], bool]) -> None:
        """Close the stand-in on the first pushMessage body the predicate accepts; that message
        and every later one fail, as they would against a Studio that has just ended."""
        self._go_away = predicate

    def __enter__(self) -> StudioStandIn:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def push_input(self, *texts: str) -> None:
        with self._lock:
            self._inputs.extend(texts)

    def wait_for(self, condition: Callable[[StudioStandIn], bool], timeout_s: float = 180) -> None:
        """Block until condition(self) holds (polled), or fail after timeout_s."""
        deadline = time.monotonic() + timeout_s
        while not condition(self):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the stand-in did not see what the test waited for in {timeout_s:.0f}s")
            time.sleep(0.05)

    # -- the routes the AgentScope client calls --------------------------------------------
    def _http_app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/trpc/registerRun")
        async def register_run(request: Request) -> dict:
            self._refuse_when_down()
            with self._lock:
                self.runs.append(await request.json())
            return {"result": {"data": None}}

        @app.post("/trpc/pushMessage")
        async def push_message(request: Request) -> dict:
            self._refuse_when_down()
            body = await request.json()
            if self._go_away is not None and self._go_away(body):
                self._go_away = None
                self._down.set()  # from now on every call fails, even before the server has stopped
                threading.Thread(target=self.close, name="standin-close", daemon=True).start()
                raise HTTPException(503, "Studio is shutting down")
            with self._lock:
                self.messages.append(body)
            return {"result": {"data": None}}

        @app.post("/trpc/requestUserInput")
        async def request_user_input(request: Request) -> dict:
            self._refuse_when_down()
            body = await request.json()
            with self._lock:
                self.input_requests.append(body)
                if body["requestId"] in self._open_requests:  # asked again after a reconnect: still open
                    return {"result": {"data": None}}
                text = self._inputs.popleft() if self._inputs else "exit"
                if text is WAIT:
                    self._open_requests[body["requestId"]] = body
                    return {"result": {"data": None}}
            # what Studio does when the person presses enter: to every python socket
            await self._sio.emit(
                "forwardUserInput", (body["requestId"], [{"type": "text", "text": text}], None), namespace=NAMESPACE
            )
            return {"result": {"data": None}}

        @app.get("/dashboard/projects/{project}/runs/{run_id}")
        async def run_page(project: str, run_id: str) -> dict:
            with self._lock:
                run = next((r for r in self.runs if r["id"] == run_id and r["project"] == project), None)
            if run is None:
                raise HTTPException(404, f"no run {run_id} in project {project}")
            return {"project": project, "run": run["name"]}

        @app.post("/v1/traces")
        async def traces(request: Request) -> dict:
            await request.body()
            with self._lock:
                self.trace_posts += 1
            return {}

        return app

    def _refuse_when_down(self) -> None:
        if self._down.is_set():
            raise HTTPException(503, "Studio is shutting down")

    async def _on_connect(self, sid: str, environ: dict, auth: Any = None) -> bool:
        if self._down.is_set():
            return False
        run_id = (auth or {}).get("run_id", "")
        with self._lock:
            self.connected_runs[run_id] = sid
            self.connects += 1
        return True

    async def _on_disconnect(self, sid: str, *args: Any) -> None:
        with self._lock:
            for run_id, known in list(self.connected_runs.items()):
                if known == sid:
                    del self.connected_runs[run_id]
                    # Studio deletes the run's input requests when its python socket leaves
                    for request_id, body in list(self._open_requests.items()):
                        if body.get("runId") == run_id:
                            del self._open_requests[request_id]
