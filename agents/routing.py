"""Routing between models: per role (planner, answerer) an ordered list, the cheapest first.

A question starts on the first model of its role's list unless a routing rule matches one of its
signals, in the order of the rule table (`model_routes` in workflows/pipeline.yaml, data like
Haystack's ConditionalRouter routes): a compound question (agents/compound_questions.py), a
comparison (question_cues.COMPARISON_WORDS via the analyzer's intent), or disputed evidence (the
conflict check found a disagreement; known only when answering, so it routes the answerer alone).
From there: a model that fails for good hands the role to the next model of the list; a draft the
inspector rejects is rewritten by the next model (the same one when it was the last); after the
last model, the offline engine. Every model that took part is a `RouteStep` of the result's trace:
which model, why it was chosen, and how it ended.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from agentscope.formatter import FormatterBase
from agentscope.model import ChatModelBase
from pydantic import BaseModel, ConfigDict, Field, field_validator

from citescope.agents.models import ModelConfig, ModelSettings, make_chat_model
from citescope.agents.query_features import QueryFeatures

Role = Literal["planner", "answerer"]
Signal = Literal["compound", "comparison", "disputed"]
ROLES: tuple[Role, ...] = ("planner", "answerer")


class ModelChoice(ModelSettings):
    """One model of a role's list: its spec and its generation settings."""

    model_config = ConfigDict(extra="forbid")

    spec: str

    @field_validator("spec")
    @classmethod
    def _known_spec(cls, spec: str) -> str:
        ModelConfig.parse(spec)  # raises ValueError naming what is wrong with the spec
        return spec.strip()

    @classmethod
    def of(cls, entry: str | ModelChoice) -> ModelChoice:
        return entry if isinstance(entry, ModelChoice) else cls(spec=entry)

    @property
    def is_offline(self) -> bool:
        return ModelConfig.parse(self.spec).provider == "offline"


class RouteRule(BaseModel):
    """When a question shows `when`, the listed roles start on their `start` model."""

    model_config = ConfigDict(extra="forbid")

    when: Signal
    start: Literal["cheapest", "strongest"] = "strongest"
    roles: list[Role] = Field(default_factory=lambda: list(ROLES))


class RouteStep(BaseModel):
    """One model's part in a question, for the result and its trace."""

    role: Role
    model: str  # provider:model
    reason: str  # why this model was asked
    outcome: str = ""  # "gathered evidence", "passed the inspector", "rejected by the inspector", "failed: ..."


def question_signals(features: QueryFeatures, disputed: bool = False) -> list[Signal]:
    """The signals a routing rule can match: what the analyzer read, and whether sources disagree."""
    signals: list[Signal] = []
    if len(features.parts) > 1:
        signals.append("compound")
    if features.intent == "comparison":
        signals.append("comparison")
    if disputed:
        signals.append("disputed")
    return signals


@dataclass
class RoutedModel:
    """A built model of a route: its name in traces (provider:model), AgentScope's client and formatter."""

    name: str
    model: ChatModelBase
    formatter: FormatterBase


@dataclass
class ModelRoute:
    """A role's models in order (cheapest first) and the rule table that picks where to start."""

    role: Role
    models: list[RoutedModel]
    rules: Sequence[RouteRule] = field(default_factory=list)

    def start(self, signals: Sequence[Signal]) -> tuple[int, str]:
        """(position of the first model to ask, why): the first rule for this role whose signal the
        question shows, else the cheapest model."""
        for rule in self.rules:
            if self.role in rule.roles and rule.when in signals:
                position = 0 if rule.start == "cheapest" else len(self.models) - 1
                return position, f"{rule.when} question: starts on the {rule.start} model"
        return 0, "first model of the route"

    def next_after(self, position: int) -> int | None:
        return position + 1 if position + 1 < len(self.models) else None


def build_route(role: Role, configs: Sequence[ModelConfig], rules: Sequence[RouteRule] = ()) -> ModelRoute | None:
    """The role's route from its model configs (offline ones left out); None when none is a model."""
    models = []
    for config in configs:
        model, formatter = make_chat_model(config)
        if model is not None:
            models.append(RoutedModel(f"{config.provider}:{config.model}", model, formatter))
    return ModelRoute(role, models, list(rules)) if models else None
