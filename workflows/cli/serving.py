"""The commands that serve an assistant: the HTTP service, a batch of questions, AgentScope Studio."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer
from rich.markup import escape

from citescope.knowledge.kb import KBError
from citescope.workflows.cli.common import (
    KbOption,
    console,
    err,
    fail,
    open_assistant,
    pipeline_config_or_exit,
    valid_or_exit,
)


def serve(
    kb: Path = KbOption,
    host: str = typer.Option("127.0.0.1", help="interface to listen on (0.0.0.0: every interface)"),
    port: int = typer.Option(8000, help="TCP port"),
    policy: str = typer.Option("bandit", help="strategy policy: bandit | rules"),
    planner: str = typer.Option(None, "--planner", help="planner model (as in `ask`)"),
    answerer: str = typer.Option(None, "--answerer", help="answerer model (as in `ask`)"),
) -> None:
    """HTTP service: /v1/ask, /v1/chat/completions (OpenAI-compatible), /v1/feedback, /docs.

    API keys: CITESCOPE_API_KEYS=key1,key2:tenant (Bearer) and/or CITESCOPE_TENANTS_FILE (YAML);
    CITESCOPE_REQUESTS_PER_MINUTE per tenant; body limit: CITESCOPE_MAX_BODY_BYTES; questions computed
    at once / waiting: CITESCOPE_MAX_RUNNING_QUESTIONS / CITESCOPE_MAX_QUEUED_QUESTIONS; connection
    timeouts: CITESCOPE_HEADER_TIMEOUT_S, CITESCOPE_BODY_TIMEOUT_S, CITESCOPE_KEEP_ALIVE_TIMEOUT_S."""

    from citescope.workflows.assistant import Assistant
    from citescope.workflows.service import ServiceSettings, create_app
    from citescope.workflows.service import serve as run_service

    config = pipeline_config_or_exit(kb, planner, answerer)
    settings = valid_or_exit(
        ServiceSettings, {name: f"CITESCOPE_{name.upper()}" for name in ServiceSettings.model_fields}
    )
    try:
        tenants = settings.tenants()
    except ValueError as exc:
        fail(exc)
    if tenants.open and host not in ("127.0.0.1", "localhost", "::1"):
        err.print(
            f"[yellow]warning:[/yellow] no CITESCOPE_API_KEYS: anyone who reaches {host}:{port} can use the service"
        )
    try:  # not warmed here: the app warms it in the background while /healthz already answers
        assistant = Assistant(kb, config=config, policy=policy)
    except (KBError, ValueError) as exc:
        fail(exc)
    run_service(create_app(assistant, settings), host, port)


def batch(
    input_path: Path = typer.Argument(..., help="questions: JSONL or CSV with id (or qid), question, session_id?"),
    output: Path = typer.Option(..., "-o", "--output", help="answers, one JSON line per id (resumed if present)"),
    kb: Path = KbOption,
    concurrency: int = typer.Option(4, min=1, help="questions in flight (a session's turns stay in order)"),
    retry_errors: bool = typer.Option(False, help="ask again the ids whose output line is an error"),
    progress: bool = typer.Option(True, help="progress bar with ETA on stderr"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as JSON"),
    policy: str = typer.Option("bandit", help="strategy policy: bandit | rules"),
    planner: str = typer.Option(None, "--planner", help="planner model (as in `ask`)"),
    answerer: str = typer.Option(None, "--answerer", help="answerer model (as in `ask`)"),
) -> None:
    """Answer a file of questions; rerun the same command after an interruption to finish it."""
    from citescope.workflows.batch import BatchRunner

    if not input_path.is_file():
        fail(f"no input file {input_path}")
    assistant = open_assistant(kb, pipeline_config_or_exit(kb, planner, answerer), policy)
    try:
        summary = BatchRunner(assistant, concurrency, show_progress=progress).run(input_path, output, retry_errors)
    except ValueError as exc:  # an input format it cannot read
        fail(exc)
    except KeyboardInterrupt:
        err.print(f"interrupted: the answers so far are in {escape(str(output))}; run the same command again to finish")
        raise typer.Exit(130) from None
    finally:
        assistant.close()
    print(summary.model_dump_json(indent=2) if as_json else summary.render())


STUDIO_GONE_EXIT = 3  # a Studio session ended because Studio went away and did not come back


def studio(
    kb: Path = KbOption,
    studio_url: str = typer.Option("http://127.0.0.1:3000", help="AgentScope Studio (start it with `as_studio`)"),
    project: str = typer.Option("citescope", help="Studio project the run is listed under"),
    name: str = typer.Option(None, help="run name (default: time + random suffix)"),
    question: str = typer.Option(
        None,
        "--question",
        help="ask this one question and exit; without it, type questions in the Studio page until `/exit`",
    ),
    reconnect_attempts: int = typer.Option(10, min=0, help="reconnects tried when Studio drops"),
    reconnect_window: float = typer.Option(60.0, min=0, help="seconds Studio may stay away before the session ends"),
    policy: str = typer.Option("bandit", help="strategy policy: bandit | rules"),
    planner: str = typer.Option(None, "--planner", help="planner model (as in `ask`)"),
    answerer: str = typer.Option(None, "--answerer", help="answerer model (as in `ask`)"),
) -> None:
    """A multi-turn session in AgentScope Studio: the planner's, answerer's and inspector's messages.
    Exit 0 when the user ends it (or the one question is answered), 2 when Studio cannot be reached
    at the start, 3 when Studio went away and stayed away longer than the reconnect window."""
    from citescope.workflows.pipeline import QuestionError
    from citescope.workflows.studio import StudioSession
    from citescope.workflows.studio_link import ReconnectPolicy

    assistant = open_assistant(kb, pipeline_config_or_exit(kb, planner, answerer), policy)
    reconnect = ReconnectPolicy(attempts=reconnect_attempts, window_s=reconnect_window)
    session = StudioSession(
        assistant,
        studio_url,
        project=project,
        name=name,
        reconnect=reconnect,
        on_event=lambda text: err.print(escape(text), highlight=False),
    )
    try:
        try:
            session.connect()
        except Exception as exc:  # httpx's and socket.io's connection errors, an HTTP error status
            fail(
                f"cannot reach AgentScope Studio at {studio_url} ({exc}); "
                "start it with `as_studio` (npm install -g @agentscope/studio)"
            )
        console.print(f"Studio run: {session.run_url}", highlight=False, soft_wrap=True)
        if question is not None:
            try:  # the user's, answerer's and inspector's messages also print here, as in Studio
                asyncio.run(session.ask(question))
            except QuestionError as exc:
                fail(exc)
        else:
            console.print(
                f"connected to {escape(studio_url)} (project {escape(project)}): type questions in "
                "Studio, `/exit` to finish",
                highlight=False,
            )
            try:
                turns = asyncio.run(session.chat())
            except KeyboardInterrupt:
                turns = len(session.results)
            if session.studio_gone is not None:  # the link has said why, as it happened
                err.print("ending the session", highlight=False)
            console.print(f"session {session.session_id}: {turns} answers")
    finally:
        session.close()
        assistant.close()
    stats = session.link.stats if session.link is not None else None
    if stats is not None and stats.undelivered:
        err.print(
            f"{stats.undelivered} messages could not be delivered to Studio (they are in the console output above)",
            highlight=False,
        )
    if stats is not None and stats.rejected:
        err.print(f"Studio refused {stats.rejected} messages (HTTP 4xx; see Studio's log)", highlight=False)
    if session.link is not None and session.link.gone:  # waiting for input, answering, or delivering at the end
        raise typer.Exit(STUDIO_GONE_EXIT)
