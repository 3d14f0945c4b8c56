"""The question-reading rules as data: agents/question_cues.yaml, validated at load, and the rules of
the packs a KB turns on (its config.yaml `rule_packs`; `core` always runs).

A rule of a pack that is off reads as if it never matched: a pattern rule becomes a pattern that
matches nothing, an asks or relation rule is left out, a check is off. `QuestionRules.fired` names
the rules that fire on a question, for the decision trace (QAResult.rules_fired).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

RULES_PATH = Path(__file__).with_name("question_cues.yaml")
CORE_PACK = "core"
_NEVER = re.compile(r"(?!)")  # what a rule of a pack that is off matches: nothing

Pieces = str | list[Any]  # a pattern, or its pieces (nested lists come from YAML anchors) joined with ""


class QuestionRulesError(ValueError):
    """A rules file that cannot be used; the message names the file, the rule and the field."""


def _joined(value: Pieces) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value:
        return "".join(_joined(piece) for piece in value)
    raise ValueError("a pattern is a text or a list of texts")


class RuleExample(BaseModel):
    """A text the rule reads, and what it should read from it."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1)  # the question (a pattern rule: the text it is matched against)
    fires: bool = True
    answer: str | None = None  # a relation: a sentence stating it; a check: the document's text
    title: str | None = None  # a check: the document's title


class QuestionRule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    kind: Literal["asks", "relation", "pattern", "check"]
    packs: list[str] = Field(min_length=1)
    why: str = Field(min_length=1)
    question: str | None = None  # asks, relation: matched against the question
    answer: str | None = None  # relation: how a sentence states it
    pattern: str | None = None  # pattern
    ignore_case: bool = False
    units: list[str] = Field(default_factory=list)  # asks: units of a value that answers
    words: list[str] = Field(default_factory=list)  # asks: words a sentence that answers may say
    examples: list[RuleExample] = Field(min_length=1)

    @field_validator("question", "answer", "pattern", mode="before")
    @classmethod
    def _pattern_text(cls, value: Any) -> str | None:
        if value is None:
            return None
        text = _joined(value)
        try:
            re.compile(text)
        except re.error as exc:
            raise ValueError(f"not a regular expression ({exc})") from None
        return text

    @model_validator(mode="after")
    def _fields_of_its_kind(self) -> QuestionRule:
        needed = {"asks": ("question",), "relation": ("question", "answer"), "pattern": ("pattern",), "check": ()}
        fields = ("question", "answer", "pattern")
        for name in fields:
            given = getattr(self, name) is not None
            if given != (name in needed[self.kind]):
                raise ValueError(f"a {self.kind} rule {'needs' if not given else 'has no'} `{name}`")
        if self.kind == "asks" and not self.units:
            raise ValueError("an asks rule needs `units`")
        return self

    def compiled(self, field: Literal["question", "answer", "pattern"]) -> re.Pattern:
        text = getattr(self, field)
        assert text is not None, f"{self.id} has no {field}"
        return re.compile(text, re.I if self.ignore_case else 0)


class RulesFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    packs: dict[str, str]  # pack -> the kind of text it is for
    rules: list[QuestionRule]

    @model_validator(mode="after")
    def _ids_and_packs(self) -> RulesFile:
        if CORE_PACK not in self.packs:
            raise ValueError(f"packs: `{CORE_PACK}` is missing")
        seen: set[str] = set()
        for rule in self.rules:
            if rule.id in seen:
                raise ValueError(f"rule {rule.id}: a second rule with this id")
            seen.add(rule.id)
            unknown = sorted(set(rule.packs) - set(self.packs))
            if unknown:
                raise ValueError(f"rule {rule.id}: packs: unknown pack(s) {unknown} (declared: {sorted(self.packs)})")
        return self


def _location(raw: Any, loc: tuple) -> str:
    """`rule <id>: <field>` for an error inside a rule, else the dotted path."""
    if len(loc) >= 2 and loc[0] == "rules" and isinstance(loc[1], int) and isinstance(raw, dict):
        rules = raw.get("rules") or []
        rule = rules[loc[1]] if loc[1] < len(rules) and isinstance(rules[loc[1]], dict) else {}
        rest = ".".join(str(part) for part in loc[2:])
        return f"rule {rule.get('id', f'#{loc[1]}')}" + (f": {rest}" if rest else "")
    return ".".join(str(part) for part in loc) or "file"


def load_rules_file(path: Path | str = RULES_PATH) -> RulesFile:
    """The rules file, validated; QuestionRulesError names the file, the rule id and the field."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise QuestionRulesError(f"{path}: cannot read the rules ({exc})") from None
    try:
        return RulesFile.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{_location(raw, e['loc'])}: {e['msg']}" for e in exc.errors())
        raise QuestionRulesError(f"{path}: {problems}") from None


@cache
def _rules_file() -> RulesFile:
    return load_rules_file()


def known_packs() -> list[str]:
    """The opt-in packs a KB may turn on (core always runs)."""
    return sorted(p for p in _rules_file().packs if p != CORE_PACK)


@dataclass(frozen=True)
class AsksRule:
    id: str
    question: re.Pattern
    units: frozenset[str]
    words: tuple[str, ...]


@dataclass(frozen=True)
class RelationRule:
    id: str
    question: re.Pattern
    answer: re.Pattern


class QuestionRules:
    """The rules of the core pack and of the packs turned on, compiled once."""

    def __init__(self, rules_file: RulesFile, packs: Iterable[str] = ()):
        self.packs = frozenset({CORE_PACK, *packs})
        unknown = sorted(self.packs - set(rules_file.packs))
        if unknown:
            raise QuestionRulesError(f"unknown rule pack(s) {unknown} (known: {sorted(rules_file.packs)})")
        on = [rule for rule in rules_file.rules if self.packs & set(rule.packs)]
        on_ids = {rule.id for rule in on}
        self.asks = tuple(
            AsksRule(r.id, r.compiled("question"), frozenset(r.units), tuple(r.words)) for r in on if r.kind == "asks"
        )
        self.relations = tuple(
            RelationRule(r.id, r.compiled("question"), r.compiled("answer")) for r in on if r.kind == "relation"
        )
        self._patterns = {
            r.id: (r.compiled("pattern") if r.id in on_ids else _NEVER) for r in rules_file.rules if r.pattern
        }
        self._checks = {r.id: r.id in on_ids for r in rules_file.rules if r.kind == "check"}

    def reading_rules(self) -> list[AsksRule | RelationRule]:
        """The asks and relation rules: each reads a question for a kind of value or a relation asked."""
        return [*self.asks, *self.relations]

    def pattern(self, rule_id: str) -> re.Pattern:
        """A pattern rule's pattern; one of a pack that is off matches nothing."""
        return self._patterns[rule_id]

    def checks(self, rule_id: str) -> bool:
        """Is this check rule on?"""
        return self._checks[rule_id]

    def fired(self, question: str, patterns: Iterable[str] = ()) -> list[str]:
        """The ids of the asks and relation rules, and of these pattern rules, that match the question."""
        fired = [r.id for r in self.reading_rules() if r.question.search(question)]
        return fired + [rule_id for rule_id in patterns if self._patterns[rule_id].search(question)]


@cache
def question_rules(packs: frozenset[str] = frozenset()) -> QuestionRules:
    """The rules for a KB with these packs on (shared: compiled once per set of packs)."""
    return QuestionRules(_rules_file(), packs)
