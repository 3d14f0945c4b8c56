"""Stage gate: whether the evidence can carry an answer at all, before anything is generated.
A question about a model the shop lacks is refused by name (its evidence is about another model,
whatever it scores); weak best evidence (the rank's best score under refusal_threshold) is refused,
unless the answer is a finding read off a named product's own tables. Evidence in the hedging band
(under hedge_threshold, a KB's self-calibrated value) passes as doubtful: an answer the extractive
answerer would hedge is then refused instead (agents/extractive/answerer.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from citescope.agents.query_analysis import QueryFeatures
from citescope.tools.products import SizeAdvice

GateRefusal = Literal["unknown_model", "no_evidence", "weak_evidence"]


@dataclass(frozen=True)
class GateInput:
    features: QueryFeatures
    best_score: float | None  # the rank's best calibrated score; None: no evidence
    threshold: float  # refusal_threshold
    outputs: Mapping[str, Mapping]  # skill -> its latest result data (Retrieved.outputs)
    advice: SizeAdvice | None = None  # a size the size_recommend skill worked out
    hedge_threshold: float = 0.0  # the hedging band's top: [threshold, hedge_threshold); 0 = no band


@dataclass(frozen=True)
class GateVerdict:
    refusal: GateRefusal | None = None  # None: go on and answer
    # the best score is in the hedging band: an answer that would hedge ("根据现有资料") is refused instead
    doubtful: bool = False

    @property
    def passed(self) -> bool:
        return self.refusal is None

    @property
    def about_evidence(self) -> bool:
        """Whether the verdict is about the evidence (so a refusal says when it disagrees with
        itself), not about the question (a model the shop lacks)."""
        return self.refusal != "unknown_model"


class Gate:
    def run(self, given: GateInput) -> GateVerdict:
        features, best = given.features, given.best_score
        if features.unknown_models and not features.focus_products:
            # 火焰8 when the shop sells the 火焰7: its evidence is about another model, whatever it scores
            return GateVerdict("unknown_model")
        if best is None:
            return GateVerdict("no_evidence")
        tables = read_off_tables(features, given.outputs, given.advice)
        if best < given.threshold and not tables:
            return GateVerdict("weak_evidence")
        return GateVerdict(doubtful=best < given.hedge_threshold and not tables)


def read_off_tables(features: QueryFeatures, outputs: Mapping[str, Mapping], advice: SizeAdvice | None) -> bool:
    """Is the answer a finding read off a named product's own tables: the size size_recommend worked
    out, or the price and stock of a product the question names (product_lookup found its SKUs)? Such
    evidence is relevant by construction, so the gate, which measures how well text matches the
    question ("身高183 体重85kg 峰刃穿什么码" scores 0.09 against the size table it is answered from),
    does not apply; what the answer says still has to pass the inspector."""
    if advice is not None:
        return True
    found = outputs.get("product_lookup") or {}
    named = {p.product_id for p in features.products}
    return features.asks_price_stock and bool(found.get("skus")) and found.get("product_id") in named
