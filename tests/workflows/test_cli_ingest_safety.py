"""`run.py ingest` and `run.py search` on what testers found (issue #41): a mistyped `--prune`
emptied the demo KB, empty files of different formats exited differently, `search --k -1`
printed an empty table. Each runs the real command on a copy of the demo KB."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.settings import get_settings
from citescope.workflows.cli import app
from tests.conftest import DEMO_DIR, REPO
from tests.support.hostile import copy_kb


def _error_line(result) -> str:
    line = result.stderr.strip().splitlines()[-1]
    assert result.exit_code == 2 and line.startswith("error: ") and "Traceback" not in result.output, result.output
    return line


def kb_state(kb_dir) -> tuple[int, int, int]:
    """Documents and chunks in the catalog, rows in Milvus Lite."""
    kb = KnowledgeBase(kb_dir, get_settings(kb_dir=kb_dir))
    try:
        return kb.catalog.document_count(), len(kb.catalog.all_row_ids()), kb.open_vectors().count()
    finally:
        kb.close()


def test_a_mistyped_prune_removes_no_document(demo_kb, tmp_path_factory):
    """The figure in docs/reliability.md ("Ingest safety"): was 156 of 156 documents removed."""
    kb = copy_kb(demo_kb, tmp_path_factory, "typo-prune")
    before = kb_state(kb)
    assert before[0] == 156
    typo = DEMO_DIR.parent / "demo-typo"
    shown = CliRunner().invoke(app, ["ingest", str(typo), "--kb", str(kb), "--prune"])
    assert _error_line(shown) == (
        f"error: --prune refused, nothing changed: {typo}: no such file or folder. Prune only with paths "
        "that hold the KB's documents (check the path), or ingest without --prune"
    )
    assert kb_state(kb) == before

    # one file of the KB's folder: 123 of 156 would go (79%), over the 20% default
    faq = DEMO_DIR / "faq.jsonl"
    shown = CliRunner().invoke(app, ["ingest", str(faq), "--kb", str(kb), "--prune"])
    assert "it would remove 123 of 156 documents (79%), more than the 20% allowed (--max-prune-share)" in _error_line(
        shown
    )
    assert kb_state(kb) == before

    # --dry-run lists them, writes nothing, and says the real run would be refused
    shown = CliRunner().invoke(app, ["ingest", str(faq), "--kb", str(kb), "--prune", "--dry-run", "--json"])
    plan = json.loads(shown.stdout.strip().splitlines()[-1])
    assert plan["dry_run"] and len(plan["plan"]["remove"]) == 123 and plan["removed"] == 123
    assert plan["plan"]["add"] == plan["plan"]["change"] == [] and plan["skipped"] == 33
    assert _error_line(shown).startswith(
        "error: --prune: without --dry-run this prune would be refused: it would remove 123"
    )
    assert kb_state(kb) == before

    # the right path: nothing to remove, exit 0
    shown = CliRunner().invoke(app, ["ingest", str(DEMO_DIR), "--kb", str(kb), "--prune", "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout.strip().splitlines()[-1])["removed"] == 0 and kb_state(kb) == before


@pytest.mark.parametrize("suffix", [".jsonl", ".txt", ".csv", ".md"])
def test_an_empty_file_exits_1_with_the_same_message_in_every_format(tmp_path, suffix):
    empty = tmp_path / f"empty{suffix}"
    empty.write_bytes(b"")
    shown = CliRunner().invoke(app, ["ingest", str(empty), "--kb", str(tmp_path / "kb"), "--json"])
    assert shown.exit_code == 1, shown.output
    assert json.loads(shown.stdout.strip().splitlines()[-1])["issues"] == [f"{empty}: empty, nothing ingested"]


def test_max_file_mb_names_the_file_and_the_limit(tmp_path):
    corpus = tmp_path / "faq.jsonl"
    corpus.write_text('{"doc_id": "a", "text": "七天无理由退货"}\n' * 200, encoding="utf-8")  # ~9 KB
    shown = CliRunner().invoke(app, ["ingest", str(corpus), "--kb", str(tmp_path / "kb"), "--max-file-mb", "0.001"])
    assert shown.exit_code == 1
    size = corpus.stat().st_size
    assert f"skipped {corpus}: {size:,} bytes is over the limit of 1,048 bytes per file (raise it with " in shown.stderr


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--max-prune-share", "1.5"], "error: --max-prune-share: must be a share between 0 and 1 (got 1.5)"),
        (["--max-file-mb", "0"], "error: --max-file-mb: must be a positive number of megabytes (got 0)"),
        (["--max-file-mb", "inf"], "error: --max-file-mb: must be a positive number of megabytes (got inf)"),
        (
            ["--dry-run", "--reindex"],
            "error: --dry-run: cannot be combined with --reindex (which drops the index)",
        ),
    ],
)
def test_bad_ingest_options_are_named(tmp_path, args, named):
    shown = CliRunner().invoke(app, ["ingest", str(DEMO_DIR / "faq.jsonl"), "--kb", str(tmp_path / "kb"), *args])
    assert _error_line(shown) == named
    assert not (tmp_path / "kb").exists()  # refused before the KB was created (or dropped)


@pytest.mark.parametrize("k", ["-1", "0", "101"])
def test_search_k_out_of_range_is_named(demo_kb, k):
    """Was: `search --k -1` printed an empty table and exited 0."""
    shown = CliRunner().invoke(app, ["search", "退货", "--kb", str(demo_kb.dir), "--k", k])
    assert _error_line(shown) == f"error: --k: must be between 1 and 100 (got {k})"


def test_a_bad_setting_in_the_environment_is_named(tmp_path):
    shown = CliRunner(env={"CITESCOPE_MAX_PRUNE_SHARE": "2"}).invoke(
        app, ["ingest", str(DEMO_DIR / "faq.jsonl"), "--kb", str(tmp_path / "kb"), "--prune"]
    )
    assert _error_line(shown) == "error: CITESCOPE_MAX_PRUNE_SHARE: input should be less than or equal to 1, got '2'"


def test_reindex_rebuilds_the_index_and_keeps_the_shops_settings_and_ratings(demo_kb, tmp_path_factory):
    """`--reindex` deleted the whole KB folder: the threshold the shop set in config.yaml and its
    customers' conversations, traces and ratings went with the index. (In a process of its own, as the
    command runs: Milvus Lite keeps a deleted store's files open in the process that used it.)"""
    from citescope.workflows.experience import ExperienceRound, ExperienceStore

    kb = copy_kb(demo_kb, tmp_path_factory, "reindex")
    (kb / "config.yaml").write_text("refusal_threshold: 0.3\n", encoding="utf-8")
    store = ExperienceStore.for_kb(kb)
    store.log(ExperienceRound(trace_id="t1", question="XZ-3000 充电宝多少钱？", arm="a", cited_ids=["c#1"]))
    store.add_feedback("t1", 1)
    store.close()
    kept = {p.name: p.read_bytes() for p in kb.iterdir() if p.is_file() and p.name.startswith(("config", "experience"))}
    (kb / "bm25" / "stale.npz").write_bytes(b"")  # what the old index held goes with it
    command = ["ingest", str(DEMO_DIR), "--kb", str(kb), "--reindex", "--no-self-calibrate", "--json"]
    shown = subprocess.run([sys.executable, "run.py", *command], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout.strip().splitlines()[-1])["added"] == 156  # built anew, every document
    assert kb_state(kb)[0] == 156 and not (kb / "bm25" / "stale.npz").exists()
    assert {name: (kb / name).read_bytes() for name in kept} == kept
    store = ExperienceStore.for_kb(kb)
    try:
        round_ = store.get("t1")
        assert round_ is not None and round_.rating == 1 and round_.cited_ids == ["c#1"]
    finally:
        store.close()
