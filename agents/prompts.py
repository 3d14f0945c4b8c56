"""Prompts live in prompts/<name>.md (Chinese first); this is the one way to load them."""

from __future__ import annotations

import re
from pathlib import Path

PROMPTS_DIR = Path(__file__).resolve().parents[1] / "prompts"
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def load_prompt(name: str, **variables: object) -> str:
    """prompts/<name>.md with its {placeholders} filled from `variables`.

    Only {identifier} spans are placeholders, so a JSON example in a prompt
    ({"supported": true}) needs no doubled braces; a placeholder without a value stays as
    written, and values are inserted verbatim (braces in evidence text are never re-read).
    """
    path = PROMPTS_DIR / f"{name}.md"
    try:
        template = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"prompt {name!r} not found: {path} does not exist") from None
    values = {key: str(value) for key, value in variables.items()}
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)
