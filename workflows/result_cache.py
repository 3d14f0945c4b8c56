"""ResultCache: the same question, about the same product, against the same KB generation, is
answered from memory instead of running retrieval and generation again.

The key is the question normalised (knowledge.normalize, case-folded, whitespace collapsed
and dropped next to Chinese, closing ?/! marks dropped), the product a follow-up carries from its
session (None when the question names its own), the topic a follow-up carries on a KB without
products (its conversation's opening question), the caller's filters and the KB version (the
catalog generation). Any ingest moves the generation on and empties the cache. A hit is a copy
of the stored result that keeps the original trace id (its decision trace and experience round
stay the ones to look at and rate) and says where it came from:
timings_ms {"cached": 1.0, "original_total": ..., "total": ...}.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from citescope.agents.query_analysis import Entity
from citescope.agents.usage import UsageReport
from citescope.knowledge.normalize import normalize
from citescope.workflows.result import QAResult

DEFAULT_MAX_ENTRIES = 512
CacheKey = tuple[str, str, str, str]
_SPACE_BY_CJK = re.compile(r"(?<=[\u3000-\u9fff\uff00-\uffef])\s+|\s+(?=[\u3000-\u9fff\uff00-\uffef])")
_TRAILING_MARKS = re.compile(r"[\s?？!！。.~～]+$")


def normalized_question(question: str) -> str:
    """Half-width, case-folded, one space between words and none next to Chinese, no closing marks."""
    text = " ".join(normalize(question).casefold().split())
    return _TRAILING_MARKS.sub("", _SPACE_BY_CJK.sub("", text))


def _entity_key(entity: Entity | None) -> str:
    if entity is None:
        return ""
    return entity.product_id or f"name:{normalized_question(entity.name)}"


def _filters_key(filters: Any) -> str:
    """The filters that constrain anything, as stable text ("" for none: {} and None are the same)."""
    if hasattr(filters, "model_dump"):
        filters = filters.model_dump()
    if not isinstance(filters, Mapping):
        return "" if filters is None else json.dumps(filters, ensure_ascii=False, default=str)
    given = {name: value for name, value in filters.items() if value not in (None, "", [], ())}
    return json.dumps(given, sort_keys=True, ensure_ascii=False, default=str) if given else ""


class ResultCache:
    """A bounded LRU of QAResults for one KB; thread-safe."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES):
        if max_entries < 1:
            raise ValueError("ResultCache needs room for at least one entry")
        self.max_entries = max_entries
        self._entries: OrderedDict[CacheKey, QAResult] = OrderedDict()
        self._kb_version: int | None = None
        self._lock = threading.Lock()

    @staticmethod
    def key(question: str, entity: Entity | None = None, filters: Any = None, topic: str | None = None) -> CacheKey:
        return (
            normalized_question(question),
            _entity_key(entity),
            normalized_question(topic) if topic else "",
            _filters_key(filters),
        )

    def _at_version(self, kb_version: int) -> None:
        """Forget everything answered against another KB generation (caller holds the lock)."""
        if kb_version != self._kb_version:
            self._entries.clear()
            self._kb_version = kb_version

    def get(
        self, question: str, entity: Entity | None, kb_version: int, filters: Any = None, topic: str | None = None
    ) -> QAResult | None:
        with self._lock:
            self._at_version(kb_version)
            key = self.key(question, entity, filters, topic)
            stored = self._entries.get(key)
            if stored is None:
                return None
            self._entries.move_to_end(key)
        hit = stored.model_copy(deep=True)
        hit.timings_ms = {"cached": 1.0, "original_total": stored.timings_ms.get("total", 0.0)}
        hit.usage = UsageReport()  # this request called no model: the tokens were the first asker's
        return hit

    def put(
        self,
        question: str,
        entity: Entity | None,
        kb_version: int,
        result: QAResult,
        filters: Any = None,
        topic: str | None = None,
    ) -> None:
        with self._lock:
            self._at_version(kb_version)
            key = self.key(question, entity, filters, topic)
            self._entries[key] = result.model_copy(deep=True)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
