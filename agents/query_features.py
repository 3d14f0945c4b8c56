"""What the query analysis reads from a question (QueryFeatures) and the vector the bandit
learns from (QueryFeatures.vector, in FEATURE_NAMES order)."""

from __future__ import annotations

import re
from typing import Literal, get_args

import numpy as np
from pydantic import BaseModel, Field

from citescope.agents.entity_index import Entity
from citescope.agents.question_cues import COMPARISON_WORDS
from citescope.knowledge.shop_profile import ShopProfile

Intent = Literal["fact", "numeric", "comparison", "policy", "open", "out_of_scope"]
INTENTS: tuple[str, ...] = get_args(Intent)

# Each flag: a regex over the normalized question. Order in QUESTION_WORDS is the vector order.
# The kinds of question word as the strategy policy's features (learned weights are keyed by them,
# so they change only with a retrained policy); what counts as asking at all is question_cues'.
QUESTION_WORDS: dict[str, re.Pattern] = {
    "what": re.compile(r"什么|啥"),
    "how": re.compile(r"怎么|如何|怎样|咋"),
    "how_much": re.compile(r"多少|几|多大|多重|多久|多长|多高|多宽|多厚"),
    "which": re.compile(r"哪"),
    "whether": re.compile(r"是否|吗|能不能|可不可以|有没有|是不是|会不会|支不支持|行不行"),
    "why": re.compile(r"为什么|为啥|怎么会"),
    "compare": re.compile(COMPARISON_WORDS + r"|不同|还是", re.I),
}


class QueryFeatures(BaseModel):
    question: str
    canonical: str  # normalized, aliases replaced by canonical names
    length: int  # characters without whitespace
    question_words: list[str] = Field(default_factory=list)  # keys of QUESTION_WORDS present
    intent: Intent = "fact"
    products: list[Entity] = Field(default_factory=list)  # named in this question, in order
    brands: list[str] = Field(default_factory=list)
    categories: list[str] = Field(default_factory=list)
    model_codes: list[str] = Field(default_factory=list)
    # models of the shop's series its catalogue lacks (火焰8 beside 火焰7), which no document mentions
    unknown_models: list[str] = Field(default_factory=list)
    sizes: list[str] = Field(default_factory=list)
    size_label: str | None = None
    numbers: list[float] = Field(default_factory=list)  # outside product names and model codes
    height_cm: float | None = None
    weight_kg: float | None = None
    foot_length_cm: float | None = None
    price_limit: float | None = None
    asks_price_stock: bool = False
    asks_size: bool = False  # size table or size words (尺码, 脚长, 42码…)
    asks_size_advice: bool = False  # which size to pick, or body measures given
    asks_overview: bool = False  # what the product is like, as a whole (怎么样, 介绍一下)
    colloquial: bool = False
    is_followup: bool = False
    carried_entity: Entity | None = None
    # A follow-up in a conversation about no product ("保研率是多少" after "国学院有哪些下设系别"):
    # the conversation's opening question, which names the topic the follow-up leaves out.
    carried_topic: str | None = None
    # The questions a compound question is made of (北京冬奥会和冬残奥会的开幕日期分别是什么时候),
    # each searched alone by an arm step `for_each: part`; [] when it asks one thing.
    parts: list[str] = Field(default_factory=list)
    # the KB's aspect the question asks in other words, as the trace says it (agents/aspect_reading.py);
    # `question` then ends with the aspect in brackets
    read_aspect: str | None = None
    # The shop of the KB it was read against (None: no KB): its delivery zones are the documents' words
    # for the places the question names (knowledge/crosslingual.py). The KB's, not the question's, so
    # it is left out of the features' JSON (a run's results, the experience store).
    shop: ShopProfile | None = Field(default=None, exclude=True, repr=False)

    @property
    def focus_products(self) -> list[Entity]:
        """The products the question is about: named ones, else the one carried from the session."""
        if self.products:
            return self.products
        return [self.carried_entity] if self.carried_entity else []

    @property
    def product(self) -> Entity | None:
        focus = self.focus_products
        return focus[0] if focus else None

    @staticmethod
    def feature_names() -> list[str]:
        return list(FEATURE_NAMES)

    def vector(self) -> np.ndarray:
        focus = self.focus_products
        flags = {
            "bias": True,
            **{f"intent_{name}": self.intent == name for name in INTENTS},
            "has_product": any(e.product_id for e in focus),
            "has_named_entity": bool(focus),
            "multi_product": len(focus) > 1,
            "has_brand": bool(self.brands),
            "has_category": bool(self.categories),
            "has_model_code": bool(self.model_codes),
            "has_number": bool(self.numbers),
            "has_size": bool(self.sizes) or self.asks_size,
            "has_body_measure": any(v is not None for v in (self.height_cm, self.weight_kg, self.foot_length_cm)),
            "has_price_limit": self.price_limit is not None,
            "asks_price_stock": self.asks_price_stock,
            "asks_size_advice": self.asks_size_advice,
            "is_followup": self.is_followup,
            "has_carried_entity": self.carried_entity is not None,
            "colloquial": self.colloquial,
            **{f"qw_{name}": name in self.question_words for name in QUESTION_WORDS},
            "len_short": self.length <= 10,
            "len_medium": 10 < self.length <= 25,
            "len_long": self.length > 25,
        }
        return np.array([float(flags[name]) for name in FEATURE_NAMES], dtype=np.float64)


FEATURE_NAMES: tuple[str, ...] = (
    "bias",
    *(f"intent_{name}" for name in INTENTS),
    "has_product",
    "has_named_entity",
    "multi_product",
    "has_brand",
    "has_category",
    "has_model_code",
    "has_number",
    "has_size",
    "has_body_measure",
    "has_price_limit",
    "asks_price_stock",
    "asks_size_advice",
    "is_followup",
    "has_carried_entity",
    "colloquial",
    *(f"qw_{name}" for name in QUESTION_WORDS),
    "len_short",
    "len_medium",
    "len_long",
)
