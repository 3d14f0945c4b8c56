"""model_requests_per_question: the model requests one question costs with both roles on a model.

The demo questions (knowledge/demo/questions.jsonl, each asked alone, no session) run through the
real pipeline with the planner and the answerer on scripted in-process models (real
ChatModelBase subclasses: agents/offline_models.FunctionModel), so what is counted is the
pipeline's own request pattern, not a provider's mood. No LLM judge is wired in this module.

- The scripted planner follows the suggested plan of its system prompt (【建议计划】), as a model
  that uses one-turn plans would: its first reply sends every planned call that needs no earlier
  result at once and, when none is left, says "检索完成" in the same reply; calls bound to an
  earlier result (a rewritten query) come in the next reply with the plan's template arguments.
- The baseline planner sends the same calls one per reply and then "检索完成" in a reply of its
  own: the request pattern before one-turn plans (the issue's "4.5 now").
- The scripted answerer writes the first sentence of the first evidence line, cited by its id;
  the inspector judges it as it judges any draft, so a rejection costs a second request.

Measured only, never tuned on: the questions are the demo's; a slice (`limit`) is the first n.
"""

from __future__ import annotations

import ast
import json
import re
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentscope.formatter import OpenAIChatFormatter

from citescope.agents.offline_models import FunctionModel, Reply, tool_calls_response
from citescope.agents.policy_planner_model import DONE_TEXT
from citescope.agents.routing import ModelRoute, Role, RoutedModel
from citescope.knowledge.kb import KnowledgeBase
from citescope.tools.registry import SkillRegistry
from citescope.workflows.pipeline import QAPipeline
from citescope.workflows.pipeline_config import PipelineConfig

REPO = Path(__file__).resolve().parents[3]
DEMO_QUESTIONS = REPO / "knowledge" / "demo" / "questions.jsonl"
_PLAN_LINE = re.compile(r"^\d+\. (\w+)\((.*)\)(\s+#.*)?$")
_EVIDENCE_LINE = re.compile(r"^【([^】]+)】\([^)]*\) (.+)$", re.M)
_FIRST_SENTENCE = re.compile(r"^(.+?[。！？!?])")


def planned_calls(system_prompt: str) -> list[tuple[dict, bool]]:
    """The 【建议计划】 of a planner prompt as ({name, arguments}, bound to an earlier result) pairs."""
    block = system_prompt.split("【建议计划】", 1)[-1].split("【", 1)[0]
    calls = []
    for line in block.splitlines():
        found = _PLAN_LINE.match(line.strip())
        if found is None:
            continue
        name, args, note = found.groups()
        parsed = ast.parse(f"f({args})", mode="eval").body
        assert isinstance(parsed, ast.Call)
        arguments = {k.arg: ast.literal_eval(k.value) for k in parsed.keywords if k.arg}
        calls.append(({"name": name, "arguments": arguments}, bool(note and "取自" in note)))
    return calls


def _system_text(messages: Sequence[dict]) -> str:
    content = messages[0].get("content") if messages else ""
    return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content or [])


def _replies_so_far(messages: Sequence[dict]) -> int:
    return sum(1 for m in messages if m.get("role") == "assistant")


def one_turn_planner(messages: list[dict], tools: list[dict] | None) -> Reply:
    """Every independent planned call in the first reply (检索完成 with them when nothing is left);
    the bound ones in the second."""
    calls = planned_calls(_system_text(messages))
    free = [call for call, bound in calls if not bound]
    bound = [call for call, is_bound in calls if is_bound]
    turn = _replies_so_far(messages)
    if turn == 0 and free:
        return tool_calls_response(free, text=None if bound else DONE_TEXT)
    if turn <= 1 and bound:
        return tool_calls_response(bound, text=DONE_TEXT)
    return DONE_TEXT


def one_call_per_reply_planner(messages: list[dict], tools: list[dict] | None) -> Reply:
    """The planned calls one per reply, then 检索完成 alone."""
    calls = [call for call, _ in planned_calls(_system_text(messages))]
    turn = _replies_so_far(messages)
    return [calls[turn]] if turn < len(calls) else DONE_TEXT


def first_sentence_answerer(messages: list[dict], tools: list[dict] | None) -> Reply:
    """The first sentence of the first evidence line, cited."""
    prompt = "\n".join(_system_text([m]) for m in messages)
    found = _EVIDENCE_LINE.search(prompt)
    if found is None:
        return "抱歉，资料中没有找到答案。"
    chunk_id, text = found.groups()
    sentence = _FIRST_SENTENCE.match(text)
    return f"{(sentence.group(1) if sentence else text).rstrip('。！？!?')}【{chunk_id}】。"


def read_questions(path: Path = DEMO_QUESTIONS, limit: int | None = None) -> list[str]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    questions = [row["question"] for row in rows]
    return questions[:limit] if limit else questions


def _requests(kb: KnowledgeBase, questions: Sequence[str], planner_fn, registry: SkillRegistry | None) -> dict:
    planner, answerer = FunctionModel(planner_fn, "scripted-planner"), FunctionModel(first_sentence_answerer)
    routes: dict[Role, ModelRoute | None] = {
        "planner": ModelRoute("planner", [RoutedModel("scripted:planner", planner, OpenAIChatFormatter())]),
        "answerer": ModelRoute("answerer", [RoutedModel("scripted:answerer", answerer, OpenAIChatFormatter())]),
    }
    config = PipelineConfig.load(kb.dir, environ={})
    pipeline = QAPipeline(kb, config, registry=registry, routes=routes).warm_up()
    per_question, planner_counts, answerer_counts = [], [], []
    llm_plans = degraded = 0
    for question in questions:
        before_planner, before_answerer = len(planner.calls), len(answerer.calls)
        result = pipeline.run(question)
        planner_counts.append(len(planner.calls) - before_planner)
        answerer_counts.append(len(answerer.calls) - before_answerer)
        per_question.append(planner_counts[-1] + answerer_counts[-1])
        llm_plans += result.planner_source == "llm"
        degraded += result.degraded
    return {
        "model_requests_per_question": round(statistics.fmean(per_question), 3),
        "planner_requests_per_question": round(statistics.fmean(planner_counts), 3),
        "answerer_requests_per_question": round(statistics.fmean(answerer_counts), 3),
        "max_requests": max(per_question),
        "llm_plans": llm_plans,
        "degraded": degraded,
    }


def run_llm_requests_bench(
    kb: KnowledgeBase,
    questions_path: Path = DEMO_QUESTIONS,
    limit: int | None = None,
    registry: SkillRegistry | None = None,
) -> dict[str, Any]:
    """{"model_requests_per_question", its planner and answerer shares, and the same for the
    one-call-per-reply baseline}, over the first `limit` questions (None: all)."""
    questions = read_questions(questions_path, limit)
    one_turn = _requests(kb, questions, one_turn_planner, registry)
    baseline = _requests(kb, questions, one_call_per_reply_planner, registry)
    return {
        **one_turn,
        "questions": len(questions),
        "questions_file": questions_path.name,
        "baseline_one_call_per_reply": baseline,
    }
