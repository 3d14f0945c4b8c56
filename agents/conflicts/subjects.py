"""Whom evidence is about: two statements conflict only when they are about the same entity (the same
product, record, policy or article) and the same attribute (issue #44). Statements about siblings —
two products of one series, two records of one template — are different facts, answered side by side.

Two passages are about different entities when:
- their product_ids differ, or one has a product and the other none (metadata);
- their titles name two things and each text names its own and not the other's (`韩艳的住院病历` whose
  text names 韩艳 / `姚美静的住院病历`; `声悦 逐光X3 无线耳机` / `… X5 …`; `斯温登` / `诺丁汉`): the title is
  the page's subject, not a label such as `Shop notes` / `Shop news` or a headline, which say nothing
  of whom two statements are about;
- they are two records of one template (`template_siblings`): three or more shared labelled fields,
  half or more of which differ (姓名：韩艳 / 姓名：姚美静, and their ages, dates, diagnoses), unless the
  titles are versions of one document (`（2024版）` / `（2026版）`);
- titles name different years or two places of one series (yearly editions, series_names), as before.

Otherwise two passages with one title (once version marks are out) are about that title's subject,
and passages whose titles say nothing of it (untitled news, FAQ entries, whose titles are customers'
questions) about what the question asks (its first terms).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from citescope.agents.conflicts.passages import Passage, title_stem
from citescope.agents.conflicts.question import Question
from citescope.knowledge.normalize import normalize
from citescope.knowledge.text import YEAR, series_names

# A labelled field of a record: a short label at the start of a line (or after a clause end), then its value.
_FIELD = re.compile(r"(?:^|[\n；;])\s*([^\s：:，,。；;\n]{1,8})[：:]\s*([^\n；;]{1,40})")
_MIN_SHARED_FIELDS = 3  # fewer labels in common: not two records of one template
_MIN_NAME_CHARS = 2  # a title's differing part shorter than this names nothing (widened: 3 of X3 is x3)
_ALNUM = re.compile(r"[a-z0-9]")


def entity_of(a: Passage, b: Passage, question: Question) -> str | None:
    """Who the two passages are about, or None when they are about different things."""
    hit_a, hit_b = a.hit, b.hit
    if hit_a.product_id or hit_b.product_id:
        return hit_a.product_id if hit_a.product_id == hit_b.product_id else None
    if different_entities(a, b):
        return None
    stem_a, stem_b = title_stem(hit_a.title), title_stem(hit_b.title)
    versions = bool(stem_a) and stem_a == stem_b and hit_a.title != hit_b.title
    if not versions and template_siblings(a, b):
        return None  # one template, two records: their name fields differ
    if stem_a and stem_a == stem_b:
        return stem_a
    if editions_of_other_years(stem_a, stem_b) or series_names(stem_a, stem_b) is not None:
        return None
    terms = question.terms[:4]
    return (", " if all(t.isascii() for t in terms) else "、").join(terms) or "问题"


def different_entities(a: Passage, b: Passage) -> bool:
    """Two titled pages each about its own named thing: each text names what its title has and the
    other's lacks (韩艳 / 姚美静 of 韩艳的住院病历 / 姚美静的住院病历, x3 / x5), and not the other's name."""
    if not a.subject or not b.subject or a.subject == b.subject:
        return False
    name_a, name_b = differing_names(a.subject, b.subject)
    if len(name_a) < _MIN_NAME_CHARS or len(name_b) < _MIN_NAME_CHARS:
        return False  # one title inside the other (退换货政策 / 退换货政策说明): maybe one thing
    text_a, text_b = a.text, b.text  # canonical, lower-cased, as subjects are
    return name_a in text_a and name_b in text_b and name_b not in text_a and name_a not in text_b


def differing_names(subject_a: str, subject_b: str) -> tuple[str, str]:
    """What two titles differ in, once their shared start and end are out, widened to whole ASCII
    words and numbers (声悦 逐光x3 无线耳机 / 声悦 逐光x5 运动耳机 -> x3 无线 / x5 运动, stripped)."""
    prefix = len(os.path.commonprefix([subject_a, subject_b]))
    while prefix and _ALNUM.match(subject_a[prefix - 1]) and _ALNUM.match(subject_b[prefix - 1]):
        prefix -= 1  # 逐光x3 / 逐光x5 differ in x3 / x5, not in 3 / 5
    rest_a, rest_b = subject_a[prefix:], subject_b[prefix:]
    suffix = len(os.path.commonprefix([rest_a[::-1], rest_b[::-1]]))
    while suffix and _ALNUM.match(rest_a[-suffix]) and _ALNUM.match(rest_b[-suffix]):
        suffix -= 1
    name_a, name_b = rest_a[: len(rest_a) - suffix], rest_b[: len(rest_b) - suffix]
    return name_a.strip(" -_·的之"), name_b.strip(" -_·的之")


def editions_of_other_years(stem_a: str, stem_b: str) -> bool:
    """Titles naming different years (2017年招生简章 / 2015年…, 章程（2016年实行） / （2018年实行）)
    are yearly editions: each states its own year's figures. A version mark's year (（2024版）) is
    gone from the stem, so two versions of one policy are still compared."""
    years_a, years_b = set(YEAR.findall(stem_a)), set(YEAR.findall(stem_b))
    return bool(years_a) and bool(years_b) and years_a != years_b


def labelled_fields(text: str) -> dict[str, str]:
    """A record's `label：value` fields, in order (the first label seen wins)."""
    fields: dict[str, str] = {}
    for match in _FIELD.finditer(normalize(text)):
        fields.setdefault(match.group(1), match.group(2).strip())
    return fields


def template_siblings(a: Passage, b: Passage) -> bool:
    """Two records written from one template about two entities: they share at least three labelled
    fields and differ in half or more of them (two patients differ in name, age, dates, diagnosis...).
    One record stated twice with a field changed (a corrected copy) differs in that field only, and is
    compared; so are two short texts sharing a label or two (无理由退货：7天 / 15天 over 退款时效：…)."""
    fields_a, fields_b = labelled_fields(a.hit.text), labelled_fields(b.hit.text)
    shared = [label for label in fields_a if label in fields_b]
    if len(shared) < _MIN_SHARED_FIELDS:
        return False
    differing = [label for label in shared if fields_a[label] != fields_b[label]]
    return 2 * len(differing) >= len(shared)


def asked_passages(passages: Sequence[Passage], question: Question) -> list[Passage]:
    """The evidence pages the question names, when it tells them apart: those whose titles hold the
    most of the question's terms that some titles hold and others do not (苏敏 of 苏敏的住院病历 against
    韩艳的住院病历; 住院, in every title, tells nothing). [] when the question names none of them."""
    subjects = {p.subject for p in passages if not p.hit.product_id} - {""}
    if len(subjects) < 2:
        return []
    telling = [t for t in question.terms if 0 < sum(t in s for s in subjects) < len(subjects)]
    named = {s: sum(t in s for t in telling) for s in subjects}
    most = max(named.values(), default=0)
    return [p for p in passages if most and p.subject and named.get(p.subject) == most]


def about_a_sibling(sources: Sequence[Passage], asked: Sequence[Passage]) -> bool:
    """Are a disagreement's sources about another entity than the pages the question names (two
    versions of 韩艳's record, asked about 苏敏)? Only an entity told apart from the asked one counts."""
    named = {p.subject for p in asked}
    return not any(p.subject in named for p in sources) and any(
        different_entities(source, page) for source in sources for page in asked
    )
