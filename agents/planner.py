"""The retrieval planner: an AgentScope ReActAgent over the skill toolkit, under hard budgets.

Offline, its model is the policy's plan played as tool calls (agents/policy_planner_model.py);
with an LLM, the plan is a suggestion in the system prompt. Budgets are enforced in code, not in
the prompt, at the one place every call passes: each registered tool function of the toolkit is
wrapped, so before `registry.call` runs the BudgetTracker decides — a call over the total or
per-tool cap gets BUDGET_EXHAUSTED_TEXT and never runs; an identical repeat gets the earlier
result and costs nothing. (A pre_acting hook cannot skip a call, and post_acting is too late.)
The LLM is wrapped too: each request is budgeted, timed out, retried, and its tool calls are
checked: an unknown tool is a failed reply (asked again); arguments that are not one valid JSON
object as sent (AgentScope would run `{query: 手机, top_k: 5` "repaired", with top_k inside the
query) or that lack a required argument go back to the model once as a tool error to correct
(prompts/planner_tool_error.md), and a second bad call fails the planner model. ReActAgent's
closing "summarize" request, made without tools after max_iters, is answered locally: the
planner's text is never used. A planner LLM that fails for good hands the question to the next
model of its route (agents/routing.py), and after the last to the offline plan (same pool and
deadline, a fresh tool budget: tracker.start_fallback).

Fewer round trips: an LLM planner's reply may carry its whole plan, several tool calls at once;
the agent runs them concurrently (ReActAgent's parallel_tool_calls: asyncio.gather over the
tools, each skill in a worker thread), except that a skill reading the pool gathered so far
(rerank, expand_context) waits for its siblings, and an identical call in flight is answered
by that call. A reply that says its plan is complete ("检索完成" beside its tool calls) ends the
loop without another request once all its calls ran cleanly and added evidence
(`PlanCompletion`); otherwise the model gets the next turn as before.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

from agentscope.agent import ReActAgent
from agentscope.formatter import FormatterBase, OpenAIChatFormatter
from agentscope.memory import InMemoryMemory
from agentscope.message import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from agentscope.model import ChatModelBase, ChatResponse
from agentscope.tool import Toolkit, ToolResponse
from pydantic import BaseModel, Field

from citescope.agents.arms import PlannedCall
from citescope.agents.budget import (
    BudgetTracker,
    CorrectableReply,
    ModelFailure,
    RetryPolicy,
    budgeted_model_call,
    normalise_args,
)
from citescope.agents.conversation import NONE_TEXT
from citescope.agents.evidence import EvidencePool
from citescope.agents.policy import PolicyDecision
from citescope.agents.policy_planner_model import DONE_TEXT, PolicyPlannerModel
from citescope.agents.prompts import load_prompt
from citescope.agents.routing import RouteStep
from citescope.agents.toolkit import build_toolkit, tool_function
from citescope.knowledge.filters import SearchFilters
from citescope.tools.base import SkillContext, SkillResult
from citescope.tools.registry import SkillRegistry

log = logging.getLogger(__name__)

BUDGET_EXHAUSTED_TEXT = "工具调用预算已用完，请直接结束检索。"
REPEATED_CALL_NOTE = "（与之前完全相同的调用，直接返回之前的结果。）"
NOT_RUN_TEXT = "未执行：同一回复中有参数错误的工具调用，整条回复都没有执行，请连同修正后的调用一起重新发送。"
FILTER_ARGS = ("doc_type", "brand", "category", "product_id", "updated_after")
# Skills that read what the question's other calls gathered (ctx.pool): in a reply of several
# calls they run after the others, never beside them.
POOL_READERS = frozenset({"rerank", "expand_context"})


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


class MalformedToolCall(CorrectableReply):
    """A tool call whose arguments cannot be run as sent; `block` is the call, `problem` says why."""

    def __init__(self, reason: str, response: ChatResponse, block: dict, problem: str):
        super().__init__(reason, response)
        self.block = block
        self.problem = problem


def check_tool_calls(response: ChatResponse, tools: list[dict]) -> None:
    """ModelFailure for a call of a tool the toolkit does not have; MalformedToolCall for arguments
    that are not one JSON object as the model sent them (what AgentScope parsed is a repair), or
    that lack a required argument."""
    schemas = {tool["function"]["name"]: tool["function"] for tool in tools}
    for block in response.content:
        if block.get("type") != "tool_use":
            continue
        name = block.get("name")
        if name not in schemas:
            raise ModelFailure(f"unknown tool {name!r} (offered: {', '.join(schemas)})")
        call = dict(block)
        problem = _arguments_problem(call, (schemas[name].get("parameters") or {}).get("required") or [])
        if problem:
            raw = str(block.get("raw_input") or "")[:80]
            reason = f"malformed tool call: {name} {problem} (raw {raw!r})"
            raise MalformedToolCall(reason, response, call, problem)


def _arguments_problem(block: dict[str, Any], required: list[str]) -> str:
    """Why a call's arguments cannot be run as sent, or ""."""
    raw = block.get("raw_input")
    if raw is not None and str(raw).strip():
        try:
            sent = json.loads(str(raw))
        except json.JSONDecodeError as exc:
            return f"arguments are not valid JSON ({exc.msg} at position {exc.pos})"
        if not isinstance(sent, dict):
            return "arguments are not a JSON object"
    else:
        sent = block.get("input") or {}
    missing = [name for name in required if name not in sent]
    return f"without its required arguments {missing}" if missing else ""


class BudgetedPlannerModel(ChatModelBase):
    """An LLM behind the planner's budget: counted, timed out, retried, tool calls checked, and one
    correction turn for malformed tool arguments."""

    def __init__(
        self,
        model: ChatModelBase,
        tracker: BudgetTracker,
        retry: RetryPolicy,
        reserve: int = 0,
        formatter: FormatterBase | None = None,
    ):
        """reserve: model calls left for later stages (the answerer); the planner stops before them.
        formatter: the model's own, which writes the correction turn in its wire format."""
        super().__init__(model.model_name, stream=False)  # collects a streamed reply itself
        self.model = model
        self.tracker = tracker
        self.retry = retry
        self.reserve = reserve
        self.formatter = formatter or OpenAIChatFormatter()
        self.corrections = 0  # correction turns used this question (at most one)

    async def __call__(
        self, messages: list[dict], tools: list[dict] | None = None, tool_choice: str | None = None, **kwargs: Any
    ) -> ChatResponse:
        if not tools:  # ReActAgent's summary after max_iters: nothing the pipeline reads
            return ChatResponse(content=[TextBlock(type="text", text=DONE_TEXT)])
        if self.tracker.model_calls >= self.tracker.budget.max_model_calls - self.reserve:
            return ChatResponse(content=[TextBlock(type="text", text=DONE_TEXT)])  # the cap did its job
        try:
            return await self._call(messages, tools, tool_choice, **kwargs)
        except MalformedToolCall as bad:
            if self.corrections:
                raise ModelFailure(f"{bad}; after a correction turn") from None
            self.corrections += 1
            log.warning("planner model sent a malformed tool call, asked to correct it: %s", bad)
            corrected = messages + await self._correction(bad)
            try:
                return await self._call(corrected, tools, tool_choice, **kwargs)
            except MalformedToolCall as again:
                raise ModelFailure(f"{bad}; the correction was malformed too ({again.problem})") from None
            except ModelFailure as failed:
                raise ModelFailure(f"{bad}; the correction failed: {failed}") from None

    async def _call(
        self, messages: list[dict], tools: list[dict], tool_choice: str | None, **kwargs: Any
    ) -> ChatResponse:
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

    async def _correction(self, bad: MalformedToolCall) -> list[dict]:
        """The turn that tells the model its reply was not run: every call of it as sent, the bad
        one answered with the tool error, the others with a note that they did not run either."""
        calls = [dict(block) for block in bad.response.content if block.get("type") == "tool_use"]
        sent: dict[str, str] = {}
        uses, results = [], []
        for number, call in enumerate(calls):
            call_id, name = str(call.get("id") or f"call_{number}"), str(call.get("name"))
            raw = call.get("raw_input")
            sent[call_id] = str(raw) if raw is not None else json.dumps(call.get("input") or {}, ensure_ascii=False)
            if call.get("id") == bad.block.get("id") and name == bad.block.get("name"):
                output = load_prompt("planner_tool_error", problem=bad.problem, raw=sent[call_id]).strip()
            else:
                output = NOT_RUN_TEXT
            uses.append(ToolUseBlock(type="tool_use", id=call_id, name=name, input={}))
            results.append(ToolResultBlock(type="tool_result", id=call_id, name=name, output=output))
        turn = await self.formatter.format([Msg("planner", uses, "assistant"), Msg("system", results, "system")])
        for message in turn:  # the arguments as the model sent them, not a repair of them
            for call in message.get("tool_calls") or []:
                call["function"]["arguments"] = sent.get(call.get("id"), call["function"]["arguments"])
        return turn


def declares_plan_complete(response: ChatResponse) -> bool:
    """A reply with tool calls that also says "检索完成": its calls are the rest of the plan."""
    blocks = list(response.content)
    calls = any(block.get("type") == "tool_use" for block in blocks)
    said = any(DONE_TEXT in str(block.get("text", "")) for block in blocks if block.get("type") == "text")
    return calls and said


class PlanCompletion(ChatModelBase):
    """Skips the turn after a reply that declared its plan complete, when that reply's calls all
    ran (none refused by the budget, none degraded) and added evidence: the next request would only hear
    "检索完成". A round that fell short goes back to the model, which sees the results."""

    def __init__(self, model: BudgetedPlannerModel, planner: RetrievalPlanner):
        super().__init__(model.model_name, stream=False)
        self.model = model
        self.planner = planner
        self._declared: tuple[int, int] | None = None  # (records, pool size) when a complete plan was sent

    async def __call__(
        self, messages: list[dict], tools: list[dict] | None = None, tool_choice: str | None = None, **kwargs: Any
    ) -> ChatResponse:
        if self._declared is not None and self.planner.round_succeeded(*self._declared):
            return ChatResponse(content=[TextBlock(type="text", text=DONE_TEXT)])
        response = await self.model(messages, tools=tools, tool_choice=tool_choice, **kwargs)
        complete = declares_plan_complete(response)
        self._declared = (len(self.planner.records), len(self.planner.pool)) if complete else None
        return response


@dataclasses.dataclass(frozen=True)
class PlannerChoice:
    """A planner model of the route, and why the question starts on it."""

    name: str
    model: ChatModelBase
    formatter: FormatterBase
    reason: str = "first model of the route"


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
        route: Sequence[PlannerChoice] = (),
        conversation: str = NONE_TEXT,
    ):
        """toolkit_template: build_toolkit(registry, any ctx) made once and shared across questions
        (only its schemas are used); None builds one for this question. reserve_model_calls: model
        calls the planner leaves for the answerer. route: the planner models to try in order (its
        route from the starting model on); `llm` alone is a route of one. conversation: the rendered
        【对话上下文】 (agents/conversation.py)."""
        self.reserve_model_calls = reserve_model_calls
        self.conversation = conversation
        self.registry = registry
        self.toolkit_template = toolkit_template
        self.ctx = ctx
        self.pool = pool
        self.tracker = tracker
        self.decision = decision
        self.llm = llm
        self.formatter = formatter or OpenAIChatFormatter()
        self.route = list(route)
        if not self.route and llm is not None:
            self.route = [PlannerChoice(llm.model_name, llm, self.formatter)]
        self.retry = retry or RetryPolicy()
        self.filters = filters
        self.records: list[ToolCallRecord] = []
        self.outputs: dict[str, dict] = {}  # skill -> its latest result data (plan bindings read it)
        self.steps: list[RouteStep] = []  # the planner models asked, for the result's route
        self._running: set[asyncio.Future] = set()  # calls in flight that gather evidence
        self._in_flight: dict[tuple[str, str], asyncio.Future] = {}  # identical calls wait for the first

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
            conversation=self.conversation,
        )

    def build_agent(self, model: ChatModelBase, formatter: FormatterBase, parallel: bool = False) -> ReActAgent:
        """parallel: run the tool calls of one reply concurrently (an LLM's; the offline plan sends one a turn)."""
        agent = ReActAgent(
            name="planner",
            sys_prompt=self.system_prompt(),
            model=model,
            formatter=formatter,
            toolkit=self.build_toolkit(),
            memory=InMemoryMemory(),
            max_iters=self.tracker.budget.max_tool_calls + 1,
            parallel_tool_calls=parallel,
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
        degradations: list[str] = []
        reason = ""
        for position, choice in enumerate(self.route):
            step = RouteStep(role="planner", model=choice.name, reason=reason or choice.reason)
            self.steps.append(step)
            following = self.route[position + 1].name if position + 1 < len(self.route) else ""
            instead = f"model {following} used" if following else "offline plan used"
            budgeted = BudgetedPlannerModel(
                choice.model, self.tracker, self.retry, self.reserve_model_calls, choice.formatter
            )
            try:
                agent = self.build_agent(PlanCompletion(budgeted, self), choice.formatter, parallel=True)
                reply = await agent(Msg("user", question, "user"))
            except Exception as exc:  # ModelFailure, or anything else the LLM path broke on
                failure = str(exc) if isinstance(exc, ModelFailure) else f"{type(exc).__name__}: {exc}"[:300]
                log.warning("planner model %s failed, %s: %s", choice.name, instead, failure)
                step.outcome = f"failed: {failure}"
                degradations.append(f"planner model failed ({failure}); {instead}")
                reason = f"{choice.name} failed"
                continue
            if len(self.pool):
                step.outcome = "gathered evidence"
                return PlannerOutcome(source="llm", reply=reply.get_text_content() or "", degradations=degradations)
            # Stopping without evidence would turn into a refusal the policy's plan may avoid.
            step.outcome = "gathered no evidence"
            degradations.append(f"planner model gathered no evidence; {instead}")
            reason = f"{choice.name} gathered no evidence"
        if self.route:
            self.tracker.start_fallback()  # the failed models' tool calls do not eat the fallback's budget
        reply = await self.build_agent(self.offline_model(), OpenAIChatFormatter())(Msg("user", question, "user"))
        return PlannerOutcome(source="offline", reply=reply.get_text_content() or "", degradations=degradations)

    def round_succeeded(self, records_before: int, pool_before: int) -> bool:
        """The calls since `records_before` all ran (or repeated an earlier call) without a degradation
        or a budget refusal, and the pool grew past `pool_before`."""
        made = self.records[records_before:]
        clean = all(record.outcome != "over_budget" and not record.degraded for record in made)
        return bool(made) and clean and len(self.pool) > pool_before

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
            key = (name, normalise_args(args))
            if key in self._in_flight:  # the same call, sent twice in one reply: the first one's result
                await asyncio.shield(self._in_flight[key])
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
            record = ToolCallRecord(name=name, arguments=args)
            self.records.append(record)  # in the order the calls were made, whichever ends first
            if name in POOL_READERS:
                await self._siblings_done()
            done: asyncio.Future = asyncio.get_running_loop().create_future()
            self._in_flight[key] = done
            if name not in POOL_READERS:
                self._running.add(done)
            started = time.perf_counter()
            try:
                response: ToolResponse = await call_skill(**args, **({"ctx": ctx} if ctx is not None else {}))
                self.tracker.record_tool(name, args, response)
            finally:
                done.set_result(None)
                self._running.discard(done)
                del self._in_flight[key]
            degraded = list((response.metadata or {}).get("degraded") or [])
            record.hit_ids = _hit_ids(response)
            record.degraded, record.reasons = bool(degraded), degraded
            record.elapsed_ms = round((time.perf_counter() - started) * 1000, 2)
            return response

        guarded.__name__ = name
        return guarded

    async def _siblings_done(self) -> None:
        """Wait for the evidence-gathering calls of the same reply (those started beside this one)."""
        await asyncio.sleep(0)  # the reply's other calls, gathered after this one, start first
        if self._running:
            await asyncio.wait(list(self._running))


def _hit_ids(response: ToolResponse) -> list[str]:
    return [hit["chunk_id"] for hit in (response.metadata or {}).get("hits") or []]
