"""The link to AgentScope Studio: run registration, pushed messages and typed input, surviving
Studio going away for a while.

It speaks the protocol AgentScope 1.0.21's own client speaks (`agentscope.init(studio_url=...)`:
POST /trpc/registerRun, POST /trpc/pushMessage from a pre_print hook, POST
/trpc/requestUserInput answered by the socket.io event forwardUserInput on namespace /python,
with auth {"run_id": ...}), and replaces that client's two weak spots. Its StudioUserInput waits
for the answer with a blocking threading.Event.wait() that never returns once Studio is gone
(the session hangs), and its socket gives up after 3 quick reconnects, after which the next input
raises RuntimeError (a traceback). Its print hook posts without a timeout and drops a message
after four failures. Here:

- reconnection is ours (ReconnectPolicy: attempts, exponential backoff, a time window for the
  whole outage); after reconnecting, the open input request is asked again (Studio deletes a
  run's input requests when its socket leaves) and the messages printed meanwhile are delivered
  in order;
- waiting for input is an asyncio future, failed with StudioGone when Studio stays gone, so the
  session ends with its summary instead of hanging;
- every HTTP call has a timeout; a message that cannot be delivered waits in a bounded outbox.
"""

from __future__ import annotations

import asyncio
import collections
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx
import socketio
from agentscope.agent import UserAgent
from agentscope.agent._user_input import UserInputBase, UserInputData
from pydantic import BaseModel

NAMESPACE = "/python"
HTTP_TIMEOUT_S = 5.0
OUTBOX_LIMIT = 2000  # messages kept for a Studio that is away; older ones are dropped and counted


class StudioGone(RuntimeError):
    """Studio went away and did not come back within the reconnect policy."""


@dataclass(frozen=True)
class ReconnectPolicy:
    """How long a session waits for Studio to come back: up to `attempts` reconnects, the first
    after first_delay_s, each delay doubled up to max_delay_s, all within window_s of the drop."""

    attempts: int = 10
    window_s: float = 60.0
    first_delay_s: float = 0.5
    max_delay_s: float = 8.0

    def __post_init__(self) -> None:
        if self.attempts < 0 or self.window_s < 0 or self.first_delay_s <= 0 or self.max_delay_s < self.first_delay_s:
            raise ValueError(
                f"invalid reconnect policy {self}: attempts and window_s must be >= 0, "
                "first_delay_s > 0 and max_delay_s >= first_delay_s"
            )


def run_url(studio_url: str, project: str, run_id: str) -> str:
    """The page of one run in Studio 1.0.x: its client routes /dashboard/projects/:projectName/runs/:runId
    (agentscope-studio packages/client: HomePage, DashboardPage, RunPage). AgentScope's own log line,
    {studio_url}/projects/{project}, is not a Studio route and opens the home page."""
    return f"{studio_url.rstrip('/')}/dashboard/projects/{quote(project, safe='')}/runs/{quote(run_id, safe='')}"


@dataclass
class _InputRequest:
    body: dict
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future

    def settle(self, result: Any = None, error: BaseException | None = None) -> None:
        """From any thread: resolve (or fail) the awaiting coroutine once."""

        def apply() -> None:
            if not self.future.done():
                if error is not None:
                    self.future.set_exception(error)
                else:
                    self.future.set_result(result)

        self.loop.call_soon_threadsafe(apply)


@dataclass
class LinkStats:
    reconnects: int = 0  # outages recovered from
    undelivered: int = 0  # messages Studio never received (it stayed gone, or the outbox overflowed)
    rejected: int = 0  # messages Studio refused (HTTP 4xx): kept out of the outbox, they would never pass
    events: list[str] = field(default_factory=list)


class StudioLink:
    """One run's connection to Studio. open() registers the run and connects; input() is the
    UserAgent input method; forward_hook() the pre_print hook; close() ends the run's link."""

    def __init__(
        self,
        studio_url: str,
        run: dict,
        policy: ReconnectPolicy = ReconnectPolicy(),
        on_event: Callable[[str], None] | None = None,
    ):
        """run: the registerRun body (id, project, name, timestamp, pid, status)."""
        self.studio_url = studio_url.rstrip("/")
        self.run = run
        self.policy = policy
        self.stats = LinkStats()
        self._on_event = on_event
        self._state = threading.Condition()
        self._connected = False
        self._recovering = False
        self._gone = False
        self._closing = False
        self._pending: dict[str, _InputRequest] = {}
        self._outbox: collections.deque[dict] = collections.deque()
        self._send_lock = threading.Lock()  # one sender at a time keeps Studio's arrival order
        self._stop = threading.Event()
        self._sio = socketio.Client(reconnection=False, handle_sigint=False)
        self._sio.on("connect", self._on_connect, namespace=NAMESPACE)
        self._sio.on("disconnect", self._on_disconnect, namespace=NAMESPACE)
        self._sio.on("forwardUserInput", self._on_user_input, namespace=NAMESPACE)

    @property
    def run_id(self) -> str:
        return self.run["id"]

    @property
    def url(self) -> str:
        return run_url(self.studio_url, self.run["project"], self.run_id)

    # -- lifecycle ------------------------------------------------------------------------------
    def open(self) -> StudioLink:
        """Register the run and connect its socket; raises (httpx / socketio errors) when Studio
        is not reachable now: a session does not start without it."""
        httpx.post(f"{self.studio_url}/trpc/registerRun", json=self.run, timeout=HTTP_TIMEOUT_S).raise_for_status()
        self._connect()
        return self

    def close(self, drain_s: float | None = None) -> None:
        """End the link. An outage still being recovered from is waited for (at most drain_s,
        default the policy's window) so that messages printed during it still reach Studio."""
        with self._state:
            self._state.wait_for(
                lambda: not self._recovering, timeout=self.policy.window_s if drain_s is None else drain_s
            )
            self._closing = True
        self._stop.set()
        if self._connected:
            self._flush()
        with self._send_lock:
            self.stats.undelivered += len(self._outbox)
            self._outbox.clear()
        try:
            self._sio.disconnect()
        except Exception:  # already gone: nothing left to close
            pass

    @property
    def gone(self) -> bool:
        return self._gone

    # -- input (the UserAgent input method) ---------------------------------------------------
    def input_method(self) -> StudioInput:
        return StudioInput(self)

    async def request_input(self, agent_id: str, agent_name: str, structured_input: dict | None) -> UserInputData:
        """Ask Studio for the user's next input and wait for it; StudioGone when Studio stays away."""
        request = _InputRequest(
            body={
                "requestId": uuid.uuid4().hex,
                "runId": self.run_id,
                "agentId": agent_id,
                "agentName": agent_name,
                "structuredInput": structured_input,
            },
            loop=asyncio.get_running_loop(),
            future=asyncio.get_running_loop().create_future(),
        )
        with self._state:
            if self._gone:
                raise StudioGone(self._gone_message())
            self._pending[request.body["requestId"]] = request
            # while an outage is being recovered from, the recovery asks for every pending input
            post_now, recovering = self._connected and not self._recovering, self._recovering
        try:
            if post_now:
                if not await asyncio.to_thread(self._post_input_request, request.body):
                    self._start_recovery("asking for input failed")  # it asks again once Studio is back
            elif not recovering:
                self._start_recovery("not connected")
            return await request.future
        finally:
            with self._state:
                self._pending.pop(request.body["requestId"], None)

    def _post_input_request(self, body: dict) -> bool:
        try:
            httpx.post(f"{self.studio_url}/trpc/requestUserInput", json=body, timeout=HTTP_TIMEOUT_S).raise_for_status()
            return True
        except httpx.HTTPError:
            return False

    def _on_user_input(self, request_id: str, blocks_input: list, structured_input: dict | None = None) -> None:
        # Studio sends every run's input to every python socket: the request id says whose it is
        with self._state:
            request = self._pending.get(request_id)
        if request is not None:
            request.settle(UserInputData(blocks_input=blocks_input, structured_input=structured_input))

    # -- messages (the pre_print hook) --------------------------------------------------------
    def forward_hook(self, agent: Any, kwargs: dict[str, Any]) -> None:
        """AgentBase pre_print hook: the message goes to Studio now, or waits in the outbox."""
        msg = kwargs["msg"]
        body = {
            "runId": self.run_id,
            "replyId": getattr(agent, "_reply_id", None) or uuid.uuid4().hex,
            "replyName": getattr(agent, "name", msg.name),
            "replyRole": "user" if isinstance(agent, UserAgent) else "assistant",
            "msg": msg.to_dict(),
        }
        with self._send_lock:
            self._outbox.append(body)
            if len(self._outbox) > OUTBOX_LIMIT:
                self._outbox.popleft()
                self.stats.undelivered += 1
        if self._connected and not self._recovering:
            if not self._flush():
                self._start_recovery("a message could not be delivered")

    def _flush(self) -> bool:
        """Deliver the outbox in order; False at the first message Studio could not take now."""
        with self._send_lock:
            while self._outbox:
                try:
                    response = httpx.post(
                        f"{self.studio_url}/trpc/pushMessage", json=self._outbox[0], timeout=HTTP_TIMEOUT_S
                    )
                except httpx.HTTPError:
                    return False
                if response.status_code >= 500:
                    return False
                if response.status_code >= 400:  # Studio refuses this message: it never will take it
                    self.stats.rejected += 1
                self._outbox.popleft()
            return True

    # -- connection and recovery --------------------------------------------------------------
    def _connect(self) -> None:
        self._sio.connect(
            self.studio_url, namespaces=[NAMESPACE], auth={"run_id": self.run_id}, wait_timeout=HTTP_TIMEOUT_S
        )

    def _on_connect(self) -> None:
        with self._state:
            self._connected = True
            self._state.notify_all()

    def _on_disconnect(self, *reason: Any) -> None:
        with self._state:
            self._connected = False
            self._state.notify_all()
            closing = self._closing
        if not closing:
            self._start_recovery("the connection dropped")

    def _start_recovery(self, why: str) -> None:
        with self._state:
            if self._recovering or self._gone or self._closing:
                return
            self._recovering = True
        self._event(
            f"lost AgentScope Studio at {self.studio_url} ({why}); reconnecting "
            f"(up to {self.policy.attempts} attempts within {self.policy.window_s:g}s)"
        )
        threading.Thread(target=self._recover, name="studio-reconnect", daemon=True).start()

    def _recover(self) -> None:
        """Reconnect with backoff; back means connected, the open input requests asked again and
        the outbox delivered. Within the policy, or Studio is gone: every waiting input fails."""
        deadline = time.monotonic() + self.policy.window_s
        delay = self.policy.first_delay_s
        for attempt in range(1, self.policy.attempts + 1):
            if self._stop.wait(max(0.0, min(delay, deadline - time.monotonic()))):
                break  # closing
            delay = min(delay * 2, self.policy.max_delay_s)
            if self._try_resume():
                with self._state:
                    self._recovering = False
                    self._state.notify_all()
                self.stats.reconnects += 1
                self._event(f"reconnected to AgentScope Studio (attempt {attempt})")
                return
            if time.monotonic() >= deadline:
                break
        with self._state:
            self._gone = not self._closing
            self._recovering = False
            pending = list(self._pending.values())
            self._state.notify_all()
        if self._gone:
            self._event(self._gone_message())
            for request in pending:
                request.settle(error=StudioGone(self._gone_message()))

    def _try_resume(self) -> bool:
        try:
            if self._sio.connected:
                self._sio.disconnect()  # a half-dead socket: start over
            self._connect()
        except Exception:  # socketio.exceptions.ConnectionError and the transports' own errors
            return False
        with self._state:
            bodies = [request.body for request in self._pending.values()]
        return all(self._post_input_request(body) for body in bodies) and self._flush()

    def _gone_message(self) -> str:
        return (
            f"AgentScope Studio at {self.studio_url} did not come back within {self.policy.window_s:g}s "
            f"({self.policy.attempts} attempts)"
        )

    def _event(self, text: str) -> None:
        self.stats.events.append(text)
        if self._on_event is not None:
            self._on_event(text)


class StudioInput(UserInputBase):
    """UserAgent's input method in a Studio session: what the user types in the Studio page."""

    def __init__(self, link: StudioLink):
        self.link = link

    async def __call__(
        self, agent_id: str, agent_name: str, *args: Any, structured_model: type[BaseModel] | None = None, **kwargs: Any
    ) -> UserInputData:
        schema = None if structured_model is None else structured_model.model_json_schema()
        return await self.link.request_input(agent_id, agent_name, schema)


def registration(run_id: str, project: str, name: str, created_at: str) -> dict:
    """The registerRun body AgentScope 1.0.21 sends (run_dir is deprecated but still expected)."""
    return {
        "id": run_id,
        "project": project,
        "name": name,
        "timestamp": created_at,
        "pid": os.getpid(),
        "status": "running",
        "run_dir": "",
    }
