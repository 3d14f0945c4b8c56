"""Answerers: evidence (+ conflicts, + the inspector's findings on a retry) -> a cited answer text.

Two implementations share one call shape, `run(question, evidence, conflicts, feedback)`:
ExtractiveAnswerer (agents/extractive.py, offline default, synchronous) and LLMAnswerer (a chat
model filling prompts/answerer.md, or answerer_retry.md with the findings; asynchronous, every
request budgeted, timed out and retried through agents.budget). `generate` calls either.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Awaitable, Collection, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from agentscope.formatter import FormatterBase
from agentscope.message import Msg
from agentscope.model import ChatModelBase

from citescope.agents.budget import BudgetTracker, ModelFailure, RetryPolicy, budgeted_model_call
from citescope.agents.citations import part_not_found
from citescope.agents.conversation import NONE_TEXT
from citescope.agents.evidence import EvidencePool, render_conflicts
from citescope.agents.extractive import ExtractiveAnswerer
from citescope.agents.inspector import InspectionReport
from citescope.agents.prompts import load_prompt
from citescope.knowledge.shop_profile import ShopProfile
from citescope.tools.base import EvidenceHit

if TYPE_CHECKING:
    from citescope.agents.conflicts import Conflict
    from citescope.tools.products import SizeAdvice

__all__ = ["Answerer", "ExtractiveAnswerer", "LLMAnswerer", "TextReader", "generate"]

AnswerLanguage = Literal["auto", "zh", "en"]
# rule 8 of the answerer prompts, Chinese then the English summary's words, per answer_language
LANGUAGE_RULES: dict[str, tuple[str, str]] = {
    "auto": (
        "使用用户提问的语言回答（中文提问用中文，英文提问用英文，引用 ID 保持原样）。",
        "answer in the user's language.",
    ),
    "zh": ("一律用中文回答（英文提问也用中文），引用 ID 保持原样。", "always answer in Chinese."),
    "en": ("一律用英文回答（中文提问也用英文），引用 ID 保持原样。", "always answer in English."),
}


class Answerer(Protocol):
    def run(
        self,
        question: str,
        evidence: Sequence[EvidenceHit],
        conflicts: Sequence[Conflict] = (),
        feedback: InspectionReport | None = None,
    ) -> str | Awaitable[str]: ...


def answer_prompt(
    question: str,
    evidence: Sequence[EvidenceHit],
    conflicts: Sequence[Conflict] = (),
    feedback: InspectionReport | None = None,
    advice: SizeAdvice | None = None,
    shop: ShopProfile | None = None,
    conversation: str = NONE_TEXT,
    language: AnswerLanguage = "auto",
    siblings: Collection[str] = frozenset(),
) -> str:
    """The filled answerer prompt; with feedback, the retry prompt carrying the findings. advice:
    what a structured skill worked out (a size), given as 【工具结论】 with the ids it rests on. shop:
    the KB's shop, whose name the prompt gives (None: the neutral 本店). conversation: the rendered
    【对话上下文】 (agents/conversation.py). language: answer_language (auto: the question's).
    siblings: evidence ids about another entity of the kind asked (Ranking.siblings), marked as such."""
    rule, rule_en = LANGUAGE_RULES[language]
    values = {
        "conversation": conversation,
        "language_rule": rule,
        "language_rule_en": rule_en,
        "shop": (shop or ShopProfile()).prompt_name,
        "question": question,
        "evidence": EvidencePool.render(evidence, siblings),
        "conflicts": render_conflicts(conflicts),
        "skill_findings": advice.describe() if advice is not None else "无",
        # the fixed refusals, from the same files the pipeline says them from
        "refusal": load_prompt("refusal").strip(),
        "refusal_en": load_prompt("refusal_en").strip(),
        # the sentence for a part nothing answers, which the inspector reads as no claim
        "part_not_found": part_not_found("未查到的部分"),
        "part_not_found_en": part_not_found("what was not found", True),
    }
    if feedback is None:
        return load_prompt("answerer", **values)
    return load_prompt("answerer_retry", findings=feedback.findings(), **values)


class LLMAnswerer:
    """A chat model answering from the evidence; raises ModelFailure when it cannot."""

    def __init__(
        self,
        model: ChatModelBase,
        formatter: FormatterBase,
        retry: RetryPolicy | None = None,
        shop: ShopProfile | None = None,
        language: AnswerLanguage = "auto",
        name: str | None = None,
    ):
        """shop: the profile of the KB it answers from (KnowledgeBase.shop), named in its prompt.
        language: the answer_language setting. name: how the route and trace call it (default: the
        model's name)."""
        self.model = model
        self.formatter = formatter
        self.retry = retry or RetryPolicy()
        self.shop = shop
        self.language: AnswerLanguage = language
        self._name = name

    @property
    def name(self) -> str:
        return self._name or self.model.model_name

    async def run(
        self,
        question: str,
        evidence: Sequence[EvidenceHit],
        conflicts: Sequence[Conflict] = (),
        feedback: InspectionReport | None = None,
        budget: BudgetTracker | None = None,
        advice: SizeAdvice | None = None,
        conversation: str = NONE_TEXT,
        reader: TextReader | None = None,
        siblings: Collection[str] = frozenset(),
    ) -> str:
        """reader: told the reply's text each time it grows while the model streams it (the
        streamed answer, workflows/stages/stream.py); once it has shown anything, a failed attempt
        is not retried (the text would start over). siblings: evidence ids about another entity of the
        kind asked, marked so in the prompt."""
        tracker = budget or BudgetTracker()
        prompt = answer_prompt(
            question, evidence, conflicts, feedback, advice, self.shop, conversation, self.language, siblings
        )
        messages = await self.formatter.format([Msg("user", prompt, "user")])
        if reader is None:
            response = await budgeted_model_call(self.model, messages, tracker, self.retry, validate=_has_text)
        else:
            watched = _WatchedModel(self.model, reader)
            response = await budgeted_model_call(
                watched, messages, tracker, self.retry, validate=_has_text, may_retry=reader.may_retry
            )
        return _text_of(response)


class TextReader(Protocol):
    """What reads a reply while it is streamed (workflows/stages/stream.py)."""

    def start(self) -> None:
        """An attempt starts: its reply starts over."""

    async def read(self, text: str) -> bool:
        """The reply's text so far; False: read no further (the stream is closed, which is no
        failure of the model: the reply is the text so far)."""

    def may_retry(self) -> bool:
        """Whether a failed attempt may start the reply over."""


class _WatchedModel:
    """A chat model whose streamed reply is shown to a TextReader chunk by chunk (AgentScope's
    chunks carry the text accumulated so far); a reply that is not streamed is shown once."""

    def __init__(self, model: ChatModelBase, reader: TextReader):
        self.model, self.reader = model, reader
        self.model_name = model.model_name

    async def __call__(self, messages: list[dict], **kwargs: Any) -> Any:
        self.reader.start()
        response = await self.model(messages, **kwargs)
        if not isinstance(response, AsyncGenerator):
            await self.reader.read(_text_of(response))
            return response
        return self._watched(response)

    async def _watched(self, chunks: AsyncGenerator) -> AsyncGenerator:
        try:
            async for chunk in chunks:
                yield chunk
                if not await self.reader.read(_text_of(chunk)):
                    break
        finally:  # a stream stopped early closes its HTTP response now, not when collected
            await chunks.aclose()


def _text_of(response) -> str:
    return "".join(block.get("text", "") for block in response.content if block.get("type") == "text").strip()


def _has_text(response) -> None:
    if not _text_of(response):
        raise ModelFailure("the answerer model returned no text")


async def generate(
    answerer: Answerer,
    question: str,
    evidence: Sequence[EvidenceHit],
    conflicts: Sequence[Conflict] = (),
    feedback: InspectionReport | None = None,
    budget: BudgetTracker | None = None,
    advice: SizeAdvice | None = None,
    overview: Sequence[str] = (),
    conversation: str = NONE_TEXT,
    reader: TextReader | None = None,
    siblings: Collection[str] = frozenset(),
) -> str:
    """Run either kind of answerer; only a model-backed one spends the question's budget. advice:
    a size the size_recommend skill worked out, which the extractive answerer states and a model
    is given as 【工具结论】. overview: the evidence ids of the page openings that answer a question
    about what a product is like (a model reads them as it reads any evidence). conversation: the
    rendered context a model reads (the extractive answerer reads the carried product already).
    reader: reads a model's reply while it is streamed (LLMAnswerer.run). siblings: evidence ids about
    another entity of the kind asked, which a model's prompt marks (the extractive answerer is told them
    by its own run's `siblings`)."""
    if isinstance(answerer, LLMAnswerer):
        return await answerer.run(
            question,
            evidence,
            conflicts,
            feedback,
            budget=budget,
            advice=advice,
            conversation=conversation,
            reader=reader,
            siblings=siblings,
        )
    if isinstance(answerer, ExtractiveAnswerer):
        return answerer.run(question, evidence, conflicts, feedback, advice=advice, overview=overview)
    text = answerer.run(question, evidence, conflicts, feedback)
    return await text if inspect.isawaitable(text) else text
