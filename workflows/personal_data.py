"""Customers' personal data (mobiles, ID cards, bank cards, emails, order numbers) redacted before
anything is stored or logged.

The patterns live in one data file, workflows/personal_data.yaml; `CITESCOPE_PERSONAL_DATA_FILE`
adds a file of more patterns (same format), `CITESCOPE_REDACT_PERSONAL_DATA=false` turns the
redaction off. Redaction is for stored copies only: the pipeline answers the question as typed
(retrieval and the answer may use the order number the customer gave within the request), and
the session, trace, experience round, feedback comment, batch output line and log line hold the
label (`[手机号]`) instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from citescope.workflows.validation import describe_validation_error

PATTERNS_FILE = Path(__file__).with_name("personal_data.yaml")
_ID_CARD_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CARD_CHECK = "10X98765432"


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum of bank card numbers (digits only)."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def id_card_valid(number: str) -> bool:
    """The GB 11643 check character of an 18-character resident ID."""
    body, check = number[:17], number[17].upper()
    return _ID_CARD_CHECK[sum(int(c) * w for c, w in zip(body, _ID_CARD_WEIGHTS, strict=False)) % 11] == check


_CHECKS = {"luhn": lambda text: luhn_valid(re.sub(r"\D", "", text)), "id_card": id_card_valid}


class PersonalDataPattern(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., min_length=1)
    label: str = Field(..., min_length=1)
    regex: str
    check: Literal["luhn", "id_card"] | None = None

    @field_validator("regex")
    @classmethod
    def _compiles(cls, regex: str) -> str:
        try:
            re.compile(regex)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from None
        return regex


class PatternsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    patterns: list[PersonalDataPattern]


class PersonalDataSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CITESCOPE_", extra="ignore")

    redact_personal_data: bool = True
    personal_data_file: Path | None = None  # more patterns, after the built-in ones


class PersonalDataRedactor:
    """Replaces every match of the patterns, in order, with its label."""

    def __init__(self, patterns: list[PersonalDataPattern], enabled: bool = True):
        self.enabled = enabled
        self.patterns = patterns
        self._compiled = [(p, re.compile(p.regex)) for p in patterns]

    @classmethod
    def load(cls, *files: Path, enabled: bool = True) -> PersonalDataRedactor:
        return cls([pattern for path in files for pattern in load_patterns(path)], enabled)

    @classmethod
    def from_settings(cls, settings: PersonalDataSettings | None = None) -> PersonalDataRedactor:
        settings = settings or PersonalDataSettings()
        extra = [settings.personal_data_file] if settings.personal_data_file else []
        return cls.load(PATTERNS_FILE, *extra, enabled=settings.redact_personal_data)

    def redact(self, text: str) -> str:
        if not self.enabled or not text:
            return text
        for pattern, compiled in self._compiled:
            text = compiled.sub(partial(_replace, pattern=pattern), text)
        return text

    def found(self, text: str) -> list[str]:
        """The names of the patterns that match `text` (what a scan of stored data reports)."""
        return [
            p.name
            for p, compiled in self._compiled
            if any(p.check is None or _CHECKS[p.check](_value(m)) for m in compiled.finditer(text))
        ]


def _value(match: re.Match) -> str:
    return match.group("value") if "value" in match.re.groupindex else match.group(0)


def _replace(match: re.Match, pattern: PersonalDataPattern) -> str:
    value = _value(match)
    if pattern.check is not None and not _CHECKS[pattern.check](value):
        return match.group(0)  # a 16-digit number that is no card, an 18-digit one that is no ID
    if "value" not in match.re.groupindex:
        return pattern.label
    start, end = match.span("value")
    whole = match.group(0)
    return whole[: start - match.start()] + pattern.label + whole[end - match.start() :]


def load_patterns(path: Path) -> list[PersonalDataPattern]:
    """The `patterns:` list of a YAML file; ValueError naming the file and the faulty entry."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot read personal-data patterns: {exc}") from None
    try:
        return PatternsFile.model_validate(data).patterns
    except ValidationError as exc:
        raise ValueError(f"{path}: {describe_validation_error(exc)}") from None


@lru_cache(maxsize=1)
def default_redactor() -> PersonalDataRedactor:
    """The process's redactor, from the environment (read once; `default_redactor.cache_clear()`
    after changing it)."""
    return PersonalDataRedactor.from_settings()


def redact_personal(text: str) -> str:
    return default_redactor().redact(text)


def redact_personal_in(value: Any) -> Any:
    """`value` with personal data redacted from every string in it (dict keys included)."""
    return map_strings(value, redact_personal)


def map_strings(value: Any, function: Callable[[str], str]) -> Any:
    """`value` with `function` applied to every string in it, dict keys included (tuples become lists)."""
    if isinstance(value, str):
        return function(value)
    if isinstance(value, dict):
        return {map_strings(k, function): map_strings(v, function) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [map_strings(v, function) for v in value]
    return value
