"""Rule 5, one record's labelled field: two documents about one entity (the same title once version
marks are out, and not two records of one template) that state the same `label：value` field with two
values (`续航：28小时` / `续航：36小时` in a spec sheet and its corrected version). The label is the
attribute and the shared subject the entity, so a line too short for rule 1's wording test (a changed
two-digit number is over a quarter of `续航：28小时`) is still compared."""

from __future__ import annotations

import re

from citescope.agents.conflicts.passages import Candidate, Passage, Side
from citescope.agents.conflicts.question import Question
from citescope.agents.conflicts.values import NOT_WORD, parse_value

# a label at a line's start, its colon, and the value up to the line's end (canonical, lower-cased text)
_FIELD_LINE = re.compile(r"(?m)^\s*([^\s：:，,。；;]{1,8})[：:]\s*([^\n；;]{1,40}?)\s*$")
_MAX_NAME_CHARS = 10  # a longer free-text value is a description, not one value


def _fields(passage: Passage) -> dict[str, tuple[str, int, int]]:
    """label -> (value, start, end) in passage.text, the first line of each label."""
    found: dict[str, tuple[str, int, int]] = {}
    for match in _FIELD_LINE.finditer(passage.text):
        found.setdefault(match.group(1), (match.group(2), match.start(2), match.end(2)))
    return found


def field_candidates(a: Passage, b: Passage, entity: str, question: Question) -> list[Candidate]:
    """The fields the question asks about (a question term in the label) that the two passages state
    with different values of the kind it asks for."""
    fields_a, fields_b = _fields(a), _fields(b)
    found: list[Candidate] = []
    for label in fields_a.keys() & fields_b.keys():
        if not question.names_term(label):
            continue
        (said_a, start_a, end_a), (said_b, start_b, end_b) = fields_a[label], fields_b[label]
        value_a, value_b = parse_value(said_a), parse_value(said_b)
        if value_a is not None and value_b is not None:
            if value_a.same_as(value_b) or not question.accepts_value(value_a, value_b):
                continue
            key_a, key_b, dimension = value_a.key, value_b.key, value_a.dimension
        else:
            key_a, key_b = NOT_WORD.sub("", said_a), NOT_WORD.sub("", said_b)
            if key_a == key_b or "name" not in question.asks or max(len(key_a), len(key_b)) > _MAX_NAME_CHARS:
                continue
            dimension = "名称"
        sides = [Side(a.show((start_a, end_a)), key_a, a, start_a), Side(b.show((start_b, end_b)), key_b, b, start_b)]
        found.append(Candidate(entity, f"{label}（{dimension}）", dimension, sides))
    return found
