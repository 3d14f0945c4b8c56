"""The native API's request and response bodies (POST /v1/ask, POST /v1/feedback)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from citescope.knowledge.filters import SearchFilters


class Filters(SearchFilters):
    """SearchFilters as the API takes them (an unknown field is a 422, as in SearchFilters)."""

    def given(self) -> dict[str, Any] | None:
        return self.model_dump(exclude_none=True) or None


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str
    session_id: str | None = Field(default=None, max_length=128)
    filters: Filters | None = None


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    trace_id: str = Field(..., max_length=128)
    rating: int | str  # 1 | -1 | "up" | "down" | 👍 | 👎
    comment: str | None = Field(default=None, max_length=2000)


class FeedbackResponse(BaseModel):
    trace_id: str
    rating: int
