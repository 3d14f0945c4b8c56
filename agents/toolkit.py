"""The planner's AgentScope Toolkit, built from the skill registry for one question.

Each healthy skill becomes a tool function whose JSON schema AgentScope extracts from the
skill's own signature and docstring, with `ctx` bound as a preset (hidden) argument. Every
call goes through `registry.call` (argument validation, timeout, degradation), its hits land
in the question's evidence pool, and `on_result` lets the pipeline trace and budget the call.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from agentscope.message import TextBlock
from agentscope.tool import Toolkit, ToolResponse

from citescope.agents.evidence import cleaned_hit
from citescope.tools.base import SkillContext, SkillResult
from citescope.tools.registry import Skill, SkillRegistry

OnResult = Callable[[str, dict, SkillResult], None]


def build_toolkit(
    registry: SkillRegistry, ctx: SkillContext, on_result: OnResult | None = None, only: list[str] | None = None
) -> Toolkit:
    """A Toolkit offering the registry's healthy skills (or those of `only`, in that order).

    A name in `only` that the registry skipped as unhealthy or disabled is left out (it is in
    registry.degradations); a name the registry never heard of is an error.
    """
    names = registry.names() if only is None else list(only)
    unknown = [n for n in names if n not in registry.skills and n not in registry.skipped]
    if unknown:
        raise KeyError(
            f"unknown skill(s) {unknown}; skills declared in {registry.source}: "
            f"{registry.names() + sorted(registry.skipped)}"
        )
    toolkit = Toolkit()
    for name in names:
        skill = registry.skills.get(name)
        if skill is not None:
            toolkit.register_tool_function(
                tool_function(registry, skill, ctx, on_result),
                # AgentScope annotates preset kwargs as JSON values, yet passes them to the function as they are
                preset_kwargs={"ctx": ctx},  # type: ignore[dict-item]
                func_name=name,
                func_description=skill.description,
            )
    return toolkit


def tool_function(
    registry: SkillRegistry, skill: Skill, ctx: SkillContext, on_result: OnResult | None = None
) -> Callable[..., Any]:
    """An async tool function that looks like the skill to AgentScope's schema extraction (same
    parameters and docstring, `ctx` annotated Any so the schema builds before the preset removes it)."""

    async def call_skill(**kwargs: Any) -> ToolResponse:
        # The toolkit merges the model's input over the preset kwargs, so a model that sends a
        # "ctx" of its own must not replace the question's context.
        question_ctx = kwargs.pop("ctx", None)
        if not isinstance(question_ctx, SkillContext):
            question_ctx = ctx
        # A worker thread: the skill's own timeout thread may block up to timeout_s, and the
        # event loop (other agents, parallel tool calls) must keep running meanwhile.
        result = await asyncio.to_thread(registry.call, skill.name, question_ctx, **kwargs)
        question_ctx.remember(result.hits)
        if on_result is not None:
            on_result(skill.name, kwargs, result)
        # An LLM planner reads this text: hostile evidence is neutralised as the answerer's is.
        shown = result.model_copy(update={"hits": [h for h in map(cleaned_hit, result.hits) if h.text]})
        return ToolResponse(content=[TextBlock(type="text", text=shown.text())], metadata=result.model_dump())

    ctx_param = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Any)
    call_skill.__signature__ = skill.signature.replace(  # type: ignore[attr-defined]
        parameters=[*skill.signature.parameters.values(), ctx_param], return_annotation=ToolResponse
    )
    call_skill.__name__ = call_skill.__qualname__ = skill.name
    call_skill.__doc__ = skill.function.__doc__
    return call_skill
