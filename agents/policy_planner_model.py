"""The offline planner model: the strategy policy's plan, played as real tool calls.

A ChatModelBase subclass, so the offline planner runs the same ReActAgent loop (toolkit, budget
guard, memory, hooks) as an LLM planner. Each step counts the tool results it has already seen
in the formatted messages, resolves the next PlannedCall with the result data gathered so far
(e.g. the rewritten queries of rewrite_query) and asks for that call; when the plan is done it
answers with a short text, which ends the agent's loop. Deterministic: same plan, same calls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agentscope.message import TextBlock, ToolUseBlock
from agentscope.model import ChatModelBase, ChatResponse

from citescope.agents.arms import PlannedCall

DONE_TEXT = "检索完成"


def tool_results_seen(messages: list[dict]) -> int:
    """Tool results since the last user message (OpenAI and DashScope formats both use role "tool")."""
    seen = 0
    for message in messages:
        if message.get("role") == "user":
            seen = 0
        elif message.get("role") == "tool":
            seen += 1
    return seen


class PolicyPlannerModel(ChatModelBase):
    """Plays `plan` one call per step. `outputs` is a live mapping skill -> latest SkillResult.data
    that the planner updates as results arrive (read at each step, never copied)."""

    def __init__(self, plan: list[PlannedCall], outputs: Mapping[str, Mapping], done_text: str = DONE_TEXT):
        super().__init__("policy-planner", stream=False)
        self.plan = list(plan)
        self.outputs = outputs
        self.done_text = done_text

    async def __call__(
        self, messages: list[dict], tools: list[dict] | None = None, tool_choice: str | None = None, **kwargs: Any
    ) -> ChatResponse:
        if not tools or tool_choice == "none":
            return ChatResponse(content=[TextBlock(type="text", text=self.done_text)])
        offered = {tool["function"]["name"] for tool in tools}
        # A planned skill the toolkit does not offer (unhealthy, disabled) is skipped, the same
        # way at every step, so the step index stays consistent.
        steps = [call for call in self.plan if call.skill in offered]
        step = tool_results_seen(messages)
        if step >= len(steps):
            return ChatResponse(content=[TextBlock(type="text", text=self.done_text)])
        call = steps[step].resolve(self.outputs)
        return ChatResponse(
            content=[
                ToolUseBlock(
                    type="tool_use",
                    id=f"policy_{step + 1}",
                    name=call.skill,
                    input=dict(call.args),
                    raw_input=json.dumps(call.args, ensure_ascii=False),
                )
            ]
        )
