"""Evaluation datasets (../shared/datasets): typed questions, cached dataset KBs, slicing.

A dataset KB is built once per (corpus files, embedder, chunk settings) under
~/.cache/citescope/kbs/<name>-<key> and reused afterwards; vectors come from the shared
embedding cache, so a rebuild after e.g. a changed chunk size only re-embeds changed texts.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import random
import time
import zlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import date
from pathlib import Path
from typing import Literal, cast

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from citescope.knowledge.chinese_script import MATCHING_FORM
from citescope.knowledge.chunking import CHUNK_FORMAT, chunk_document
from citescope.knowledge.embedders import make_embedder
from citescope.knowledge.filters import SearchFilters
from citescope.knowledge.ingest import Ingestor, embedding_text
from citescope.knowledge.kb import Hit, KnowledgeBase, metadata_columns
from citescope.knowledge.lexicon import Lexicon
from citescope.knowledge.loaders import LOADER_VERSION, load_path
from citescope.knowledge.settings import Settings, get_settings

# What a set's README says its documents are, for sets whose records carry no doc_type:
# baoxianzhidao is an FAQ export (title = the standard question, text = the best reply), ingested
# as a shop ingests its FAQ (`run.py ingest --doc-type faq`).
DECLARED_DOC_TYPES = {"baoxianzhidao": "faq"}
# The opt-in question-rule packs (agents/question_cues.yaml) a set's KB turns on, chosen by the kind of
# text its corpus is, never by its questions: CMRC 2018 is Chinese Wikipedia (encyclopedia), RGB news
# articles, DomainRAG a university's web pages (its news and notices); baoxianzhidao is an FAQ export,
# read as a shop's FAQ is, with the core rules alone. Written into the KB's config.yaml (splits.py).
DECLARED_RULE_PACKS: dict[str, tuple[str, ...]] = {
    "cmrc2018_dev": ("encyclopedia",),
    "rgb_zh": ("news",),
    "domainrag": ("news",),
}
MARKER = "dataset.json"  # written after a complete ingest; its presence means "reuse me"
HELD_OUT_SHARE = 0.3  # of a set's questions, never used to fit or choose anything (calibrate.py)


class Question(BaseModel):
    """One line of a questions*.jsonl file (format: ../shared/datasets/README.md)."""

    model_config = ConfigDict(extra="allow")  # keep fields a later set adds

    qid: str
    question: str
    answers: list[str] = Field(default_factory=list)
    gold_doc_ids: list[str] = Field(default_factory=list)
    answerable: bool = True
    qtype: str = ""
    answers_all_of: list[list[str]] | None = None
    candidate_doc_ids: list[str] | None = None
    expect_conflict: bool = False
    fake_answers: list[str] = Field(default_factory=list)
    session: str | None = None
    turn: int | None = None
    meta: dict = Field(default_factory=dict)

    @property
    def answer_groups(self) -> list[list[str]]:
        """Groups that must all be matched (any string in a group): answers_all_of, else [answers]."""
        if self.answers_all_of:
            return self.answers_all_of
        return [self.answers] if self.answers else []

    @property
    def history(self) -> list[dict]:
        """Earlier turns of a conversational question ({question, answers}), oldest first."""
        return list(self.meta.get("history") or [])

    @property
    def opening(self) -> str | None:
        """The conversation's opening question (None for a question that stands alone): it
        usually names the topic the follow-ups leave out (国学院有哪些下设系别 -> 保研率是多少)."""
        history = self.history
        return history[0]["question"] if history else None

    @property
    def as_of(self) -> str | None:
        """The time a time-sensitive question is asked about (DomainRAG's meta.as_of, e.g. "2016")."""
        value = self.meta.get("as_of")
        return str(value) if value else None

    @property
    def filters(self) -> SearchFilters | None:
        """What a caller would send with the question: only its as-of time, when it has one."""
        return SearchFilters(as_of=self.as_of) if self.as_of else None

    @property
    def reference_day(self) -> date | None:
        """The day its as-of time stands for (SearchFilters.reference_day), for a bare reranker."""
        filters = self.filters  # validated: a malformed meta.as_of is an error naming the field
        return filters.reference_day() if filters else None

    def asked(self, turns: Literal["none", "all", "opening"] = "all") -> str:
        """The question as one text for a retriever: alone, after every earlier turn's question,
        or after the opening question only."""
        if turns == "all":
            earlier = [turn["question"] for turn in self.history]
        else:
            earlier = [self.opening] if turns == "opening" and self.opening else []
        return " ".join([*earlier, self.question])


def load_questions(path: Path | str, limit: int | None = None, qtypes: Iterable[str] | None = None) -> list[Question]:
    """Questions in file order, optionally only some qtypes, then the first `limit` of them."""
    wanted = set(qtypes) if qtypes else None
    out: list[Question] = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            question = Question.model_validate_json(line)
            if wanted is None or question.qtype in wanted:
                out.append(question)
                if limit is not None and len(out) >= limit:
                    break
    return out


def sample(
    questions: Sequence[Question], n: int | None, seed: int = 0, stratify_by: str | None = "qtype"
) -> list[Question]:
    """n questions drawn deterministically, each group (e.g. qtype) in proportion to its size
    (largest remainder), returned in their original order. n=None or n >= len: all of them."""
    if n is None or n >= len(questions):
        return list(questions)
    groups: dict[str, list[int]] = defaultdict(list)
    for i, question in enumerate(questions):
        groups[str(getattr(question, stratify_by)) if stratify_by else ""].append(i)
    names = sorted(groups)
    quotas = {g: n * len(groups[g]) / len(questions) for g in names}
    counts = {g: int(quotas[g]) for g in names}
    by_remainder = sorted(names, key=lambda g: (-(quotas[g] - counts[g]), g))
    for g in by_remainder[: n - sum(counts.values())]:
        counts[g] += 1
    rng = random.Random(seed)
    chosen = sorted(i for g in names for i in rng.sample(groups[g], counts[g]))
    return [questions[i] for i in chosen]


def held_out(qid: str) -> bool:
    """The deterministic 30% of questions kept out of fitting and choosing: calibration fits on
    the rest, and the retrieval bench reports these apart."""
    return zlib.crc32(qid.encode("utf-8")) % 10 < HELD_OUT_SHARE * 10


# ----------------------------------------------------------------------------- dataset KBs


def _kb_key(corpus_paths: Sequence[Path], settings: Settings, max_docs: int | None, doc_type: str | None) -> str:
    stamp = []
    for path in corpus_paths:
        stat = path.stat()
        stamp.append([str(path.resolve()), stat.st_size, int(stat.st_mtime)])
    raw = json.dumps(
        [
            stamp,
            settings.embedder,
            settings.chunk_size,
            settings.chunk_overlap,
            max_docs,
            LOADER_VERSION,
            CHUNK_FORMAT,
            *([doc_type] if doc_type else []),  # untyped KBs keep their earlier keys
            # a cached KB is never re-ingested: one holding traditional text is rebuilt to match it
            f"matching-form-{MATCHING_FORM}",
        ]
    )
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:10]


def dataset_kb(
    corpus_paths: Sequence[Path | str],
    name: str,
    max_docs: int | None = None,
    root: Path | None = None,
    settings: Settings | None = None,
    doc_type: str | None = None,
) -> KnowledgeBase:
    """A warmed KB of the given corpus files, built on first use and reused afterwards.

    max_docs: only the first N documents of each file (development slices; the slice is written
    inside the KB folder, never next to the data). root: where KB folders live (default
    <cache_dir>/kbs). doc_type: the type of records that name none. Ingesting embeds chunks the
    embedding cache lacks, so a slow first build happens at most once per corpus and model.
    """
    settings = settings or get_settings()
    paths = [Path(p) for p in corpus_paths]
    kb_dir = Path(root or settings.cache_dir / "kbs") / f"{name}-{_kb_key(paths, settings, max_docs, doc_type)}"
    kb_dir.mkdir(parents=True, exist_ok=True)
    with open(kb_dir / ".lock", "w") as lock:  # two benches must not build one KB at once
        fcntl.flock(lock, fcntl.LOCK_EX)
        kb = KnowledgeBase(kb_dir, settings.model_copy(update={"kb_dir": kb_dir}), create=True)
        if not (kb_dir / MARKER).exists():
            sources = [_first_docs(p, max_docs, kb_dir / "sources") for p in paths] if max_docs else paths
            summary = Ingestor(kb, show_progress=False, doc_type=doc_type).run(sources)
            marker = {
                "name": name,
                "corpora": [str(p) for p in paths],
                "max_docs": max_docs,
                "doc_type": doc_type,
                "embedder": settings.embedder,
                "chunk_size": settings.chunk_size,
                "chunk_overlap": settings.chunk_overlap,
                "built_at": time.time(),
                "ingest": summary.as_dict(),
            }
            (kb_dir / MARKER).write_text(json.dumps(marker, ensure_ascii=False, indent=1), encoding="utf-8")
    return kb.warm_up()


def _first_docs(path: Path, max_docs: int, folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    target = folder / f"{path.parent.name}-{path.stem}-{max_docs}.jsonl"
    with open(path, encoding="utf-8") as src, open(target, "w", encoding="utf-8") as dst:
        written = 0
        for line in src:
            if written >= max_docs:
                break
            if line.strip():
                dst.write(line)
                written += 1
    return target


def missing_embeddings(
    corpus_paths: Sequence[Path | str], max_docs: int | None = None, settings: Settings | None = None
) -> int:
    """How many distinct chunk texts of these corpora the embedding cache lacks, i.e. what a
    dataset_kb build would have to embed (a few per second on a CPU)."""
    settings = settings or get_settings()
    embedder = make_embedder(settings.embedder, settings.cache_dir, settings.embed_batch)
    texts: list[str] = []
    for path in corpus_paths:
        docs, _, lexicon = load_path(Path(path))
        for doc in docs[:max_docs] if max_docs else docs:
            for chunk in chunk_document(doc, settings.chunk_size, settings.chunk_overlap):
                texts.append(embedding_text(chunk, lexicon or Lexicon()))
    return len(embedder.missing(texts))


def kb_doc_ids(kb: KnowledgeBase) -> set[str]:
    return {chunk.doc_id for chunk in kb.all_chunks()}


# ----------------------------------------------------------------------------- candidate protocol


class CandidateKB:
    """A dataset KB seen through one question's candidate_doc_ids (the RGB / DomainRAG protocol:
    only those documents exist). Everything but search is the full KB's; BM25 keeps the full
    corpus' statistics, dense scores are exact cosines over the candidates' cached vectors, so
    no Milvus collection or new embedding is needed per question."""

    def __init__(self, kb: KnowledgeBase, doc_ids: Iterable[str]):
        self.base = kb
        self.doc_ids = frozenset(doc_ids)
        self._chunks = [c for d in sorted(self.doc_ids) for c in kb.chunks_of(d)]
        self._vectors: np.ndarray | None = None

    def __getattr__(self, name: str):  # catalog, embedder, lexicon, settings, dir, ...
        return getattr(self.base, name)

    def __len__(self) -> int:
        return len(self._chunks)

    def get(self, chunk_id: str):
        chunk = self.base.get(chunk_id)
        return chunk if chunk is not None and chunk.doc_id in self.doc_ids else None

    def chunks_of(self, doc_id: str):
        return self.base.chunks_of(doc_id) if doc_id in self.doc_ids else []

    def all_chunks(self):
        return list(self._chunks)

    def search_keyword(
        self, query: str, k: int = 10, filters: SearchFilters | None = None, title_weight: float = 0.5
    ) -> list[Hit]:
        ranked = self.base.search_keyword(query, k=len(self.base), filters=filters, title_weight=title_weight)
        return [h for h in ranked if (chunk := self.base.get(h.chunk_id)) and chunk.doc_id in self.doc_ids][:k]

    def search_dense(self, query: str, k: int = 10, filters: SearchFilters | None = None) -> list[Hit]:
        chunks = self._chunks
        if not chunks:
            return []
        lexicon = self.base.lexicon
        if self._vectors is None:  # cache hits for an embedded corpus
            self._vectors = self.base.embedder.embed_passages([embedding_text(c, lexicon) for c in chunks])
        scores = self._vectors @ self.base.embedder.embed_query(lexicon.canonicalize(query))
        keep = filters.mask(metadata_columns(chunks)) if filters else None
        if keep is not None:
            scores = np.where(keep, scores, -np.inf)
        order = np.argsort(-scores, kind="stable")[:k]
        return [Hit(chunks[i].chunk_id, float(scores[i])) for i in order if np.isfinite(scores[i])]


def candidate_kb(kb: KnowledgeBase, doc_ids: Iterable[str]) -> KnowledgeBase:
    """The KB restricted to a question's candidate documents (pass it as SkillContext.kb)."""
    # typed as the KB it stands in for: it overrides what reads documents, the rest is the KB's (__getattr__)
    return cast(KnowledgeBase, CandidateKB(kb, doc_ids))
