"""`Ingestor.run(..., prune=True)` never removes documents by accident (issue #41): a path that is
missing, unreadable or empty, or a removal of more than the allowed share of the KB, is refused
before anything is written; a dry run writes nothing. Real catalog and Milvus Lite in a temp dir."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from citescope.knowledge.ingest import Ingestor
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.prune_guard import ProtectedSources, PruneRefused
from citescope.knowledge.schema import LoadIssue
from citescope.knowledge.settings import get_settings

DOCS = [
    {"doc_id": f"policy-{i}", "title": f"第{i}条", "text": f"第{i}条：签收后{i + 7}天内可申请退货。"} for i in range(10)
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def kb(tmp_path):
    """A KB holding DOCS, ingested from tmp_path/src/policies.jsonl."""
    base = KnowledgeBase(tmp_path / "kb", get_settings(kb_dir=tmp_path / "kb"), create=True)
    summary = Ingestor(base, show_progress=False).run([write_jsonl(tmp_path / "src" / "policies.jsonl", DOCS)])
    assert summary.added == 10 and not summary.issues
    yield base
    base.close()


def state(kb: KnowledgeBase) -> tuple[dict[str, str], int]:
    """What must not change: every document's version, and the vector rows."""
    return kb.catalog.content_hashes(), kb.open_vectors().count()


def test_a_mistyped_path_is_refused_and_nothing_is_removed(kb, tmp_path):
    before = state(kb)
    typo = tmp_path / "srcc"
    with pytest.raises(PruneRefused, match=rf"{typo}: no such file or folder") as refused:
        Ingestor(kb, show_progress=False).run([typo], prune=True)
    assert "nothing changed" in str(refused.value)
    # one good path beside the typo is refused too: the typo's documents would all look deleted
    with pytest.raises(PruneRefused, match="srcc"):
        Ingestor(kb, show_progress=False).run([tmp_path / "src", typo], prune=True)
    assert state(kb) == before


@pytest.mark.parametrize(
    "make", ["empty folder", "only unsupported files", "empty jsonl", "broken link", "every line bad"]
)
def test_a_path_that_yields_no_documents_is_refused(kb, tmp_path, make):
    path = tmp_path / "other"
    if make == "empty folder":
        path.mkdir()
    elif make == "only unsupported files":
        path.mkdir()
        (path / "notes.docx").write_bytes(b"PK\x03\x04")
    elif make == "empty jsonl":
        path = tmp_path / "policies.jsonl"
        path.write_bytes(b"")
    elif make == "broken link":  # unreadable: the file it names is gone
        path = tmp_path / "policies.jsonl"
        os.symlink(tmp_path / "gone.jsonl", path)
    else:
        path = tmp_path / "policies.jsonl"
        path.write_text('{"doc_id": "policy-0"}\n{not json\n', encoding="utf-8")
    before = state(kb)
    with pytest.raises(PruneRefused, match=f"{path}: "):
        Ingestor(kb, show_progress=False).run([tmp_path / "src", path], prune=True)
    assert state(kb) == before


def test_removing_more_than_the_allowed_share_needs_consent(kb, tmp_path):
    kept = write_jsonl(tmp_path / "src" / "policies.jsonl", DOCS[:7])  # 3 of 10 gone: 30%
    before = state(kb)
    with pytest.raises(PruneRefused, match=r"remove 3 of 10 documents \(30%\), more than the 20% allowed"):
        Ingestor(kb, show_progress=False).run([kept], prune=True)
    assert state(kb) == before
    with pytest.raises(PruneRefused, match="more than the 25% allowed"):
        Ingestor(kb, show_progress=False).run([kept], prune=True, max_prune_share=0.25)

    pruned = Ingestor(kb, show_progress=False).run([kept], prune=True, allow_large_prune=True)
    assert pruned.removed == 3 and sorted(kb.catalog.content_hashes()) == sorted(d["doc_id"] for d in DOCS[:7])
    # one more gone of 7 (14%) is under the default share: no consent needed
    one_more = Ingestor(kb, show_progress=False).run([write_jsonl(kept, DOCS[:6])], prune=True)
    assert one_more.removed == 1


def test_the_share_can_be_set_for_a_kb(tmp_path):
    kb_dir = tmp_path / "kb"
    kb = KnowledgeBase(kb_dir, get_settings(kb_dir=kb_dir, max_prune_share=0.5), create=True)
    corpus = write_jsonl(tmp_path / "p.jsonl", DOCS)
    Ingestor(kb, show_progress=False).run([corpus])
    assert Ingestor(kb, show_progress=False).run([write_jsonl(corpus, DOCS[:6])], prune=True).removed == 4
    kb.close()


def test_a_dry_run_writes_nothing_and_says_what_would_change(kb, tmp_path):
    rows = [dict(d) for d in DOCS[:7]] + [{"doc_id": "faq-new", "text": "新问题：多久发货？48小时内。"}]
    rows[0]["text"] = "第0条：签收后15天内可申请退货。"
    corpus = write_jsonl(tmp_path / "src" / "policies.jsonl", rows)
    before = state(kb)
    lexicon_before = kb.catalog.get_meta("lexicon")
    plan = Ingestor(kb, show_progress=False).run([corpus], prune=True, dry_run=True)
    assert plan.dry_run and plan.plan == {
        "add": ["faq-new"],
        "change": ["policy-0"],
        "remove": ["policy-7", "policy-8", "policy-9"],
    }
    assert (plan.added, plan.replaced, plan.removed, plan.skipped) == (1, 1, 3, 6)
    assert "remove 3 of 10 documents" in plan.refused  # the real run would be refused: 30%
    assert state(kb) == before and kb.catalog.get_meta("lexicon") == lexicon_before

    # the same run for real, with consent, does exactly what the dry run listed
    done = Ingestor(kb, show_progress=False).run([corpus], prune=True, allow_large_prune=True)
    assert (done.added, done.replaced, done.removed, done.skipped) == (1, 1, 3, 6)


def test_a_file_with_issues_keeps_its_documents(kb, tmp_path):
    """A file that fails to parse in part keeps its documents whose lines were bad: they are not
    'no longer in PATHS'."""
    corpus = tmp_path / "src" / "policies.jsonl"
    lines = corpus.read_text(encoding="utf-8").splitlines()
    lines[3] = lines[3].replace('"text"', '"text": [1], "x"')  # policy-3 no longer parses
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    summary = Ingestor(kb, show_progress=False).run([corpus], prune=True)
    assert summary.removed == 0 and any(i.where == f"{corpus}:4" for i in summary.issues)
    assert "policy-3" in kb.catalog.content_hashes()


def test_a_folder_with_an_issue_protects_what_is_under_it_only(tmp_path):
    (tmp_path / "shop" / "faq").mkdir(parents=True)
    (tmp_path / "shop" / "faq-old").mkdir()
    protected = ProtectedSources([LoadIssue(where=str(tmp_path / "shop" / "faq"), message="cannot read folder")])
    assert f"{tmp_path}/shop/faq/a.jsonl:3" in protected
    assert f"{tmp_path}/shop/faq/sub/b.md" in protected
    assert f"{tmp_path}/shop/faq-old/a.jsonl:3" not in protected  # a sibling sharing the prefix
    assert f"{tmp_path}/shop/other.jsonl:1" not in protected and "" not in protected
