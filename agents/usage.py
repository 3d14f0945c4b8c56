"""Tokens and cost of model calls: what one request used, the limits a question's calls stay in,
and what the tokens cost.

`Usage` is one request's or many requests' tokens (summed with `+`); `UsageLimits` is checked
before every model request, as pydantic-ai's `UsageLimits.check_before_request` is: a request is
refused once the requests, the input tokens or the output tokens spent so far reach their limit.
A token limit cannot be checked against a request not sent yet (its size is known only from the
reply), so the request that crosses a limit is kept (it is paid for) and the next one is refused.
`ModelPrice` turns a model's usage into money; `UsageReport` is what a question, a session, a
batch or a tenant spent, per model and in total, with the cost when every model used is priced.

Where the counts come from: AgentScope's ChatResponse.usage (ChatUsage: input_tokens,
output_tokens) for OpenAI-compatible and DashScope replies, streamed or not (a stream's usage is
on its last chunk: OpenAI's `stream_options.include_usage` chunk, DashScope's cumulative `usage`
on every event). ChatUsage has no cached-token field, but keeps the provider's own usage object
as its metadata; both providers report cached prompt tokens there as
`prompt_tokens_details.cached_tokens`, read here. A provider that does not report them gives 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Currency = Literal["CNY", "USD"]


class Usage(BaseModel):
    """Requests and tokens; `cached_tokens` are the part of `input_tokens` the provider served
    from its prompt cache (billed at its cached price)."""

    model_config = ConfigDict(frozen=True)

    requests: int = Field(default=0, ge=0)
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cached_tokens: int = Field(default=0, ge=0)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            requests=self.requests + other.requests,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @classmethod
    def tokens_of(cls, response: Any) -> Usage:
        """The tokens of one AgentScope ChatResponse (requests 0: the caller counts requests as
        it sends them, replies or not); zeros when the reply carried no usage."""
        usage = getattr(response, "usage", None)
        if usage is None:
            return cls()
        return cls(
            input_tokens=int(usage.input_tokens or 0),
            output_tokens=int(usage.output_tokens or 0),
            cached_tokens=_cached_tokens(getattr(usage, "metadata", None)),
        )


def _field(value: Any, name: str) -> Any:
    """A field of the provider's usage object: the openai SDK's are objects, DashScope's are dicts."""
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def _cached_tokens(provider_usage: Any) -> int:
    cached = _field(_field(provider_usage, "prompt_tokens_details"), "cached_tokens")
    return int(cached) if isinstance(cached, (int, float)) and cached > 0 else 0


class UsageLimits(BaseModel):
    """What one question's model requests may use; None = no limit."""

    model_config = ConfigDict(extra="forbid")

    max_requests: int | None = Field(default=None, ge=0)
    max_input_tokens: int | None = Field(default=None, ge=0)
    max_output_tokens: int | None = Field(default=None, ge=0)

    def check_before_request(self, spent: Usage) -> str | None:
        """Why the next request must not be sent after `spent`, or None when it may be."""
        if self.max_requests is not None and spent.requests >= self.max_requests:
            return f"model-call budget used up ({self.max_requests} calls)"
        if self.max_input_tokens is not None and spent.input_tokens >= self.max_input_tokens:
            return f"input-token limit reached ({spent.input_tokens} of max_input_tokens {self.max_input_tokens})"
        if self.max_output_tokens is not None and spent.output_tokens >= self.max_output_tokens:
            return f"output-token limit reached ({spent.output_tokens} of max_output_tokens {self.max_output_tokens})"
        return None


class ModelPrice(BaseModel):
    """A model's price per 1,000 tokens. cached_input_per_1k: the price of an input token served
    from the provider's cache; None = billed as any input token."""

    model_config = ConfigDict(extra="forbid")

    currency: Currency
    input_per_1k: float = Field(..., ge=0)
    output_per_1k: float = Field(..., ge=0)
    cached_input_per_1k: float | None = Field(None, ge=0)

    def cost(self, usage: Usage) -> float:
        cached = min(usage.cached_tokens, usage.input_tokens)
        cached_price = self.input_per_1k if self.cached_input_per_1k is None else self.cached_input_per_1k
        return (
            (usage.input_tokens - cached) * self.input_per_1k
            + cached * cached_price
            + usage.output_tokens * self.output_per_1k
        ) / 1000


PriceTable = Mapping[str, ModelPrice]  # model name (as the provider's client names it) -> price


class ModelUsage(BaseModel):
    """One model's usage and its cost; cost None when the model has no price in the table."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost: float | None = None
    currency: Currency | None = None

    @property
    def usage(self) -> Usage:
        return Usage(
            requests=self.requests,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cached_tokens=self.cached_tokens,
        )

    @classmethod
    def priced(cls, usage: Usage, price: ModelPrice | None) -> ModelUsage:
        cost = None if price is None else round(price.cost(usage), 8)
        return cls(**usage.model_dump(), cost=cost, currency=None if price is None else price.currency)

    def __add__(self, other: ModelUsage) -> ModelUsage:
        """Two accounts of one model; the cost stays known only when both are, in one currency."""
        cost = None
        if self.cost is not None and other.cost is not None and self.currency == other.currency:
            cost = round(self.cost + other.cost, 8)
        return ModelUsage(
            **(self.usage + other.usage).model_dump(), cost=cost, currency=self.currency if cost is not None else None
        )


class UsageReport(BaseModel):
    """What some model calls used: totals, then per model. cost: the sum over the models, None
    when a model used has no price or the models are priced in different currencies (each
    model's own cost is still in by_model). Nothing used: zeros and cost 0."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost: float | None = 0.0
    currency: Currency | None = None
    by_model: dict[str, ModelUsage] = Field(default_factory=dict)

    @classmethod
    def of(cls, per_model: Mapping[str, Usage], prices: PriceTable) -> UsageReport:
        """The report of per-model usage, priced from the table (a model not in it: cost None)."""
        return cls.from_models({name: ModelUsage.priced(usage, prices.get(name)) for name, usage in per_model.items()})

    @classmethod
    def from_models(cls, by_model: Mapping[str, ModelUsage]) -> UsageReport:
        total = sum((m.usage for m in by_model.values()), Usage())
        currencies = {m.currency for m in by_model.values()}
        costs = [m.cost for m in by_model.values()]
        one_currency = len(currencies) == 1 and None not in currencies
        cost: float | None = 0.0
        if by_model:
            cost = round(sum(c for c in costs if c is not None), 8) if one_currency and None not in costs else None
        return cls(
            **total.model_dump(),
            cost=cost,
            currency=next(iter(currencies)) if one_currency else None,
            by_model=dict(by_model),
        )

    @classmethod
    def combine(cls, reports: Iterable[UsageReport]) -> UsageReport:
        """Several reports summed (a session's questions, a batch, a tenant), model by model."""
        merged: dict[str, ModelUsage] = {}
        for report in reports:
            for name, used in report.by_model.items():
                merged[name] = merged[name] + used if name in merged else used
        return cls.from_models(merged)

    @classmethod
    def read(cls, value: Any) -> UsageReport:
        """A report stored as JSON (a trace, a batch line); a record written before usage was
        recorded, or not a report, reads as nothing used."""
        if not isinstance(value, Mapping):
            return cls()
        try:
            return cls.model_validate(value)
        except ValueError:
            return cls()

    def render(self) -> str:
        """One line: requests, tokens, cost."""
        cost = "cost unknown" if self.cost is None else f"cost {self.cost:.4f} {self.currency or ''}".rstrip()
        return (
            f"{self.requests} model requests, {self.input_tokens} input tokens ({self.cached_tokens} cached), "
            f"{self.output_tokens} output tokens, {cost}"
        )
