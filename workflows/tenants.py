"""Tenants: who an API key speaks for, and how many requests a minute each may make.

Every session, trace, experience round and rating is owned by the tenant that made it; another
tenant's ids read as unknown (404). Keys come from two places, both optional:

- `CITESCOPE_API_KEYS` (comma-separated, as before): a bare `key` is its own tenant (named
  `key-<first 12 hex of its SHA-256>`, so the key itself is never stored or logged); `key:tenant`
  puts the key in that tenant (several keys may share one; `key:default` keeps reading the rows
  stored before tenants existed).
- `CITESCOPE_TENANTS_FILE`: YAML or JSON
      tenants:
        shop-a: {keys: [key-a1, key-a2], requests_per_minute: 120}
        shop-b: {keys: [key-b]}
  (`requests_per_minute` defaults to CITESCOPE_REQUESTS_PER_MINUTE; 0 means no limit).

No key anywhere: the API is open and everything belongs to the default tenant (a warning is
logged). A key list that is set but names no key (`" , "`) is a configuration error, not an open
API. The Python API and the CLI act as the default tenant.

Rate limits are a token bucket per tenant (capacity = the per-minute limit, refilled evenly), in
memory: a few lines instead of a dependency, since one process serves the API and nothing needs
sharing across hosts.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from citescope.workflows.validation import describe_validation_error

DEFAULT_TENANT = "default"
_TENANT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def check_tenant_name(name: str) -> str:
    if not _TENANT_NAME.match(name):
        raise ValueError(
            f"a tenant name is 1-64 letters, digits, '_', '.' or '-' (starting with a letter or digit), got {name!r}"
        )
    return name


class TenantEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    keys: list[str] = Field(..., min_length=1)
    requests_per_minute: int | None = Field(None, ge=0)

    @field_validator("keys")
    @classmethod
    def _keys_are_text(cls, keys: list[str]) -> list[str]:
        if any(not key.strip() or key != key.strip() for key in keys):
            raise ValueError("every key is non-empty text without surrounding spaces")
        return keys


class TenantsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tenants: dict[str, TenantEntry]

    @field_validator("tenants")
    @classmethod
    def _names(cls, tenants: dict[str, TenantEntry]) -> dict[str, TenantEntry]:
        for name in tenants:
            check_tenant_name(name)
        return tenants


class Tenant(BaseModel):
    name: str
    requests_per_minute: int = 0  # 0: no limit


class TenantDirectory:
    """Key -> tenant; `open` when no key is configured (everyone is the default tenant)."""

    def __init__(self, keys: dict[str, Tenant]):
        self._keys = keys

    @property
    def open(self) -> bool:
        return not self._keys

    def tenant_for(self, key: str | None) -> Tenant | None:
        """The key's tenant (compared in constant time); None for a missing or unknown key."""
        if self.open:
            return Tenant(name=DEFAULT_TENANT)
        given = (key or "").encode()
        found = None
        for known, tenant in self._keys.items():
            if hmac.compare_digest(given, known.encode()):
                found = tenant
        return found

    @classmethod
    def load(
        cls, api_keys: str = "", tenants_file: Path | None = None, requests_per_minute: int = 0
    ) -> TenantDirectory:
        """From the CITESCOPE_API_KEYS text and the tenants file; ValueError naming what is wrong."""
        keys: dict[str, Tenant] = {}

        def add(key: str, name: str, limit: int | None, where: str) -> None:
            tenant = Tenant(name=name, requests_per_minute=requests_per_minute if limit is None else limit)
            if key in keys and keys[key].name != name:
                raise ValueError(f"{where}: a key is given to two tenants ({keys[key].name!r} and {name!r})")
            keys[key] = tenant

        if api_keys.strip(" ,\t\n"):
            for entry in (part.strip() for part in api_keys.split(",")):
                if not entry:
                    continue
                key, _, name = entry.rpartition(":") if ":" in entry else (entry, "", "")
                if not key:
                    raise ValueError(f"CITESCOPE_API_KEYS: {entry[:4]}… has no key before the ':'")
                try:
                    name = check_tenant_name(name) if name else _own_tenant_name(key)
                except ValueError as exc:
                    raise ValueError(f"CITESCOPE_API_KEYS: {exc}") from None
                add(key, name, None, "CITESCOPE_API_KEYS")
        elif api_keys:
            raise ValueError(
                "CITESCOPE_API_KEYS is set but names no key (only spaces and commas): set keys, "
                "or unset it to run the API open"
            )
        if tenants_file is not None:
            for name, tenant_entry in _read_tenants_file(Path(tenants_file)).tenants.items():
                for key in tenant_entry.keys:
                    add(key, name, tenant_entry.requests_per_minute, f"CITESCOPE_TENANTS_FILE {tenants_file}")
        return cls(keys)


def _own_tenant_name(key: str) -> str:
    return "key-" + hashlib.sha256(key.encode()).hexdigest()[:12]


def _read_tenants_file(path: Path) -> TenantsFile:
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise ValueError(f"CITESCOPE_TENANTS_FILE {path}: cannot be read: {exc}") from None
    try:
        return TenantsFile.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"CITESCOPE_TENANTS_FILE {path}: {describe_validation_error(exc)}") from None


class RateLimiter:
    """A token bucket per tenant: `requests_per_minute` tokens at most, refilled evenly."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # tenant -> (tokens, at)
        self._lock = threading.Lock()

    def acquire(self, tenant: Tenant) -> float:
        """0.0 when the request may go ahead (a token is taken), else the seconds until one is free."""
        limit = tenant.requests_per_minute
        if limit <= 0:
            return 0.0
        per_second = limit / 60.0
        with self._lock:
            now = self._clock()
            tokens, at = self._buckets.get(tenant.name, (float(limit), now))
            tokens = min(float(limit), tokens + (now - at) * per_second)
            if tokens >= 1.0:
                self._buckets[tenant.name] = (tokens - 1.0, now)
                return 0.0
            self._buckets[tenant.name] = (tokens, now)
            return (1.0 - tokens) / per_second


def retry_after_header(wait_s: float) -> str:
    return str(max(1, math.ceil(wait_s)))
