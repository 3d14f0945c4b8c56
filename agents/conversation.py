"""What both models are told of the conversation: the product it is about and its last turns.

The session resolves a follow-up's product (workflows/sessions.py keeps it, the analyzer carries
it into "它有几种颜色？" as `carried_entity`); the offline engine searches with it. A model reads the
same product, and the last few turns, in the 【对话上下文】 slot of prompts/planner.md and
prompts/answerer.md, within a token bound. The context is for reading references ("它", "那款"),
never evidence: past answers lose their 【citation】 marks, so no id of an earlier turn's evidence
can be copied into this answer.

Tokens are counted by `estimate_tokens`, a cheap over-estimate that needs no tokenizer: one token
per CJK character (Qwen's and OpenAI's tokenizers spend fewer on common Chinese: about 0.6 to 1
per character) plus one per four other characters, spaces included (the usual rule of thumb for
English text). Over-estimating keeps the real prompt inside the bound with either tokenizer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from citescope.agents.entity_index import Entity
from citescope.knowledge.text import CJK_CHAR

NONE_TEXT = "无"
_CITATION = re.compile(r"【[^】]*】")
_CUT_MARK = "…"
_TURNS_HEADER = "最近几轮对话（由早到晚）："


def estimate_tokens(text: str) -> int:
    """An over-estimate of a text's tokens: CJK characters one each, other characters four a token."""
    cjk = len(CJK_CHAR.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


@dataclass(frozen=True)
class PastTurn:
    question: str
    answer: str


@dataclass(frozen=True)
class Conversation:
    """A question's conversation as the models are told it."""

    products: tuple[Entity, ...] = ()  # what the session resolved the question to be about
    topic: str | None = None  # the opening question, for a follow-up about no product
    turns: tuple[PastTurn, ...] = ()  # oldest first

    @classmethod
    def of(cls, products: Sequence[Entity], topic: str | None, turns: Sequence[PastTurn], last: int) -> Conversation:
        return cls(tuple(products), topic, tuple(turns[-last:]) if last > 0 else ())

    def render(self, max_tokens: int) -> str:
        """The 【对话上下文】 text: the product line, then the newest turns that fit in max_tokens
        (oldest dropped first; a newest turn too long alone keeps its question and a cut answer)."""
        if not (self.products or self.topic or self.turns) or max_tokens <= 0:
            return NONE_TEXT
        head = []
        if self.products:
            named = "；".join(f"{p.name}（{p.product_id}）" if p.product_id else p.name for p in self.products)
            head.append(f"当前讨论的商品：{named}")
        elif self.topic:
            head.append(f"对话开始时的问题：{self.topic}")
        budget = max_tokens - sum(estimate_tokens(line) + 1 for line in [*head, _TURNS_HEADER])
        kept: list[str] = []
        for turn in reversed(self.turns):
            question = f"顾客：{turn.question.strip()}"
            answer = f"客服：{_CITATION.sub('', turn.answer).strip()}"
            cost = estimate_tokens(question) + estimate_tokens(answer) + 2
            if cost > budget:
                if not kept:  # the newest turn alone: its question, and as much of the answer as fits
                    room = budget - estimate_tokens(question) - 2 - estimate_tokens(_CUT_MARK)
                    cut = _cut_to(answer, room)
                    if cut:
                        kept.append(f"{question}\n{cut}{_CUT_MARK}")
                break
            kept.append(f"{question}\n{answer}")
            budget -= cost
        lines = head + ([_TURNS_HEADER, *reversed(kept)] if kept else [])
        return "\n".join(lines) if lines else NONE_TEXT


def _cut_to(text: str, tokens: int) -> str:
    """The longest beginning of text whose estimate is within `tokens`."""
    if tokens <= 0:
        return ""
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if estimate_tokens(text[:middle]) <= tokens:
            low = middle
        else:
            high = middle - 1
    return text[:low]
