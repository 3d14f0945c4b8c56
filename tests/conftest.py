"""Shared fixtures: one embedding cache and one demo KB per test run (embedding is slow)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DEMO_DIR = REPO / "knowledge" / "demo"

# Tests share the user's embedding cache (~/.cache/citescope, or CITESCOPE_CACHE_DIR): vectors
# are keyed by model and text hash, so a fresh machine embeds the demo KB once and later runs
# reuse it. No test asserts on how many texts a first ingest had to embed.


def find_datasets() -> Path | None:
    for parent in REPO.parents:
        candidate = parent / "shared" / "datasets"
        if candidate.is_dir():
            return candidate
    return None


@pytest.fixture(scope="session")
def datasets_dir() -> Path:
    found = find_datasets()
    if found is None:
        pytest.skip("../shared/datasets is not present on this machine")
    return found


def ingested_kb(kb_dir: Path, paths: list[Path]):
    """A new KB in kb_dir holding `paths`, warmed up, with its ingest summary (no issue allowed)."""
    from citescope.knowledge.ingest import Ingestor
    from citescope.knowledge.kb import KnowledgeBase
    from citescope.knowledge.settings import get_settings

    kb = KnowledgeBase(kb_dir, get_settings(kb_dir=kb_dir), create=True)
    summary = Ingestor(kb, show_progress=False).run(paths)
    assert not summary.issues, summary.issues
    return kb.warm_up(), summary


@pytest.fixture(scope="session")
def demo_kb(tmp_path_factory):
    """The built-in demo KB, ingested once per run; tests must not modify it."""
    kb, _ = ingested_kb(tmp_path_factory.mktemp("demo-kb"), [DEMO_DIR])
    yield kb
    kb.close()


@pytest.fixture(scope="module")
def registry():
    """The configured skills (no plug-ins), with timeouts a busy CI machine cannot hit: a slow
    call must not turn into a degraded one in a test about something else."""
    from citescope.tools.registry import SkillRegistry

    registry = SkillRegistry.from_config(plugins=False)
    for skill in registry.skills.values():
        skill.spec.timeout_s = 120
    return registry
