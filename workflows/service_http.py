"""The service's HTTP plumbing below the routes: the body-size limit and the access log (ASGI
middleware), JSON log lines that never carry personal data, and the one error body every
failure is written as."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from fastapi import Request

from citescope.workflows.personal_data import redact_personal

access_log = logging.getLogger("citescope.access")


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
        body = json.dumps(error_body(status, message)).encode()
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


def error_body(status: int, message: str) -> dict:
    """OpenAI's error shape; every client error (4xx) is the client's, never a `server_error`."""
    kind = {
        401: "authentication_error",
        404: "not_found_error",
        413: "request_too_large",
        429: "rate_limit_error",
        503: "service_unavailable",
    }.get(status, "invalid_request_error" if 400 <= status < 500 else "server_error")
    return {"error": {"message": message, "type": kind, "code": status}}


def bearer_key(request: Request) -> str | None:
    scheme, _, key = (request.headers.get("authorization") or "").partition(" ")
    return key.strip() if scheme.lower() == "bearer" and key.strip() else None


def describe_request_errors(errors: Sequence[Mapping[str, Any]]) -> str:
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
