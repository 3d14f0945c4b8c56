"""The `run.py` app: every command, registered here in the order `run.py --help` lists them, and
main(). Each command is a thin shell over a typed entry point elsewhere; it imports what it runs
(the pipeline, the service, the evaluation package) when it runs, so `run.py --help` stays quick."""

from __future__ import annotations

import typer

from citescope.knowledge.vector_store import StoreLockedError
from citescope.workflows.cli.bench import bench_app
from citescope.workflows.cli.common import error_line
from citescope.workflows.cli.conversation import ask, chat, feedback, trace
from citescope.workflows.cli.evaluating import calibrate_command, eval_command
from citescope.workflows.cli.knowledge_base import delete, demo, ingest, search
from citescope.workflows.cli.serving import batch, serve, studio
from citescope.workflows.training.commands import train_app

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="citescope: cited answers from a shop's knowledge base",
)
for command in (ingest, delete, search, demo, ask, chat, trace, feedback, serve, batch, studio):
    app.command()(command)
app.command("eval")(eval_command)
app.command("calibrate")(calibrate_command)
app.add_typer(bench_app, name="bench")
app.add_typer(train_app, name="train")


def main() -> None:
    """run.py's entry: the app, with a KB another process holds as a one-line error, whichever
    command opened it (the store opens lazily, deep inside a command)."""
    try:
        app()
    except StoreLockedError as exc:
        error_line(exc)
        raise SystemExit(2) from None  # outside the app, typer.Exit would be a traceback
