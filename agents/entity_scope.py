"""Which evidence is about another entity than the one a question names (issue #44).

A question that names one of a KB's entities (a record, a product, an article: what a page's title
names) is not answered by a sibling's page: `唐霞有什么过敏史？` is not answered by 姚美静's record
saying `过敏史：青霉素过敏`, however well the words match, nor `极岚 听澜P9保修多久？` by the
spec sheet of `声悦 听澜S3`. Such evidence still ranks and is shown (a shopper may be told what a
sibling has, side by side); it only does not count for the refusal gate, which asks whether the
evidence can carry an answer to this question.

A passage is about another entity when, for some other passage in the pool of the same kind (doc_type,
and category when both have one), the question names that one's title against this one's: it holds
a word of that title this title lacks (`唐霞`, `听澜p9`, `极岚`) and none this title has and that one
lacks; and this passage's own text does not name the question's entity (a comparison table of both
still counts). Titles that name nothing (an FAQ entry's, which is a customer's question) and
passages of one title are never siblings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from citescope.agents.conflicts.passages import title_stem
from citescope.agents.conflicts.subjects import differing_names
from citescope.agents.conflicts.values import ascii_lower, canonical_text
from citescope.knowledge.schema import Chunk
from citescope.knowledge.text import is_faq

_MIN_NAME = 2  # a one-character difference (3 of X3, 塔 of 广州塔) names nothing by itself
TITLE_SEPARATORS = re.compile(r"[\s\-_·/|，,、（）()【】\[\]]+")  # between the parts of a title


def about_other_entities(question: str, chunks: Sequence[Chunk], named_products: Iterable[str] = ()) -> list[bool]:
    """For each chunk, whether it is about a sibling of the entity the question names (see above).
    named_products: the products the shop's analysis found named in the question (by any alias:
    `aj1低帮` names `Air Jordan 1 Low 低帮板鞋`); their pages always count."""
    named_ids = set(named_products)
    asked = _canonical(question)
    # what a title says its page is about; an FAQ entry's title is a customer's question, not a name
    subjects = ["" if is_faq(chunk) else _title_parts(title_stem(chunk.title)) for chunk in chunks]
    kinds = [(chunk.doc_type, chunk.category or "") for chunk in chunks]
    named: dict[str, set[str]] = {}  # a subject -> the names by which the question names another against it
    distinct = sorted({(s, k) for s, k in zip(subjects, kinds, strict=True) if s})
    # a title the question can name shares two characters in a row with it (every name is a part of it)
    pairs_asked = {asked[i : i + 2] for i in range(len(asked) - 1)}
    nameable = [(s, k) for s, k in distinct if any(s[i : i + 2] in pairs_asked for i in range(len(s) - 1))]
    for own, own_kind in distinct:
        for other, other_kind in nameable:
            if other == own or not _same_kind(own_kind, other_kind):
                continue
            names_other, names_own = _names(other, own), _names(own, other)
            if any(n in asked for n in names_other) and not any(n in asked for n in names_own):
                named.setdefault(own, set()).update(n for n in names_other if n in asked)
    return [
        subject in named and chunk.product_id not in named_ids and not _names_any(chunk.text, named[subject])
        for chunk, subject in zip(chunks, subjects, strict=True)
    ]


def _names_any(text: str, names: set[str]) -> bool:
    canonical = _canonical(text)  # once per chunk, not once per name
    return any(n in canonical for n in names)


def _names(subject: str, other: str) -> list[str]:
    """The words of `subject`'s title that `other`'s lacks: its space-separated parts not in the
    other (极岚, 听澜p9 of 极岚 听澜P9 运动蓝牙耳机 against 声悦 听澜S3 …), and what the two differ in
    once their shared start and end are out (唐霞 of 唐霞的住院病历 against 姚美静的住院病历)."""
    parts = [p for p in subject.split(" ") if len(p) >= _MIN_NAME and p not in other.split(" ")]
    own, _ = differing_names(subject.replace(" ", ""), other.replace(" ", ""))
    names = [p for p in (*parts, own) if len(p) >= _MIN_NAME]
    return list(dict.fromkeys(names))


def _same_kind(a: tuple[str, str], b: tuple[str, str]) -> bool:
    return a[0] == b[0] and (not a[1] or not b[1] or a[1] == b[1])


def _title_parts(title: str) -> str:
    """A title's parts (split where it has spaces or separators), each canonical, joined by one space."""
    return " ".join(part for part in (_canonical(p) for p in TITLE_SEPARATORS.split(title)) if part)


def _canonical(text: str) -> str:
    """Canonical, ASCII lower-cased, without spaces: 极岚听澜p9 names 极岚 听澜P9."""
    return ascii_lower(canonical_text(text)).replace(" ", "")
