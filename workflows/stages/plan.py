"""Stage plan: the strategy policy picks an arm (agents/arms.yaml) from the question's features and
fills its plan of skill calls. The rules policy (agents/policy.py) by default; the Assistant's
bandit (workflows/bandit.py) when it learns from outcomes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from citescope.agents.arms import PlanBudget
from citescope.agents.policy import PolicyDecision
from citescope.agents.query_analysis import QueryFeatures


class StrategyPolicy(Protocol):
    def choose(self, features: QueryFeatures, budget: PlanBudget | None = None) -> PolicyDecision: ...


@dataclass(frozen=True)
class PlanInput:
    features: QueryFeatures
    budget: PlanBudget  # how many calls a plan may hold


class Plan:
    def __init__(self, policy: StrategyPolicy):
        self.policy = policy

    def run(self, given: PlanInput) -> PolicyDecision:
        return self.policy.choose(given.features, given.budget)
