"""The HTTP service: one warmed Assistant per process behind FastAPI.

    POST /v1/ask                 {question, session_id?, filters?} -> QAResult JSON
    POST /v1/feedback            {trace_id, rating: 1 | -1 | "up" | "down", comment?}
    GET  /v1/sessions/{id}       the session's turns;  GET /v1/traces/{trace_id}: one answer's trace
    POST /v1/chat/completions    OpenAI-compatible (stream=true: SSE chat.completion.chunk deltas)
    GET  /v1/models              the one model name, for OpenAI clients that list models first
    GET  /healthz, /readyz       process alive / KB warmed (never behind the API key)
    GET  /metrics                Prometheus text: questions, model requests, tokens and cost per tenant

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

This module is the app and its native routes; its parts live beside it: service_settings (the
CITESCOPE_* settings), service_bodies (request and response bodies), service_runner
(AssistantLoop), service_http (middleware, JSON logs, error bodies), service_openai (the
OpenAI-compatible chat layer and its SSE stream) and service_server (serve, BackgroundServer).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException

from citescope.workflows.admission import Admission, Saturated
from citescope.workflows.answer_events import Listener
from citescope.workflows.pipeline import QuestionError, validate_question
from citescope.workflows.result import QAResult
from citescope.workflows.rewards import parse_rating
from citescope.workflows.service_bodies import AskRequest, FeedbackRequest, FeedbackResponse, Filters
from citescope.workflows.service_http import (
    AccessLog,
    BodySizeLimit,
    JsonLogFormatter,
    bearer_key,
    configure_json_logging,
    describe_request_errors,
    error_body,
)
from citescope.workflows.service_metrics import CONTENT_TYPE, UsageCounters
from citescope.workflows.service_openai import MODEL_NAME, ChatMessage, ChatRequest, chat_completion, stream_chat
from citescope.workflows.service_runner import AssistantLoop
from citescope.workflows.service_server import BackgroundServer, serve, uvicorn_options
from citescope.workflows.service_settings import ServiceSettings
from citescope.workflows.sessions import check_session_id
from citescope.workflows.tenants import RateLimiter, Tenant, retry_after_header

log = logging.getLogger("citescope.service")


# -- the app ------------------------------------------------------------------------------------
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
    counters = UsageCounters()

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
        return JSONResponse(error_body(exc.status_code, str(exc.detail)), exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI parses the body before it runs dependencies: a body that is not JSON would tell a
        # caller without a key about the API before the key is checked
        if request.url.path.startswith("/v1/") and directory.tenant_for(bearer_key(request)) is None:
            return JSONResponse(
                error_body(401, "missing or invalid API key (Authorization: Bearer <key>)"),
                401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        return JSONResponse(error_body(422, describe_request_errors(exc.errors())), 422)

    @app.exception_handler(QuestionError)
    async def invalid_question(request: Request, exc: QuestionError) -> JSONResponse:
        return JSONResponse(error_body(422, str(exc)), 422)

    def checked_session(session_id: str | None) -> str | None:
        try:
            return check_session_id(session_id) if session_id is not None else None
        except ValueError as exc:
            raise QuestionError(str(exc)) from None

    async def answer(
        request: Request,
        tenant: Tenant,
        question: str,
        session_id: str | None,
        filters: Filters | None,
        listener: Listener | None = None,
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
                listener=listener,
            )
        except Saturated as exc:
            raise HTTPException(
                503, f"the service is busy: {exc}; retry after {settings.retry_after_s} s", headers=busy_headers
            ) from None
        request.state.trace_id = result.trace_id
        counters.record(tenant.name, result)
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

    @app.get("/metrics", tags=["health"])
    async def metrics(request: Request) -> PlainTextResponse:
        """Prometheus text. The metrics key (CITESCOPE_METRICS_KEY) sees every tenant; a tenant's
        API key only its own counters (another tenant's usage is its business); an open API all.
        Not rate-limited: a scrape must not spend a tenant's questions."""
        key = bearer_key(request)
        if settings.metrics_key and key is not None and hmac.compare_digest(key, settings.metrics_key):
            return PlainTextResponse(counters.prometheus(), media_type=CONTENT_TYPE)
        tenant = directory.tenant_for(key)
        if tenant is None:
            raise HTTPException(
                401, "missing or invalid API key (Authorization: Bearer <key>)", headers={"WWW-Authenticate": "Bearer"}
            )
        shown = None if directory.open else [tenant.name]
        return PlainTextResponse(counters.prometheus(shown), media_type=CONTENT_TYPE)

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
        # what the session's questions spent on models, summed from their traces
        usage = await runner.call(assistant.traces.session_usage, session_id, tenant.name)
        return {**state.model_dump(mode="json"), "usage": usage.model_dump(mode="json")}

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
                stream_chat(partial(answer, request, tenant, question, body.session(), body.filters), body.model),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )
        result = await answer(request, tenant, question, body.session(), body.filters)
        return chat_completion(result, body.model)

    return app


# the service's parts, imported from here by the CLI, the tests and embedding code
__all__ = [
    "MODEL_NAME",
    "AccessLog",
    "AskRequest",
    "AssistantLoop",
    "BackgroundServer",
    "BodySizeLimit",
    "ChatMessage",
    "ChatRequest",
    "FeedbackRequest",
    "FeedbackResponse",
    "Filters",
    "JsonLogFormatter",
    "ServiceSettings",
    "configure_json_logging",
    "create_app",
    "serve",
    "uvicorn_options",
]
