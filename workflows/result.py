"""QAResult: everything one question produced — the answer and its sources, the flags, and the
decision trace (features, policy, plan, tool calls, budgets, timings) that explains it."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from citescope.agents.arms import PlannedCall
from citescope.agents.budget import BudgetUsage
from citescope.agents.conflicts import Conflict
from citescope.agents.inspector import InspectionReport
from citescope.agents.planner import ToolCallRecord
from citescope.agents.query_analysis import QueryFeatures
from citescope.agents.routing import RouteStep
from citescope.agents.usage import UsageReport
from citescope.knowledge.markup import strip_markup
from citescope.tools.base import SNIPPET_CHARS, EvidenceHit


def new_trace_id() -> str:
    return uuid.uuid4().hex


class Citation(BaseModel):
    id: str
    doc_id: str
    title: str = ""
    source: str = ""
    doc_type: str = "doc"
    updated_at: str | None = None
    snippet: str = ""

    # What a customer's screen shows holds no executable HTML, whatever a KB ingested before
    # markup was stripped still stores (knowledge/markup.py).
    @field_validator("title", "source", "snippet")
    @classmethod
    def _without_markup(cls, value: str) -> str:
        return strip_markup(value)

    @classmethod
    def of(cls, hit: EvidenceHit) -> Citation:
        text = " ".join(strip_markup(hit.text).split())  # before the cut: a tag cut in half is no tag
        snippet = text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS] + "…"
        return cls(
            id=hit.chunk_id,
            doc_id=hit.doc_id,
            title=hit.title,
            source=hit.source,
            doc_type=hit.doc_type,
            updated_at=hit.updated_at,
            snippet=snippet,
        )


class ConflictValueOut(BaseModel):
    value: str
    chunk_id: str
    updated_at: str | None = None


class ConflictOut(BaseModel):
    attribute: str
    entity: str = ""
    values: list[ConflictValueOut]

    @classmethod
    def of(cls, conflict: Conflict) -> ConflictOut:
        return cls(
            attribute=conflict.attribute,
            entity=conflict.entity,
            values=[
                ConflictValueOut(value=v.value, chunk_id=v.chunk_id, updated_at=v.updated_at) for v in conflict.values
            ],
        )


class PolicySummary(BaseModel):
    arm: str
    scores: dict[str, float] = Field(default_factory=dict)
    reason: str = ""
    source: str = "rules"


def features_summary(features: QueryFeatures) -> dict[str, Any]:
    """The analysis fields a reader of the trace needs (not the whole feature vector)."""
    return {
        "intent": features.intent,
        "products": [{"name": e.name, "product_id": e.product_id} for e in features.products],
        "carried_entity": features.carried_entity.name if features.carried_entity else None,
        "carried_topic": features.carried_topic,
        "brands": features.brands,
        "categories": features.categories,
        "model_codes": features.model_codes,
        "unknown_models": features.unknown_models,
        "sizes": features.sizes,
        "numbers": features.numbers,
        "is_followup": features.is_followup,
        "asks_price_stock": features.asks_price_stock,
        "asks_size_advice": features.asks_size_advice,
        "asks_overview": features.asks_overview,
        "colloquial": features.colloquial,
        "length": features.length,
        "read_aspect": features.read_aspect,
    }


class QAResult(BaseModel):
    # Every assignment is validated, so the answer passes strip_markup however a stage set it
    # (an answerer, a disclosure, the compliance mask): no interface can show executable HTML.
    model_config = ConfigDict(validate_assignment=True)

    question: str
    answer: str
    citations: list[Citation] = Field(default_factory=list)  # ids actually cited, in order of citation
    refused: bool = False
    refusal_reason: str = ""  # "weak_evidence" | "no_evidence" | "no_supported_answer" | "unknown_model" | "sensitive"
    degraded: bool = False
    degradation_reasons: list[str] = Field(default_factory=list)
    conflicts: list[ConflictOut] = Field(default_factory=list)
    inspection: InspectionReport | None = None
    compliance: list[str] = Field(default_factory=list)  # sensitive words the answer had (masked or refused)
    regenerated: bool = False  # the first answer failed inspection and was rewritten
    answer_source: Literal["llm", "extractive", "refusal"] = "refusal"
    features: dict[str, Any] = Field(default_factory=dict)
    policy: PolicySummary | None = None
    plan: list[PlannedCall] = Field(default_factory=list)
    planner_source: Literal["offline", "llm"] = "offline"
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    budget: BudgetUsage | None = None
    # the model requests and tokens this question spent, per model, and their cost (agents/usage.py):
    # always present; zeros when no model was called (offline) or the answer came from the cache
    usage: UsageReport = Field(default_factory=UsageReport)
    best_score: float | None = None  # best calibrated evidence score (what the refusal gate read)
    evidence_ids: list[str] = Field(default_factory=list)  # the evidence shown to the answerer, in order
    timings_ms: dict[str, float] = Field(default_factory=dict)
    models: dict[str, str] = Field(default_factory=dict)  # stage -> model name
    route: list[RouteStep] = Field(default_factory=list)  # the models asked, why, and how each ended
    trace_id: str = Field(default_factory=new_trace_id)
    session_id: str | None = None  # the conversation this answer belongs to, when there is one
    clarification: dict | None = None  # set when the reply asks the customer for facts instead of answering
    as_of: str | None = None  # the time the question was answered about (SearchFilters.as_of), if asked
    # ids of the question rules (agents/question_cues.yaml) that read the question when the extractive
    # answerer wrote the answer; empty for a model's answer
    rules_fired: list[str] = Field(default_factory=list)

    @field_validator("answer")
    @classmethod
    def _answer_without_markup(cls, answer: str) -> str:
        return strip_markup(answer)

    def render_text(self) -> str:
        """The answer, then numbered sources: [1] 【id】 title — source, updated_at."""
        lines = [self.answer.strip()]
        if self.citations:
            lines += ["", "来源："]
            for number, citation in enumerate(self.citations, start=1):
                where = ", ".join(part for part in (citation.source, citation.updated_at or "") if part)
                lines.append(f"[{number}] 【{citation.id}】 {citation.title}" + (f" — {where}" if where else ""))
        if self.degraded:
            lines += ["", "（降级运行：" + "；".join(self.degradation_reasons) + "）"]
        return "\n".join(lines)
