"""SIGKILL during ingest: every document stays in exactly its old or its new version in the
catalog, BM25 and Milvus; nothing is duplicated; the rerun converges.

Kills land right after chosen durable writes here; workflows/evaluation/bench/crash.py (same helpers) kills
at random moments, and tests/workflows/evaluation/test_bench_crash.py runs a few of those trials."""

from __future__ import annotations

import random
import shutil

from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.settings import get_settings
from citescope.workflows.evaluation.bench.crash import (
    check_consistent,
    corpus,
    ingest_in_process,
    run_cli,
    versions_by_doc,
    write_jsonl,
)


def test_sigkill_during_ingest_leaves_old_or_new_and_rerun_converges(tmp_path):
    v1, v2 = write_jsonl(tmp_path / "v1.jsonl", corpus(1)), write_jsonl(tmp_path / "v2.jsonl", corpus(2))
    old, new = versions_by_doc(v1), versions_by_doc(v2)
    base = tmp_path / "base-kb"
    ingest_in_process(base, [v1], create=True)

    rng = random.Random(7)
    seen_states = set()
    # 10 changed or new documents = 5 batches x 3 durable writes: kill early, middle and late.
    for trial, stage in enumerate((1, 2, 3, 5, 7, 9, 11, 14)):
        kb_dir = tmp_path / f"kb-{trial}"
        shutil.copytree(base, kb_dir)
        run = run_cli(
            ["ingest", str(v2), "--kb", str(kb_dir), "--json"], kill_after_stage=stage, jitter=rng.uniform(0, 0.03)
        )
        assert run.killed, f"trial {trial}: ingest finished before stage {stage}"
        after_kill = check_consistent(kb_dir, old, new)
        assert not after_kill.violations, after_kill.violations
        seen_states.add(tuple(sorted(set(after_kill.states.values()))))

        ingest_in_process(kb_dir, [v2])
        after_rerun = check_consistent(kb_dir, old, new)
        assert after_rerun.converged(), (after_rerun.states, after_rerun.violations)
        kb = KnowledgeBase(kb_dir, get_settings(kb_dir=kb_dir)).warm_up()
        assert kb.vectors.count() == len(kb), "orphan vectors survived the rerun"
        kb.close()
    # the kills really landed mid-update: some trials saw a mix of old and new documents
    assert any("old" in s and "new" in s for s in seen_states)
