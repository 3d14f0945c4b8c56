"""A dataset's splits (a question file and the corpus it is asked against), the questions chosen
from one, and the KBs its questions are asked against: the corpus KB, or the union of the chosen
questions' candidate docs (the candidate protocol), each at the default refusal threshold unless it
calibrated itself.
"""

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from citescope.knowledge.kb import KnowledgeBase
from citescope.workflows.evaluation.bench.conflicts import _rebuilt_counterfactual  # DomainRAG's counterfactual recipe
from citescope.workflows.evaluation.datasets import (
    DECLARED_DOC_TYPES,
    DECLARED_RULE_PACKS,
    Question,
    dataset_kb,
    missing_embeddings,
    sample,
)
from citescope.workflows.metrics import (
    group_by,
)
from citescope.workflows.pipeline_config import read_kb_config, update_kb_config
from citescope.workflows.self_calibration import CONFIG_KEY, LABELLED_KEY


class EvalError(ValueError):
    """A request that cannot run (unknown dataset file, strategy, missing embeddings...)."""


@dataclass(frozen=True)
class Split:
    """One question file and the corpus it is asked against."""

    name: str
    questions: Path
    corpus: tuple[Path, ...]
    doc_type: str | None = None  # the type of its corpus records, which name none (DECLARED_DOC_TYPES)
    rule_packs: tuple[str, ...] = ()  # the question-rule packs its kind of text turns on (DECLARED_RULE_PACKS)

    @property
    def label(self) -> str:
        """<dataset>-<main|holdout|...>: names KBs, subset corpora and runs (never "questions":
        the loader skips files named like question sets)."""
        return f"{self.questions.parent.name}-{self.name.removeprefix('questions').strip('_') or 'main'}"


def find_splits(dataset_dir: Path, questions_file: str | None = None) -> list[Split]:
    """questions_X.jsonl pairs with corpus_X.jsonl when present, else corpus.jsonl; a folder with
    no corpus.jsonl (the demo) is its own corpus."""
    dataset_dir = Path(dataset_dir)
    if not dataset_dir.is_dir():
        raise EvalError(f"no dataset folder {dataset_dir}")
    if questions_file:
        path = Path(questions_file)
        files = [path if path.exists() else dataset_dir / questions_file]
        if not files[0].exists():
            raise EvalError(f"no question file {questions_file} (in {dataset_dir})")
    else:
        files = sorted(dataset_dir.glob("questions*.jsonl"))
        if not files:
            raise EvalError(f"{dataset_dir} has no questions*.jsonl")
    splits = []
    for file in files:
        suffix = file.stem[len("questions") :] if file.stem.startswith("questions") else ""
        corpus = dataset_dir / f"corpus{suffix}.jsonl"
        if not corpus.exists():
            corpus = dataset_dir / "corpus.jsonl"
        splits.append(
            Split(
                file.stem,
                file,
                (corpus if corpus.exists() else dataset_dir,),
                DECLARED_DOC_TYPES.get(dataset_dir.name),
                DECLARED_RULE_PACKS.get(dataset_dir.name, ()),
            )
        )
    return splits


def choose_questions(
    questions: Sequence[Question], limit: int | None, per_qtype: int | None, seed: int
) -> list[Question]:
    """All, a qtype-stratified sample of `limit`, or `per_qtype` of each qtype (file order kept)."""
    if per_qtype is not None:
        chosen = {
            q.qid
            for group in group_by(questions, lambda q: q.qtype).values()
            for q in sample(group, per_qtype, seed, stratify_by=None)
        }
        questions = [q for q in questions if q.qid in chosen]
    return sample(questions, limit, seed)


# ----------------------------------------------------------------------------- knowledge bases


@dataclass
class SplitKBs:
    """The KBs one split's questions are asked against."""

    corpus: KnowledgeBase | None = None  # questions without candidate docs
    candidates: KnowledgeBase | None = None  # union of the candidate docs (candidate protocol)
    rebuilt: list[str] = field(default_factory=list)  # counterfactual docs rebuilt from gold docs
    not_rebuilt: list[str] = field(default_factory=list)

    def for_question(self, question: Question) -> KnowledgeBase:
        kb = self.candidates if question.candidate_doc_ids else self.corpus
        assert kb is not None, "open_split_kbs made the KB each question of the split needs"
        return kb


# Milvus Lite: a KB file reopened by the process that closed it may fail to connect (pymilvus keeps
# the closed connection registered and "recovers" it to the stopped server), so a process opens
# each eval KB once and keeps it open (calibrate runs several phases over the same KBs).
_OPEN_KBS: dict[tuple, KnowledgeBase] = {}


def _open_kb(paths: Sequence[Path], name: str, root: Path, doc_type: str | None = None) -> KnowledgeBase:
    key = (tuple(str(Path(p).resolve()) for p in paths), name, str(Path(root).resolve()), doc_type)
    if key not in _OPEN_KBS:
        _OPEN_KBS[key] = dataset_kb(paths, name, root=root, doc_type=doc_type)
    return _OPEN_KBS[key]


def _read_corpus(paths: Iterable[Path], wanted: set[str]) -> dict[str, dict]:
    found: dict[str, dict] = {}
    for path in paths:
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                if line.strip():
                    record = json.loads(line)
                    if record.get("doc_id") in wanted:
                        found[record["doc_id"]] = record
    return found


def candidate_corpus(split: Split, questions: Sequence[Question], folder: Path) -> tuple[Path, list[str], list[str]]:
    """A JSONL of the union of the questions' candidate docs (written once per doc set, so the
    cached KB's key stays put); candidates missing from the corpus are rebuilt from the gold doc."""
    wanted = sorted({d for q in questions for d in q.candidate_doc_ids or []})
    corpus = _read_corpus(split.corpus, set(wanted) | {d for q in questions for d in q.gold_doc_ids})
    records: dict[str, dict] = {}
    rebuilt: list[str] = []
    not_rebuilt: list[str] = []
    for q in questions:
        for doc_id in q.candidate_doc_ids or []:
            if doc_id in records:
                continue
            record = corpus.get(doc_id)
            if record is None and q.gold_doc_ids and q.gold_doc_ids[0] in corpus:
                record = _rebuilt_counterfactual(q.model_dump(), corpus[q.gold_doc_ids[0]], doc_id)
                (rebuilt if record is not None else not_rebuilt).append(doc_id)
            if record is not None:
                records[doc_id] = record
    key = hashlib.sha256(json.dumps(wanted).encode()).hexdigest()[:10]
    path = Path(folder) / f"{split.label}-candidates-{key}.jsonl"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(
            "".join(json.dumps(records[d], ensure_ascii=False) + "\n" for d in wanted if d in records), encoding="utf-8"
        )
        tmp.replace(path)
    return path, rebuilt, not_rebuilt


def open_split_kbs(split: Split, questions: Sequence[Question], root: Path, max_embed: int) -> SplitKBs:
    """Build (first time) or open the KBs the questions need; EvalError when a build would embed
    more than max_embed texts (a slow CPU job that should be started on purpose)."""
    kbs = SplitKBs()
    name = split.label
    plans: list[tuple[str, list[Path]]] = []
    if any(not q.candidate_doc_ids for q in questions):
        plans.append(("corpus", list(split.corpus)))
    if any(q.candidate_doc_ids for q in questions):
        path, kbs.rebuilt, kbs.not_rebuilt = candidate_corpus(split, questions, root / "corpora")
        plans.append(("candidates", [path]))
    for role, paths in plans:
        missing = missing_embeddings(paths)
        if missing > max_embed:
            raise EvalError(
                f"{name}: building the {role} KB would embed {missing:,} texts (~{missing // 180 + 1} min "
                "on this CPU); raise --max-embed to do it, wait for the embedding cache, or (candidate-"
                "protocol sets such as rgb_zh) take fewer questions: --per-qtype 10"
            )
        kb = _open_kb(paths, f"{name}-{role}", root / "kbs", split.doc_type)
        forget_dev_fitted_threshold(kb.dir)
        if split.rule_packs:  # the set's kind of text, whatever an earlier run wrote there
            update_kb_config(kb.dir, {"rule_packs": list(split.rule_packs)})
        setattr(kbs, role, kb)
        if not len(kb):
            raise EvalError(f"{name}: the {role} KB at {kb.dir} is empty (see its dataset.json)")
    return kbs


def forget_dev_fitted_threshold(kb_dir: Path) -> None:
    """Take out a refusal threshold that came neither from the KB's own documents nor from labelled
    questions of its own: until issue #46 calibrate fitted one per eval KB on that set's questions (and
    seeded rebuilt KBs from workflows/evaluation/calibrated.yaml). An eval KB runs at the default
    threshold, or at the one it chose for itself."""
    config = read_kb_config(kb_dir)
    if "refusal_threshold" in config and not ({CONFIG_KEY, LABELLED_KEY} & set(config)):
        update_kb_config(kb_dir, {}, remove=("refusal_threshold",))
