"""The commands of a conversation: ask, chat, and what follows an answer (trace, feedback)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape
from rich.prompt import Prompt

from citescope.knowledge.filters import SearchFilters
from citescope.knowledge.text import is_storable_text
from citescope.workflows.cli.common import KbOption, console, err, fail, open_assistant, valid_or_exit


def ask(
    question: str = typer.Argument(..., help="the customer's question"),
    kb: Path = KbOption,
    as_json: bool = typer.Option(False, "--json", help="print the whole QAResult as JSON"),
    planner: str = typer.Option(
        None,
        "--planner",
        help="planner model: offline | dashscope:qwen-plus | openai:gpt-4o-mini | compatible:<model>@<base_url>",
    ),
    answerer: str = typer.Option(None, "--answerer", help="answerer model (same forms as --planner)"),
    session: str = typer.Option(
        None,
        "--session",
        help="continue (or start) this conversation: follow-ups, "
        "clarifying questions and the carried product use its history",
    ),
    as_of: str = typer.Option(
        None,
        "--as-of",
        help="the time the question is about (YYYY, YYYY-MM or YYYY-MM-DD): documents dated near it rank first",
    ),
) -> None:
    """Answer one question from a KB: the cited answer and its numbered sources."""

    from citescope.workflows.pipeline import QuestionError, validate_question
    from citescope.workflows.pipeline_config import PipelineConfig, PipelineConfigError

    try:
        config = PipelineConfig.load(kb, planner=planner, answerer=answerer)
        question = validate_question(question, config.max_question_chars)
    except (PipelineConfigError, QuestionError) as exc:
        fail(exc)
    given = valid_or_exit(SearchFilters, {"as_of": "--as-of"}, as_of=as_of)
    filters = None if given.is_empty() else given
    if session is not None:
        from citescope.workflows.sessions import check_session_id

        try:
            session = check_session_id(session)
        except ValueError as exc:
            fail(exc)
    # Always through the Assistant, as /v1/ask does: a name several products fit ("AJ1多少钱？") or a
    # question about a product it never names ("这双鞋雨天防滑吗？") is asked back, session or not.
    assistant = open_assistant(kb, config)
    try:
        result = assistant.ask_sync(question, session, filters)
    finally:
        assistant.close()
    print(result.model_dump_json(indent=2) if as_json else result.render_text())
    if session is not None and not as_json:
        err.print(f"[dim]session {escape(session)} · trace {result.trace_id}[/dim]", highlight=False)


CHAT_HELP = (
    "/new 新会话 · /feedback up|down [意见] 评价上一条回答 · /trace 查看上一条回答的决策过程 · "
    "/help 列出命令 · /quit 退出"
)


def chat(
    kb: Path = KbOption,
    session: str = typer.Option(None, "--session", help="resume this conversation (default: a new one)"),
    policy: str = typer.Option("bandit", "--policy", help="strategy policy: bandit (learns from feedback) | rules"),
    planner: str = typer.Option(None, "--planner", help="planner model (as for ask)"),
    answerer: str = typer.Option(None, "--answerer", help="answerer model (as for ask)"),
) -> None:
    """Talk to the shop assistant: follow-ups, clarifying questions, 👍/👎 and decision traces."""
    from citescope.workflows.pipeline import QuestionError
    from citescope.workflows.pipeline_config import PipelineConfig, PipelineConfigError
    from citescope.workflows.rewards import parse_rating
    from citescope.workflows.sessions import check_session_id, new_session_id
    from citescope.workflows.traces import render_trace

    try:
        config = PipelineConfig.load(kb, planner=planner, answerer=answerer)
        session = check_session_id(session) if session is not None else new_session_id()
    except (PipelineConfigError, ValueError) as exc:
        fail(exc)
    assistant = open_assistant(kb, config, policy)
    state = assistant.session(session)
    if state is not None:
        carried = f"，当前商品：{state.entity.name}" if state.entity else ""
        console.print(f"[dim]继续会话 {escape(session)}（已有 {len(state.turns)} 轮{escape(carried)}）[/dim]")
    console.print(f"[dim]{CHAT_HELP}[/dim]")
    last_trace = state.turns[-1].trace_id if state is not None and state.turns else None
    try:
        while True:
            try:
                line = Prompt.ask("[bold cyan]你[/bold cyan]", console=console).strip()
            except (EOFError, KeyboardInterrupt):
                break
            if not line:
                continue
            if line.startswith("/"):
                command, _, rest = line[1:].partition(" ")
                if command in ("quit", "exit", "q"):
                    break
                if command in ("help", "h", "?"):
                    console.print(CHAT_HELP)
                elif command == "new":
                    session, last_trace = new_session_id(), None
                    console.print(f"[dim]新会话 {session}[/dim]")
                elif command in ("feedback", "trace"):
                    if last_trace is None:
                        console.print("[yellow]还没有回答可以评价或查看[/yellow]")
                    elif command == "feedback":
                        rating, _, comment = rest.strip().partition(" ")
                        try:
                            assistant.feedback(last_trace, parse_rating(rating), comment.strip() or None)
                        except ValueError as exc:
                            console.print(f"[yellow]{escape(str(exc))}[/yellow]")
                        else:
                            console.print(f"[dim]已记录 {'👍' if parse_rating(rating) > 0 else '👎'}，策略已更新[/dim]")
                    else:
                        found = assistant.trace(last_trace)
                        shown = render_trace(found) if found is not None else "[yellow]没有这条回答的决策记录[/yellow]"
                        console.print(shown)
                else:
                    console.print(f"[yellow]未知命令 /{escape(command)}[/yellow]  {CHAT_HELP}")
                continue
            try:
                result = assistant.ask_sync(line, session)
            except QuestionError as exc:
                console.print(f"[yellow]{escape(str(exc))}[/yellow]")
                continue
            last_trace = result.trace_id
            console.print("[bold green]客服[/bold green] " + escape(result.render_text()))
            cached = " · cached" if result.timings_ms.get("cached") else ""
            console.print(f"[dim]trace {result.trace_id}{cached}[/dim]")
    finally:
        assistant.close()
    console.print(
        f"[dim]session {escape(session)} — resume: python run.py chat --kb {escape(str(kb))} "
        f"--session {escape(session)}[/dim]"
    )


def trace(
    trace_id: str = typer.Argument(..., help="the trace id of an answer (shown with every answer)"),
    kb: Path = KbOption,
    as_json: bool = typer.Option(False, "--json", help="print the stored trace as JSON"),
) -> None:
    """Show why an answer is what it is: analysis, policy scores, tool calls, evidence, checks, costs."""
    from citescope.workflows.experience import FILE_NAME as EXPERIENCE_FILE
    from citescope.workflows.experience import ExperienceStore
    from citescope.workflows.traces import FILE_NAME, TraceStore, attach_outcome, render_trace

    if not (kb / FILE_NAME).exists():
        fail(f"no traces at {kb / FILE_NAME} (answer questions with this KB first)")
    store = TraceStore(kb / FILE_NAME)
    try:
        found = store.get(trace_id) if is_storable_text(trace_id) else None
    finally:
        store.close()
    if found is None:
        fail(f"no trace {trace_id!r} in {kb / FILE_NAME}")
    if (kb / EXPERIENCE_FILE).exists():
        experience = ExperienceStore(kb / EXPERIENCE_FILE)
        try:
            found = attach_outcome(found, experience)
        finally:
            experience.close()
    if as_json:
        print(json.dumps(found, ensure_ascii=False, indent=2))
    else:
        console.print(render_trace(found))


def feedback(
    trace_id: str = typer.Argument(..., help="the trace id of the answer (shown with every answer)"),
    rating: str = typer.Argument(..., help="up (👍) or down (👎)"),
    comment: str = typer.Option("", "--comment", help="what was wrong or right"),
    kb: Path = KbOption,
) -> None:
    """Record 👍/👎 on an answer; the strategy policy re-learns that round at once."""
    from citescope.workflows.experience import FILE_NAME, ExperienceLearner, ExperienceStore
    from citescope.workflows.rewards import parse_rating

    try:
        value = parse_rating(rating)
        if not is_storable_text(comment):
            raise ValueError("the feedback comment must be text without unpaired surrogates")
    except ValueError as exc:
        fail(exc)
    if not (kb / FILE_NAME).exists():
        fail(f"no experience store at {kb / FILE_NAME} (answer questions with this KB first)")
    store = ExperienceStore.for_kb(kb)
    try:
        before = store.get(trace_id) if is_storable_text(trace_id) else None
        if before is None:
            fail(f"no answer with trace id {trace_id!r} in {store.path}")
        after = ExperienceLearner(store).feedback(trace_id, value, comment)
    finally:
        store.close()
    old = "none" if before.reward is None else f"{before.reward:.2f}"
    console.print(
        f"{'👍' if value > 0 else '👎'} recorded for {trace_id}: arm {after.arm}, reward {old} -> {after.reward:.2f}"
    )
