"""AgentScope Studio sessions: every agent's messages in one Studio run, questions typed in Studio.

`agentscope.init(project, name)` names the run; workflows/studio_link.py registers it with Studio,
forwards every printed message (a class-level pre_print hook on AgentBase) and carries what the
user types (UserAgent's input method), reconnecting when Studio drops. So the planner, a real
ReActAgent, shows its reasoning (tool calls) and tool results by itself. The answerer and
inspector are pipeline stages, not agents; the two small AgentBase subclasses below present what
those stages produced as agents' replies, after the planner's messages, in the customer's language
(workflows/studio_texts.py). A model's answer is shown while it is written: one answerer message,
pushed again (same message id, which Studio updates in place) each time a sentence has passed the
inspector, then once more whole, with its sources.

Start the real Studio first: `npm install -g @agentscope/studio`, then `as_studio` (docs/usage.md).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from agentscope.agent import AgentBase, UserAgent
from agentscope.message import Msg

from citescope.workflows.answer_events import AnswerEvent, SentenceEvent, relay_answer
from citescope.workflows.pipeline import QuestionError
from citescope.workflows.result import QAResult
from citescope.workflows.sessions import new_session_id
from citescope.workflows.studio_link import ReconnectPolicy, StudioGone, StudioLink, registration
from citescope.workflows.studio_texts import (
    Language,
    answer_markdown,
    language_of,
    markdown_tool_results_hook,
    studio_texts,
    verdict_markdown,
)

EXIT_WORDS = {"/exit", "/quit", "exit", "quit", "q", "/退出", "退出", "结束", "結束"}
FORWARD_HOOK = "citescope_studio_forward"
MARKDOWN_HOOK = "citescope_markdown_tool_results"
OTLP_EXPORTER_LOGGER = "opentelemetry.exporter.otlp.proto.http.trace_exporter"
# frozen: one shared default is safe
DEFAULT_RECONNECT = ReconnectPolicy()


class PipelineStageAgent(AgentBase):
    """A stage the pipeline already ran, shown in Studio as an agent: reply(result) prints the
    stage's message (forwarded to Studio by the print hook) and returns it."""

    def __init__(self, name: str):
        super().__init__()
        self.name = name

    def render(self, result: QAResult, language: Language) -> Msg:
        raise NotImplementedError

    async def reply(self, result: QAResult, language: Language) -> Msg:
        msg = self.render(result, language)
        await self.print(msg)
        return msg

    async def say(self, text: str) -> None:
        """A message of the session's own (how to end it, why a question was not taken), as a reply
        of its own in Studio rather than a part of the last answer."""
        self._reply_id = uuid.uuid4().hex
        await self.print(Msg(self.name, text, "assistant"))

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        return None


class AnswererAgent(PipelineStageAgent):
    def __init__(self) -> None:
        super().__init__("answerer")

    def render(self, result: QAResult, language: Language) -> Msg:
        return Msg(
            self.name,
            answer_markdown(result, language),
            "assistant",
            metadata={
                "trace_id": result.trace_id,
                "session_id": result.session_id,
                "language": language,
                "refused": result.refused,
                "refusal_reason": result.refusal_reason,
                "degraded": result.degraded,
                "citations": [c.model_dump(mode="json") for c in result.citations],
                "conflicts": [c.model_dump(mode="json") for c in result.conflicts],
                "usage": result.usage.model_dump(mode="json"),  # model tokens and cost of this answer
            },
        )

    async def stream(
        self, events: AsyncIterator[SentenceEvent | AnswerEvent], question: str
    ) -> tuple[QAResult, Language]:
        """A streamed answer: one message, which Studio updates in place (every push carries the same
        message id, as AgentScope's own streamed replies do): the sentences as they pass the
        inspector, then the whole rendered answer with its sources and flags."""
        self._reply_id = uuid.uuid4().hex
        shown = Msg(self.name, "", "assistant")
        result: QAResult | None = None
        async for event in events:
            if isinstance(event, AnswerEvent):
                result = event.result
                break
            shown.content = str(shown.content) + event.text
            await self.print(shown, last=False)
        assert result is not None, "a streamed answer ends with its result"
        language = language_of(question, result.answer)
        whole = self.render(result, language)
        whole.id = shown.id
        await self.print(whole, last=True)
        return result, language


class InspectorAgent(PipelineStageAgent):
    def __init__(self) -> None:
        super().__init__("inspector")

    def render(self, result: QAResult, language: Language) -> Msg:
        report = result.inspection
        return Msg(
            self.name,
            verdict_markdown(result, language),
            "assistant",
            metadata={
                "trace_id": result.trace_id,
                "passed": None if report is None else report.passed,
                "report": None if report is None else report.model_dump(mode="json"),
            },
        )


class StudioSession:
    """One Studio run over an Assistant: ask() for a question from code, chat() for questions
    typed in Studio until the user types /exit or Studio stays gone. All turns share one
    conversation session."""

    def __init__(
        self,
        assistant: Any,
        studio_url: str,
        project: str = "citescope",
        name: str | None = None,
        session_id: str | None = None,
        reconnect: ReconnectPolicy = DEFAULT_RECONNECT,
        on_event: Callable[[str], None] | None = None,
    ):
        """assistant: a workflows.assistant.Assistant (warmed in connect()); on_event receives the
        link's connection news (lost, reconnected, gone) for the console."""
        self.assistant = assistant
        self.studio_url = studio_url.rstrip("/")
        self.project = project
        self.name = name
        self.reconnect = reconnect
        self.on_event = on_event
        self.session_id = session_id or new_session_id()  # every turn of this run joins one conversation
        self.results: list[QAResult] = []
        self.language: Language = "zh"  # the last question's; an empty line is answered in it
        self.studio_gone: StudioGone | None = None  # set when chat() ended because Studio stayed away
        self.link: StudioLink | None = None

    def connect(self) -> StudioSession:
        """Register the run with Studio (raises if Studio is unreachable) and warm the Assistant."""
        import agentscope
        from agentscope import _config
        from agentscope.tracing import setup_tracing

        agentscope.init(project=self.project, name=self.name)
        self.link = StudioLink(
            self.studio_url,
            registration(_config.run_id, _config.project, _config.name, _config.created_at),
            self.reconnect,
            self._on_link_event,
        ).open()
        UserAgent.override_class_input_method(self.link.input_method())
        # registered in this order, so Studio receives the Markdown copy of a tool result
        AgentBase.register_class_hook("pre_print", MARKDOWN_HOOK, markdown_tool_results_hook)
        AgentBase.register_class_hook("pre_print", FORWARD_HOOK, self.link.forward_hook)
        setup_tracing(endpoint=f"{self.studio_url}/v1/traces")
        _config.trace_enabled = True
        self.user = UserAgent("user")
        self.answerer = AnswererAgent()
        self.inspector = InspectorAgent()
        self.assistant.warm_up()
        return self

    @property
    def run_url(self) -> str:
        """The Studio page that shows this run."""
        if self.link is None:
            raise RuntimeError("the Studio link is not open yet: start() the session first")
        return self.link.url

    async def ask(self, question: str) -> QAResult:
        """Show the question as the user's, then the planner's, answerer's and inspector's messages."""
        await self.user.print(Msg(self.user.name, question, "user"))
        return await self._answer(question)

    async def chat(self) -> int:
        """Questions typed in Studio, answered one by one, until /exit, or until Studio went away
        and stayed away (then self.studio_gone says so); returns the turns answered."""
        texts = studio_texts()
        await self.answerer.say(texts.say("session_start", "zh") + "\n\n" + texts.say("session_start", "en"))
        while True:
            try:
                msg = await self.user()  # waits until the user types in the Studio page
            except StudioGone as gone:
                self.studio_gone = gone
                break
            text = (msg.get_text_content() or "").strip()
            if text.lower() in EXIT_WORDS:
                await self.answerer.say(texts.say("session_end", self.language, answers=len(self.results)))
                break
            if not text:
                await self.answerer.say(texts.say("empty_question", self.language))
                continue
            try:
                await self._answer(text)
            except QuestionError as exc:  # too long, not valid text: say why and wait for the next one
                await self.answerer.say(self._rejection(text, exc))
        return len(self.results)

    def close(self) -> None:
        """End the link (waiting, within the reconnect window, for an outage to deliver its messages)."""
        if self.link is not None:
            self.link.close()
            AgentBase.remove_class_hook("pre_print", FORWARD_HOOK)
            AgentBase.remove_class_hook("pre_print", MARKDOWN_HOOK)

    def _on_link_event(self, text: str) -> None:
        if self.link is not None and self.link.gone:
            # the run's spans cannot reach a Studio that is gone: the link said so once, the exporter
            # would say it again at every retry and at exit
            logging.getLogger(OTLP_EXPORTER_LOGGER).setLevel(logging.CRITICAL)
        if self.on_event is not None:
            self.on_event(text)

    async def _answer(self, question: str) -> QAResult:
        if self.assistant.pipeline.answerer is not None:  # a model writes it: shown as its sentences pass
            events = relay_answer(
                lambda listener: self.assistant.ask(question, session_id=self.session_id, listener=listener)
            )
            result, self.language = await self.answerer.stream(events, question)
        else:  # the extractive answer is complete at once: shown whole
            result = await self.assistant.ask(question, session_id=self.session_id)
            self.language = language_of(question, result.answer)
            await self.answerer(result, self.language)
        await self.inspector(result, self.language)
        self.results.append(result)
        return result

    def _rejection(self, question: str, error: QuestionError) -> str:
        texts, language = studio_texts(), language_of(question)
        limit = self.assistant.config.max_question_chars
        if len(question) > limit:
            return texts.say("question_too_long", language, length=len(question), limit=limit)
        return texts.say("question_rejected", language, reason=str(error))
