"""The OpenAI-compatible layer: the chat request as OpenAI clients send it, and the reply as a
chat.completion or, streamed, as server-sent chat.completion.chunk events."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import HTTPException
from pydantic import BaseModel, ConfigDict, Field

from citescope.workflows.answer_events import AnswerEvent, Listener, relay_answer
from citescope.workflows.pipeline import QuestionError
from citescope.workflows.result import QAResult
from citescope.workflows.service_bodies import Filters
from citescope.workflows.service_http import error_body

log = logging.getLogger("citescope.service")

MODEL_NAME = "citescope"


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


def chat_completion(result: QAResult, model: str) -> dict:
    """The non-streamed reply: the answer (with 【id】 inline) as the message content, `citations`
    at the top level and in the message, `x_citescope` with the flags."""
    citations = [c.model_dump(mode="json") for c in result.citations]
    return {
        "id": f"chatcmpl-{result.trace_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
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


async def stream_chat(answering: Callable[[Listener], Awaitable[QAResult]], model: str) -> AsyncIterator[str]:
    """The streamed reply (SSE): chat.completion.chunk deltas, one per sentence, then [DONE].
    answering(listener): asks the question (called once the stream has started); a model's
    sentences come as they pass the inspector, so the first chunk goes out with the first
    sentence, before the model has finished (workflows/answer_events.py)."""
    created = int(time.time())

    def chunk(trace_id: str, delta: dict, finish_reason: str | None = None, **extra: Any) -> str:
        # the id of the non-streamed reply: chatcmpl-<trace id>, the same on every chunk
        data = {
            "id": f"chatcmpl-{trace_id}",
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            **extra,
        }
        return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"

    # An SSE comment (which clients skip) starts the response at once, so proxies and clients see
    # it alive while the question is searched.
    yield ": answering\n\n"
    started = False
    try:
        async for event in relay_answer(answering):
            if isinstance(event, AnswerEvent):
                result = event.result
                citations = [c.model_dump(mode="json") for c in result.citations]
                if not started:  # an empty answer cannot be, but the reply still opens with the role
                    yield chunk(result.trace_id, {"role": "assistant", "content": ""})
                yield chunk(result.trace_id, {}, "stop", citations=citations, x_citescope=_extension(result))
                break
            if not started:
                yield chunk(event.trace_id, {"role": "assistant", "content": ""})
                started = True
            yield chunk(event.trace_id, {"content": event.text})
    except Exception as exc:  # headers are sent: report in-stream, as OpenAI does, then end it as usual
        if isinstance(exc, HTTPException):
            status, message = exc.status_code, str(exc.detail)
        elif isinstance(exc, QuestionError):
            status, message = 422, str(exc)
        else:
            log.exception("chat stream failed")
            status, message = 500, "internal error"
        yield f"data: {json.dumps(error_body(status, message), ensure_ascii=False)}\n\n"
    yield "data: [DONE]\n\n"


def _extension(result: QAResult) -> dict:
    return {
        "trace_id": result.trace_id,
        "session_id": result.session_id,
        "refused": result.refused,
        "refusal_reason": result.refusal_reason,
        "degraded": result.degraded,
        "conflicts": [c.model_dump(mode="json") for c in result.conflicts],
        "usage": result.usage.model_dump(mode="json"),  # the models citescope called for this answer
    }
