"""The skill registry: skills from config and from real entry points, health checks, timeouts,
degradation and config errors. Test skills live in modules written to a temp dir on sys.path."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from citescope.agents.toolkit import build_toolkit
from citescope.tools.base import SkillContext
from citescope.tools.registry import DEFAULT_CONFIG, SkillConfigError, SkillRegistry

MODULE = "citescope_test_skills"
SKILLS_SOURCE = '''
import threading

from citescope.tools.base import SkillContext, SkillResult, hits_from_chunks
from citescope.tools.registry import SkillSpec

release = threading.Event()


def faq_titles(keyword: str, limit: int = 3, *, ctx: SkillContext) -> SkillResult:
    """按关键词列出常见问题。

    Args:
        keyword: 要找的关键词，例如“发票”。
        limit: 最多返回几条。
    """
    found = [c for c in ctx.kb.all_chunks() if c.doc_type == "faq" and keyword in c.text][:limit]
    hits = hits_from_chunks(ctx.kb, [(c.chunk_id, 1.0) for c in found], "faq")
    return SkillResult(skill="faq_titles", hits=hits, data={"config": dict(ctx.config), "limit": limit})


def explodes(query: str, *, ctx: SkillContext) -> SkillResult:
    """总是出错。

    Args:
        query: 问题。
    """
    raise RuntimeError("index offline")


def sleeps(query: str, *, ctx: SkillContext) -> SkillResult:
    """等到测试放行才返回。

    Args:
        query: 问题。
    """
    release.wait(60)
    return SkillResult(skill="sleeps")


def caches(query: str, *, ctx: SkillContext) -> SkillResult:
    """在共享上下文里缓存一个对象。

    Args:
        query: 问题。
    """
    ctx.reranker = "cached-by-skill"
    return SkillResult(skill="caches", data={"config": dict(ctx.config)})


def undocumented(query: str, *, ctx: SkillContext) -> SkillResult:
    """没有写参数说明。"""
    return SkillResult(skill="undocumented")


def no_ctx(query: str) -> SkillResult:
    """没有 ctx。

    Args:
        query: 问题。
    """
    return SkillResult(skill="no_ctx")


def wrong_return(query: str, *, ctx: SkillContext) -> dict:
    """返回值不是 SkillResult。

    Args:
        query: 问题。
    """
    return {}


def sick(query: str, *, ctx: SkillContext) -> SkillResult:
    """自检不通过。

    Args:
        query: 问题。
    """
    return SkillResult(skill="sick")


sick.health = lambda ctx: "索引还没建好"
faq_titles.health = lambda ctx: ctx.kb is not None

SPEC = SkillSpec(name="plugin_spec", function=faq_titles, params={"via": "spec"}, timeout_s=5)
DICT = {"function": faq_titles, "params": {"via": "dict"}}
'''


@pytest.fixture()
def skills_module(tmp_path, monkeypatch):
    """The test skills as a real module on sys.path (fresh per test, so `release` starts unset)."""
    folder = tmp_path / "modules"
    folder.mkdir()
    (folder / f"{MODULE}.py").write_text(SKILLS_SOURCE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    yield folder
    module = sys.modules.get(MODULE)
    if module is not None:
        module.release.set()  # let an abandoned sleeping skill thread finish


def write_config(folder: Path, skills: list[dict], **top) -> Path:
    path = folder / "skills.yaml"
    path.write_text(yaml.safe_dump({**top, "skills": skills}, allow_unicode=True), encoding="utf-8")
    return path


def entry(name: str, function: str | None = None, **extra) -> dict:
    return {"name": name, "import": f"{MODULE}:{function or name}", **extra}


@pytest.fixture()
def ctx(demo_kb) -> SkillContext:
    return SkillContext(demo_kb)


def test_default_config_offers_every_shipped_skill():
    registry = SkillRegistry.from_config(plugins=False)
    assert registry.source == str(DEFAULT_CONFIG)
    assert registry.names() == [
        "keyword_search",
        "semantic_search",
        "hybrid_search",
        "rerank",
        "rewrite_query",
        "product_lookup",
        "size_recommend",
        "expand_context",
    ], registry.degradations
    assert registry.degradations == []


def test_a_new_skill_from_config_alone_reaches_the_toolkit(skills_module, ctx):
    config = write_config(skills_module, [entry("faq_titles", params={"source": "config"}, timeout_s=5)])
    registry = SkillRegistry.from_config(config, plugins=False)
    assert registry.names() == ["faq_titles"]
    result = registry.call("faq_titles", ctx, keyword="发票", limit="2")  # "2": coerced by the schema
    assert result.hits and all(h.doc_type == "faq" for h in result.hits)
    assert result.data == {"config": {"source": "config"}, "limit": 2}
    toolkit = build_toolkit(registry, ctx)
    assert [s["function"]["name"] for s in toolkit.get_json_schemas()] == ["faq_titles"]


def test_entry_point_plugins_load_without_any_config_entry(skills_module, tmp_path, monkeypatch, ctx):
    site = tmp_path / "site"
    dist_info = site / "citescope_test_plugin-0.1.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: citescope-test-plugin\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(
        textwrap.dedent(f"""\
        [citescope.skills]
        plugin_faq = {MODULE}:faq_titles
        plugin_spec = {MODULE}:SPEC
        plugin_dict = {MODULE}:DICT
        plugin_off = {MODULE}:faq_titles
        plugin_broken = {MODULE}:no_such_function
        """)
    )
    monkeypatch.syspath_prepend(str(site))
    config = write_config(skills_module, [entry("faq_titles"), entry("plugin_off", "faq_titles", enabled=False)])

    registry = SkillRegistry.from_config(config)

    assert registry.names() == ["faq_titles", "plugin_faq", "plugin_spec", "plugin_dict"]
    assert registry.skipped["plugin_off"] == "disabled"  # the config entry turns the plug-in off
    assert any("plugin_off" in d and "already declared" in d for d in registry.degradations)
    assert any("plugin_broken" in d and "AttributeError" in d for d in registry.degradations)
    assert registry.call("plugin_spec", ctx, keyword="发票").data["config"] == {"via": "spec"}
    assert registry.call("plugin_dict", ctx, keyword="发票").data["config"] == {"via": "dict"}
    offered = {s["function"]["name"] for s in build_toolkit(registry, ctx).get_json_schemas()}
    assert offered == {"faq_titles", "plugin_faq", "plugin_spec", "plugin_dict"}


def test_a_raising_skill_and_a_hanging_skill_come_back_degraded(skills_module, ctx):
    config = write_config(skills_module, [entry("explodes"), entry("sleeps", timeout_s=0.2)])
    registry = SkillRegistry.from_config(config, plugins=False)

    failed = registry.call("explodes", ctx, query="发票")
    assert failed.skill == "explodes" and not failed.hits
    assert failed.degraded == ["explodes failed: RuntimeError: index offline"]
    assert "降级" in failed.text()

    hung = registry.call("sleeps", ctx, query="发票")
    assert hung.skill == "sleeps" and not hung.hits
    assert len(hung.degraded) == 1 and "timed out" in hung.degraded[0]


def test_unhealthy_skills_are_skipped_and_recorded(skills_module, ctx):
    config = write_config(
        skills_module,
        [
            entry("faq_titles"),
            entry("undocumented"),
            entry("no_ctx"),
            entry("wrong_return"),
            {"name": "missing_module", "import": "citescope_no_such_module:skill"},
        ],
    )
    registry = SkillRegistry.from_config(config, plugins=False)

    assert registry.names() == ["faq_titles"]
    reasons = {name: reason for name, reason in registry.skipped.items()}
    assert "'query' is not described" in reasons["undocumented"]
    assert "keyword-only parameter `ctx`" in reasons["no_ctx"]
    assert "-> SkillResult" in reasons["wrong_return"]
    assert "ModuleNotFoundError" in reasons["missing_module"]
    assert len(registry.degradations) == 4
    assert all(str(config) in d for d in registry.degradations)

    unavailable = registry.call("undocumented", ctx, query="x")
    assert unavailable.degraded and "不可用" in unavailable.note
    toolkit = build_toolkit(registry, ctx, only=["undocumented", "faq_titles"])
    assert [s["function"]["name"] for s in toolkit.get_json_schemas()] == ["faq_titles"]
    with pytest.raises(KeyError, match="nonexistent"):
        build_toolkit(registry, ctx, only=["nonexistent"])
    with pytest.raises(KeyError, match="nonexistent"):
        registry.call("nonexistent", ctx)


def test_health_hook_takes_a_failing_skill_out(skills_module, ctx):
    config = write_config(skills_module, [entry("faq_titles"), entry("sick")])
    registry = SkillRegistry.from_config(config, plugins=False)
    assert registry.names() == ["faq_titles", "sick"]
    assert registry.check_health(ctx) == ["faq_titles"]
    assert registry.skipped["sick"] == "索引还没建好"
    assert any("sick" in d and "索引还没建好" in d for d in registry.degradations)
    assert SkillRegistry.from_config(config, plugins=False, ctx=ctx).names() == ["faq_titles"]


def test_bad_arguments_come_back_as_a_note_for_the_model(skills_module, ctx):
    registry = SkillRegistry.from_config(write_config(skills_module, [entry("faq_titles")]), plugins=False)
    extra = registry.call("faq_titles", ctx, keyword="发票", colour="red")
    assert not extra.hits and "colour" in extra.note and extra.degraded
    missing = registry.call("faq_titles", ctx)
    assert "keyword" in missing.note and missing.degraded


def test_each_skill_sees_its_own_params_but_shares_the_question_context(skills_module, ctx):
    config = write_config(skills_module, [entry("caches", params={"mine": 1}), entry("faq_titles")])
    registry = SkillRegistry.from_config(config, plugins=False)
    ctx.config = {"question": "level"}
    assert registry.call("caches", ctx, query="x").data["config"] == {"mine": 1}
    assert ctx.reranker == "cached-by-skill"  # written through to the shared context
    assert ctx.config == {"question": "level"}
    assert registry.call("faq_titles", ctx, keyword="发票").data["config"] == {}
    registry.configure("caches", client=len)  # run-time objects a YAML file cannot hold
    assert registry.call("caches", ctx, query="x").data["config"] == {"mine": 1, "client": len}


@pytest.mark.parametrize(
    "skills, top, message",
    [
        (
            [entry("a", "faq_titles"), {"name": "b", "import": "m:f", "timeout": 3}],
            {},
            "skills[1] (b): unknown key(s) ['timeout']",
        ),
        ([entry("a", "faq_titles"), {"name": "b", "import": "m.f"}], {}, "skills[1] (b): import must be"),
        ([entry("a", "faq_titles"), {"name": "b"}], {}, "skills[1] (b): import must be"),
        ([entry("a", "faq_titles"), entry("b", "faq_titles", timeout_s=-1)], {}, "skills[1] (b): timeout_s must be"),
        (
            [entry("a", "faq_titles"), entry("b", "faq_titles", params=[1])],
            {},
            "skills[1] (b): params must be a mapping",
        ),
        ([entry("a", "faq_titles"), entry("b", "faq_titles", enabled="yes")], {}, "skills[1] (b): enabled must be"),
        ([entry("a", "faq_titles"), entry("a", "faq_titles")], {}, "skills[1] (a): duplicate skill name"),
        ([entry("a", "faq_titles"), {"name": "bad name", "import": "m:f"}], {}, "skills[1]: name must be"),
        ([entry("a", "faq_titles"), "just text"], {}, "skills[1]: an entry must be a mapping"),
        ([entry("a", "faq_titles")], {"plugins": True}, "unknown top-level key(s) ['plugins']"),
    ],
)
def test_bad_config_names_the_file_and_the_entry(skills_module, skills, top, message):
    config = write_config(skills_module, skills, **top)
    with pytest.raises(SkillConfigError) as raised:
        SkillRegistry.from_config(config)
    assert str(config) in str(raised.value) and message in str(raised.value)


def test_unreadable_or_shapeless_config(tmp_path):
    with pytest.raises(SkillConfigError, match="cannot read"):
        SkillRegistry.from_config(tmp_path / "missing.yaml")
    shapeless = tmp_path / "list.yaml"
    shapeless.write_text("- keyword_search\n")
    with pytest.raises(SkillConfigError, match="expected a mapping with a 'skills' list"):
        SkillRegistry.from_config(shapeless)
