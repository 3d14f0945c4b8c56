"""The command line (`run.py`, the `citescope` script): app.py holds the typer app and main(), and
each command group has its module: knowledge_base (ingest, delete, search, demo), conversation (ask,
chat, trace, feedback), serving (serve, batch, studio), evaluating (eval, calibrate), bench."""

from citescope.workflows.cli.app import app, main
from citescope.workflows.cli.conversation import CHAT_HELP
from citescope.workflows.cli.knowledge_base import DEMO_QUESTIONS

__all__ = ["CHAT_HELP", "DEMO_QUESTIONS", "app", "main"]
