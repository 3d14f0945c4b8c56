"""The replay server itself, spoken to with the real openai SDK and plain httpx."""

from __future__ import annotations

import json
import socket

import httpx
import openai
import pytest

from citescope.workflows.evaluation.scripted_server import ReplayServer, hash_embedding


def client(server: ReplayServer, key: str = "sk-test-0123456789") -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=key, max_retries=0, timeout=10)


def chat(server: ReplayServer, **kwargs):
    return client(server).chat.completions.create(model="m", messages=[{"role": "user", "content": "你好"}], **kwargs)


def test_serves_only_loopback_on_a_free_port():
    with ReplayServer() as first, ReplayServer() as second:
        assert first.base_url.startswith("http://127.0.0.1:") and first.base_url.endswith("/v1")
        assert first.port != second.port


def test_steps_are_consumed_in_order_then_default_step():
    with ReplayServer([{"content": "一"}, {"content": "二"}]) as server:
        assert chat(server).choices[0].message.content == "一"
        assert server.remaining == 1
        assert chat(server).choices[0].message.content == "二"
        with pytest.raises(openai.InternalServerError, match="replay script exhausted"):
            chat(server)
        assert len(server.requests) == 3 and server.remaining == 0


def test_configurable_default_step_and_push():
    with ReplayServer(default_step={"content": "默认"}) as server:
        assert chat(server).choices[0].message.content == "默认"
        server.push({"content": "追加一"}, {"content": "追加二"})
        assert [chat(server).choices[0].message.content for _ in range(3)] == ["追加一", "追加二", "默认"]


def test_tool_calls_in_plain_and_streamed_replies():
    step = {
        "tool_calls": [
            {"name": "search", "arguments": {"query": "退货政策"}},
            {"name": "sku_lookup", "arguments": '{"sku": "X-1"}', "id": "call_fixed"},
        ]
    }
    with ReplayServer([step, step]) as server:
        message = chat(server).choices[0].message
        assert [c.function.name for c in message.tool_calls] == ["search", "sku_lookup"]
        assert message.tool_calls[0].function.arguments == '{"query": "退货政策"}'
        assert message.tool_calls[1].id == "call_fixed"

        arguments: dict[int, str] = {}
        finish = None
        for chunk in chat(server, stream=True):
            for choice in chunk.choices:
                for call in choice.delta.tool_calls or []:
                    arguments[call.index] = arguments.get(call.index, "") + (call.function.arguments or "")
                finish = choice.finish_reason or finish
        assert arguments == {0: '{"query": "退货政策"}', 1: '{"sku": "X-1"}'} and finish == "tool_calls"


def test_stream_sends_text_in_pieces_usage_and_done():
    with ReplayServer([{"content": "这是一段被分块发送的回答"}]) as server:
        with httpx.stream(
            "POST",
            server.base_url + "/chat/completions",
            json={
                "model": "m",
                "messages": [],
                "stream": True,
                "stream_options": {"include_usage": True},
            },
        ) as response:
            assert response.headers["content-type"] == "text/event-stream"
            events = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "data: [DONE]"
    assert '"usage"' in events[-2]
    assert sum('"content"' in e for e in events) >= 3  # role chunk + several text pieces


def test_a_step_s_usage_is_reported_as_each_provider_does():
    usage = {"input_tokens": 900, "output_tokens": 30, "cached_tokens": 512}
    with ReplayServer([{"content": "一段分块发送的回答", "usage": usage}] * 3) as server:
        plain = chat(server).usage
        streamed = [c.usage for c in chat(server, stream=True, stream_options={"include_usage": True}) if c.usage]
        with httpx.stream(
            "POST",
            f"{server.dashscope_base_url}/services/aigc/text-generation/generation",
            json={"model": "qwen-plus", "input": {"messages": []}},
            headers={"X-DashScope-SSE": "enable"},
        ) as response:
            events = [json.loads(line[5:]) for line in response.iter_lines() if line.startswith("data:")]
    for reported in (plain, *streamed):  # OpenAI: once, in the reply or in the final chunk of a stream
        assert (reported.prompt_tokens, reported.completion_tokens) == (900, 30)
        assert reported.prompt_tokens_details.cached_tokens == 512
    assert len(streamed) == 1
    # DashScope: every event carries the usage so far; the last one has the whole reply's
    outputs = [event["usage"]["output_tokens"] for event in events]
    assert len(outputs) > 1 and outputs == sorted(outputs) and outputs[-1] == 30
    assert all(e["usage"]["input_tokens"] == 900 for e in events)
    assert events[-1]["usage"]["prompt_tokens_details"] == {"cached_tokens": 512}


def test_dynamic_steps_see_the_request():
    def keep_calling_tools(body):
        return {"tool_calls": [{"name": "search", "arguments": {"n": len(body["messages"])}}]}

    with ReplayServer(default_step=keep_calling_tools) as server:
        first = chat(server).choices[0].message.tool_calls[0].function.arguments
        second = chat(server).choices[0].message.tool_calls[0].function.arguments
    assert first == second == '{"n": 1}'


def test_error_steps_carry_status_body_and_headers():
    with ReplayServer(
        [{"status": 429, "body": {"error": {"message": "慢一点"}}, "headers": {"retry-after": "7"}}]
    ) as server:
        response = httpx.post(server.base_url + "/chat/completions", json={"model": "m", "messages": []})
    assert response.status_code == 429 and response.json()["error"]["message"] == "慢一点"
    assert response.headers["retry-after"] == "7"


def test_delay_alone_replies_with_the_default_step():
    with ReplayServer([{"delay_s": 0.05}], default_step={"content": "等过了"}) as server:
        assert chat(server).choices[0].message.content == "等过了"


def test_unknown_step_and_route_are_loud():
    with ReplayServer([{"oops": 1}]) as server:
        with pytest.raises(openai.InternalServerError, match="unknown step"):
            chat(server)
        assert httpx.post(f"http://127.0.0.1:{server.port}/v2/nothing", json={}).status_code == 404


def test_records_headers_without_authorization():
    with ReplayServer([{"content": "ok"}]) as server:
        client(server, key="sk-recorded-0123456789").chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], extra_headers={"X-Trace": "t-1"}
        )
        httpx.post(server.base_url + "/embeddings", json={"input": "x"})
        with_key, without_key = server.requests
    assert with_key.headers["x-trace"] == "t-1" and "authorization" not in with_key.headers
    assert "sk-recorded-0123456789" not in repr(with_key)
    assert with_key.has_bearer("sk-recorded-0123456789") and not with_key.has_bearer("sk-other")
    assert not without_key.has_authorization and without_key.body == {"input": "x"}


def test_embeddings_are_deterministic_and_consume_no_step():
    with ReplayServer([{"content": "still here"}], embedding_dim=16) as server:
        vectors = client(server).embeddings.create(model="e", input=["退货", "换货", "退货"])  # SDK asks base64
        plain = httpx.post(
            server.base_url + "/embeddings", json={"input": "退货", "encoding_format": "float", "dimensions": 4}
        ).json()
        assert server.remaining == 1
    first, second, third = (item.embedding for item in vectors.data)
    assert first == pytest.approx(hash_embedding("退货", 16)) and first == pytest.approx(third)
    assert first != pytest.approx(second)
    assert sum(v * v for v in first) == pytest.approx(1.0)
    assert plain["data"][0]["embedding"] == pytest.approx(hash_embedding("退货", 4))


def test_close_releases_the_port_while_a_request_is_delayed():
    server = ReplayServer([{"delay_s": 60, "content": "never"}]).start()
    port = server.port
    with pytest.raises(httpx.TimeoutException):
        httpx.post(server.base_url + "/chat/completions", json={"messages": []}, timeout=0.3)
    server.close()  # must not wait for the 60 s delay
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0
