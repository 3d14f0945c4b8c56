"""The AgentScope Toolkit over the skill registry: schemas the model sees, and a real
ReActAgent driven by a scripted offline model that calls every registered skill."""

from __future__ import annotations

import asyncio

import yaml
from agentscope.agent import ReActAgent
from agentscope.formatter import OpenAIChatFormatter
from agentscope.memory import InMemoryMemory
from agentscope.message import Msg, TextBlock, ToolUseBlock
from agentscope.model import ChatModelBase, ChatResponse

from citescope.agents.toolkit import build_toolkit
from citescope.tools.base import SkillContext
from citescope.tools.registry import SkillRegistry

QUESTION = "XZ-3000 能给笔记本充电吗？"


class ScriptedModel(ChatModelBase):
    """Offline chat model: each turn returns the scripted tool calls, then a closing text."""

    def __init__(self, turns: list[list[tuple[str, dict]]]):
        super().__init__("scripted", stream=False)
        self.turns = list(turns)
        self.offered: list[list[str]] = []  # tool names in each request
        self.requests: list[list[dict]] = []  # formatted messages of each request

    async def __call__(
        self, messages: list[dict], tools: list[dict] | None = None, tool_choice=None, **kwargs
    ) -> ChatResponse:
        self.offered.append([t["function"]["name"] for t in tools or []])
        self.requests.append(messages)
        if not self.turns:
            return ChatResponse(content=[TextBlock(type="text", text="证据已收集完毕。")])
        return ChatResponse(
            content=[
                ToolUseBlock(type="tool_use", id=f"call-{name}", name=name, input=args)
                for name, args in self.turns.pop(0)
            ]
        )


def test_schemas_hide_ctx_and_describe_every_visible_argument(registry, demo_kb):
    toolkit = build_toolkit(registry, SkillContext(demo_kb))
    schemas = {s["function"]["name"]: s["function"] for s in toolkit.get_json_schemas()}
    assert list(schemas) == registry.names()
    for name, skill in registry.skills.items():
        parameters = schemas[name]["parameters"]
        assert "ctx" not in parameters["properties"] and "ctx" not in parameters.get("required", [])
        assert list(parameters["properties"]) == list(skill.signature.parameters)
        for arg, prop in parameters["properties"].items():
            assert prop["description"] == skill.arg_docs[arg]
        assert schemas[name]["description"] == skill.description
    size = schemas["size_recommend"]["parameters"]
    assert size["required"] == ["product"]
    assert size["properties"]["height_cm"]["description"] == "顾客身高，单位厘米，例如 175。"


def test_config_description_overrides_the_docstring_summary(tmp_path, demo_kb):
    config = tmp_path / "skills.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "skills": [
                    {
                        "name": "product_lookup",
                        "import": "citescope.tools.products:product_lookup",
                        "description": "查商品表。",
                    }
                ]
            },
            allow_unicode=True,
        ),
        encoding="utf-8",
    )
    toolkit = build_toolkit(SkillRegistry.from_config(config, plugins=False), SkillContext(demo_kb))
    assert toolkit.get_json_schemas()[0]["function"]["description"] == "查商品表。"


def test_a_model_supplied_ctx_cannot_replace_the_question_context(registry, demo_kb):
    ctx = SkillContext(demo_kb)
    toolkit = build_toolkit(registry, ctx, only=["product_lookup"])

    async def call():
        responses = await toolkit.call_tool_function(
            ToolUseBlock(type="tool_use", id="1", name="product_lookup", input={"product": "XZ-3000", "ctx": "forged"})
        )
        return [chunk async for chunk in responses]

    [response] = asyncio.run(call())
    assert response.metadata["data"]["product_id"] == "p-xz3000"
    assert "sku-p-xz3000#sku-XZ3000-GRY" in ctx.pool


def test_react_agent_calls_every_skill_and_keeps_every_result(registry, demo_kb):
    ctx = SkillContext(demo_kb)
    calls = []
    toolkit = build_toolkit(registry, ctx, on_result=lambda name, kwargs, result: calls.append((name, kwargs, result)))
    turns = [
        [
            ("rewrite_query", {"query": QUESTION}),
            ("keyword_search", {"query": "XZ-3000 笔记本 充电"}),
            ("semantic_search", {"query": "这个充电宝可以给笔记本电脑供电吗", "doc_type": "product"}),
            ("hybrid_search", {"query": QUESTION, "top_k": 5}),
        ],
        [
            ("product_lookup", {"product": "XZ-3000"}),
            ("size_recommend", {"product": "峰刃冲锋衣", "height_cm": 176, "weight_kg": 72}),
        ],
        [("rerank", {"query": QUESTION, "top_k": 5}), ("expand_context", {"chunk_id": "prod-xz3000#尺码表-r0-0"})],
    ]
    script = [name for turn in turns for name, _ in turn]
    assert sorted(script) == sorted(registry.names())  # the script covers every registered skill
    model = ScriptedModel(turns)
    agent = ReActAgent(
        name="planner",
        sys_prompt="你是检索规划员。",
        model=model,
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit,
        memory=InMemoryMemory(),
        max_iters=6,
    )
    agent.set_console_output_enabled(False)

    async def run():
        reply = await agent(Msg("user", QUESTION, "user"))
        return reply, await agent.memory.get_memory()

    reply, memory = asyncio.run(run())

    assert reply.get_text_content() == "证据已收集完毕。"
    assert all(offered == registry.names() for offered in model.offered)
    assert [name for name, _, _ in calls] == script
    results = {name: result for name, _, result in calls}
    for name, result in results.items():
        assert not result.degraded, (name, result.degraded)
        assert all(hit.chunk_id in ctx.pool for hit in result.hits), name
    assert all(results[name].hits for name in script if name != "rewrite_query")

    # Every tool result is in the agent's memory and was sent back to the model.
    outputs = {block["id"]: block["output"] for msg in memory for block in msg.get_content_blocks("tool_result")}
    assert set(outputs) == {f"call-{name}" for name in script}
    for name, result in results.items():
        assert outputs[f"call-{name}"][0]["text"] == result.text()
    sent_back = {m.get("tool_call_id") for m in model.requests[-1] if m.get("role") == "tool"}
    assert sent_back == {f"call-{name}" for name in script}

    assert results["product_lookup"].data["price_range"] == [299.0, 299.0]
    assert results["size_recommend"].data["size"] == "L"
    assert calls[0][1] == {"query": QUESTION}  # on_result sees the model's arguments, never ctx
