"""A pydantic ValidationError as one line for people: each bad field by the name they gave it
(a CLI option, an input column), the value they gave and what is wrong with it; never pydantic's
type codes, "Value error, " prefixes or documentation URLs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

_SHOWN_VALUE_CHARS = 60


def describe_validation_error(exc: ValidationError, names: Mapping[str, str] | None = None) -> str:
    """`--as-of: '2024-13' is not a real date (month must be in 1..12)`; several problems are
    joined with "; ". names: field -> the name the user knows it by (`{"as_of": "--as-of"}`); a
    nested field keeps its path (`filters.as_of`, `doc_type[0]`)."""
    return "; ".join(_problem(error, names or {}) for error in exc.errors(include_url=False))


def _problem(error: Mapping[str, Any], names: Mapping[str, str]) -> str:
    where = list(error["loc"])
    field = names.get(str(where[0]), str(where[0])) if where else "input"
    field += "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in where[1:])
    kind = error["type"]
    if kind == "extra_forbidden":
        return f"{field}: not a known field"
    if kind in ("value_error", "assertion_error") and "error" in (error.get("ctx") or {}):
        message = str(error["ctx"]["error"])  # the validator's own words, without "Value error, "
    else:
        message = error["msg"][:1].lower() + error["msg"][1:]
    if kind == "missing":  # its input is the whole object, not a value of this field
        return f"{field}: {message}"
    shown = _shown(error.get("input"))
    if shown in message:  # the validator already quotes it
        return f"{field}: {message}"
    if kind in ("value_error", "assertion_error"):  # our validators say what the value is or must be
        return f"{field}: {shown} {message}"
    return f"{field}: {message}, got {shown}"


def _shown(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= _SHOWN_VALUE_CHARS else shown[: _SHOWN_VALUE_CHARS - 1] + "…"
