"""Metadata filters, validated before they reach any index.

A filter is built from typed fields only; user text is never pasted into a Milvus expression:
values are checked against a safe character set and quoted with json.dumps.
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime

import numpy as np
from pydantic import BaseModel, ConfigDict, field_validator

from citescope.knowledge.schema import DocType

_SAFE_VALUE = re.compile(r"^[\w\u4e00-\u9fff .\-+#&()（）·/]{1,100}$")


_PERIOD = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


def as_of_day(period: str) -> date:
    """The middle of a period: 2023 -> 2023-07-01, 2023-05 -> 2023-05-15, a day -> itself, so a
    document dated anywhere in the asked year is at most half a year from it."""
    parts = [int(p) for p in period.split("-")]
    if len(parts) == 1:
        return date(parts[0], 7, 1)
    if len(parts) == 2:
        return date(parts[0], parts[1], 15)
    return date(*parts)


def parse_day(iso_date: str | None) -> date | None:
    """The day of an ISO date or datetime string; None when there is none or it is not a day."""
    try:
        return date.fromisoformat(iso_date[:10]) if iso_date else None
    except ValueError:
        return None


def day_number(iso_date: str | None) -> int:
    """YYYY-MM-DD -> days since 1970-01-01; unknown dates sort as oldest (0)."""
    if not iso_date:
        return 0
    return (date.fromisoformat(iso_date[:10]) - date(1970, 1, 1)).days


class SearchFilters(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt filter must fail, not silently match all
    doc_type: list[DocType] | None = None
    brand: str | None = None
    category: str | None = None
    product_id: str | None = None
    updated_after: str | None = None  # inclusive YYYY-MM-DD
    updated_before: str | None = None  # inclusive YYYY-MM-DD
    # Not a filter: the time the question is about (YYYY, YYYY-MM or YYYY-MM-DD). The reranker
    # ranks documents dated near it first, so "招生计划是多少" as of 2016 reads the 2016 brochure
    # of a site that keeps every year's; nothing is excluded (a 2020 report may hold 2019 data).
    as_of: str | None = None

    @field_validator("brand", "category", "product_id")
    @classmethod
    def _safe(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip()
        if not _SAFE_VALUE.match(value):
            raise ValueError("contains characters that are not allowed in a filter value")
        return value

    @field_validator("updated_after", "updated_before")
    @classmethod
    def _iso(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:  # the whole value: "2026-01-01) or true" must fail, not be cut to its first ten characters
            return datetime.fromisoformat(value.strip()).date().isoformat()
        except ValueError as exc:
            raise ValueError("must be a date YYYY-MM-DD") from exc

    @field_validator("as_of")
    @classmethod
    def _period(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = str(value).strip()
        if not _PERIOD.match(value):
            raise ValueError("must be a year, a month or a day: YYYY, YYYY-MM or YYYY-MM-DD")
        try:
            as_of_day(value)
        except ValueError as exc:
            raise ValueError(f"is not a real date ({exc})") from None
        return value

    def is_empty(self) -> bool:
        return not any(v for v in self.model_dump().values())

    def restricts(self) -> bool:
        """True when some field excludes documents (as_of only reorders them)."""
        return any(v for k, v in self.model_dump().items() if k != "as_of")

    def reference_day(self) -> date | None:
        return as_of_day(self.as_of) if self.as_of else None

    def milvus_expr(self) -> str:
        parts = []
        if self.doc_type:
            parts.append(f"doc_type in {json.dumps(list(self.doc_type), ensure_ascii=False)}")
        for field in ("brand", "category", "product_id"):
            value = getattr(self, field)
            if value:
                parts.append(f"{field} == {json.dumps(value, ensure_ascii=False)}")
        if self.updated_after:
            parts.append(f"updated_day >= {day_number(self.updated_after)}")
        if self.updated_before:
            parts.append(f"updated_day <= {day_number(self.updated_before)}")
        return " and ".join(parts)

    def mask(self, columns: dict[str, np.ndarray]) -> np.ndarray | None:
        """Boolean mask over the chunk table's metadata columns (None = no filter)."""
        if not self.restricts():
            return None
        n = len(columns["doc_type"])
        keep = np.ones(n, dtype=bool)
        if self.doc_type:
            keep &= np.isin(columns["doc_type"], list(self.doc_type))
        for field in ("brand", "category", "product_id"):
            value = getattr(self, field)
            if value:
                keep &= columns[field] == value
        if self.updated_after:
            keep &= columns["updated_day"] >= day_number(self.updated_after)
        if self.updated_before:
            keep &= columns["updated_day"] <= day_number(self.updated_before)
        return keep
