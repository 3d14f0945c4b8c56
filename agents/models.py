"""Model factory: a spec string -> AgentScope's own chat model and formatter.

Specs: "offline", "dashscope[:model]", "openai[:model][@base_url]",
"compatible:model@http://host:port/v1" (vLLM, Ollama, llama.cpp server...).
API keys come from the environment only; they are never serialised, printed or logged.

Generation settings (`ModelSettings`: temperature, top_p, max_tokens, seed, enable_thinking) go
into AgentScope's generate_kwargs, i.e. into every request body: for DashScope's native API into
its `parameters` (enable_thinking through DashScopeChatModel's own argument, which also turns
streaming on, as DashScope requires for thinking); for OpenAI-compatible servers as top-level
fields, enable_thinking in `extra_body` (how DashScope's compatible mode and vLLM's Qwen3 read it).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from typing import Literal, TypeGuard, get_args

from agentscope.formatter import (
    DashScopeChatFormatter,
    FormatterBase,
    OpenAIChatFormatter,
)
from agentscope.model import ChatModelBase, DashScopeChatModel, OpenAIChatModel
from agentscope.types import JSONSerializableObject
from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

log = logging.getLogger(__name__)

Provider = Literal["offline", "dashscope", "openai", "compatible"]


def _is_provider(name: str) -> TypeGuard[Provider]:
    return name in get_args(Provider)


API_KEY_ENV: dict[str, str] = {
    "dashscope": "DASHSCOPE_API_KEY",
    "openai": "OPENAI_API_KEY",
    "compatible": "CITESCOPE_LLM_API_KEY",
}
DEFAULT_MODEL: dict[str, str] = {
    "offline": "offline",
    "dashscope": "qwen-plus",
    "openai": "gpt-4o-mini",
}
# Local OpenAI-compatible servers usually need no key; the SDK needs a string, and passing
# None would make it fall back to OPENAI_API_KEY and send that key to a third-party server.
NO_KEY_PLACEHOLDER = "EMPTY"


class IncompleteStream(Exception):
    """A streamed reply that ended without its finish reason (the connection dropped, a proxy cut
    it): what arrived is not a whole reply, so it is an error the caller may retry, never an answer."""


class HTMLErrorPage(Exception):
    """A 200 whose body is an HTML page (a gateway's or captive proxy's), not the provider's reply."""

    def __init__(self, status: int):
        super().__init__(f"HTTP {status} (HTML error page)")
        self.status = status


class StreamSafeOpenAIChatModel(OpenAIChatModel):
    """AgentScope's OpenAIChatModel, with fixes for streaming under openai>=3 (pinned 3.57).

    AgentScope 1.0.21 tests `hasattr(delta, "audio") and "data" in delta.audio`; the openai SDK
    now always sets `ChoiceDelta.audio = None`, so every streamed chunk raised TypeError.
    Chunks with no audio get an empty dict there. A stream that ends before any choice carried a
    finish reason raises IncompleteStream (AgentScope would yield the partial reply as final),
    and an HTML body raises HTMLErrorPage. Non-streamed replies keep each tool call's arguments as
    sent (`raw_input`), which AgentScope repairs away, so the planner can see they were malformed.
    Everything else is AgentScope's own code.
    """

    async def _parse_openai_stream_response(self, start_datetime, response, structured_model=None):
        async for parsed in super()._parse_openai_stream_response(
            start_datetime,
            _CheckedOpenAIStream(response),
            structured_model,
        ):
            yield parsed

    def _parse_openai_completion_response(self, start_datetime, response, structured_model=None):
        if isinstance(response, str):  # the SDK hands back a body it could not read as JSON as text
            raise HTMLErrorPage(200) if "<html" in response[:200].lower() else ValueError("the reply is not JSON")
        parsed = super()._parse_openai_completion_response(start_datetime, response, structured_model)
        raw = {
            call.id: call.function.arguments for choice in response.choices for call in choice.message.tool_calls or []
        }
        for block in parsed.content:
            if block.get("type") == "tool_use" and block.get("id") in raw:
                block["raw_input"] = raw[block["id"]]
        return parsed


class _CheckedOpenAIStream:
    """Wraps the SDK's async stream (an async context manager yielding chunks or events)."""

    def __init__(self, response) -> None:
        self._response = response

    async def __aenter__(self) -> _CheckedOpenAIStream:
        self._stream = await self._response.__aenter__()
        http = getattr(self._stream, "response", None)  # the httpx response of openai's AsyncStream
        if http is not None and "html" in http.headers.get("content-type", ""):
            await self._response.__aexit__(None, None, None)  # the connection goes back, unread
            raise HTMLErrorPage(http.status_code)
        return self

    async def __aexit__(self, *exc) -> None:
        await self._response.__aexit__(*exc)

    async def __aiter__(self):
        finished = False
        async for item in self._stream:
            chunk = item.chunk if getattr(item, "type", None) == "chunk" else item
            for choice in getattr(chunk, "choices", None) or []:
                finished = finished or bool(getattr(choice, "finish_reason", None))
                delta = getattr(choice, "delta", None)
                if delta is not None and getattr(delta, "audio", {}) is None:
                    delta.audio = {}
            yield item
        if not finished:
            raise IncompleteStream("the model stream ended without a finish reason")


class CheckedDashScopeChatModel(DashScopeChatModel):
    """AgentScope's DashScopeChatModel; a stream whose last event carries no finish reason raises
    IncompleteStream instead of passing for a whole reply, and non-streamed tool calls keep their
    arguments as sent (`raw_input`)."""

    async def _parse_dashscope_stream_response(self, start_datetime, response, structured_model=None):
        async for parsed in super()._parse_dashscope_stream_response(
            start_datetime, _checked_dashscope_stream(response), structured_model
        ):
            yield parsed

    async def _parse_dashscope_generation_response(self, start_datetime, response, structured_model=None):
        parsed = await super()._parse_dashscope_generation_response(start_datetime, response, structured_model)
        if getattr(response, "status_code", 200) == 200:
            message = response.output.choices[0].message
            raw = {call["id"]: call["function"].get("arguments") or "" for call in message.get("tool_calls") or []}
            for block in parsed.content:
                if block.get("type") == "tool_use" and block.get("id") in raw:
                    block["raw_input"] = raw[block["id"]]
        return parsed


async def _checked_dashscope_stream(response):
    """DashScope's events, IncompleteStream when the last one did not finish (its finish_reason is
    the string "null" until the last event)."""
    finish = None
    async for chunk in _as_async(response):
        choices = getattr(getattr(chunk, "output", None), "choices", None) or []
        if getattr(chunk, "status_code", 200) == 200 and choices:
            finish = choices[0].get("finish_reason")
        yield chunk
    if finish in (None, "", "null"):
        raise IncompleteStream("the model stream ended without a finish reason")


async def _as_async(events):
    """The SDK's stream as an async iterator (AioGeneration streams async; multimodal ones may not)."""
    if hasattr(events, "__aiter__"):
        async for event in events:
            yield event
    else:
        for event in events:
            yield event


async def close_model_sessions(*models: ChatModelBase | None) -> None:
    """Close what the clients opened on the running loop: each OpenAI client's connection pool, and
    the aiohttp session the dashscope SDK keeps per event loop (dashscope.api_entities.aio_session),
    which a loop that closes first would leak."""
    for model in models:
        client = getattr(model, "client", None)
        if client is not None and hasattr(client, "close"):
            await client.close()
    if any(isinstance(model, DashScopeChatModel) for model in models):
        from dashscope.api_entities.aio_session import close_shared_aio_session

        await close_shared_aio_session()


class ModelSettings(BaseModel):
    """Generation settings of one model; None = the provider's default (nothing is sent)."""

    model_config = ConfigDict(extra="forbid")

    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    max_tokens: int | None = Field(default=None, ge=1)  # of the reply; a cut reply fails the inspector
    seed: int | None = Field(default=None, ge=0)  # repeatable sampling where the provider honours it
    enable_thinking: bool | None = None  # Qwen3's thinking mode; False keeps <think> text out of replies

    def generate_kwargs(self) -> dict[str, JSONSerializableObject]:
        """What every request carries (enable_thinking aside: where it goes depends on the provider)."""
        sampled = self.model_dump(include={"temperature", "top_p", "max_tokens", "seed"}, exclude_none=True)
        return dict(sampled)


SETTING_NAMES = tuple(ModelSettings.model_fields)


class ModelConfig(ModelSettings):
    model_config = ConfigDict(extra="ignore")

    provider: Provider = "offline"
    model: str = "offline"
    base_url: str | None = None
    # Filled from API_KEY_ENV[provider]; excluded from dumps so it never lands in a file.
    api_key: SecretStr | None = Field(default=None, repr=False, exclude=True)
    timeout_s: float = Field(default=30.0, gt=0)
    # 0: the pipeline owns retries and time budgets; SDK retries would hide calls from them.
    max_retries: int = Field(default=0, ge=0)
    stream: bool = True  # AgentScope's own default for both clients

    @model_validator(mode="after")
    def _check(self) -> ModelConfig:
        if self.provider == "compatible" and not self.base_url:
            raise ValueError("compatible models need a base_url: 'compatible:<model>@http://host:port/v1'")
        if self.base_url and not re.match(r"^https?://", self.base_url):
            raise ValueError(f"base_url must start with http:// or https://, got {self.base_url!r}")
        if self.api_key is None and self.provider in API_KEY_ENV:
            value = os.environ.get(API_KEY_ENV[self.provider], "").strip()
            self.api_key = SecretStr(value) if value else None
        return self

    @classmethod
    def parse(cls, spec: str, **overrides) -> ModelConfig:
        """ "openai:gpt-4o-mini@https://proxy/v1" -> ModelConfig; overrides set the other fields."""
        provider, _, rest = spec.strip().partition(":")
        model, _, base_url = rest.partition("@")
        if not _is_provider(provider):
            raise ValueError(
                f"model spec {spec!r}: unknown provider {provider!r} "
                "(use offline, dashscope:<model>, openai:<model>, compatible:<model>@<base_url>)"
            )
        if provider == "offline" and rest:
            raise ValueError(f"model spec {spec!r}: 'offline' takes no model name")
        if provider == "compatible" and not model:
            raise ValueError(f"model spec {spec!r}: compatible needs a model name")
        model = model or DEFAULT_MODEL[provider]
        return cls(provider=provider, model=model, base_url=base_url or None, **overrides)

    @property
    def api_key_env(self) -> str | None:
        return API_KEY_ENV.get(self.provider)

    def require_api_key(self) -> str:
        if self.api_key is not None:
            return self.api_key.get_secret_value()
        if self.provider == "compatible":
            return NO_KEY_PLACEHOLDER
        raise RuntimeError(
            f"{self.provider} models need an API key: set the environment variable "
            f"{self.api_key_env} (it is read from the environment only)"
        )

    @property
    def settings(self) -> ModelSettings:
        return ModelSettings(**{name: getattr(self, name) for name in SETTING_NAMES})

    def describe(self) -> str:
        """A log-safe one-liner."""
        where = f" @ {self.base_url}" if self.base_url else ""
        chosen = self.settings.model_dump(exclude_none=True)
        told = "".join(f", {name}={value}" for name, value in chosen.items())
        return f"{self.provider}:{self.model}{where} (stream={self.stream}, timeout={self.timeout_s}s{told})"


def make_chat_model(config: ModelConfig | str) -> tuple[ChatModelBase | None, FormatterBase]:
    """Build AgentScope's client and formatter for a config; offline -> (None, formatter)."""
    if isinstance(config, str):
        config = ModelConfig.parse(config)
    generate_kwargs = config.settings.generate_kwargs()

    if config.provider == "offline":
        # The pipeline supplies its own deterministic planner model.
        return None, OpenAIChatFormatter()

    if config.provider == "dashscope":
        # base_address/request_timeout go per request to the SDK; DashScopeChatModel's own
        # base_http_api_url argument would rewrite a process-wide global instead.
        generate_kwargs["request_timeout"] = config.timeout_s
        if config.base_url:
            generate_kwargs["base_address"] = config.base_url
        # enable_thinking: DashScopeChatModel puts it into the request's parameters itself
        model: ChatModelBase = CheckedDashScopeChatModel(
            model_name=config.model,
            api_key=config.require_api_key(),
            stream=config.stream,
            enable_thinking=config.enable_thinking,
            generate_kwargs=generate_kwargs,
        )
        log.info("chat model: %s", config.describe())
        return model, DashScopeChatFormatter()

    if config.enable_thinking is not None:  # not an OpenAI field: the SDK sends extra_body as top-level fields
        generate_kwargs["extra_body"] = {"enable_thinking": config.enable_thinking}
    client_kwargs: dict = {"timeout": config.timeout_s, "max_retries": config.max_retries}
    if config.base_url:
        client_kwargs["base_url"] = config.base_url
    model = StreamSafeOpenAIChatModel(
        model_name=config.model,
        api_key=config.require_api_key(),
        stream=config.stream,
        client_kwargs=client_kwargs,
        generate_kwargs=generate_kwargs,
    )
    log.info("chat model: %s", config.describe())
    return model, OpenAIChatFormatter()


_KEY_PATTERNS = [
    re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9_\-.=]{8,}"),
]
REDACTED = "[REDACTED]"


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Remove API-key lookalikes and the configured key values from text bound for logs/traces."""
    known = [os.environ.get(env, "") for env in API_KEY_ENV.values()] + list(secrets)
    # Longest first so a key that contains another is removed whole.
    for secret in sorted({s.strip() for s in known if s and len(s.strip()) >= 6}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    text = _KEY_PATTERNS[0].sub(REDACTED, text)
    return _KEY_PATTERNS[1].sub(lambda m: m.group(1) + REDACTED, text)
