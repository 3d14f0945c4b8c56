"""The rules policy: a cold-start prior over strategy arms, read straight from query features.

Every rule is one row of RULES: when it fires it gives one arm a score in [0, 1] and a reason.
An arm's prior is the best score any fired rule gives it (a small base otherwise), so every arm
always has a score: the trace shows them all, and a contextual bandit can start from them and
learn from outcomes which arm really works for which features.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from citescope.agents.arms import Arm, PlanBudget, PlannedCall, first_runnable, load_arms
from citescope.agents.query_analysis import QueryFeatures

BASE_SCORE = 0.1
DEFAULT_ARM = "hybrid_rerank"  # the safe general choice when no rule says otherwise
DEFAULT_ARM_SCORE = 0.3


class PolicyDecision(BaseModel):
    arm: str
    scores: dict[str, float] = Field(default_factory=dict)
    reason: str
    plan: list[PlannedCall] = Field(default_factory=list)
    source: Literal["rules", "bandit"] = "rules"


def _names(features: QueryFeatures) -> str:
    return "」和「".join(p.name for p in features.focus_products)


def _has_product(f: QueryFeatures) -> bool:
    return f.product is not None


def _size_advice(f: QueryFeatures) -> bool:
    return f.asks_size_advice and f.intent in ("numeric", "fact", "open")


@dataclass(frozen=True)
class Rule:
    arm: str
    score: float
    when: Callable[[QueryFeatures], bool]
    reason: Callable[[QueryFeatures], str]


# Checked in order; for each arm the highest-scoring fired rule gives its prior and its reason.
RULES: tuple[Rule, ...] = (
    Rule(
        "keyword_filter",
        0.6,
        lambda f: f.intent == "out_of_scope",
        lambda f: "问题与店铺商品和服务无关，只做一次低成本检索确认，找不到依据就拒答",
    ),
    Rule(
        "size_advice",
        0.95,
        lambda f: _size_advice(f) and _has_product(f),
        lambda f: f"顾客想知道「{_names(f)}」该选哪个尺码，先查商品表，再按身高、体重或脚长推荐并检索尺码表作依据",
    ),
    Rule(
        "size_advice",
        0.72,
        lambda f: _size_advice(f) and not _has_product(f),
        lambda f: "顾客在问选哪个尺码但没说明是哪款商品，先检索尺码表，必要时请顾客补充商品和身材信息",
    ),
    Rule(
        "product_lookup_hybrid",
        0.92,
        lambda f: f.intent == "comparison" and len(f.focus_products) > 1 and f.asks_price_stock,
        lambda f: f"要对比「{_names(f)}」的价格或库存，逐个查商品表，再混合检索补充并精排",
    ),
    Rule(
        "hybrid_rerank",
        0.85,
        lambda f: f.intent == "comparison",
        lambda f: (
            f"这是对比问题，对「{_names(f)}」分别混合检索后统一精排"
            if len(f.focus_products) > 1
            else "这是对比问题，混合检索召回各方信息后统一精排"
        ),
    ),
    # each part of a compound question (无理由退换和发票分别怎么处理) searched as its own query; a price
    # or stock question keeps the product tables (product_lookup_hybrid answers both parts at once),
    # a comparison its own rules above
    Rule(
        "hybrid_rerank",
        0.91,
        lambda f: len(f.parts) > 1 and f.intent != "comparison" and not f.asks_price_stock and not _size_advice(f),
        lambda f: "这是复合问题，对每个子问题分别混合检索后统一精排",
    ),
    Rule(
        "keyword_filter",
        0.9,
        lambda f: f.intent == "policy",
        lambda f: (
            "这是退换货、运费、发票、会员等店铺政策问题，限定政策和常见问题文档做关键词检索，再混合检索补充并精排"
        ),
    ),
    Rule(
        "product_lookup_hybrid",
        0.9,
        lambda f: f.intent == "numeric" and _has_product(f),
        lambda f: f"问题问的是「{_names(f)}」的价格、库存或尺码等数字，先查商品表，再在该商品范围内混合检索并精排",
    ),
    Rule(
        "keyword_filter",
        0.75,
        lambda f: f.intent == "numeric" and not _has_product(f) and bool(f.brands or f.categories or f.model_codes),
        lambda f: "问数字但没有对应到具体商品，按品牌、类目或型号做关键词检索，再混合检索补充",
    ),
    Rule(
        "hybrid_rerank",
        0.7,
        lambda f: f.intent == "numeric" and not _has_product(f),
        lambda f: "问数字但没有识别出具体商品，混合检索后精排",
    ),
    Rule(
        "dense_rerank",
        0.8,
        lambda f: f.intent == "open",
        lambda f: "这是评价、体验类的开放问题，用语义检索召回更多口语化内容后精排",
    ),
    Rule(
        "hybrid_rerank",
        0.8,
        lambda f: f.intent == "fact" and _has_product(f),
        lambda f: f"识别到商品「{_names(f)}」，在该商品范围内混合检索后精排",
    ),
    Rule(
        "product_lookup_hybrid",
        0.6,
        lambda f: f.intent == "fact" and _has_product(f),
        lambda f: f"识别到商品「{_names(f)}」，先查商品表再在该商品范围内混合检索",
    ),
    Rule(
        "keyword_filter",
        0.8,
        lambda f: f.intent == "fact" and not _has_product(f) and bool(f.model_codes),
        lambda f: f"问题含型号「{'、'.join(f.model_codes)}」但商品表里没有对应商品，用关键词检索做精确匹配",
    ),
    Rule(
        "rewrite_hybrid_rerank",
        0.78,
        lambda f: f.intent == "fact" and not _has_product(f) and (f.length > 25 or f.colloquial),
        lambda f: "问题较长或口语化，先改写成规范的检索式，再混合检索并精排",
    ),
    Rule("hybrid_rerank", 0.7, lambda f: f.intent == "fact", lambda f: "一般事实问题，混合检索后精排"),
)


class RulesPolicy:
    """Scores every arm from the features and plans the best one under the budget."""

    def __init__(self, arms: dict[str, Arm] | None = None, rules: tuple[Rule, ...] = RULES):
        self.arms = arms if arms is not None else load_arms()
        if not self.arms:
            raise ValueError("RulesPolicy needs at least one arm")
        self.rules = rules

    def _fired(self, features: QueryFeatures) -> dict[str, Rule]:
        best: dict[str, Rule] = {}
        for rule in self.rules:
            if rule.arm in self.arms and rule.when(features):
                if rule.arm not in best or rule.score > best[rule.arm].score:
                    best[rule.arm] = rule
        return best

    def prior_scores(self, features: QueryFeatures) -> dict[str, float]:
        """A score in [0, 1] for every configured arm (the bandit's prior)."""
        fired = self._fired(features)
        return {
            name: fired[name].score if name in fired else (DEFAULT_ARM_SCORE if name == DEFAULT_ARM else BASE_SCORE)
            for name in self.arms
        }

    def choose(self, features: QueryFeatures, budget: PlanBudget | None = None) -> PolicyDecision:
        budget = budget or PlanBudget()
        fired = self._fired(features)
        scores = self.prior_scores(features)
        # Highest score first; ties keep the order of the arms file.
        name, plan = first_runnable(self.arms, sorted(self.arms, key=lambda arm: -scores[arm]), features, budget)
        rule = fired.get(name)
        reason = rule.reason(features) if rule else f"没有更具体的规则适用，使用{self.arms[name].description or name}"
        return PolicyDecision(
            arm=name,
            scores=scores,
            reason=_with_followup(features, reason).rstrip("。") + "。",
            plan=plan,
            source="rules",
        )


def _with_followup(features: QueryFeatures, reason: str) -> str:
    carried = features.carried_entity
    if carried is not None and not features.products:
        return f"这是追问，沿用上一轮的商品「{carried.name}」；{reason}"
    return reason
