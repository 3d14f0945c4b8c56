"""Model factory and offline models, against real AgentScope agents and a real local HTTP server."""

from __future__ import annotations

import asyncio
import logging

import dashscope
import openai
import pytest
from agentscope.agent import ReActAgent
from agentscope.formatter import DashScopeChatFormatter, OpenAIChatFormatter
from agentscope.message import Msg, TextBlock
from agentscope.model import DashScopeChatModel, OpenAIChatModel
from agentscope.tool import Toolkit, ToolResponse

from citescope.agents.models import API_KEY_ENV, NO_KEY_PLACEHOLDER, ModelConfig, make_chat_model, redact
from citescope.agents.offline_models import (
    FunctionModel,
    ScriptedModel,
    text_response,
    tool_call_response,
)
from citescope.workflows.evaluation.scripted_server import MALFORMED_ARGUMENTS, ReplayServer

LLM_KEY = "sk-replay-secret-0123456789"
USER = [{"role": "user", "content": "订单A1001发货了吗？"}]


@pytest.fixture(autouse=True)
def clean_keys(monkeypatch):
    """Every test starts with no key in the environment and sets only what it needs."""
    for env in API_KEY_ENV.values():
        monkeypatch.delenv(env, raising=False)


def run(coro):
    return asyncio.run(coro)


async def final(response):
    """A streamed reply is an async generator of cumulative ChatResponses: keep the last."""
    if not hasattr(type(response), "__aiter__"):
        return response
    last = None
    async for reply in response:
        last = reply
    return last


def ask(model, messages=USER, tools=None):
    async def call():
        return await final(await model(messages, tools=tools))

    return run(call())


def compatible(server: ReplayServer, **overrides):
    model, formatter = make_chat_model(ModelConfig.parse(f"compatible:test-model@{server.base_url}", **overrides))
    return model


def order_toolkit(calls: list[str]) -> Toolkit:
    def lookup_order(order_id: str) -> ToolResponse:
        """查询订单的物流状态。

        Args:
            order_id (str): 订单号，例如 A1001。
        """
        calls.append(order_id)
        return ToolResponse(content=[TextBlock(type="text", text=f"订单{order_id}：已发货，顺丰。")])

    toolkit = Toolkit()
    toolkit.register_tool_function(lookup_order)
    return toolkit


def quiet_agent(model, formatter, toolkit) -> ReActAgent:
    agent = ReActAgent(
        name="planner", sys_prompt="你是电商客服。", model=model, formatter=formatter, toolkit=toolkit, max_iters=4
    )
    agent.set_console_output_enabled(False)
    return agent


# -- ModelConfig ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, provider, model, base_url",
    [
        ("offline", "offline", "offline", None),
        ("dashscope", "dashscope", "qwen-plus", None),
        ("dashscope:qwen-max", "dashscope", "qwen-max", None),
        ("openai:gpt-4o-mini", "openai", "gpt-4o-mini", None),
        ("openai:gpt-4o@https://proxy.example/v1", "openai", "gpt-4o", "https://proxy.example/v1"),
        (
            "compatible:qwen2.5-7b-instruct@http://127.0.0.1:8000/v1",
            "compatible",
            "qwen2.5-7b-instruct",
            "http://127.0.0.1:8000/v1",
        ),
        ("compatible:llama3:8b@http://127.0.0.1:11434/v1", "compatible", "llama3:8b", "http://127.0.0.1:11434/v1"),
    ],
)
def test_parse_specs(spec, provider, model, base_url):
    config = ModelConfig.parse(spec)
    assert (config.provider, config.model, config.base_url) == (provider, model, base_url)
    assert config.timeout_s == 30 and config.stream is True


@pytest.mark.parametrize(
    "spec", ["claude:x", "compatible:m", "compatible:@http://h/v1", "offline:x", "openai:m@ftp://host"]
)
def test_parse_rejects_bad_specs(spec):
    with pytest.raises(ValueError):
        ModelConfig.parse(spec)


def test_parse_overrides_fields():
    config = ModelConfig.parse("openai:gpt-4o-mini", timeout_s=5, temperature=0.2, stream=False, max_retries=2)
    assert (config.timeout_s, config.temperature, config.stream, config.max_retries) == (5, 0.2, False, 2)


def test_key_comes_from_env_and_is_never_shown(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", LLM_KEY)
    config = ModelConfig.parse("openai:gpt-4o-mini")
    assert config.require_api_key() == LLM_KEY
    for shown in (repr(config), str(config), config.model_dump_json(), str(config.model_dump()), config.describe()):
        assert LLM_KEY not in shown


def test_offline_returns_no_client_and_openai_formatter():
    model, formatter = make_chat_model("offline")
    assert model is None and isinstance(formatter, OpenAIChatFormatter)


@pytest.mark.parametrize(
    "spec, env", [("openai:gpt-4o-mini", "OPENAI_API_KEY"), ("dashscope:qwen-plus", "DASHSCOPE_API_KEY")]
)
def test_missing_key_names_the_env_var(spec, env):
    with pytest.raises(RuntimeError, match=env):
        make_chat_model(spec)


def test_openai_builds_agentscope_client_with_env_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", LLM_KEY)
    model, formatter = make_chat_model(ModelConfig.parse("openai:gpt-4o-mini", timeout_s=7, temperature=0.1))
    assert isinstance(model, OpenAIChatModel) and isinstance(formatter, OpenAIChatFormatter)
    assert model.model_name == "gpt-4o-mini" and model.stream is True
    assert model.client.api_key == LLM_KEY and model.client.timeout == 7 and model.client.max_retries == 0
    assert model.generate_kwargs == {"temperature": 0.1}


def test_dashscope_builds_agentscope_client_with_env_key(monkeypatch):
    monkeypatch.setenv("DASHSCOPE_API_KEY", LLM_KEY)
    model, formatter = make_chat_model("dashscope:qwen-plus")
    assert isinstance(model, DashScopeChatModel) and isinstance(formatter, DashScopeChatFormatter)
    assert model.model_name == "qwen-plus" and model.api_key == LLM_KEY


def test_redact_removes_key_lookalikes_and_configured_keys(monkeypatch):
    monkeypatch.setenv("DASHSCOPE_API_KEY", "ds-custom-key-without-prefix")
    text = (
        "调用失败 key=sk-abcdefgh12345678 header Authorization: Bearer tok_live_9876543210 "
        "env ds-custom-key-without-prefix extra my-own-secret-value 订单A1001"
    )
    cleaned = redact(text, secrets=["my-own-secret-value"])
    for secret in ("sk-abcdefgh12345678", "tok_live_9876543210", "ds-custom-key-without-prefix", "my-own-secret-value"):
        assert secret not in cleaned
    assert "调用失败" in cleaned and "订单A1001" in cleaned and cleaned.count("[REDACTED]") == 4


# -- OpenAI-compatible client against the replay server -------------------------------------


@pytest.mark.parametrize("stream", [True, False])
def test_text_reply(monkeypatch, stream):
    monkeypatch.setenv("CITESCOPE_LLM_API_KEY", LLM_KEY)
    with ReplayServer([{"content": "您好，订单A1001已经发货。"}]) as server:
        response = ask(compatible(server, stream=stream))
        [request] = server.requests
    assert response.content == [TextBlock(type="text", text="您好，订单A1001已经发货。")]
    assert request.path == "/v1/chat/completions" and request.body["model"] == "test-model"
    assert request.body["stream"] is stream and request.body["messages"] == USER
    assert request.has_bearer(LLM_KEY)


@pytest.mark.parametrize("stream", [True, False])
def test_tool_call_reply_becomes_tool_use_block(monkeypatch, stream):
    monkeypatch.setenv("CITESCOPE_LLM_API_KEY", LLM_KEY)
    script = [{"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A1001"}}], "content": "先查一下。"}]
    with ReplayServer(script) as server:
        response = ask(compatible(server, stream=stream))
    text_blocks = [b for b in response.content if b["type"] == "text"]
    [tool_use] = [b for b in response.content if b["type"] == "tool_use"]
    assert text_blocks[0]["text"] == "先查一下。"
    assert tool_use["name"] == "lookup_order" and tool_use["input"] == {"order_id": "A1001"} and tool_use["id"]


def test_plain_agentscope_streaming_breaks_on_this_openai_sdk():
    """Why make_chat_model returns StreamSafeOpenAIChatModel: when this test fails, upstream
    fixed `"data" in delta.audio` (or the openai pin changed) and the subclass can go."""
    with ReplayServer([{"content": "你好"}]) as server:
        plain = OpenAIChatModel("test-model", api_key="k", client_kwargs={"base_url": server.base_url})
        with pytest.raises(TypeError, match="NoneType"):
            ask(plain)


@pytest.mark.parametrize("status, error", [(500, openai.InternalServerError), (429, openai.RateLimitError)])
def test_http_errors_raise_without_hidden_retries(status, error):
    with ReplayServer([{"status": status}]) as server:
        with pytest.raises(error):
            ask(compatible(server))
        assert len(server.requests) == 1  # max_retries defaults to 0: the pipeline owns retries


def test_max_retries_is_wired_to_the_sdk():
    script = [{"status": 429, "headers": {"retry-after-ms": "10"}}, {"content": "重试后成功"}]
    with ReplayServer(script) as server:
        response = ask(compatible(server, max_retries=1))
        assert len(server.requests) == 2
    assert response.content[0]["text"] == "重试后成功"


def test_malformed_tool_arguments_become_empty_input():
    """AgentScope repairs what it can (json_repair) and otherwise hands the tool `{}`."""
    script = [
        {"malformed_tool_args": True, "name": "lookup_order"},
        {"malformed_tool_args": True, "name": "lookup_order"},
        {"malformed_tool_args": '{"order_id": "A10', "name": "lookup_order"},
    ]
    with ReplayServer(script) as server:
        plain = ask(compatible(server, stream=False))
        streamed = ask(compatible(server, stream=True))
        truncated = ask(compatible(server, stream=False))
    assert plain.content[0]["name"] == "lookup_order" and plain.content[0]["input"] == {}
    # the streaming parser keeps the raw string, so a caller can still see what came
    assert streamed.content[0]["input"] == {} and streamed.content[0]["raw_input"] == MALFORMED_ARGUMENTS
    assert truncated.content[0]["input"] == {"order_id": "A10"}


@pytest.mark.parametrize("stream", [True, False])
def test_non_json_body_raises(stream):
    with ReplayServer([{"raw": "not json"}]) as server:
        with pytest.raises(ValueError):  # json.JSONDecodeError from the SDK, not an openai.APIError
            ask(compatible(server, stream=stream))


def test_delay_beyond_timeout_raises_timeout():
    with ReplayServer([{"delay_s": 30, "content": "太晚了"}]) as server:
        model = compatible(server, timeout_s=0.5)

        async def bounded():
            # the outer bound only guards the test run; the SDK timeout must fire first
            return await asyncio.wait_for(final(await model(USER)), timeout=10)

        with pytest.raises(openai.APITimeoutError):
            run(bounded())


def test_compatible_without_its_key_never_sends_the_openai_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", LLM_KEY)
    with ReplayServer([{"content": "ok"}]) as server:
        ask(compatible(server))
        [request] = server.requests
    assert request.has_bearer(NO_KEY_PLACEHOLDER) and not request.has_bearer(LLM_KEY)


@pytest.mark.parametrize("stream", [True, False])
def test_react_agent_runs_tool_then_answers_over_http(monkeypatch, caplog, stream):
    monkeypatch.setenv("CITESCOPE_LLM_API_KEY", LLM_KEY)
    agentscope_logger = logging.getLogger("as")  # does not propagate to the root logger
    agentscope_logger.addHandler(caplog.handler)
    caplog.set_level(logging.DEBUG)
    calls: list[str] = []
    script = [
        {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A1001"}}]},
        {"content": "订单A1001已由顺丰发出。"},
    ]
    try:
        with ReplayServer(script) as server:
            config = ModelConfig.parse(f"compatible:test-model@{server.base_url}", stream=stream)
            model, formatter = make_chat_model(config)
            agent = quiet_agent(model, formatter, order_toolkit(calls))
            reply = run(agent(Msg("user", "订单A1001发货了吗？", "user")))
            requests = server.requests
    finally:
        agentscope_logger.removeHandler(caplog.handler)

    assert calls == ["A1001"]  # the tool really ran
    assert reply.get_text_content() == "订单A1001已由顺丰发出。"
    assert len(requests) == 2 and server.remaining == 0
    assert [t["function"]["name"] for t in requests[0].body["tools"]] == ["lookup_order"]
    tool_messages = [m for m in requests[1].body["messages"] if m["role"] == "tool"]
    assert "已发货，顺丰" in str(tool_messages)
    # the key travels only as the Bearer header
    assert all(r.has_bearer(LLM_KEY) for r in requests)
    assert "chat model: compatible:test-model" in caplog.text  # the capture really saw our logs
    assert LLM_KEY not in caplog.text and LLM_KEY not in repr(config)


@pytest.mark.parametrize("stream", [True, False])
def test_dashscope_client_against_local_server(monkeypatch, stream):
    """DashScope's SDK takes a per-request base_address, so its native format is tested here too."""
    monkeypatch.setenv("DASHSCOPE_API_KEY", LLM_KEY)
    script = [
        {"content": "您好，这是通义的回答。"},
        {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A1001"}}]},
        {"status": 429},
    ]
    with ReplayServer(script) as server:
        base_url_before = dashscope.base_http_api_url
        model, _ = make_chat_model(
            ModelConfig(provider="dashscope", model="qwen-plus", base_url=server.dashscope_base_url, stream=stream)
        )

        async def three_calls():
            try:
                text = await final(await model(USER))
                tool = await final(await model(USER))
                with pytest.raises(RuntimeError, match="429"):
                    await final(await model(USER))
                return text, tool
            finally:
                await dashscope.close_shared_aio_session()  # the SDK keeps one aiohttp session per loop

        text, tool = run(three_calls())
        requests = server.requests
    assert dashscope.base_http_api_url == base_url_before  # no process-wide side effect
    assert text.content == [TextBlock(type="text", text="您好，这是通义的回答。")]
    [tool_use] = tool.content
    assert tool_use["name"] == "lookup_order" and tool_use["input"] == {"order_id": "A1001"}
    assert len(requests) == 3 and all(r.has_bearer(LLM_KEY) for r in requests)
    assert requests[0].body["input"]["messages"] == USER and requests[0].body["model"] == "qwen-plus"


# -- offline models ------------------------------------------------------------------------


def test_scripted_model_drives_a_react_agent():
    calls: list[str] = []
    model = ScriptedModel([tool_call_response("lookup_order", {"order_id": "B2002"}), "订单B2002已发货。"])
    agent = quiet_agent(model, OpenAIChatFormatter(), order_toolkit(calls))
    reply = run(agent(Msg("user", "订单B2002呢？", "user")))
    assert calls == ["B2002"]
    assert reply.get_text_content() == "订单B2002已发货。"
    assert len(model.calls) == 2 and model.remaining == 0
    assert model.calls[0].tool_names == ["lookup_order"]
    assert "已发货，顺丰" in str(model.calls[1].messages)  # the tool result came back to the model


def test_scripted_model_final_text_after_script_and_streaming():
    model = ScriptedModel([text_response("第一句")], final_text="结束", stream=True)
    first, second = ask(model), ask(model)
    assert first.content[0]["text"] == "第一句" and second.content[0]["text"] == "结束"


def test_scripted_tool_call_ids_are_unique():
    model = ScriptedModel(
        [
            [{"name": "lookup_order", "arguments": {"order_id": "A"}}],
            [{"name": "lookup_order", "arguments": '{"order_id": "B"}'}],
        ]
    )
    first, second = ask(model), ask(model)
    assert first.content[0]["id"] != second.content[0]["id"]
    assert second.content[0]["input"] == {"order_id": "B"}


def test_function_model_answers_from_what_it_sees():
    calls: list[str] = []

    def planner(messages: list[dict], tools: list[dict] | None):
        if not any(m["role"] == "tool" for m in messages):
            return [{"name": tools[0]["function"]["name"], "arguments": {"order_id": "C3003"}}]
        return "查询完毕：" + str(len(messages))

    model = FunctionModel(planner)
    agent = quiet_agent(model, OpenAIChatFormatter(), order_toolkit(calls))
    reply = run(agent(Msg("user", "订单C3003", "user")))
    assert calls == ["C3003"]
    assert reply.get_text_content().startswith("查询完毕：")
    assert len(model.calls) == 2


def test_function_model_rejects_unknown_reply_types():
    model = FunctionModel(lambda messages, tools: 42)
    with pytest.raises(TypeError):
        ask(model)


# -- generation settings on the wire -------------------------------------------------------

SETTINGS = {"temperature": 0.2, "top_p": 0.8, "max_tokens": 300, "seed": 7, "enable_thinking": False}


def test_settings_reach_an_openai_compatible_request_body(monkeypatch):
    with ReplayServer([{"content": "好的。"}]) as server:
        ask(compatible(server, **SETTINGS))
        [request] = server.requests
    body = request.body
    assert (body["temperature"], body["top_p"], body["max_tokens"], body["seed"]) == (0.2, 0.8, 300, 7)
    assert body["enable_thinking"] is False  # extra_body: top-level fields, as DashScope's compatible mode reads it


def test_unset_settings_are_not_sent(monkeypatch):
    with ReplayServer([{"content": "好的。"}]) as server:
        ask(compatible(server))
        [request] = server.requests
    assert not {"temperature", "top_p", "max_tokens", "seed", "enable_thinking"} & set(request.body)


def test_settings_reach_dashscope_parameters(monkeypatch):
    monkeypatch.setenv("DASHSCOPE_API_KEY", LLM_KEY)
    with ReplayServer([{"content": "您好。"}]) as server:
        model, _ = make_chat_model(
            ModelConfig(
                provider="dashscope", model="qwen3-8b", base_url=server.dashscope_base_url, stream=False, **SETTINGS
            )
        )

        async def one_call():
            try:
                return await final(await model(USER))
            finally:
                await dashscope.close_shared_aio_session()

        run(one_call())
        [request] = server.requests
    parameters = request.body["parameters"]
    assert (parameters["temperature"], parameters["top_p"], parameters["max_tokens"], parameters["seed"]) == (
        0.2,
        0.8,
        300,
        7,
    )
    assert parameters["enable_thinking"] is False and request.body["model"] == "qwen3-8b"


def test_thinking_on_dashscope_streams_as_dashscope_requires(monkeypatch):
    monkeypatch.setenv("DASHSCOPE_API_KEY", LLM_KEY)
    model, _ = make_chat_model(ModelConfig(provider="dashscope", model="qwen3-8b", stream=False, enable_thinking=True))
    assert model.stream is True


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("temperature", 3, "temperature: input should be less than or equal to 2"),
        ("top_p", 0, "top_p: input should be greater than 0"),
        ("max_tokens", 0, "max_tokens: input should be greater than or equal to 1"),
        ("seed", -1, "seed: input should be greater than or equal to 0"),
        ("enable_thinking", "maybe", "enable_thinking: input should be a valid boolean"),
    ],
)
def test_a_bad_setting_is_named(field, value, words):
    from pydantic import ValidationError

    from citescope.agents.routing import ModelChoice
    from citescope.workflows.validation import describe_validation_error

    with pytest.raises(ValidationError) as raised:
        ModelChoice(spec="dashscope:qwen-turbo", **{field: value})
    assert words in describe_validation_error(raised.value)
