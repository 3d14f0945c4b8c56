"""A real OpenAI-compatible (and DashScope-format) HTTP server on 127.0.0.1 that replays a script:
the scripted provider of `run.py bench llm` and of the tests (real HTTP, the providers' wire formats).

Each chat request consumes the next step of the script:
  {"content": "..."}                                   plain text reply
  {"tool_calls": [{"name", "arguments": dict | str, "id"?}], "content"?: "..."}
  {"status": 429 | 500 | ..., "body"?: dict | str, "headers"?: {...}, "content_type"?: "text/html"}   an HTTP error
  {"delay_s": 1.5, <any step above>}                   wait first (a delay alone replies default_step)
  {"hang": True}                                       a stalled provider: no byte until the server closes
  {"cut_stream": True, <content or tool_calls>}        a stream that ends without a finish reason or [DONE]
  {"raw": "not json"}                                  a 200 whose body is not JSON
  {"content": "...", "tokens_per_s": 30}               streamed a token at a time, paced (a model writing)
  {"content": "...", "hold_after": 12, "hold_until": threading.Event()}
                                                       streamed; after the chunk that reaches character 12
                                                       it waits for the event (at most hold_timeout_s, 10)
  {"malformed_tool_args": True | "<arguments string>", "name"?: "search"}
  callable(request_json) -> step                       dynamic replies
  "usage": {"input_tokens", "output_tokens", "cached_tokens"?}  beside a reply: the tokens it reports
                                                       (default 10 in, 5 out, none cached)
When the script is exhausted, `default_step` answers (a loud 500 unless configured).
POST /v1/embeddings is deterministic (hash of the text) and consumes no step.
DashScope's native text-generation route (/api/v1/services/aigc/text-generation/generation)
replays the same steps in DashScope's response format.

    with ReplayServer(script=[{"content": "你好"}]) as server:
        server.base_url      # "http://127.0.0.1:PORT/v1"
        server.requests      # every request, Authorization kept only as a hash
        server.streams_finished  # SSE replies written to their end (a streamed reply's last byte sent)
"""

from __future__ import annotations

import base64
import collections
import hashlib
import json
import math
import re
import struct
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Step = dict | Callable[[Any], dict]
DEFAULT_USAGE = {"input_tokens": 10, "output_tokens": 5}

EXHAUSTED_STEP: dict = {
    "status": 500,
    "body": {"error": {"message": "replay script exhausted", "type": "replay_exhausted"}},
}
MALFORMED_ARGUMENTS = "这不是JSON {"
OPENAI_CHAT = "/v1/chat/completions"
OPENAI_EMBEDDINGS = "/v1/embeddings"
DASHSCOPE_CHAT = "/api/v1/services/aigc/text-generation/generation"
_REPLY_KEYS = ("content", "tool_calls", "status", "raw", "malformed_tool_args", "hang")


def hash_embedding(text: str, dim: int) -> list[float]:
    """The server's deterministic, L2-normalised vector for a text (tests can recompute it)."""
    values: list[float] = []
    counter = 0
    while len(values) < dim:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        values += [byte / 127.5 - 1.0 for byte in digest]
        counter += 1
    values = values[:dim]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]  # lower-cased names, Authorization removed
    body: Any  # parsed JSON, or the raw text when it was not JSON
    authorization_sha256: str | None  # the header itself is never stored

    @property
    def has_authorization(self) -> bool:
        return self.authorization_sha256 is not None

    def has_bearer(self, token: str) -> bool:
        return self.authorization_sha256 == _sha256(f"Bearer {token}")


def prompt_text(body: dict) -> str:
    """All text the client sent in one chat request (string contents and text parts)."""
    parts = []
    for message in body["messages"]:
        content = message.get("content")
        parts += [content] if isinstance(content, str) else [p.get("text", "") for p in content or []]
    return "\n".join(parts)


def openai_usage(step: dict) -> dict:
    """The step's tokens as OpenAI reports them (cached prompt tokens in prompt_tokens_details)."""
    tokens = step.get("usage") or DEFAULT_USAGE
    usage: dict = {
        "prompt_tokens": tokens["input_tokens"],
        "completion_tokens": tokens["output_tokens"],
        "total_tokens": tokens["input_tokens"] + tokens["output_tokens"],
    }
    if "cached_tokens" in tokens:
        usage["prompt_tokens_details"] = {"cached_tokens": tokens["cached_tokens"]}
    return usage


def dashscope_usage(step: dict, share: float = 1.0) -> dict:
    """The step's tokens as DashScope reports them; share: the part of the output written so far
    (a stream's every event carries the usage up to it, so the last one has the whole)."""
    tokens = step.get("usage") or DEFAULT_USAGE
    output = round(tokens["output_tokens"] * share)
    usage: dict = {
        "input_tokens": tokens["input_tokens"],
        "output_tokens": output,
        "total_tokens": tokens["input_tokens"] + output,
    }
    if "cached_tokens" in tokens:
        usage["prompt_tokens_details"] = {"cached_tokens": tokens["cached_tokens"]}
    return usage


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def tokens_of(text: str) -> list[str]:
    """Text cut as a model's tokens roughly are: a Chinese character, a run of Latin letters or
    digits, a space run, any other mark."""
    return re.findall(r"[A-Za-z0-9.]+|\s+|.", text, re.DOTALL)


def _pieces(text: str, parts: int = 3) -> list[str]:
    """Split text into a few chunks so clients must accumulate streamed deltas."""
    size = max(1, math.ceil(len(text) / parts))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class ReplayServer:
    def __init__(
        self,
        script: list[Step] | tuple = (),
        default_step: Step | None = None,
        embedding_dim: int = 8,
        keep_alive: bool = False,
    ) -> None:
        """keep_alive: speak HTTP/1.1 and keep connections open between replies (a stream still
        ends by closing), as real providers do, so clients reuse pooled connections."""
        self.keep_alive = keep_alive
        self._steps: collections.deque[Step] = collections.deque(script)
        self.default_step: Step = default_step if default_step is not None else EXHAUSTED_STEP
        self.embedding_dim = embedding_dim
        self._records: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._served = 0
        self._finished_streams = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> ReplayServer:
        protocol = "HTTP/1.1" if self.keep_alive else "HTTP/1.0"
        handler = type("ReplayHandler", (_Handler,), {"replay": self, "protocol_version": protocol})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)  # port 0: a free port
        self._httpd.daemon_threads = True
        # a short poll interval keeps close() fast (shutdown waits for one poll)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="replay-server", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()  # wakes handlers sleeping in a delay step
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._httpd = None

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    # -- public view -----------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._httpd is not None, "ReplayServer is not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def dashscope_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._records)

    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path in (OPENAI_CHAT, DASHSCOPE_CHAT)]

    @property
    def streams_finished(self) -> int:
        with self._lock:
            return self._finished_streams

    def _stream_finished(self) -> None:
        with self._lock:
            self._finished_streams += 1

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._steps)

    def push(self, *steps: Step) -> None:
        with self._lock:
            self._steps.extend(steps)

    # -- used by the handler ---------------------------------------------------------------
    def _record(self, request: RecordedRequest) -> int:
        with self._lock:
            self._records.append(request)
            self._served += 1
            return self._served

    def _next_step(self, body: Any) -> dict:
        with self._lock:
            step = self._steps.popleft() if self._steps else self.default_step
        if callable(step):
            step = step(body)
        if not isinstance(step, dict):
            return {"status": 500, "body": {"error": {"message": f"replay: a step must be a dict, got {step!r}"}}}
        if step.get("hang"):
            self._closing.wait()  # a stalled provider: the client's own timeout is the only way out
            return {"status": 503, "body": {"error": {"message": "replay server closing"}}}
        if "delay_s" in step:
            self._closing.wait(float(step["delay_s"]))
            step = {k: v for k, v in step.items() if k != "delay_s"}
            if not any(key in step for key in _REPLY_KEYS):
                return self._next_default(body)
        if not any(key in step for key in _REPLY_KEYS):
            return {"status": 500, "body": {"error": {"message": f"replay: unknown step {step!r}"}}}
        return step

    def _next_default(self, body: Any) -> dict:
        step = self.default_step(body) if callable(self.default_step) else self.default_step
        return {k: v for k, v in step.items() if k != "delay_s"}


def _tool_calls(step: dict, serial: int) -> list[dict]:
    """Step -> OpenAI-shaped tool calls with string arguments."""
    if "malformed_tool_args" in step:
        raw = step["malformed_tool_args"]
        arguments = raw if isinstance(raw, str) else MALFORMED_ARGUMENTS
        calls = [{"name": step.get("name", "search"), "arguments": arguments}]
    else:
        calls = step.get("tool_calls") or []
    out = []
    for position, call in enumerate(calls):
        arguments = call.get("arguments", {})
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        out.append(
            {
                "id": call.get("id") or f"call_{serial}_{position}",
                "type": "function",
                "function": {"name": call["name"], "arguments": arguments},
            }
        )
    return out


def _paced(chunks: list[str], pieces: list[str], step: dict) -> list[str | float | threading.Event]:
    """A paced step's content chunks with a pause (seconds) before each, and its hold (the event)
    after the chunk that reaches hold_after characters."""
    out: list[str | float | threading.Event] = []
    pause = 1.0 / float(step["tokens_per_s"]) if step.get("tokens_per_s") else 0.0
    written, held = 0, "hold_until" not in step
    for chunk, piece in zip(chunks, pieces, strict=True):
        out += [pause, chunk] if pause else [chunk]
        written += len(piece)
        if not held and written >= int(step.get("hold_after", 0)):
            out.append(step["hold_until"])
            held = True
    return out


class _Handler(BaseHTTPRequestHandler):
    replay: ReplayServer  # set on the per-server subclass

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read server.requests
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        text = self.rfile.read(length).decode("utf-8", errors="replace")
        try:
            body = json.loads(text) if text else None
        except json.JSONDecodeError:
            body = text
        authorization = self.headers.get("Authorization")
        headers = {k.lower(): v for k, v in self.headers.items() if k.lower() != "authorization"}
        path = self.path.split("?", 1)[0]
        serial = self.replay._record(
            RecordedRequest(path, headers, body, _sha256(authorization) if authorization else None)
        )
        try:
            if path == OPENAI_CHAT:
                self._openai_chat(body if isinstance(body, dict) else {}, serial)
            elif path == OPENAI_EMBEDDINGS:
                self._embeddings(body if isinstance(body, dict) else {})
            elif path == DASHSCOPE_CHAT:
                self._dashscope_chat(body if isinstance(body, dict) else {}, serial)
            else:
                self._send_json(404, {"error": {"message": f"replay: no route {path}"}})
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (e.g. its timeout fired during a delay step)

    # -- OpenAI ----------------------------------------------------------------------------
    def _openai_chat(self, body: dict, serial: int) -> None:
        step = self.replay._next_step(body)
        stream = bool(body.get("stream"))
        if "status" in step:
            status = int(step["status"])
            default = {"error": {"message": f"replayed HTTP {status}", "type": "replay_error", "code": status}}
            self._send_error(status, step.get("body", default), step)
            return
        if "raw" in step:
            if stream:
                self._send_sse([f"data: {step['raw']}\n\n"])
            else:
                self._send_bytes(200, str(step["raw"]).encode(), "application/json")
            return
        content = step.get("content")
        pieces = (tokens_of(content) if step.get("tokens_per_s") else _pieces(content)) if content else []
        tool_calls = _tool_calls(step, serial)
        finish = "tool_calls" if tool_calls else "stop"
        usage = openai_usage(step)
        base = {"id": f"chatcmpl-replay-{serial}", "created": int(time.time()), "model": body.get("model", "replay")}
        if not stream:
            message: dict = {"role": "assistant", "content": content}
            if tool_calls:
                message["tool_calls"] = tool_calls
            self._send_json(
                200,
                {
                    **base,
                    "object": "chat.completion",
                    "usage": usage,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                },
            )
            return

        def chunk(delta: dict, finish_reason: str | None = None) -> str:
            data = {
                **base,
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            }
            return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"

        events: list[str | float | threading.Event] = [chunk({"role": "assistant", "content": ""})]
        events += _paced([chunk({"content": piece}) for piece in pieces], pieces, step) if content else []
        for index, call in enumerate(tool_calls):
            events.append(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call["id"],
                                "type": "function",
                                "function": {"name": call["function"]["name"], "arguments": ""},
                            }
                        ]
                    }
                )
            )
            events += [
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                for piece in _pieces(call["function"]["arguments"])
            ]
        if step.get("cut_stream"):  # the connection drops before the finish reason and [DONE]
            self._send_sse(events)
            return
        events.append(chunk({}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            usage_chunk = {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage}
            events.append(f"data: {json.dumps(usage_chunk)}\n\n")
        events.append("data: [DONE]\n\n")
        self._send_sse(events)

    def _embeddings(self, body: dict) -> None:
        texts = body.get("input", [])
        texts = [texts] if isinstance(texts, str) else list(texts)
        dim = int(body.get("dimensions") or self.replay.embedding_dim)
        data = []
        for index, text in enumerate(texts):
            vector = hash_embedding(str(text), dim)
            embedding: list[float] | str = vector
            if body.get("encoding_format") == "base64":  # the openai SDK asks for base64 by default
                embedding = base64.b64encode(struct.pack(f"<{dim}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = sum(len(str(t)) for t in texts)
        self._send_json(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model", "replay"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )

    # -- DashScope native ------------------------------------------------------------------
    def _dashscope_chat(self, body: dict, serial: int) -> None:
        step = self.replay._next_step(body)
        stream = self.headers.get("X-DashScope-SSE", "").lower() == "enable"
        request_id = f"replay-{serial}"
        if "status" in step:
            status = int(step["status"])
            default = {"code": "ReplayError", "message": f"replayed HTTP {status}", "request_id": request_id}
            self._send_error(status, step.get("body", default), step)
            return
        if "raw" in step:
            if stream:
                self._send_sse([f"data:{step['raw']}\n\n"])
            else:
                self._send_bytes(200, str(step["raw"]).encode(), "application/json")
            return
        content = step.get("content") or ""
        tool_calls = _tool_calls(step, serial)
        finish = "tool_calls" if tool_calls else "stop"

        def payload(message: dict, finish_reason: str, share: float = 1.0) -> dict:
            return {
                "request_id": request_id,
                "usage": dashscope_usage(step, share),
                "output": {"choices": [{"finish_reason": finish_reason, "message": message}]},
            }

        if not stream:
            message: dict = {"role": "assistant", "content": content}
            if tool_calls:
                message["tool_calls"] = tool_calls
            self._send_json(200, payload(message, finish))
            return
        # agentscope asks for incremental_output: each event carries only the new delta.
        deltas: list[dict[str, Any]] = (
            [{"role": "assistant", "content": piece} for piece in _pieces(content)] if content else []
        )
        deltas += [
            {"role": "assistant", "content": "", "tool_calls": [{"index": index, **call}]}
            for index, call in enumerate(tool_calls)
        ]
        deltas = deltas or [{"role": "assistant", "content": ""}]
        last = len(deltas)
        events = [
            f"id:{n}\nevent:result\n:HTTP_STATUS/200\ndata:"
            f"{json.dumps(payload(delta, finish if n == last else 'null', n / last), ensure_ascii=False)}\n\n"
            for n, delta in enumerate(deltas, start=1)
        ]
        self._send_sse(events[:-1] if step.get("cut_stream") else events)  # cut: the finishing event never comes

    # -- wire helpers ----------------------------------------------------------------------
    def _send_error(self, status: int, payload: Any, step: dict) -> None:
        """An error reply; "content_type" sends the body as it is (a proxy's HTML error page)."""
        if "content_type" in step:
            self._send_bytes(status, str(payload).encode(), step["content_type"], step.get("headers"))
        else:
            self._send_json(status, payload, step.get("headers"))

    def _send_json(self, status: int, payload: Any, headers: dict | None = None) -> None:
        data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
        self._send_bytes(status, data.encode(), "application/json", headers)

    def _send_bytes(self, status: int, data: bytes, content_type: str, headers: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, str(value))
        self.end_headers()
        self.wfile.write(data)

    def _send_sse(self, events: Sequence[str | float | threading.Event], hold_timeout_s: float = 10.0) -> None:
        """events: the SSE text, a pause in seconds before the next, or an event to wait for."""
        # A response without Content-Length: the stream ends when the connection closes.
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.close_connection = True
        self.end_headers()
        for event in events:
            if isinstance(event, threading.Event):
                event.wait(hold_timeout_s)
            elif isinstance(event, float):
                self.replay._closing.wait(event)
            else:
                self.wfile.write(event.encode())
                self.wfile.flush()
        self.replay._stream_finished()
