"""Tenants from CITESCOPE_API_KEYS (as before, or key:tenant) and a tenants file; the per-tenant
token bucket on a clock the test moves (no sleeping, no timing)."""

from __future__ import annotations

import json

import pytest

from citescope.workflows.tenants import DEFAULT_TENANT, RateLimiter, Tenant, TenantDirectory


def test_bare_keys_are_each_their_own_tenant_and_pairs_name_theirs():
    directory = TenantDirectory.load("key-a, key-b,key-c:shop-c, key-d:shop-c")
    a, b = directory.tenant_for("key-a"), directory.tenant_for("key-b")
    assert a.name != b.name and a.name.startswith("key-") and "key-a" not in a.name  # the key is never the name
    assert directory.tenant_for("key-c").name == directory.tenant_for("key-d").name == "shop-c"
    assert directory.tenant_for("key-e") is None and directory.tenant_for(None) is None
    assert directory.tenant_for("key-c:shop-c") is None  # the pair is not a key


def test_no_keys_is_open_as_the_default_tenant_and_blank_keys_are_an_error():
    assert TenantDirectory.load("").open
    assert TenantDirectory.load("").tenant_for(None).name == DEFAULT_TENANT
    for blank in (" , ", ",", "  "):
        with pytest.raises(ValueError, match="CITESCOPE_API_KEYS is set but names no key"):
            TenantDirectory.load(blank)
    with pytest.raises(ValueError, match="CITESCOPE_API_KEYS: a tenant name"):
        TenantDirectory.load("key-a:bad name!")


def test_a_tenants_file_yaml_or_json(tmp_path):
    yaml_file = tmp_path / "tenants.yaml"
    yaml_file.write_text(
        "tenants:\n  shop-a: {keys: [ka1, ka2], requests_per_minute: 5}\n  shop-b: {keys: [kb]}\n", encoding="utf-8"
    )
    directory = TenantDirectory.load("legacy", yaml_file, requests_per_minute=60)
    assert directory.tenant_for("ka2") == Tenant(name="shop-a", requests_per_minute=5)
    assert directory.tenant_for("kb") == Tenant(name="shop-b", requests_per_minute=60)
    assert directory.tenant_for("legacy") is not None  # the env keys still work beside the file
    json_file = tmp_path / "tenants.json"
    json_file.write_text(json.dumps({"tenants": {"shop-a": {"keys": ["ka1"]}}}), encoding="utf-8")
    assert TenantDirectory.load("", json_file).tenant_for("ka1").name == "shop-a"


@pytest.mark.parametrize(
    "content, problem",
    [
        ("tenants:\n  shop-a: {keys: []}\n", r"tenants\.shop-a\.keys"),
        ("tenants:\n  shop-a: {keys: [k], rpm: 3}\n", r"tenants\.shop-a\.rpm: not a known field"),
        ("tenants:\n  'bad name': {keys: [k]}\n", "a tenant name"),
        ("tenants:\n  a: {keys: [k]}\n  b: {keys: [k]}\n", "a key is given to two tenants"),
        ("tenants: [\n", "cannot be read"),
    ],
)
def test_a_bad_tenants_file_names_the_file_and_the_problem(tmp_path, content, problem):
    path = tmp_path / "tenants.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=rf"CITESCOPE_TENANTS_FILE .*tenants\.yaml.*{problem}"):
        TenantDirectory.load("", path)


def test_the_token_bucket_allows_the_limit_per_minute_per_tenant():
    now = [1000.0]
    limiter = RateLimiter(clock=lambda: now[0])
    shop_a, shop_b = Tenant(name="a", requests_per_minute=3), Tenant(name="b", requests_per_minute=3)
    assert [limiter.acquire(shop_a) for _ in range(3)] == [0.0, 0.0, 0.0]
    wait_s = limiter.acquire(shop_a)
    assert wait_s == pytest.approx(20.0)  # one token back every 60/3 seconds
    assert limiter.acquire(shop_b) == 0.0  # another tenant's bucket is its own
    now[0] += 20.0
    assert limiter.acquire(shop_a) == 0.0 and limiter.acquire(shop_a) > 0
    unlimited = Tenant(name="c", requests_per_minute=0)
    assert all(limiter.acquire(unlimited) == 0.0 for _ in range(1000))
