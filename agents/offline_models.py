"""Offline test models (pydantic-ai style): real ChatModelBase subclasses, no HTTP, no mocks.

ScriptedModel replays responses in order; FunctionModel asks a user function. Both record what
they received, so a test (or the offline pipeline) can assert on the prompt and tool schemas.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import AsyncGenerator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from agentscope.message import TextBlock, ToolUseBlock
from agentscope.model import ChatModelBase, ChatResponse

# A reply as a test writes it: a ready ChatResponse, a text, or tool calls
# [{"name": ..., "arguments": dict | JSON str, "id": optional}].
Reply = ChatResponse | str | list[dict]

DEFAULT_FINAL_TEXT = "脚本已结束。"
_call_ids = itertools.count(1)  # unique tool-call ids within a process: memory pairs results by id


def text_response(text: str) -> ChatResponse:
    return ChatResponse(content=[TextBlock(type="text", text=text)])


def tool_call_response(
    name: str, args: dict | None = None, id: str | None = None, text: str | None = None
) -> ChatResponse:
    """One tool call (optionally preceded by a thought text)."""
    return tool_calls_response([{"name": name, "arguments": args or {}, "id": id}], text=text)


def tool_calls_response(calls: Iterable[dict], text: str | None = None) -> ChatResponse:
    content: list = [TextBlock(type="text", text=text)] if text else []
    for call in calls:
        arguments = call.get("arguments") or {}
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        content.append(
            ToolUseBlock(
                type="tool_use",
                id=call.get("id") or f"call_{next(_call_ids)}",
                name=call["name"],
                input=json.loads(raw) if isinstance(arguments, str) else dict(arguments),
                raw_input=raw,
            )
        )
    return ChatResponse(content=content)


def as_response(reply: Reply) -> ChatResponse:
    if isinstance(reply, ChatResponse):
        return reply
    if isinstance(reply, str):
        return text_response(reply)
    if isinstance(reply, list):
        return tool_calls_response(reply)
    raise TypeError(f"an offline model reply must be ChatResponse, str or list of tool calls, got {type(reply)}")


@dataclass
class ModelCall:
    """What one call to an offline model received (deep copies, safe to keep)."""

    messages: list[dict]
    tools: list[dict] | None
    tool_choice: str | None
    kwargs: dict = field(default_factory=dict)

    @property
    def tool_names(self) -> list[str]:
        return [tool["function"]["name"] for tool in self.tools or []]


class _RecordingModel(ChatModelBase):
    """Shared call path: record the input, produce a reply, stream it as one chunk if asked."""

    def __init__(self, model_name: str, stream: bool) -> None:
        super().__init__(model_name, stream)
        self.calls: list[ModelCall] = []

    def _reply(self, call: ModelCall) -> ChatResponse:
        raise NotImplementedError

    async def __call__(
        self,
        messages: list[dict],
        tools: list[dict] | None = None,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> ChatResponse | AsyncGenerator[ChatResponse, None]:
        call = ModelCall(copy.deepcopy(messages), copy.deepcopy(tools), tool_choice, dict(kwargs))
        self.calls.append(call)
        response = self._reply(call)
        if not self.stream:
            return response

        async def one_chunk() -> AsyncGenerator[ChatResponse, None]:
            yield response

        return one_chunk()


class ScriptedModel(_RecordingModel):
    """Returns the scripted replies in order; after the script, `final_text` every time."""

    def __init__(
        self,
        script: Iterable[Reply],
        final_text: str = DEFAULT_FINAL_TEXT,
        model_name: str = "scripted",
        stream: bool = False,
    ) -> None:
        super().__init__(model_name, stream)
        self.script = [as_response(reply) for reply in script]
        self.final_text = final_text

    @property
    def remaining(self) -> int:
        return max(0, len(self.script) - len(self.calls))

    def _reply(self, call: ModelCall) -> ChatResponse:
        position = len(self.calls) - 1
        if position < len(self.script):
            scripted = self.script[position]  # ChatResponse itself cannot be deep-copied
            return ChatResponse(
                content=copy.deepcopy(list(scripted.content)), metadata=copy.deepcopy(scripted.metadata)
            )
        return text_response(self.final_text)


class FunctionModel(_RecordingModel):
    """Asks `function(messages, tools)` for each reply (ChatResponse, text or tool calls)."""

    def __init__(
        self,
        function: Callable[[list[dict], list[dict] | None], Reply],
        model_name: str = "function",
        stream: bool = False,
    ) -> None:
        super().__init__(model_name, stream)
        self.function = function

    def _reply(self, call: ModelCall) -> ChatResponse:
        return as_response(self.function(call.messages, call.tools))
