"""The HTTP service: one warmed Assistant per process behind FastAPI.

    POST /v1/ask                 {question, session_id?, filters?} -> QAResult JSON
    POST /v1/feedback            {trace_id, rating: 1 | -1 | "up" | "down", comment?}
    GET  /v1/sessions/{id}       the session's turns;  GET /v1/traces/{trace_id}: one answer's trace
    POST /v1/chat/completions    OpenAI-compatible (stream=true: SSE chat.completion.chunk deltas)
    GET  /v1/models              the one model name, for OpenAI clients that list models first
    GET  /healthz, /readyz       process alive / KB warmed (never behind the API key)

The pipeline is async but does CPU work between its awaits (analysis, rerank, answer,
inspection); on the server's event loop that work would stall every other request, health checks
included. So the Assistant lives on its own thread and event loop (`AssistantLoop`) and the
server loop only awaits it. Auth is a Bearer key from CITESCOPE_API_KEYS / CITESCOPE_TENANTS_FILE;
the key names its tenant (workflows.tenants), which owns the sessions, traces and ratings it makes:
another tenant's ids are 404, as unknown ones. Each tenant has its requests per minute (429 with
Retry-After beyond). Bodies over max_body_bytes get 413 before any handler runs; every request is
one JSON log line (method, path, status, latency, trace id) that never includes headers, keys or
customers' personal data.

At most max_running_questions compute at once and max_queued_questions wait (beyond: 503 with
Retry-After; workflows/admission.py), each answering or refusing within request_deadline_s of
its arrival; connections without whole headers or body in time are dropped (workflows/http_timeouts.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import Future
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field
from pydantic_settings import BaseSettings, SettingsConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException

from citescope.knowledge.filters import SearchFilters
from citescope.knowledge.text import SENTENCE_END
from citescope.workflows.admission import Admission, Saturated
from citescope.workflows.http_timeouts import h11_with_header_timeout
from citescope.workflows.personal_data import redact_personal
from citescope.workflows.pipeline import QuestionError, validate_question
from citescope.workflows.result import QAResult
from citescope.workflows.rewards import parse_rating
from citescope.workflows.sessions import check_session_id
from citescope.workflows.tenants import DEFAULT_TENANT, RateLimiter, Tenant, TenantDirectory, retry_after_header

log = logging.getLogger("citescope.service")
access_log = logging.getLogger("citescope.access")

MODEL_NAME = "citescope"


class ServiceSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CITESCOPE_", extra="ignore")

    api_keys: str = Field(default="", repr=False)  # comma-separated `key` or `key:tenant`; unset: no auth
    tenants_file: Path | None = None  # YAML/JSON: tenants: {name: {keys: [...], requests_per_minute: N}}
    requests_per_minute: int = Field(default=0, ge=0)  # per tenant, unless its entry says otherwise; 0: no limit
    max_body_bytes: int = Field(default=64 * 1024, ge=1024)
    # questions computed at once on the Assistant thread, and waiting for a turn; beyond both: 503
    max_running_questions: int = Field(default=4, ge=1)
    max_queued_questions: int = Field(default=64, ge=0)
    # of them, questions longer than the pipeline's retrieval_max_chars (a pasted story) computed at once
    max_running_long_questions: int = Field(default=1, ge=1)
    retry_after_s: int = Field(default=2, ge=1)  # the Retry-After of a 503 for a full queue
    # a question answers or refuses (refusal_reason "deadline") this long after its request arrived,
    # its wait for a slot included (the pipeline's deadline_s, if shorter, wins)
    request_deadline_s: float = Field(default=10.0, gt=0)
    # a connection that has not sent a whole request line and headers this long after it opened
    # (or a keep-alive one after its last response) is closed; a body not received in full this
    # long after its headers gets 408; an idle keep-alive connection is closed after keep_alive_timeout_s
    header_timeout_s: float = Field(default=10.0, gt=0)
    body_timeout_s: float = Field(default=10.0, gt=0)
    keep_alive_timeout_s: float = Field(default=5.0, gt=0)

    def tenants(self) -> TenantDirectory:
        return TenantDirectory.load(self.api_keys, self.tenants_file, self.requests_per_minute)


# -- request bodies -----------------------------------------------------------------------------
class Filters(SearchFilters):
    """SearchFilters as the API takes them (an unknown field is a 422, as in SearchFilters)."""

    def given(self) -> dict[str, Any] | None:
        return self.model_dump(exclude_none=True) or None


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str
    session_id: str | None = Field(default=None, max_length=128)
    filters: Filters | None = None


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    trace_id: str = Field(..., max_length=128)
    rating: int | str  # 1 | -1 | "up" | "down" | 👍 | 👎
    comment: str | None = Field(default=None, max_length=2000)


class FeedbackResponse(BaseModel):
    trace_id: str
    rating: int


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None


class ChatRequest(BaseModel):
    """OpenAI's chat request; the last user message is the question. The session comes from
    `session_id` (an extra body field), else `metadata.session_id`, else `user`."""

    model_config = ConfigDict(extra="allow")

    model: str = MODEL_NAME
    messages: list[ChatMessage] = Field(..., min_length=1)
    stream: bool = False
    user: str | None = Field(default=None, max_length=128)
    session_id: str | None = Field(default=None, max_length=128)
    metadata: dict[str, Any] | None = None
    filters: Filters | None = None

    def question(self) -> str:
        for message in reversed(self.messages):
            if message.role == "user":
                return _text_of(message.content)
        raise QuestionError("messages contain no user message: the last user message is the question")

    def session(self) -> str | None:
        """The first of the three that is given, checked as given (`""` is a 422, as on /v1/ask)."""
        from_metadata = (self.metadata or {}).get("session_id")
        for given in (self.session_id, from_metadata, self.user):
            if given is not None:
                return str(given)
        return None


def _text_of(content: str | list[dict[str, Any]] | None) -> str:
    if isinstance(content, list):  # content parts: only text parts carry a question
        return "".join(str(part.get("text", "")) for part in content if part.get("type") == "text")
    return content or ""


# -- the Assistant on its own loop --------------------------------------------------------------
class AssistantLoop:
    """Runs an Assistant's warm-up and every call on one background thread and event loop.
    Calls are coroutines awaited from the server loop; session and feedback calls go through the
    same loop, so the Assistant never sees two threads. Questions take a slot of `admission`
    first (workflows/admission.py): a bounded number compute at once, a bounded number wait. A
    question longer than `long_chars` (what retrieval reads of it is cut: it costs several usual
    ones) takes a slot of `long_lane` before that, so long messages never hold every slot and a
    usual question arriving behind them is computed at once."""

    def __init__(
        self,
        assistant: Any,
        admission: Admission | None = None,
        long_lane: Admission | None = None,
        long_chars: int | None = None,
    ):
        self.assistant = assistant
        self.admission = admission or Admission(max_running=4, max_queued=64)
        self.long_lane, self.long_chars = long_lane, long_chars
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.error: str | None = None
        self._warmed: Future = Future()
        self._thread = threading.Thread(target=self._run, name="assistant-loop", daemon=True)

    def start(self) -> AssistantLoop:
        self._thread.start()
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.assistant.warm_up()
        except Exception as exc:  # reported by /readyz and every ask; the process stays up for health checks
            self.error = f"{type(exc).__name__}: {exc}"
            log.error("warm-up failed: %s", self.error)
        self.ready.set()
        self._warmed.set_result(None)
        self.loop.run_forever()
        self.loop.close()  # after stop(): questions still in flight are dropped with it

    async def _ready(self) -> None:
        await asyncio.wrap_future(self._warmed)
        if self.error is not None:
            raise HTTPException(503, f"the assistant could not start: {self.error}")

    async def ask(
        self,
        question: str,
        session_id: str | None,
        filters: SearchFilters | Mapping[str, Any] | None,
        tenant: str = DEFAULT_TENANT,
        arrived: float | None = None,
        deadline_s: float | None = None,
    ) -> QAResult:
        """arrived: time.monotonic() when the request came in; the question's deadline (deadline_s,
        or the pipeline's if shorter) counts from then, time spent waiting for a slot included.
        Saturated when no slot is free and the queue is full."""
        long = self.long_chars is not None and len(question) > self.long_chars
        lanes = [self.long_lane, self.admission] if long and self.long_lane is not None else [self.admission]
        entered: list[Admission] = []
        try:
            for lane in lanes:
                await lane.enter()
                entered.append(lane)
            await self._ready()
            coroutine = self.assistant.ask(
                question, session_id=session_id, filters=filters, tenant=tenant, arrived=arrived, deadline_s=deadline_s
            )
            running = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        except BaseException:
            for lane in entered:
                lane.leave()
            raise
        # The slots are held until the question is done, not until its client stops waiting: a
        # question still computing for a client that hung up still uses the Assistant thread.
        server_loop = asyncio.get_running_loop()

        def leave(_: Future) -> None:
            try:
                for lane in entered:
                    server_loop.call_soon_threadsafe(lane.leave)
            except RuntimeError:  # the server loop is closed: shut down, nobody left to count
                pass

        running.add_done_callback(leave)
        # Shielded: a client that hangs up mid-stream must not cancel the question. AgentScope
        # agents turn a cancellation into an "interrupted" reply, and that cut-short answer would
        # be stored in the session and taught to the strategy policy.
        return await asyncio.shield(asyncio.wrap_future(running))

    async def call(self, function: Callable, *args: Any) -> Any:
        """A quick sync Assistant method (session, feedback, trace) run on the Assistant's loop."""
        await self._ready()

        async def run() -> Any:
            return function(*args)

        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(run(), self.loop))

    def stop(self) -> None:
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)
        self.assistant.close()


# -- middleware ---------------------------------------------------------------------------------
class BodySizeLimit:
    """413 for a body over max_bytes, declared (Content-Length) or streamed (chunked); 408 for a
    body not received in full within read_timeout_s of the request's headers (a client that sends
    half a body and waits would otherwise hold its connection and handler open for ever). The body
    is read whole here, before any handler runs."""

    def __init__(self, app: Any, max_bytes: int, read_timeout_s: float = 10.0):
        self.app = app
        self.max_bytes = max_bytes
        self.read_timeout_s = read_timeout_s

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            return await self._reject(send, 413, f"request body over the {self.max_bytes}-byte limit")
        buffered, size = [], 0
        deadline = time.monotonic() + self.read_timeout_s  # for the whole body: a trickle does not reset it
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(deadline - time.monotonic(), 0.0))
            except TimeoutError:
                return await self._reject(send, 408, f"request body not received within {self.read_timeout_s:g} s")
            buffered.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                return await self._reject(send, 413, f"request body over the {self.max_bytes}-byte limit")
            if not message.get("more_body", False):
                break

        async def replay() -> dict:
            return buffered.pop(0) if buffered else await receive()

        await self.app(scope, replay, send)

    @staticmethod
    async def _reject(send: Callable, status: int, message: str) -> None:
        body = json.dumps(_error_body(status, message)).encode()
        # the rest of the body is never read, so the connection cannot carry another request
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


class AccessLog:
    """One JSON line per request, written when the response body is complete (so a streamed
    answer's trace id and full latency are known). Never headers, never the query string."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        state = scope.setdefault("state", {})
        status = 500

        async def watch(message: dict) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            access_log.info(
                "request",
                extra={
                    "fields": {
                        "method": scope["method"],
                        "path": scope["path"],
                        "status": status,
                        "latency_ms": round((time.perf_counter() - started) * 1000, 1),
                        "trace_id": state.get("trace_id"),
                    }
                },
            )


class JsonLogFormatter(logging.Formatter):
    """Each record as one JSON object; `extra={"fields": {...}}` adds fields."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        line.update(getattr(record, "fields", {}))
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        # an error message may quote the question: never a customer's phone or order number in a log
        return redact_personal(json.dumps(line, ensure_ascii=False))


def configure_json_logging(level: int = logging.INFO) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonLogFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


# -- the app ------------------------------------------------------------------------------------
def _error_body(status: int, message: str) -> dict:
    """OpenAI's error shape; every client error (4xx) is the client's, never a `server_error`."""
    kind = {
        401: "authentication_error",
        404: "not_found_error",
        413: "request_too_large",
        429: "rate_limit_error",
        503: "service_unavailable",
    }.get(status, "invalid_request_error" if 400 <= status < 500 else "server_error")
    return {"error": {"message": message, "type": kind, "code": status}}


def _bearer_key(request: Request) -> str | None:
    scheme, _, key = (request.headers.get("authorization") or "").partition(" ")
    return key.strip() if scheme.lower() == "bearer" and key.strip() else None


def create_app(assistant: Any, settings: ServiceSettings | None = None) -> FastAPI:
    """The service around `assistant` (a workflows.assistant.Assistant, warmed or not). The app
    owns it: warm-up starts with the app, close() runs at shutdown."""
    settings = settings or ServiceSettings()
    directory = settings.tenants()  # ValueError naming the setting or file that is wrong
    if directory.open:
        log.warning(
            "no API key configured (CITESCOPE_API_KEYS, CITESCOPE_TENANTS_FILE): the API is open to "
            "anyone who can reach it, as the default tenant"
        )
    limiter = RateLimiter()
    admission = Admission(settings.max_running_questions, settings.max_queued_questions)
    long_lane = Admission(settings.max_running_long_questions, settings.max_queued_questions)
    runner = AssistantLoop(assistant, admission, long_lane, long_chars=assistant.config.retrieval_max_chars)
    max_question_chars = assistant.config.max_question_chars

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        runner.start()
        yield
        await asyncio.to_thread(runner.stop)

    app = FastAPI(
        title="citescope",
        version="0.1.0",
        lifespan=lifespan,
        description="Cited answers (【来源ID】) for e-commerce customer service; see docs/usage.md.",
    )
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes, read_timeout_s=settings.body_timeout_s)
    app.add_middleware(AccessLog)  # outermost: logs 413s too
    app.state.runner = runner
    app.state.settings = settings  # serve() and BackgroundServer read its connection timeouts
    busy_headers = {"Retry-After": str(settings.retry_after_s)}
    bearer = HTTPBearer(
        auto_error=False,
        description="a key of CITESCOPE_API_KEYS or CITESCOPE_TENANTS_FILE; open when none are configured",
    )

    def authenticate(credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Tenant:
        """The caller's tenant (401 without a valid key), within its requests per minute (else 429)."""
        tenant = directory.tenant_for(credentials.credentials if credentials is not None else None)
        if tenant is None:
            raise HTTPException(
                401, "missing or invalid API key (Authorization: Bearer <key>)", headers={"WWW-Authenticate": "Bearer"}
            )
        wait_s = limiter.acquire(tenant)
        if wait_s > 0:
            raise HTTPException(
                429,
                f"rate limit of {tenant.requests_per_minute} requests per minute reached; "
                f"retry after {retry_after_header(wait_s)} s",
                headers={"Retry-After": retry_after_header(wait_s)},
            )
        return tenant

    @app.exception_handler(StarletteHTTPException)  # also the router's own 404 and 405
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(_error_body(exc.status_code, str(exc.detail)), exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI parses the body before it runs dependencies: a body that is not JSON would tell a
        # caller without a key about the API before the key is checked
        if request.url.path.startswith("/v1/") and directory.tenant_for(_bearer_key(request)) is None:
            return JSONResponse(
                _error_body(401, "missing or invalid API key (Authorization: Bearer <key>)"),
                401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        return JSONResponse(_error_body(422, _describe_request_errors(exc.errors())), 422)

    @app.exception_handler(QuestionError)
    async def invalid_question(request: Request, exc: QuestionError) -> JSONResponse:
        return JSONResponse(_error_body(422, str(exc)), 422)

    def checked_session(session_id: str | None) -> str | None:
        try:
            return check_session_id(session_id) if session_id is not None else None
        except ValueError as exc:
            raise QuestionError(str(exc)) from None

    async def answer(
        request: Request, tenant: Tenant, question: str, session_id: str | None, filters: Filters | None
    ) -> QAResult:
        arrived = time.monotonic()  # the question's deadline counts from here, its wait for a slot included
        # 422 before queueing behind other questions
        question = validate_question(question, max_question_chars)
        session_id = checked_session(session_id)
        try:
            result = await runner.ask(
                question,
                session_id,
                filters and filters.given(),
                tenant.name,
                arrived=arrived,
                deadline_s=settings.request_deadline_s,
            )
        except Saturated as exc:
            raise HTTPException(
                503, f"the service is busy: {exc}; retry after {settings.retry_after_s} s", headers=busy_headers
            ) from None
        request.state.trace_id = result.trace_id
        return result

    # -- health --------------------------------------------------------------------------------
    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict:
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"])
    async def readyz() -> JSONResponse:
        """Ready to answer: warmed, and a question arriving now would be computed or queued, not
        turned away (503 "saturated" with Retry-After, so a load balancer sends it elsewhere).
        running / queued: questions computing and waiting now, with their limits."""
        load = {**admission.counts(), "long_questions": long_lane.counts()}
        if not runner.ready.is_set():
            return JSONResponse({"ready": False, "status": "warming up", **load}, 503)
        if runner.error is not None:
            return JSONResponse({"ready": False, "status": "failed", "error": runner.error, **load}, 503)
        if admission.full:
            return JSONResponse({"ready": False, "status": "saturated", **load}, 503, headers=busy_headers)
        return JSONResponse({"ready": True, "status": "ok", **load})

    # -- native API ----------------------------------------------------------------------------
    v1 = [Depends(authenticate)]

    @app.post("/v1/ask", response_model=QAResult, tags=["qa"])
    async def ask(body: AskRequest, request: Request, tenant: Tenant = Depends(authenticate)) -> QAResult:
        """Answer one question; the answer cites 【chunk_id】 and `citations` describes each id."""
        return await answer(request, tenant, body.question, body.session_id, body.filters)

    @app.post("/v1/feedback", response_model=FeedbackResponse, tags=["qa"])
    async def feedback(
        body: FeedbackRequest, request: Request, tenant: Tenant = Depends(authenticate)
    ) -> FeedbackResponse:
        """👍/👎 on an answer by its trace id; the strategy policy learns from it at once."""
        try:
            rating = parse_rating(body.rating)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        request.state.trace_id = body.trace_id
        try:
            await runner.call(assistant.feedback, body.trace_id, rating, body.comment, tenant.name)
        except KeyError:
            raise HTTPException(404, f"no answer with trace id {body.trace_id!r}") from None
        return FeedbackResponse(trace_id=body.trace_id, rating=rating)

    @app.get("/v1/sessions/{session_id}", tags=["qa"])
    async def session(session_id: str, tenant: Tenant = Depends(authenticate)) -> dict:
        state = await runner.call(assistant.session, session_id, tenant.name)
        if state is None:
            raise HTTPException(404, f"no session {session_id!r}")
        return state.model_dump(mode="json")

    @app.get("/v1/traces/{trace_id}", tags=["qa"])
    async def trace(trace_id: str, request: Request, tenant: Tenant = Depends(authenticate)) -> dict:
        request.state.trace_id = trace_id
        found = await runner.call(assistant.trace, trace_id, tenant.name)
        if found is None:
            raise HTTPException(404, f"no trace {trace_id!r}")
        return found

    # -- OpenAI-compatible ---------------------------------------------------------------------
    @app.get("/v1/models", dependencies=v1, tags=["openai"])
    async def models() -> dict:
        return {
            "object": "list",
            "data": [{"id": MODEL_NAME, "object": "model", "created": 0, "owned_by": "citescope"}],
        }

    @app.post("/v1/chat/completions", tags=["openai"])
    async def chat_completions(body: ChatRequest, request: Request, tenant: Tenant = Depends(authenticate)) -> Any:
        """OpenAI chat completions: the answer (with 【id】 inline) as the message content,
        `citations` at the top level and in the message, `x_citescope` with the flags."""
        question = validate_question(body.question(), max_question_chars)
        checked_session(body.session())  # a streamed request gets the 422 /v1/ask would, before the stream starts
        if body.stream:
            if admission.full:  # before the stream's 200: a client told to retry is told so in the status
                raise HTTPException(
                    503, f"the service is busy; retry after {settings.retry_after_s} s", headers=busy_headers
                )
            return StreamingResponse(
                _stream_chat(request, tenant, body, question),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )
        result = await answer(request, tenant, question, body.session(), body.filters)
        citations = [c.model_dump(mode="json") for c in result.citations]
        return {
            "id": f"chatcmpl-{result.trace_id}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.model,
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": result.answer, "citations": citations},
                }
            ],
            "citations": citations,
            "x_citescope": _extension(result),
        }

    async def _stream_chat(request: Request, tenant: Tenant, body: ChatRequest, question: str) -> AsyncIterator[str]:
        created = int(time.time())

        def chunk(delta: dict, finish_reason: str | None = None, **extra: Any) -> str:
            # the id of the non-streamed reply: chatcmpl-<trace id>, the same on every chunk
            data = {
                "id": f"chatcmpl-{result.trace_id}",
                "object": "chat.completion.chunk",
                "created": created,
                "model": body.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
                **extra,
            }
            return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"

        # The trace id exists once the answer does, so the first chunk waits for it; an SSE comment
        # (which clients skip) starts the response at once, so proxies and clients see it alive.
        yield ": answering\n\n"
        try:
            result = await answer(request, tenant, question, body.session(), body.filters)
        except Exception as exc:  # headers are sent: report in-stream, as OpenAI does, then end it as usual
            if isinstance(exc, HTTPException):
                status, message = exc.status_code, str(exc.detail)
            elif isinstance(exc, QuestionError):
                status, message = 422, str(exc)
            else:
                log.exception("chat stream failed")
                status, message = 500, "internal error"
            yield f"data: {json.dumps(_error_body(status, message), ensure_ascii=False)}\n\n"
            yield "data: [DONE]\n\n"
            return
        yield chunk({"role": "assistant", "content": ""})
        for piece in (p for p in SENTENCE_END.split(result.answer) if p):
            yield chunk({"content": piece})
        citations = [c.model_dump(mode="json") for c in result.citations]
        yield chunk({}, "stop", citations=citations, x_citescope=_extension(result))
        yield "data: [DONE]\n\n"

    return app


def _describe_request_errors(errors: Sequence[Mapping[str, Any]]) -> str:
    """A body that is not JSON, or not a JSON object, said as such (FastAPI reports the first as
    "0: JSON decode error"); otherwise each field's problem."""
    for error in errors:
        where = tuple(error["loc"])
        if error["type"] == "json_invalid":
            reason = (error.get("ctx") or {}).get("error") or "cannot be parsed"
            position = f" at character {where[-1]}" if len(where) > 1 and isinstance(where[-1], int) else ""
            return f"the request body is not valid JSON: {reason}{position}"
        if where == ("body",):  # the whole body: empty, a list, a string, or not sent as application/json
            return "the request body must be a JSON object (Content-Type: application/json)"
    return "; ".join(f"{'.'.join(str(p) for p in e['loc'] if p != 'body') or 'body'}: {e['msg']}" for e in errors)


def _extension(result: QAResult) -> dict:
    return {
        "trace_id": result.trace_id,
        "session_id": result.session_id,
        "refused": result.refused,
        "refusal_reason": result.refusal_reason,
        "degraded": result.degraded,
        "conflicts": [c.model_dump(mode="json") for c in result.conflicts],
    }


# -- running it ---------------------------------------------------------------------------------
def serve(app: FastAPI, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Run the app in this process until interrupted (the `serve` command)."""
    configure_json_logging()
    uvicorn.run(app, host=host, port=port, log_config=None, **uvicorn_options(app))


def uvicorn_options(app: Any) -> dict[str, Any]:
    """uvicorn settings for the app: no access log of its own (AccessLog writes one), and the
    connection timeouts of its ServiceSettings (create_app keeps them on app.state; another ASGI
    app gets the defaults)."""
    settings = getattr(getattr(app, "state", None), "settings", None)
    settings = settings if isinstance(settings, ServiceSettings) else ServiceSettings()
    return {
        "access_log": False,
        "http": h11_with_header_timeout(settings.header_timeout_s),
        "timeout_keep_alive": settings.keep_alive_timeout_s,
    }


class BackgroundServer:
    """An ASGI app served by uvicorn on a daemon thread (tests, notebooks); port 0 = a free port."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0):
        self.host = host
        self._server = uvicorn.Server(
            uvicorn.Config(app, host=host, port=port, log_level="warning", ws="wsproto", **uvicorn_options(app))
        )
        self._thread = threading.Thread(target=self._server.run, name="uvicorn", daemon=True)

    def start(self, timeout_s: float = 30.0) -> BackgroundServer:
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"uvicorn did not start on {self.host}")
            time.sleep(0.02)
        return self

    @property
    def port(self) -> int:
        return self._server.servers[0].sockets[0].getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=15)

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
