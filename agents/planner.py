"""The retrieval planner: an AgentScope ReActAgent over the skill toolkit, under hard budgets.

Offline, its model is the policy's plan played as tool calls (agents/policy_planner_model.py);
with an LLM, the plan is a suggestion in the system prompt. Budgets are enforced in code, not in
the prompt, at the one place every call passes: each registered tool function of the toolkit is
wrapped, so before `registry.call` runs the BudgetTracker decides — a call over the total or
per-tool cap gets BUDGET_EXHAUSTED_TEXT and never runs; an identical repeat gets the earlier
result and costs nothing. (A pre_acting hook cannot skip a call, and post_acting is too late.)
The LLM is wrapped too: each request is budgeted, timed out, retried, and its tool calls are
checked (unknown tool, empty arguments for a tool with required ones = malformed: AgentScope
repairs bad JSON to {}). ReActAgent's closing "summarize" request, made without tools after
max_iters, is answered locally: the planner's text is never used. A planner LLM that fails for
good is replaced by the offline plan for the rest of the question (same budget, same pool).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any, Literal

from agentscope.agent import ReActAgent
from agentscope.formatter import FormatterBase, OpenAIChatFormatter
from agentscope.memory import InMemoryMemory
from agentscope.message import Msg, TextBlock
from agentscope.model import ChatModelBase, ChatResponse
from agentscope.tool import Toolkit, ToolResponse
from pydantic import BaseModel, Field

from citescope.agents.arms import PlannedCall
from citescope.agents.budget import BudgetTracker, ModelFailure, RetryPolicy, budgeted_model_call
from citescope.agents.evidence import EvidencePool
from citescope.agents.policy import PolicyDecision
from citescope.agents.policy_planner_model import DONE_TEXT, PolicyPlannerModel
from citescope.agents.prompts import load_prompt
from citescope.agents.toolkit import build_toolkit, tool_function
from citescope.knowledge.filters import SearchFilters
from citescope.tools.base import SkillContext, SkillResult
from citescope.tools.registry import SkillRegistry

log = logging.getLogger(__name__)

BUDGET_EXHAUSTED_TEXT = "工具调用预算已用完，请直接结束检索。"
REPEATED_CALL_NOTE = "（与之前完全相同的调用，直接返回之前的结果。）"
FILTER_ARGS = ("doc_type", "brand", "category", "product_id", "updated_after")


class ToolCallRecord(BaseModel):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    hit_ids: list[str] = Field(default_factory=list)
    cached: bool = False  # answered from an identical earlier call
    degraded: bool = False
    outcome: Literal["ran", "cached", "over_budget"] = "ran"
    reasons: list[str] = Field(default_factory=list)  # degradation or budget reasons
    elapsed_ms: float = 0.0


class PlannerOutcome(BaseModel):
    source: Literal["offline", "llm"]
    reply: str = ""
    degradations: list[str] = Field(default_factory=list)


def render_plan(plan: list[PlannedCall]) -> str:
    if not plan:
        return "（无建议，请自行选择合适的检索工具）"
    lines = []
    for number, call in enumerate(plan, start=1):
        args = ", ".join(f"{k}={v!r}" for k, v in call.args.items())
        bound = f"  # {', '.join(f'{k} 取自 {v}' for k, v in call.bind.items())}" if call.bind else ""
        lines.append(f"{number}. {call.skill}({args}){bound}")
    return "\n".join(lines)


def render_scores(decision: PolicyDecision) -> str:
    ranked = sorted(decision.scores.items(), key=lambda item: -item[1])
    return "\n".join(f"- {arm}: {score:.2f}" for arm, score in ranked) or "（无）"


def check_tool_calls(response: ChatResponse, tools: list[dict]) -> None:
    """ModelFailure for a tool call the toolkit cannot run as asked."""
    schemas = {tool["function"]["name"]: tool["function"] for tool in tools}
    for block in response.content:
        if block.get("type") != "tool_use":
            continue
        name = block.get("name")
        if name not in schemas:
            raise ModelFailure(f"unknown tool {name!r} (offered: {', '.join(schemas)})")
        required = (schemas[name].get("parameters") or {}).get("required") or []
        if required and not block.get("input"):
            raw = str(block.get("raw_input") or "")[:80]
            raise ModelFailure(f"malformed tool call: {name} without its required arguments {required} (raw {raw!r})")


class BudgetedPlannerModel(ChatModelBase):
    """An LLM behind the planner's budget: counted, timed out, retried, tool calls checked."""

    def __init__(self, model: ChatModelBase, tracker: BudgetTracker, retry: RetryPolicy, reserve: int = 0):
        """reserve: model calls left for later stages (the answerer); the planner stops before them."""
        super().__init__(model.model_name, stream=False)  # collects a streamed reply itself
        self.model = model
        self.tracker = tracker
        self.retry = retry
        self.reserve = reserve

    async def __call__(
        self, messages: list[dict], tools: list[dict] | None = None, tool_choice: str | None = None, **kwargs: Any
    ) -> ChatResponse:
        if not tools:  # ReActAgent's summary after max_iters: nothing the pipeline reads
            return ChatResponse(content=[TextBlock(type="text", text=DONE_TEXT)])
        if self.tracker.model_calls >= self.tracker.budget.max_model_calls - self.reserve:
            return ChatResponse(content=[TextBlock(type="text", text=DONE_TEXT)])  # the cap did its job
        return await budgeted_model_call(
            self.model,
            messages,
            self.tracker,
            self.retry,
            validate=lambda response: check_tool_calls(response, tools),
            tools=tools,
            tool_choice=tool_choice,
            **kwargs,
        )


class RetrievalPlanner:
    """One question's planner. Every hit lands in `pool` (and ctx.pool, which skills such as
    rerank read); `records` lists every tool call, run, cached or refused."""

    def __init__(
        self,
        registry: SkillRegistry,
        ctx: SkillContext,
        pool: EvidencePool,
        tracker: BudgetTracker,
        decision: PolicyDecision,
        llm: ChatModelBase | None = None,
        formatter: FormatterBase | None = None,
        retry: RetryPolicy | None = None,
        filters: SearchFilters | None = None,
        toolkit_template: Toolkit | None = None,
        reserve_model_calls: int = 0,
    ):
        """toolkit_template: build_toolkit(registry, any ctx) made once and shared across questions
        (only its schemas are used); None builds one for this question. reserve_model_calls: model
        calls the planner leaves for the answerer."""
        self.reserve_model_calls = reserve_model_calls
        self.registry = registry
        self.toolkit_template = toolkit_template
        self.ctx = ctx
        self.pool = pool
        self.tracker = tracker
        self.decision = decision
        self.llm = llm
        self.formatter = formatter or OpenAIChatFormatter()
        self.retry = retry or RetryPolicy()
        self.filters = filters
        self.records: list[ToolCallRecord] = []
        self.outputs: dict[str, dict] = {}  # skill -> its latest result data (plan bindings read it)

    # -- agent -----------------------------------------------------------------------------
    def system_prompt(self) -> str:
        budget = self.tracker.budget
        return load_prompt(
            "planner",
            shop=self.ctx.kb.shop.prompt_name,  # the KB's own shop (knowledge/shop_profile.py)
            plan=render_plan(self.decision.plan),
            scores=render_scores(self.decision),
            reason=self.decision.reason,
            max_tool_calls=budget.max_tool_calls,
            max_calls_per_tool=budget.max_calls_per_tool,
        )

    def build_agent(self, model: ChatModelBase, formatter: FormatterBase) -> ReActAgent:
        agent = ReActAgent(
            name="planner",
            sys_prompt=self.system_prompt(),
            model=model,
            formatter=formatter,
            toolkit=self.build_toolkit(),
            memory=InMemoryMemory(),
            max_iters=self.tracker.budget.max_tool_calls + 1,
        )
        agent.set_console_output_enabled(False)
        return agent

    def build_toolkit(self) -> Toolkit:
        """This question's toolkit: the template's tool schemas (parsing them is the slow part of
        building a Toolkit), each tool bound to this question's context and budget guard."""
        template = self.toolkit_template or build_toolkit(self.registry, self.ctx)
        toolkit = Toolkit()
        for name, registered in template.tools.items():
            call_skill = tool_function(self.registry, self.registry.get(name), self.ctx, self._on_result)
            toolkit.tools[name] = dataclasses.replace(
                registered,
                original_func=self._guarded(name, call_skill),
                # AgentScope annotates preset kwargs as JSON values, yet passes them to the function as they are
                preset_kwargs={"ctx": self.ctx},  # type: ignore[dict-item]
            )
        return toolkit

    def offline_model(self) -> PolicyPlannerModel:
        return PolicyPlannerModel(self.decision.plan, self.outputs)

    async def run(self, question: str) -> PlannerOutcome:
        """Gather evidence for the question; never raises for a model failure."""
        if self.llm is not None:
            model = BudgetedPlannerModel(self.llm, self.tracker, self.retry, self.reserve_model_calls)
            try:
                reply = await self.build_agent(model, self.formatter)(Msg("user", question, "user"))
            except Exception as exc:  # ModelFailure, or anything else the LLM path broke on
                reason = str(exc) if isinstance(exc, ModelFailure) else f"{type(exc).__name__}: {exc}"[:300]
                log.warning("planner model failed, offline plan used: %s", reason)
                degradations = [f"planner model failed ({reason}); offline plan used"]
            else:
                if len(self.pool):
                    return PlannerOutcome(source="llm", reply=reply.get_text_content() or "")
                # Stopping without evidence would turn into a refusal the policy's plan may avoid.
                degradations = ["planner model gathered no evidence; offline plan used"]
        else:
            degradations = []
        reply = await self.build_agent(self.offline_model(), OpenAIChatFormatter())(Msg("user", question, "user"))
        return PlannerOutcome(source="offline", reply=reply.get_text_content() or "", degradations=degradations)

    # -- budget guard ----------------------------------------------------------------------
    def _on_result(self, name: str, kwargs: dict, result: SkillResult) -> None:
        self.pool.add(name, result.hits)
        self.outputs[name] = result.data

    def _with_filters(self, name: str, args: dict) -> dict:
        """The caller's filters override the model's on every skill that takes them."""
        if self.filters is None or self.filters.is_empty():
            return args
        skill = self.registry.skills.get(name)
        params = skill.signature.parameters if skill is not None else {}
        args = dict(args)
        for field in FILTER_ARGS:
            value = getattr(self.filters, field, None)
            if field in params and value:
                args[field] = ",".join(value) if isinstance(value, list) else value
        return args

    def _guarded(self, name: str, call_skill: Callable) -> Callable:
        async def guarded(**kwargs: Any) -> ToolResponse:
            ctx = kwargs.pop("ctx", None)  # the hidden preset argument: not part of the call's identity
            args = self._with_filters(name, kwargs)
            decision = self.tracker.check_tool(name, args)
            if decision.kind == "repeated":
                previous: ToolResponse = decision.previous
                self.records.append(
                    ToolCallRecord(name=name, arguments=args, cached=True, outcome="cached", hit_ids=_hit_ids(previous))
                )
                return ToolResponse(
                    content=[TextBlock(type="text", text=REPEATED_CALL_NOTE), *previous.content],
                    metadata=previous.metadata,
                )
            if decision.kind == "exhausted":
                self.records.append(
                    ToolCallRecord(name=name, arguments=args, outcome="over_budget", reasons=[decision.reason])
                )
                return ToolResponse(
                    content=[TextBlock(type="text", text=BUDGET_EXHAUSTED_TEXT)], metadata={"budget": decision.reason}
                )
            started = time.perf_counter()
            response: ToolResponse = await call_skill(**args, **({"ctx": ctx} if ctx is not None else {}))
            self.tracker.record_tool(name, args, response)
            degraded = list((response.metadata or {}).get("degraded") or [])
            self.records.append(
                ToolCallRecord(
                    name=name,
                    arguments=args,
                    hit_ids=_hit_ids(response),
                    degraded=bool(degraded),
                    reasons=degraded,
                    elapsed_ms=round((time.perf_counter() - started) * 1000, 2),
                )
            )
            return response

        guarded.__name__ = name
        return guarded


def _hit_ids(response: ToolResponse) -> list[str]:
    return [hit["chunk_id"] for hit in (response.metadata or {}).get("hits") or []]
