"""What a failed model request means, whichever SDK raised it, and what to do about it.

The two clients fail in different shapes: the openai SDK raises `APIStatusError` subclasses that
carry the HTTP status and the response (headers, body), `APIConnectionError` and `APITimeoutError`;
AgentScope's DashScopeChatModel raises a bare `RuntimeError` whose message (or first argument, a
`GenerationResponse`) holds the DashScope reply with its `status_code`, and aiohttp raises
`ClientResponseError` (with `.status`) when a proxy answers with HTML. `classify` reads all of them
into one `ProviderError`, whose `kind` decides the retry policy (agents/budget.py):

| kind          | what                                   | retried | counts against the breaker |
|---------------|----------------------------------------|---------|----------------------------|
| auth          | 401, 403                                | no      | no (the provider is up)    |
| bad_request   | 400, 404, 422                           | no      | no                         |
| rate_limited  | 429: after Retry-After, if it fits      | yes     | yes                        |
| server        | 5xx, an HTML error page, other statuses | yes     | yes                        |
| connection    | refused, reset, DNS                     | yes     | yes                        |
| timeout       | the attempt ran past its timeout        | yes     | yes                        |
| incomplete    | a stream cut before its finish reason   | yes     | yes                        |
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Literal

import openai

from citescope.agents.models import HTMLErrorPage, IncompleteStream, redact

ErrorKind = Literal["auth", "bad_request", "rate_limited", "server", "connection", "timeout", "incomplete"]
FAIL_FAST: frozenset[ErrorKind] = frozenset({"auth", "bad_request"})
_AUTH = {401, 403}
_BAD_REQUEST = {400, 404, 422}
_DASHSCOPE_STATUS = re.compile(r'"status_code":\s*(\d{3})')
_DASHSCOPE_MESSAGE = re.compile(r'"message":\s*"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class ProviderError:
    kind: ErrorKind
    reason: str  # log-safe: "HTTP 502 (HTML error page)", "HTTP 429: rate limited"
    status: int | None = None
    retry_after_s: float | None = None  # what the provider asked for (429), None when it did not say

    @property
    def retryable(self) -> bool:
        return self.kind not in FAIL_FAST

    @property
    def counts_against_provider(self) -> bool:
        """Whether it says the provider is sick (the circuit breaker counts it); a refused key or
        request says nothing about the endpoint's health."""
        return self.kind not in FAIL_FAST


def classify(exc: BaseException, now: datetime | None = None) -> ProviderError:
    """The ProviderError an exception raised by a model request stands for."""
    if isinstance(exc, TimeoutError | openai.APITimeoutError):
        return ProviderError("timeout", "timed out")
    if isinstance(exc, IncompleteStream):
        return ProviderError("incomplete", str(exc))
    if isinstance(exc, HTMLErrorPage):
        return _of_status(exc.status, "<html>", None, now)
    if isinstance(exc, openai.APIStatusError):
        body = _text_of(exc.response)
        return _of_status(exc.status_code, body, exc.response.headers.get("retry-after"), now)
    if isinstance(exc, openai.APIConnectionError):
        return ProviderError("connection", f"connection failed ({type(exc).__name__}: {_first_line(exc)})")
    status = _status_attribute(exc)
    if status is not None:  # aiohttp's ClientResponseError (DashScope behind an HTML proxy page)
        html = "mimetype: text/html" in str(exc)
        return _of_status(status, "<html>" if html else _first_line(exc), None, now)
    if isinstance(exc, RuntimeError):  # DashScopeChatModel: RuntimeError(response) or RuntimeError(f"...{chunk}")
        found = _DASHSCOPE_STATUS.search(str(exc))
        if found:
            message = _DASHSCOPE_MESSAGE.search(str(exc))
            return _of_status(int(found.group(1)), _unescape(message.group(1)) if message else "", None, now)
    if isinstance(exc, ConnectionError | OSError):
        return ProviderError("connection", f"{type(exc).__name__}: {_first_line(exc)}".rstrip(": "))
    return ProviderError("server", f"{type(exc).__name__}: {_first_line(exc)}".rstrip(": "))


def retry_after_s(value: str | None, now: datetime | None = None) -> float | None:
    """Retry-After as seconds: a number of seconds or an HTTP date (RFC 9110 10.2.3); None if absent or unreadable."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _of_status(status: int, body: str, retry_after: str | None, now: datetime | None) -> ProviderError:
    html = _is_html(body)
    body = redact(body.strip().splitlines()[0][:160]) if body.strip() and not html else ""
    detail = " (HTML error page)" if html else (f": {body}" if body else "")
    reason = f"HTTP {status}{detail}"
    if status in _AUTH:
        return ProviderError("auth", reason, status)
    if status in _BAD_REQUEST:
        return ProviderError("bad_request", reason, status)
    if status == 429:
        return ProviderError("rate_limited", reason, status, retry_after_s(retry_after, now))
    return ProviderError("server", reason, status)


def _is_html(body: str) -> bool:
    head = body.lstrip()[:200].lower()
    return head.startswith(("<!doctype html", "<html")) or "<html" in head


def _text_of(response: Any) -> str:
    """The error body's message (JSON error objects) or its text, short and redacted."""
    try:
        text = response.text
    except Exception:  # a streamed response whose body was not read
        return ""
    try:
        payload = json.loads(text)
    except ValueError:
        return text
    error = payload.get("error", payload) if isinstance(payload, dict) else payload
    message = error.get("message") if isinstance(error, dict) else None
    return str(message if message is not None else payload)


def _status_attribute(exc: BaseException) -> int | None:
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) and 100 <= status < 600 else None


def _unescape(text: str) -> str:
    try:
        return str(json.loads(f'"{text}"'))
    except ValueError:
        return text


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return redact(text.splitlines()[0][:160]) if text else ""
