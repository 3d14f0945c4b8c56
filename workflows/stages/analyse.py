"""Stage analyse: the question read once (intent, products, parts of a compound question, what a
follow-up carries), by the KB's QueryAnalyzer loaded at warm-up."""

from __future__ import annotations

from dataclasses import dataclass

from citescope.agents.aspect_reading import AspectReading, with_aspect
from citescope.agents.query_analysis import Entity, QueryAnalyzer, QueryFeatures


@dataclass(frozen=True)
class AnalyseInput:
    whole: str  # the question as typed, in simplified script (退貨運費 read as 退货运费)
    session_entity: Entity | None = None  # the product a conversation is about, searched with, never answered from
    session_topic: str | None = None  # else the conversation's opening question
    features: QueryFeatures | None = None  # the caller's reading of this same question, when it has one


@dataclass(frozen=True)
class Analysis:
    whole: str  # what a model reads: the question whole
    features: QueryFeatures

    @property
    def question(self) -> str:
        """What retrieval, rerank, the conflict check and the offline answerer read: a long message
        by its asking sentences (retrieval_max_chars), else the question itself."""
        return self.features.question


class Analyse:
    def __init__(self, analyzer: QueryAnalyzer, aspects: AspectReading | None = None):
        """aspects: reads the KB's aspect a question asks in other words (agents/aspect_reading.py)."""
        self.analyzer = analyzer
        self.aspects = aspects

    def run(self, given: AnalyseInput) -> Analysis:
        features = given.features
        if features is None:
            features = self.analyzer.run(given.whole, given.session_entity, given.session_topic)
        if self.aspects is not None and features.read_aspect is None:
            read = self.aspects.run(features.question)
            if read is not None:
                features = features.model_copy(
                    update={"question": with_aspect(features.question, read), "read_aspect": read.note()}
                )
        return Analysis(whole=given.whole, features=features)


def with_asked_time(text: str, as_of: str | None) -> str:
    """A model's view of a question asked about a given time (SearchFilters.as_of)."""
    return f"{text}\n（问的是 {as_of} 时的情况：以最接近这个时间的资料为准）" if as_of else text
