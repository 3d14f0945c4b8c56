"""Evidence passages as the conflict check reads them (canonical text, sentences), the candidate
conflicts found in them, and whom two passages are about."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from citescope.agents.conflicts.values import ascii_lower, canonical_text
from citescope.knowledge.lexicon import Lexicon
from citescope.knowledge.normalize import normalize
from citescope.knowledge.text import CJK_CHAR, SNIPPET_CUT, is_faq
from citescope.tools.base import EvidenceHit

# An English full stop ends a sentence before a space, not in 3.5, e.g., U.S. or Jan. 6.
_FULL_STOP = (
    r"(?<=[a-z0-9%)])(?<!\b[a-z])(?<!\be\.g)(?<!\bi\.e)(?<!\bno)(?<!\bvs)(?<!\bmr)(?<!\bdr)(?<!\bst)"
    + "".join(rf"(?<!\b{m})" for m in ("jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))
    + r"\.(?=\s+[a-z0-9\"'(]|\s*$)"
)  # before an English word: not in 4时30分. 新华社


_SENTENCE_END = re.compile(r"[。！？!?\n]|…+|\.{3,}|[；;](?!\s*[^\s；;:：]{1,15}: )")


STRONG_END = re.compile(r"[。！？!?\n]|…+|\.{3,}")


# ... and in a passage without Chinese, a full stop too (in Chinese text "5日. Nancy Pelosi" is one sentence)
_ENGLISH_SENTENCE_END = re.compile(rf"{_SENTENCE_END.pattern}|{_FULL_STOP}")


ENGLISH_STRONG_END = re.compile(rf"{STRONG_END.pattern}|{_FULL_STOP}")


_VERSION_MARK = re.compile(r"[（(【\[][^）)】\]]*(?:版|修订|更新|version|v\d)[^）)】\]]*[）)】\]]", re.IGNORECASE)


# ----------------------------------------------------------------------------- passages
_OPENERS, _CLOSERS = "（(", "）)"


def _inside_brackets(text: str, start: int, position: int) -> bool:
    """Whether a "；" at `position` stands inside a bracket opened since `start` and closed before the
    sentence ends (维多利亚（英语：Queen Victoria；1819年—1901年），… is one sentence)."""
    depth = sum(c in _OPENERS for c in text[start:position]) - sum(c in _CLOSERS for c in text[start:position])
    if depth <= 0:
        return False
    rest = re.split(r"[。！？!?\n]", text[position:], maxsplit=1)[0]
    return any(c in _CLOSERS for c in rest)


@dataclass
class Passage:
    hit: EvidenceHit
    shown: str  # canonical_text of the hit's text: what values and sentences are shown from
    about: str  # title, section and text, canonical and lower-cased: what the passage is about
    text: str = ""  # `shown` with ASCII lower-cased: what is compared (same positions as `shown`)
    subject: str = ""  # subject_of(hit), canonical and lower-cased as the question's terms are

    def __post_init__(self) -> None:
        self.text = ascii_lower(self.shown)

    @classmethod
    def of(cls, hit: EvidenceHit, lexicon: Lexicon | None) -> Passage:
        shown = canonical_text(hit.text, lexicon)
        heading = canonical_text(f"{hit.title}\n{hit.section}", lexicon)
        subject = ascii_lower(canonical_text(subject_of(hit), lexicon))
        return cls(hit, shown, ascii_lower(f"{heading}\n{shown}"), subject=subject)

    @cached_property
    def english(self) -> bool:
        """No Chinese: a full stop ends its sentences too."""
        return not CJK_CHAR.search(self.text)

    def show(self, span: tuple[int, int]) -> str:
        return self.shown[span[0] : span[1]].strip()

    @cached_property
    def sentences(self) -> list[tuple[int, int]]:
        spans, start = [], 0
        for match in (_ENGLISH_SENTENCE_END if self.english else _SENTENCE_END).finditer(self.text):
            if match.group(0) in "；;" and _inside_brackets(self.text, start, match.start()):
                continue
            if match.start() > start:
                spans.append((start, match.start()))
            start = match.end()
        if start < len(self.text):
            spans.append((start, len(self.text)))
        return [(s, e) for s, e in spans if self.text[s:e].strip()]

    def sentence_at(self, position: int) -> tuple[int, int]:
        for start, end in self.sentences:
            if start <= position < end:
                return start, end
        return (position, position)

    def sentence_text(self, position: int) -> str:
        start, end = self.sentence_at(position)
        text = self.shown[start:end].strip(" -\n")
        # a search snippet's cut (… ...; `shown` lost the space before it) stays at the end, so a
        # quote of the sentence drops the clause the cut ran into
        cut = self.shown.startswith("...", end) and _cut_after(self.hit.text, text)
        return f"{text} ..." if cut and text else text


def _cut_after(raw: str, sentence: str) -> bool:
    """Whether the "..." after `sentence` is a snippet's cut, not the writer's own ellipsis: every
    "..." of the page is a cut, or the sentence's last characters stand before one in the page."""
    cuts = len(SNIPPET_CUT.findall(raw))
    if cuts and cuts == len(re.findall(r"\.{3}", raw)):
        return True
    return cuts > 0 and re.search(re.escape(sentence[-6:]) + SNIPPET_CUT.pattern, raw) is not None


def terms_near(text: str, start: int, end: int, terms: list[str], window: int) -> set[str]:
    neighbourhood = text[max(0, start - window) : min(len(text), end + window)]
    return {term for term in terms if term in neighbourhood}


# ----------------------------------------------------------------------------- candidates
@dataclass
class Side:
    value: str  # as shown
    key: str  # canonical, decides which values are the same
    passage: Passage
    position: int


@dataclass
class Candidate:
    entity: str
    attribute: str
    dimension: str
    sides: list[Side] = field(default_factory=list)

    @property
    def product_id(self) -> str | None:
        return self.sides[0].passage.hit.product_id

    def keys(self) -> set[str]:
        return {side.key for side in self.sides}


def title_stem(title: str) -> str:
    return _VERSION_MARK.sub("", normalize(title)).strip()


def subject_of(hit: EvidenceHit) -> str:
    """What the hit's title says it is about: the title without version marks ("" when the title
    names nothing: none, or an FAQ entry's, which is a customer's question)."""
    if not hit.title or is_faq(hit):
        return ""
    return title_stem(hit.title)


def one_subject(hits: list[EvidenceHit]) -> bool:
    """Whether the hits are surely about one thing: one product, or one document title once
    version marks are taken out (退换货政策（2024版） / （2026版）; untitled passages count as one).
    Two titles that differ (斯温登 / 诺丁汉, 2021年甘肃省录取分数线 / 2020年青海省…) may be two things
    written alike, which the pipeline trusts only among the evidence it shows."""
    products = {hit.product_id for hit in hits}
    if None not in products:
        return len(products) == 1
    return len({title_stem(hit.title) for hit in hits}) == 1
