"""Ingestion into a real Milvus Lite store (and, where marked, a real Milvus server) and catalog
in a temp dir: incremental updates, deletes, prune, filters, bad input, and a KB that refuses
vectors of another embedding model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from citescope.knowledge.filters import SearchFilters
from citescope.knowledge.ingest import Ingestor
from citescope.knowledge.kb import KBError, KnowledgeBase
from citescope.knowledge.settings import get_settings
from tests.conftest import REPO

DOCS = [
    {
        "doc_id": "shoe-1",
        "title": "云栈跑鞋 R1",
        "text": "鞋底采用橡胶大底，湿地防滑。鞋面为透气网布。",
        "doc_type": "product",
        "brand": "云栈",
        "category": "运动鞋",
        "updated_at": "2026-01-10",
    },
    {
        "doc_id": "shoe-2",
        "title": "山野徒步鞋 H2",
        "text": "防水膜达到 10000mm，适合雨天徒步。",
        "doc_type": "product",
        "brand": "山野",
        "category": "运动鞋",
        "updated_at": "2025-05-01",
    },
    {
        "doc_id": "faq-1",
        "title": "多久发货？",
        "text": "付款后48小时内发货，节假日顺延。",
        "doc_type": "faq",
        "updated_at": "2026-02-01",
    },
    {
        "doc_id": "rev-1",
        "title": "雨天好穿",
        "text": "下雨天穿了一周，没有打滑。",
        "doc_type": "review",
        "authority": "community",
        "updated_at": "2026-03-01",
    },
]


def write_jsonl(path: Path, rows: list[dict], extra_lines: list[str] = ()) -> Path:
    lines = [json.dumps(r, ensure_ascii=False) for r in rows] + list(extra_lines)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def open_kb(kb_dir: Path, **settings) -> KnowledgeBase:
    return KnowledgeBase(kb_dir, get_settings(kb_dir=kb_dir, **settings), create=True)


def chunk_texts(kb: KnowledgeBase, doc_id: str) -> list[str]:
    kb.refresh()
    return [c.text for c in kb.chunks_of(doc_id)]


def test_incremental_update_replace_skip_delete_prune(tmp_path, milvus_uri):
    corpus = write_jsonl(tmp_path / "docs.jsonl", DOCS)
    kb = open_kb(tmp_path / "kb", milvus_uri=milvus_uri)
    first = Ingestor(kb, show_progress=False).run([corpus])
    assert (first.documents, first.added, first.skipped, first.issues) == (4, 4, 0, [])
    kb.warm_up()
    assert kb.vectors.count() == len(kb) == first.chunks

    again = Ingestor(kb, show_progress=False).run([corpus])
    assert (again.skipped, again.added, again.replaced, again.embedded) == (4, 0, 0, 0)

    changed = [dict(d) for d in DOCS]
    changed[2]["text"] = "付款后24小时内发货，预售商品按页面时间发货。"
    write_jsonl(corpus, changed)
    third = Ingestor(kb, show_progress=False).run([corpus])
    assert (third.replaced, third.skipped, third.added) == (1, 3, 0)
    assert any("24小时" in t for t in chunk_texts(kb, "faq-1"))
    assert not any("48小时" in t for t in chunk_texts(kb, "faq-1"))
    # the superseded vectors are gone: one vector per live chunk, and dense search sees the new text
    assert kb.vectors.count() == len(kb)
    top = kb.search_dense("多久发货", k=1)[0]
    assert "24小时" in kb.get(top.chunk_id).text
    assert kb.search_keyword("节假日顺延") == []

    removed = Ingestor(kb, show_progress=False).delete(["rev-1", "no-such-doc"])
    assert removed == 1 and kb.chunks_of("rev-1") == [] and kb.vectors.count() == len(kb)

    write_jsonl(corpus, changed[:2])
    pruned = Ingestor(kb, show_progress=False).run([corpus], prune=True, max_prune_share=0.5)  # 1 of 3
    assert pruned.removed == 1  # faq-1 (rev-1 was already deleted)
    kb.refresh()
    assert {c.doc_id for c in kb.all_chunks()} == {"shoe-1", "shoe-2"}
    assert kb.vectors.count() == len(kb)
    kb.close()


def test_filters_apply_to_both_legs(tmp_path, milvus_uri):
    kb = open_kb(tmp_path / "kb", milvus_uri=milvus_uri)
    Ingestor(kb, show_progress=False).run([write_jsonl(tmp_path / "d.jsonl", DOCS)])
    kb.warm_up()
    only_reviews = SearchFilters(doc_type=["review"])
    for hits in (kb.search_keyword("雨天 防滑", 5, only_reviews), kb.search_dense("雨天防滑吗", 5, only_reviews)):
        assert hits and {kb.get(h.chunk_id).doc_type for h in hits} == {"review"}
    recent = SearchFilters(updated_after="2026-01-01", brand="云栈")
    assert {kb.get(h.chunk_id).doc_id for h in kb.search_dense("鞋", 5, recent)} == {"shoe-1"}
    with pytest.raises(ValueError):
        SearchFilters(brand='云栈" or doc_type != "')
    kb.close()


def test_malformed_line_is_reported_and_the_rest_ingested(tmp_path):
    corpus = write_jsonl(tmp_path / "docs.jsonl", DOCS[:2], extra_lines=["{not json", json.dumps({"doc_id": "x"})])
    result = subprocess.run(
        [sys.executable, "run.py", "ingest", str(corpus), "--kb", str(tmp_path / "kb"), "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["added"] == 2
    assert any(f"{corpus}:3" in issue for issue in summary["issues"])
    assert any(f"{corpus}:4" in issue and "text" in issue for issue in summary["issues"])


def test_unknown_kb_and_other_embedder_are_refused(tmp_path):
    with pytest.raises(KBError, match="no knowledge base"):
        KnowledgeBase(tmp_path / "missing", get_settings())
    kb = open_kb(tmp_path / "kb")
    Ingestor(kb, show_progress=False).run([write_jsonl(tmp_path / "d.jsonl", DOCS[:1])])
    kb.close()
    with pytest.raises(KBError, match="re-index"):
        KnowledgeBase(tmp_path / "kb", get_settings(embedder="openai:text-embedding-3-small"))


def test_declared_doc_type_fills_only_records_that_name_none(tmp_path):
    rows = [{"doc_id": "q-1", "title": "私家车三责险价格", "text": "看车型和保额，建议不低于50万。"}, DOCS[3]]
    corpus = write_jsonl(tmp_path / "faq.jsonl", rows)
    kb = open_kb(tmp_path / "kb")
    untyped = Ingestor(kb, show_progress=False).run([corpus])
    kb.refresh()
    assert [c.doc_type for c in kb.chunks_of("q-1")] == ["doc"]
    typed = Ingestor(kb, show_progress=False, doc_type="FAQ").run([corpus])
    assert (typed.replaced, typed.skipped, typed.added) == (1, 1, 0)  # the type is part of what changed
    kb.refresh()
    assert [c.doc_type for c in kb.chunks_of("q-1")] == ["faq"]  # a title that is no question, typed by the caller
    assert len(kb) == untyped.chunks  # replaced, not added twice
    assert {c.doc_type for c in kb.chunks_of("rev-1")} == {"review"}  # the record's own type wins
    kb.close()
    with pytest.raises(ValueError, match="unknown doc_type 'manual'.*faq"):
        Ingestor(open_kb(tmp_path / "kb2"), show_progress=False, doc_type="manual")


def test_unknown_doc_type_option_is_refused_before_anything_is_written(tmp_path):
    corpus = write_jsonl(tmp_path / "docs.jsonl", DOCS[:1])
    result = subprocess.run(
        [sys.executable, "run.py", "ingest", str(corpus), "--kb", str(tmp_path / "kb"), "--doc-type", "manual"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2 and "--doc-type: unknown doc_type 'manual'" in result.stderr
    assert not (tmp_path / "kb").exists()
