"""A contextual bandit over the strategy arms that starts from the rules and learns from rewards.

Disjoint LinUCB: per arm, the Gram matrix G = Σ x xᵀ and b = Σ r x of the rounds it was played
in, over the unit-normalised `QueryFeatures.vector()`. The rules' prior score p (RulesPolicy)
is the warm start, counted as `prior_weight` pseudo-observations:

    n(x) = xᵀ G x                  how much experience the arm has near x (x seen n times: n)
    μ(x) = xᵀ (ridge·I + G)⁻¹ b   the learned reward (ridge regression)
    m(x) = (w·p(x) + n(x)·μ(x)) / (w + n(x))          w = prior_weight
    UCB  = m(x) + alpha · sqrt(xᵀ (w·I + G)⁻¹ x)

With no experience n = 0, so m = p and every arm gets the same bonus: round 0 ranks the arms
exactly as the rules do. The prior fades as the arm's own experience in that context grows.
`update` needs only the vector, the arm and the reward, so delayed feedback can re-update a round
(`update(x, arm, new - old, count=False)`: same observation, corrected reward).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from citescope.agents.arms import Arm, PlanBudget, first_runnable
from citescope.agents.policy import PolicyDecision, RulesPolicy
from citescope.agents.query_analysis import FEATURE_NAMES, QueryFeatures

STATE_VERSION = 1
DEFAULT_ALPHA = 0.3
DEFAULT_PRIOR_WEIGHT = 4.0
DEFAULT_RIDGE = 0.05
_LITTLE_EXPERIENCE = 1.0  # below this many observations near x, the rules' word stands


def unit(vector: np.ndarray) -> np.ndarray:
    """The context as the bandit sees it: the feature vector scaled to length 1."""
    vector = np.asarray(vector, dtype=np.float64)
    norm = np.linalg.norm(vector)
    return vector / norm if norm > 0 else vector


@dataclass(frozen=True)
class ArmEstimate:
    """What the bandit believes about one arm in one context."""

    arm: str
    prior: float  # the rules' score
    experience: float  # n(x): observations of this arm near this context
    learned: float  # μ(x): the reward learned from them
    mean: float  # m(x): prior and learned, blended by experience
    width: float  # confidence width
    score: float  # what the arm is ranked by (UCB, or a Thompson draw)


class LinUCBPolicy:
    """LinUCB warm-started from the rules; `choose` has RulesPolicy's interface (source "bandit")."""

    def __init__(
        self,
        arms: dict[str, Arm] | None = None,
        rules: RulesPolicy | None = None,
        alpha: float = DEFAULT_ALPHA,
        prior_weight: float = DEFAULT_PRIOR_WEIGHT,
        ridge: float = DEFAULT_RIDGE,
        feature_names: tuple[str, ...] = FEATURE_NAMES,
        seed: int = 0,
    ):
        self.rules = rules or RulesPolicy(arms)
        self.arms = self.rules.arms
        if alpha < 0 or prior_weight <= 0 or ridge <= 0:
            raise ValueError("LinUCBPolicy needs alpha >= 0, prior_weight > 0 and ridge > 0")
        self.alpha, self.prior_weight, self.ridge, self.seed = float(alpha), float(prior_weight), float(ridge), seed
        self.feature_names = tuple(feature_names)
        dim = len(self.feature_names)
        self.gram = {name: np.zeros((dim, dim)) for name in self.arms}
        self.b = {name: np.zeros(dim) for name in self.arms}
        self.count = {name: 0 for name in self.arms}

    @property
    def rounds(self) -> int:
        return sum(self.count.values())

    # -- estimates --------------------------------------------------------------------------
    def estimates(self, features: QueryFeatures) -> dict[str, ArmEstimate]:
        return self.estimates_for(features.vector(), self.rules.prior_scores(features))

    def estimates_for(self, vector: np.ndarray, priors: dict[str, float]) -> dict[str, ArmEstimate]:
        """Every arm's estimate for a raw feature vector and the rules' priors for it."""
        x = unit(vector)
        identity = np.eye(len(x))
        parts = []
        for name in self.arms:
            gram, prior = self.gram[name], float(priors.get(name, 0.0))
            experience = float(x @ gram @ x)
            learned = 0.0
            if self.count[name]:
                learned = float(x @ np.linalg.solve(self.ridge * identity + gram, self.b[name]))
            mean = (self.prior_weight * prior + experience * learned) / (self.prior_weight + experience)
            width = float(np.sqrt(max(float(x @ np.linalg.solve(self.prior_weight * identity + gram, x)), 0.0)))
            parts.append((name, prior, experience, learned, mean, width))
        bonuses = self._exploration(x, [width for *_, width in parts])
        return {
            name: ArmEstimate(name, prior, experience, learned, mean, width, mean + bonus)
            for (name, prior, experience, learned, mean, width), bonus in zip(parts, bonuses, strict=False)
        }

    def _exploration(self, x: np.ndarray, widths: list[float]) -> list[float]:
        """The optimism added to each arm's mean (arms in file order): the confidence width."""
        return [self.alpha * width for width in widths]

    # -- decisions --------------------------------------------------------------------------
    def choose(self, features: QueryFeatures, budget: PlanBudget | None = None) -> PolicyDecision:
        budget = budget or PlanBudget()
        estimates = self.estimates(features)
        rules_decision = self.rules.choose(features, budget)
        # Highest score first, ties in arms-file order; an arm with nothing to call gives way.
        name, plan = first_runnable(
            self.arms, sorted(self.arms, key=lambda arm: -estimates[arm].score), features, budget
        )
        scores = {arm: round(e.score, 4) for arm, e in estimates.items()}
        return PolicyDecision(
            arm=name, scores=scores, plan=plan, source="bandit", reason=explain(name, estimates, rules_decision)
        )

    def update(self, vector: np.ndarray, arm: str, reward: float, count: bool = True) -> None:
        """Learn one round: arm `arm` earned `reward` for this feature vector. count=False adds a
        reward correction to an observation already counted (delayed feedback)."""
        if arm not in self.arms:
            raise KeyError(f"unknown arm {arm!r}; arms: {list(self.arms)}")
        x = unit(vector)
        if x.shape != (len(self.feature_names),):
            raise ValueError(f"feature vector has {x.shape} entries, the policy expects {len(self.feature_names)}")
        if count:
            self.gram[arm] += np.outer(x, x)
            self.count[arm] += 1
        self.b[arm] += float(reward) * x

    # -- persistence ------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """JSON-able learned state (hyper-parameters included)."""
        return {
            "version": STATE_VERSION,
            "kind": type(self).__name__,
            "feature_names": list(self.feature_names),
            "alpha": self.alpha,
            "prior_weight": self.prior_weight,
            "ridge": self.ridge,
            "seed": self.seed,
            "arms": {
                name: {"count": self.count[name], "gram": self.gram[name].tolist(), "b": self.b[name].tolist()}
                for name in self.arms
            },
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore learned state (the hyper-parameters stay this instance's: they are config).
        Stats are matched by feature and arm name, so a feature or arm added since starts from
        the prior and one removed is dropped."""
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"bandit state version {state.get('version')!r}; this code reads {STATE_VERSION}")
        saved = list(state["feature_names"])
        kept = [(i, saved.index(name)) for i, name in enumerate(self.feature_names) if name in saved]
        new = np.array([i for i, _ in kept], dtype=int)
        old = np.array([j for _, j in kept], dtype=int)
        dim = len(self.feature_names)
        for name in self.arms:
            arm_state = state["arms"].get(name)
            gram, b = np.zeros((dim, dim)), np.zeros(dim)
            if arm_state is not None:
                gram[np.ix_(new, new)] = np.asarray(arm_state["gram"], dtype=np.float64)[np.ix_(old, old)]
                b[new] = np.asarray(arm_state["b"], dtype=np.float64)[old]
            self.gram[name], self.b[name] = gram, b
            self.count[name] = int(arm_state["count"]) if arm_state is not None else 0


class LinearThompsonPolicy(LinUCBPolicy):
    """Thompson sampling on the same estimates: the bonus is a normal draw scaled by the width.
    The draw is seeded by (seed, rounds learned, context), so a decision is reproducible."""

    def _exploration(self, x: np.ndarray, widths: list[float]) -> list[float]:
        key = hashlib.sha256(f"{self.seed}|{self.rounds}|{np.round(x, 6).tobytes().hex()}".encode()).digest()
        draws = np.random.default_rng(int.from_bytes(key[:8], "little")).standard_normal(len(widths))
        return [self.alpha * width * float(z) for width, z in zip(widths, draws, strict=False)]


def explain(chosen: str, estimates: dict[str, ArmEstimate], rules: PolicyDecision) -> str:
    """One Chinese sentence: what the rules said, what experience says, why this arm."""
    pick, favourite = estimates[chosen], estimates[rules.arm]
    if chosen == rules.arm and pick.experience < _LITTLE_EXPERIENCE:
        return f"同类问题的经验还很少（约 {pick.experience:.1f} 次），沿用规则先验：{rules.reason.rstrip('。')}。"
    if chosen == rules.arm:
        return (
            f"规则首选「{chosen}」（先验 {pick.prior:.2f}），同类问题约 {pick.experience:.0f} 次经验的回报估计为 "
            f"{pick.learned:.2f}，综合后仍是最佳，继续选用。"
        )
    if pick.mean < max(e.mean for e in estimates.values()):
        return (
            f"「{chosen}」在同类问题上经验较少（约 {pick.experience:.1f} 次），加上探索项后得分 {pick.score:.2f} 最高，"
            f"先试探它；规则首选「{rules.arm}」目前的估计为 {favourite.mean:.2f}。"
        )
    if pick.experience >= _LITTLE_EXPERIENCE:
        return (
            f"经验改变了选择：同类问题上「{chosen}」约 {pick.experience:.0f} 次经验的回报估计为 {pick.learned:.2f}，"
            f"综合 {pick.mean:.2f} 高于规则首选「{rules.arm}」的 {favourite.mean:.2f}"
            f"（先验 {favourite.prior:.2f}），因此改用前者。"
        )
    return (
        f"经验改变了选择：规则首选「{rules.arm}」在同类问题上约 {favourite.experience:.0f} 次经验的回报只有 "
        f"{favourite.learned:.2f}（先验 {favourite.prior:.2f}），综合降到 {favourite.mean:.2f}，低于「{chosen}」的先验 "
        f"{pick.prior:.2f}，因此改用后者。"
    )
