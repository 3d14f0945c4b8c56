"""Ingestion: files -> documents -> chunks -> catalog + vectors + BM25, incrementally.

Order of writes per batch (why a SIGKILL anywhere leaves a usable KB):
  1. vectors of the new versions are upserted under content-derived row ids (old rows stay);
  2. the catalog swaps each document to its new chunks in one SQLite transaction;
  3. rows no longer referenced are deleted from Milvus.
A crash between steps leaves only orphan rows, which search ignores and the next run removes.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from citescope.knowledge.catalog import DocumentVersion, IndexedChunk
from citescope.knowledge.chinese_script import MATCHING_FORM, written_in_traditional
from citescope.knowledge.chunking import CHUNK_FORMAT, chunk_document
from citescope.knowledge.file_reading import MB
from citescope.knowledge.injection import FlaggedDocument, screen_documents
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.lexicon import Lexicon
from citescope.knowledge.loaders import load_path
from citescope.knowledge.prune_guard import ProtectedSources, PruneRefused, check_share, check_sources
from citescope.knowledge.schema import Chunk, Document, LoadIssue, check_doc_type
from citescope.knowledge.shop_profile import find_shop_profile
from citescope.knowledge.text import tokenize


@dataclass
class IngestSummary:
    documents: int = 0
    chunks: int = 0
    added: int = 0
    replaced: int = 0
    skipped: int = 0
    removed: int = 0
    embedded: int = 0
    orphans_removed: int = 0
    seconds: float = 0.0
    issues: list[LoadIssue] = field(default_factory=list)
    flagged: list[FlaggedDocument] = field(default_factory=list)  # possible prompt injections (knowledge/injection.py)
    # A dry run writes nothing: the counts above say what would happen, `plan` which documents.
    dry_run: bool = False
    plan: dict[str, list[str]] | None = None  # "add", "change", "remove" -> doc ids
    refused: str | None = None  # why the same run without --dry-run would be refused

    def as_dict(self) -> dict:
        hidden = ("issues", "flagged", "plan", "dry_run", "refused")
        data = {k: v for k, v in self.__dict__.items() if k not in hidden}
        data["issues"] = [str(i) for i in self.issues]
        data["flagged"] = [str(f) for f in self.flagged]
        if self.dry_run:
            data.update(dry_run=True, plan=self.plan, refused=self.refused)
        return data


def embedding_text(chunk: Chunk, lexicon: Lexicon) -> str:
    """What the dense model sees: title gives short chunks their context; aliases canonical."""
    head = chunk.title if chunk.title and chunk.title not in chunk.text[:80] else ""
    return lexicon.canonicalize(f"{head}\n{chunk.text}" if head else chunk.text)


def row_id_for(chunk: Chunk, text: str, embedder_name: str) -> str:
    raw = f"{chunk.chunk_id}\x00{text}\x00{embedder_name}"
    return hashlib.sha1(raw.encode("utf-8")).hexdigest()


class Ingestor:
    def __init__(self, kb: KnowledgeBase, show_progress: bool = True, on_stage=None, doc_type: str | None = None):
        self.kb = kb
        # the type of every document whose record names none (an FAQ export: title = standard question)
        self.doc_type = check_doc_type(doc_type) if doc_type else None
        self.show_progress = show_progress
        # on_stage(name): called after each durable write; crash tests kill the process there.
        self.on_stage = on_stage or (lambda stage: None)

    def _version_hash(self, doc: Document, lexicon: Lexicon) -> str:
        s = self.kb.settings
        raw = (
            f"{doc.content_hash()}|{lexicon.fingerprint()}|{self.kb.embedder.name}|{s.chunk_size}|"
            f"{s.chunk_overlap}|{CHUNK_FORMAT}"
        )
        if written_in_traditional(f"{doc.title}\n{doc.text}"):
            # tokenised and embedded in simplified since matching form 1: older KBs re-read such a
            # document once; a simplified one, whose tokens and vectors did not change, keeps its key
            raw += f"|matching-form-{MATCHING_FORM}"
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()

    def load(self, paths: list[Path]) -> tuple[list[Document], list[LoadIssue], Lexicon, dict[str, int]]:
        """Documents (unique ids), issues, merged lexicon, and how many documents each path held."""
        docs: dict[str, Document] = {}
        issues: list[LoadIssue] = []
        lexicon = Lexicon()
        per_path: dict[str, int] = {}
        max_file_bytes = int(self.kb.settings.max_file_mb * MB)
        for path in paths:
            if not Path(path).exists():
                issues.append(LoadIssue(where=str(path), message="no such file or folder"))
                continue
            loaded, found, lex = load_path(Path(path), max_file_bytes=max_file_bytes)
            per_path[str(path)] = per_path.get(str(path), 0) + len(loaded)
            issues += found
            if lex is not None:
                lexicon = lexicon.merged(lex)
            for doc in loaded:
                if self.doc_type and "doc_type" not in doc.model_fields_set:
                    doc = doc.model_copy(update={"doc_type": self.doc_type})
                if doc.doc_id in docs:
                    issues.append(
                        LoadIssue(
                            where=doc.origin or str(path),
                            message=f"duplicate doc_id {doc.doc_id!r} (first in {docs[doc.doc_id].origin}); skipped",
                        )
                    )
                    continue
                docs[doc.doc_id] = doc
        return list(docs.values()), issues, lexicon, per_path

    def run(
        self,
        paths: list[Path],
        prune: bool = False,
        *,
        dry_run: bool = False,
        max_prune_share: float | None = None,
        allow_large_prune: bool = False,
    ) -> IngestSummary:
        """Ingest `paths`; with prune, also remove the KB's documents they no longer hold.

        A prune is refused with PruneRefused, before anything is written, when a path yields no
        documents or when it would remove more than `max_prune_share` (default: the setting) of
        the KB unless `allow_large_prune`. A dry run writes nothing and returns what would change.
        """
        started = time.perf_counter()
        summary = IngestSummary(dry_run=dry_run)
        # the shop.yaml the sources ship (knowledge/shop_profile.py): a bad one stops the run before any write
        shop = find_shop_profile(paths)
        docs, summary.issues, new_lexicon, per_path = self.load(paths)
        docs, summary.flagged = screen_documents(docs)
        kb = self.kb
        known = kb.catalog.content_hashes()
        removals: list[str] = []
        if prune:
            protected = ProtectedSources(summary.issues)
            keep = {d.doc_id for d in docs}
            origins = kb.catalog.origins()
            removals = [d for d in known if d not in keep and origins.get(d, "") not in protected]
            share = kb.settings.max_prune_share if max_prune_share is None else max_prune_share
            try:
                check_sources(list(paths), per_path, summary.issues)
                check_share(len(removals), len(known), share, allow_large_prune)
            except PruneRefused as refusal:
                if not dry_run:
                    raise
                summary.refused = refusal.reason  # a dry run still shows what the prune would remove

        lexicon = kb.lexicon.merged(new_lexicon)
        todo: list[tuple[Document, str]] = []
        for doc in docs:
            version_hash = self._version_hash(doc, lexicon)
            if known.get(doc.doc_id) == version_hash:
                summary.skipped += 1
            else:
                todo.append((doc, version_hash))
        summary.documents = len(docs)

        planned = [(doc, h, chunk_document(doc, kb.settings.chunk_size, kb.settings.chunk_overlap)) for doc, h in todo]
        texts = [embedding_text(c, lexicon) for _, _, chunks in planned for c in chunks]
        to_embed = len(kb.embedder.missing(texts))
        if dry_run:
            return self._dry_run_summary(summary, planned, known, removals, to_embed, started)

        vectors = kb.open_vectors()
        summary.orphans_removed = self.reconcile()
        if lexicon.fingerprint() != kb.lexicon.fingerprint():
            kb.catalog.set_meta("lexicon", lexicon.model_dump_json())
        if shop is not None and shop != kb.shop:  # sources without one keep the profile stored before
            kb.set_shop(shop)
        bar = tqdm(total=to_embed, unit="chunk", desc="embedding", disable=not self.show_progress or not to_embed)
        try:
            step = max(1, kb.settings.ingest_batch_docs)
            for start in range(0, len(planned), step):
                batch = planned[start : start + step]
                versions, rows, batch_texts = [], [], []
                for doc, version_hash, chunks in batch:
                    indexed = []
                    for chunk in chunks:
                        text = embedding_text(chunk, lexicon)
                        row_id = row_id_for(chunk, text, kb.embedder.name)
                        indexed.append(
                            IndexedChunk(
                                chunk,
                                row_id,
                                tokenize(f"{chunk.section}\n{chunk.text}", lexicon),
                                tokenize(chunk.title, lexicon),
                            )
                        )
                        rows.append({"row_id": row_id, **chunk.metadata()})
                        batch_texts.append(text)
                    versions.append(DocumentVersion(doc, version_hash, indexed, doc.skus or []))
                    if doc.doc_id in known:
                        summary.replaced += 1
                    else:
                        summary.added += 1
                    summary.chunks += len(chunks)
                embeddings = kb.embedder.embed_passages(batch_texts, on_batch=bar.update)
                vectors.upsert(rows, embeddings)  # 1. new rows beside the old ones
                self.on_stage("vectors-written")
                stale = kb.catalog.replace_documents(versions)  # 2. atomic switch
                self.on_stage("catalog-switched")
                vectors.delete(stale)  # 3. drop superseded rows
                self.on_stage("stale-deleted")
        finally:
            bar.close()
        summary.embedded = to_embed

        if prune:
            summary.removed = self.delete(removals)
        summary.seconds = round(time.perf_counter() - started, 2)
        kb.refresh()
        return summary

    @staticmethod
    def _dry_run_summary(
        summary: IngestSummary, planned: list, known: dict[str, str], removals: list[str], to_embed: int, started: float
    ) -> IngestSummary:
        summary.plan = {"add": [], "change": [], "remove": sorted(removals)}
        for doc, _, chunks in planned:
            summary.plan["change" if doc.doc_id in known else "add"].append(doc.doc_id)
            summary.chunks += len(chunks)
        summary.added, summary.replaced = len(summary.plan["add"]), len(summary.plan["change"])
        summary.removed, summary.embedded = len(removals), to_embed
        summary.seconds = round(time.perf_counter() - started, 2)
        return summary

    def delete(self, doc_ids: list[str]) -> int:
        self.reconcile()  # a delete killed after its catalog commit left vector rows behind
        known = self.kb.catalog.content_hashes()
        present = [d for d in doc_ids if d in known]
        if present:
            stale = self.kb.catalog.delete_documents(present)
            self.kb.open_vectors().delete(stale)
        return len(present)

    def reconcile(self) -> int:
        """Delete vector rows that no catalog chunk references (left by an interrupted run)."""
        vectors = self.kb.open_vectors()
        copies = vectors.row_copies()
        orphans = sorted(set(copies) - self.kb.catalog.all_row_ids())
        vectors.delete(orphans)
        # milvus-lite can replay a flushed WAL after a crash: rows stored twice get one copy back
        vectors.rewrite(sorted(r for r, n in copies.items() if n > 1 and r not in orphans))
        return len(orphans)
