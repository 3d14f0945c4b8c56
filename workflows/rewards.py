"""The reward a strategy arm earns for one round, in [0, 1].

Implicit signals come with every answer; explicit feedback (👍/👎) arrives later, from the
customer, and dominates when it exists (weights in docs/strategy.md):

    implicit = 0.5·inspector passed + 0.3·citation coverage + 0.2·(not refused, or refusal expected)
               − 0.1·degraded − 0.3·needed skill not called     (clipped to [0, 1])
    reward   = implicit                                          without feedback
             = 0.7·explicit + 0.3·implicit                       explicit: 👍 1, 👎 0

A refusal earns the 0.2 only when something said refusing was right (an out-of-scope question):
otherwise a refusal means the arm found no evidence good enough to answer from.

Some questions ask for a finding only one skill works out: which size to pick comes from
size_recommend, and a size-table row quoted instead passes the inspector just as well. Without
the penalty the learned policy drifts such questions to any arm whose quote passes.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

# A question feature (agents.query_analysis.QueryFeatures) -> the skill whose finding answers it.
NEEDED_SKILLS = {"asks_size_advice": "size_recommend"}


def missed_skill(features: dict, called: set[str]) -> str | None:
    """The skill the question needed and the round never called, if any."""
    return next((skill for flag, skill in NEEDED_SKILLS.items() if features.get(flag) and skill not in called), None)


class RewardWeights(BaseModel):
    passed: float = Field(default=0.5, ge=0)
    coverage: float = Field(default=0.3, ge=0)
    not_refused: float = Field(default=0.2, ge=0)
    degraded_penalty: float = Field(default=0.1, ge=0)
    skill_missed_penalty: float = Field(default=0.3, ge=0)
    explicit: float = Field(default=0.7, ge=0, le=1)  # share of the reward feedback takes when it exists


class RewardSignals(BaseModel):
    """What one round tells about its arm."""

    passed: bool = False  # the inspector passed the answer
    coverage: float = Field(default=0.0, ge=0, le=1)  # cited factual sentences / factual sentences
    refused: bool = False
    refusal_expected: bool = False  # e.g. an out-of-scope question: refusing is the right outcome
    degraded: bool = False
    skill_missed: bool = False  # the question needed a skill (NEEDED_SKILLS) the arm never called
    rating: int | None = None  # +1 👍, -1 👎, None: no feedback (yet)


def implicit_reward(signals: RewardSignals, weights: RewardWeights | None = None) -> float:
    w = weights or RewardWeights()
    value = (
        w.passed * signals.passed
        + w.coverage * signals.coverage
        + w.not_refused * (not signals.refused or signals.refusal_expected)
        - w.degraded_penalty * signals.degraded
        - w.skill_missed_penalty * signals.skill_missed
    )
    return min(1.0, max(0.0, value))


def explicit_reward(rating: int) -> float:
    if rating not in (1, -1):
        raise ValueError(f"a rating is +1 (👍) or -1 (👎), got {rating!r}")
    return 1.0 if rating == 1 else 0.0


def reward(signals: RewardSignals, weights: RewardWeights | None = None) -> float:
    """The round's reward: implicit alone, or blended with the feedback, which dominates."""
    w = weights or RewardWeights()
    implicit = implicit_reward(signals, w)
    if signals.rating is None:
        return implicit
    return w.explicit * explicit_reward(signals.rating) + (1 - w.explicit) * implicit


def parse_rating(text: str | int) -> int:
    """'up' / 'down' / '+1' / '-1' / 👍 / 👎 -> +1 or -1."""
    value = str(text).strip().lower()
    if value in ("up", "+1", "1", "👍"):
        return 1
    if value in ("down", "-1", "👎"):
        return -1
    raise ValueError(f"rating must be up or down (👍/👎), got {text!r}")
