"""AgentScope Studio sessions: every agent's messages in one Studio run, questions typed in Studio.

`agentscope.init(studio_url=...)` registers the run and installs a class-level pre_print hook on
AgentBase that forwards every printed message to Studio (POST /trpc/pushMessage) — whether or
not console output is on. So the planner, a real ReActAgent, shows its reasoning (tool calls)
and tool results by itself. The answerer and inspector are pipeline stages, not agents; the two
small AgentBase subclasses below present what those stages produced as agents' replies, after the
planner's messages. The user types into the Studio page through UserAgent, whose input method
`init` switched to StudioUserInput (socket.io namespace /python).

Start the real Studio first: `npm install -g @agentscope/studio`, then `as_studio` (docs/usage.md).
"""
from __future__ import annotations

from typing import Any

from agentscope.agent import AgentBase, UserAgent
from agentscope.message import Msg

from workflows.pipeline import QuestionError
from workflows.result import QAResult
from workflows.sessions import new_session_id

EXIT_WORDS = {"exit", "quit", "q", "退出", "结束"}


class PipelineStageAgent(AgentBase):
    """A stage the pipeline already ran, shown in Studio as an agent: reply(result) prints the
    stage's message (forwarded to Studio by the print hook) and returns it."""

    def __init__(self, name: str):
        super().__init__()
        self.name = name

    def render(self, result: QAResult) -> Msg:
        raise NotImplementedError

    async def reply(self, result: QAResult) -> Msg:
        msg = self.render(result)
        await self.print(msg)
        return msg

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        return None


class AnswererAgent(PipelineStageAgent):
    def __init__(self) -> None:
        super().__init__("answerer")

    def render(self, result: QAResult) -> Msg:
        return Msg(self.name, result.render_text(), "assistant", metadata={
            "trace_id": result.trace_id, "session_id": result.session_id,
            "refused": result.refused, "refusal_reason": result.refusal_reason, "degraded": result.degraded,
            "citations": [c.model_dump(mode="json") for c in result.citations],
            "conflicts": [c.model_dump(mode="json") for c in result.conflicts],
        })


class InspectorAgent(PipelineStageAgent):
    def __init__(self) -> None:
        super().__init__("inspector")

    def render(self, result: QAResult) -> Msg:
        report = result.inspection
        return Msg(self.name, verdict_text(result), "assistant", metadata={
            "trace_id": result.trace_id, "passed": None if report is None else report.passed,
            "report": None if report is None else report.model_dump(mode="json"),
        })


def verdict_text(result: QAResult) -> str:
    """The inspector's verdict in Chinese, one line plus findings."""
    report = result.inspection
    if result.clarification is not None:
        return "未审核：缺少必要信息，先向顾客追问，没有检索作答。"
    if result.refusal_reason == "unknown_model":
        models = "、".join(result.features.get("unknown_models") or [])
        return f"未审核：店内商品中没有所问的型号（{models}），直接拒答（unknown_model），没有生成回答。"
    if report is None:
        return f"未审核：证据不足，直接拒答（{result.refusal_reason or 'refused'}），没有生成回答。"
    head = "审核通过" if report.passed and not result.refused else "审核未通过，已拒答" if result.refused else "审核未通过"
    line = (f"{head}：事实句 {report.factual_sentences} 句，引用覆盖率 {report.coverage:.0%}，"
            f"引用 {len(report.cited_ids)} 个（{'、'.join(report.cited_ids) or '无'}）")
    if result.regenerated:
        line += "；第一次回答未通过，已按审核意见重写"
    if result.conflicts:
        line += f"；已披露来源冲突：{'、'.join(c.attribute for c in result.conflicts)}"
    findings = report.findings()
    return line + ("" if findings == "- 无" else "\n" + findings)


class StudioSession:
    """One Studio run over an Assistant: ask() for a question from code, chat() for questions
    typed in Studio until the user types exit. All turns share one conversation session."""

    def __init__(self, assistant: Any, studio_url: str, project: str = "citescope", name: str | None = None,
                 session_id: str | None = None):
        """assistant: a workflows.assistant.Assistant (warmed in connect())."""
        self.assistant = assistant
        self.studio_url = studio_url.rstrip("/")
        self.project = project
        self.name = name
        self.session_id = session_id or new_session_id()  # every turn of this run joins one conversation
        self.results: list[QAResult] = []

    def connect(self) -> "StudioSession":
        """Register the run with Studio (raises if Studio is unreachable) and warm the Assistant."""
        import agentscope

        agentscope.init(project=self.project, name=self.name, studio_url=self.studio_url)
        self.user = UserAgent("user")
        self.answerer = AnswererAgent()
        self.inspector = InspectorAgent()
        self.assistant.warm_up()
        return self

    async def ask(self, question: str) -> QAResult:
        """Show the question as the user's, then the planner's, answerer's and inspector's messages."""
        await self.user.print(Msg(self.user.name, question, "user"))
        return await self._answer(question)

    async def chat(self) -> int:
        """Questions typed in Studio, answered one by one, until exit; returns the turns answered."""
        while True:
            msg = await self.user()  # blocks until the user types in the Studio page
            text = (msg.get_text_content() or "").strip()
            if text.lower() in EXIT_WORDS:
                break
            try:
                await self._answer(text)
            except QuestionError as exc:  # e.g. an empty line: say why and wait for the next one
                await self.answerer.print(Msg(self.answerer.name, str(exc), "assistant"))
        return len(self.results)

    async def _answer(self, question: str) -> QAResult:
        result = await self.assistant.ask(question, session_id=self.session_id)
        await self.answerer(result)
        await self.inspector(result)
        self.results.append(result)
        return result
