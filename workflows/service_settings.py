"""The service's settings (CITESCOPE_* environment variables): API keys and tenants, rate and
body limits, how many questions run and wait at once, and the deadlines of a question and of a
connection."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from citescope.workflows.tenants import TenantDirectory


class ServiceSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CITESCOPE_", extra="ignore")

    api_keys: str = Field(default="", repr=False)  # comma-separated `key` or `key:tenant`; unset: no auth
    # GET /metrics with this Bearer key shows every tenant's counters; a tenant's own key shows its own
    metrics_key: str = Field(default="", repr=False)
    tenants_file: Path | None = None  # YAML/JSON: tenants: {name: {keys: [...], requests_per_minute: N}}
    requests_per_minute: int = Field(default=0, ge=0)  # per tenant, unless its entry says otherwise; 0: no limit
    max_body_bytes: int = Field(default=64 * 1024, ge=1024)
    # questions computed at once on the Assistant thread, and waiting for a turn; beyond both: 503
    max_running_questions: int = Field(default=4, ge=1)
    max_queued_questions: int = Field(default=64, ge=0)
    # of them, questions longer than the pipeline's retrieval_max_chars (a pasted story) computed at once
    max_running_long_questions: int = Field(default=1, ge=1)
    retry_after_s: int = Field(default=2, ge=1)  # the Retry-After of a 503 for a full queue
    # a question answers or refuses (refusal_reason "deadline") this long after its request arrived,
    # its wait for a slot included (the pipeline's deadline_s, if shorter, wins)
    request_deadline_s: float = Field(default=10.0, gt=0)
    # a connection that has not sent a whole request line and headers this long after it opened
    # (or a keep-alive one after its last response) is closed; a body not received in full this
    # long after its headers gets 408; an idle keep-alive connection is closed after keep_alive_timeout_s
    header_timeout_s: float = Field(default=10.0, gt=0)
    body_timeout_s: float = Field(default=10.0, gt=0)
    keep_alive_timeout_s: float = Field(default=5.0, gt=0)

    def tenants(self) -> TenantDirectory:
        return TenantDirectory.load(self.api_keys, self.tenants_file, self.requests_per_minute)
