"""What every command shares: the two consoles, the one-line error and exit, and opening a KB, a
pipeline config or an assistant with the reason it failed instead of a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from citescope.knowledge.kb import KBError, KnowledgeBase
from citescope.knowledge.settings import Settings, get_settings
from citescope.workflows.validation import describe_validation_error

if TYPE_CHECKING:
    from citescope.workflows.assistant import Assistant
    from citescope.workflows.pipeline_config import PipelineConfig


class _Stdout(Console):
    """stdout: on a terminal text wraps to its width; into a pipe or a file a line of text is never
    wrapped (rich would break it at 80 columns, splitting a fact from its 【citation】). Tables and
    rules are laid out to the width either way."""

    # Any: the options are rich's own print keywords, each of its own type, passed through as given
    def print(self, *objects: object, soft_wrap: bool | None = None, **options: Any) -> None:
        if soft_wrap is None and not self.is_terminal and all(isinstance(o, (str, Text)) for o in objects):
            soft_wrap = True
        super().print(*objects, soft_wrap=soft_wrap, **options)


console = _Stdout()
err = Console(stderr=True, soft_wrap=True)  # an error stays one line, however long

REPO = Path(__file__).resolve().parents[2]
DEMO_DIR = REPO / "knowledge" / "demo"
DEFAULT_KB = Path(".kb/demo")
DATASETS = REPO.parent / "shared" / "datasets"

KbOption = typer.Option(DEFAULT_KB, "--kb", help="knowledge base folder")
ModelT = TypeVar("ModelT")


def fail(message: object) -> NoReturn:
    """One line on stderr, `error: <message>` (the message as text, never as markup), and exit 2."""
    error_line(message)
    raise typer.Exit(2)


def error_line(message: object) -> None:
    err.print(f"[red]error:[/red] {escape(str(message))}", highlight=False)


def valid_or_exit(model: type[ModelT], names: dict[str, str], **values: object) -> ModelT:
    """model(**values), or one line naming the option, its value and the problem (never pydantic's
    report: type codes, input_value=…, URLs) and exit 2. names: field -> the option (`--as-of`)."""
    try:
        return model(**values)
    except ValidationError as exc:
        fail(describe_validation_error(exc, names))


def open_kb(kb_dir: Path, create: bool = False) -> KnowledgeBase:
    try:
        settings = get_settings(kb_dir=kb_dir)
    except ValidationError as exc:  # a CITESCOPE_* variable: name it, not pydantic's report
        fail(describe_validation_error(exc, {name: f"CITESCOPE_{name.upper()}" for name in Settings.model_fields}))
    try:
        return KnowledgeBase(kb_dir, settings, create=create)
    except KBError as exc:
        fail(exc)


def pipeline_config_or_exit(kb: Path, planner: str | None, answerer: str | None) -> PipelineConfig:
    """The KB's PipelineConfig with the command's model choices, or the reason and exit code 2."""

    from citescope.workflows.pipeline_config import PipelineConfig, PipelineConfigError

    try:
        return PipelineConfig.load(kb, planner=planner, answerer=answerer)
    except PipelineConfigError as exc:
        fail(exc)


def open_assistant(kb_dir: Path, config: PipelineConfig, policy: str = "bandit") -> Assistant:
    """A warmed Assistant on an existing KB, or a clean exit with the reason."""

    from citescope.workflows.assistant import Assistant

    try:
        assistant = Assistant(kb_dir, config=config, policy=policy)
    except (KBError, ValueError) as exc:  # no KB there, an unknown policy
        fail(exc)
    try:
        return assistant.warm_up()
    except Exception as exc:  # a model spec whose API key is not set, a Milvus Lite file another process holds
        assistant.close()
        fail(f"cannot open the assistant on {kb_dir}: {exc}")
