"""Evaluation harness: a dataset's questions through the real QA pipeline, scored as
../shared/datasets/README.md defines it, several strategies side by side.

    summary = run_eval(EvalRequest(dataset_dir=Path("../shared/datasets/baoxianzhidao"), limit=200,
                                   strategies=["policy", "hybrid_rerank"]))
    print(format_eval_report(summary))

A dataset folder holds one or more question files (`questions.jsonl`, `questions_holdout.jsonl`);
each is a *split* asked against its own corpus (`corpus_holdout.jsonl` for the holdout split,
else `corpus.jsonl`; a folder without one, such as knowledge/demo, is itself the corpus).
Questions without `candidate_doc_ids` search the whole corpus KB (datasets.dataset_kb, cached).
Questions with them (RGB, DomainRAG conflicts) follow the original protocol: each searches only
its own candidates (datasets.CandidateKB) inside a KB made of the union of the chosen questions'
candidate docs, so RGB never needs its 11,941-doc corpus embedded; a candidate missing from the
corpus (DomainRAG's counterfactual passages) is rebuilt as workflows/evaluation/bench/conflicts.py does.

Strategies: "policy" is the pipeline's own rules policy; any arm name of agents/arms.yaml is
forced for every question (FixedArmPolicy). The "agentscope" row is AgentScope's dense-only
SimpleKnowledge over the same chunks, retrieval metrics only.

Every (strategy, question) outcome is appended to <run dir>/results.jsonl as it finishes, so an
interrupted run continues with `resume=True`; summary.json holds the scores.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field

from citescope.agents.arms import Arm, load_arms
from citescope.agents.citations import parse_citations
from citescope.agents.policy import PolicyDecision, RulesPolicy
from citescope.agents.query_analysis import Entity, QueryFeatures
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.settings import get_settings
from citescope.tools.rerank import DEFAULT_WEIGHTS_PATH
from citescope.workflows.batch import AnswerLog
from citescope.workflows.evaluation.bench.agentscope_baseline import AgentScopeBaseline
from citescope.workflows.evaluation.bench.conflicts import _rebuilt_counterfactual  # DomainRAG's counterfactual recipe
from citescope.workflows.evaluation.datasets import (
    DECLARED_DOC_TYPES,
    Question,
    candidate_kb,
    dataset_kb,
    load_questions,
    missing_embeddings,
    sample,
)
from citescope.workflows.metrics import (
    Outcome,
    answer_scores_by_qtype,
    group_by,
    latency_summary,
    mean,
    ranked_doc_ids,
    recall_at_k,
    reciprocal_rank,
)
from citescope.workflows.pipeline import QAPipeline
from citescope.workflows.pipeline_config import KB_CONFIG_NAME, PipelineConfig
from citescope.workflows.progress import RecordProgress
from citescope.workflows.result import QAResult

POLICY = "policy"  # the pipeline's own strategy choice
AGENTSCOPE = "agentscope"  # baseline retrieval row
KS = (1, 5)
MRR_K = 10
BASELINE_DEPTH = 30  # chunks the AgentScope baseline returns per question
CALIBRATED_PATH = Path(__file__).with_name("calibrated.yaml")
DEFAULT_MAX_EMBED = 2000  # refuse to build a KB that would embed more texts (~3 min per 500 here)


def default_root() -> Path:
    """Eval KBs, subset corpora and run folders. Not the benchmark's KB folder: Milvus Lite opens a
    file from one process only, so an eval and a benchmark must not share a KB."""
    return get_settings().cache_dir / "eval"


class EvalError(ValueError):
    """A request that cannot run (unknown dataset file, strategy, missing embeddings...)."""


class EvalRequest(BaseModel):
    dataset_dir: Path
    questions_file: str | None = None  # a file name in dataset_dir (or a path); None: every split
    qtypes: list[str] | None = None  # only these question types
    limit: int | None = None  # questions per split, stratified by qtype (datasets.sample)
    per_qtype: int | None = None  # or: this many of each qtype
    seed: int = 0
    mode: Literal["offline", "llm"] = "offline"
    planner: str | None = None  # llm mode: model specs (else the config's / CITESCOPE_PLANNER)
    answerer: str | None = None
    strategies: list[str] = Field(default_factory=lambda: [POLICY])
    baseline: bool = True  # the AgentScope retrieval row
    concurrency: int = Field(default=1, ge=1)
    resume: bool = False
    history: bool = True  # conversational questions carry their conversation's opening question, as a session does
    overrides: dict[str, Any] = Field(default_factory=dict)  # PipelineConfig fields (e.g. refusal_threshold)
    max_embed: int = DEFAULT_MAX_EMBED
    root: Path = Field(default_factory=default_root)
    run_dir: Path | None = None  # default: <root>/runs/<split label>-<hash> (run_dir_for)
    progress: bool = True


@dataclass(frozen=True)
class Split:
    """One question file and the corpus it is asked against."""

    name: str
    questions: Path
    corpus: tuple[Path, ...]
    doc_type: str | None = None  # the type of its corpus records, which name none (DECLARED_DOC_TYPES)

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
                file.stem, file, (corpus if corpus.exists() else dataset_dir,), DECLARED_DOC_TYPES.get(dataset_dir.name)
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


# ----------------------------------------------------------------------------- strategies


class FixedArmPolicy:
    """A policy that always plans one arm (the pipeline accepts anything with `choose`)."""

    def __init__(self, arm: str, arms: dict[str, Arm] | None = None):
        arms = arms if arms is not None else load_arms()
        if arm not in arms:
            raise EvalError(f"unknown strategy {arm!r} (use {POLICY} or an arm: {', '.join(arms)})")
        self.arm = arms[arm]

    def choose(self, features: QueryFeatures, budget=None) -> PolicyDecision:
        max_calls = budget.max_calls if budget is not None else 4
        max_per_tool = budget.max_per_tool if budget is not None else 2
        return PolicyDecision(
            arm=self.arm.name,
            scores={self.arm.name: 1.0},
            source="rules",
            reason=f"评测固定使用策略 {self.arm.name}。",
            plan=self.arm.plan(features, max_calls, max_per_tool),
        )


def policy_for(strategy: str) -> Any:
    return RulesPolicy() if strategy == POLICY else FixedArmPolicy(strategy)


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
        assert kb is not None, "build_kbs makes the KB each question of the split needs"
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
        seed_calibrated_config(kb.dir)
        setattr(kbs, role, kb)
        if not len(kb):
            raise EvalError(f"{name}: the {role} KB at {kb.dir} is empty (see its dataset.json)")
    return kbs


def calibrated_key(kb_dir: Path) -> str:
    """An eval KB's name without its content hash: what calibrated.yaml is keyed by."""
    return re.sub(r"-[0-9a-f]{10}$", "", Path(kb_dir).name)


def read_calibrated(path: Path = CALIBRATED_PATH) -> dict[str, dict]:
    return (yaml.safe_load(path.read_text(encoding="utf-8")) or {}) if path.exists() else {}


def seed_calibrated_config(kb_dir: Path, path: Path = CALIBRATED_PATH) -> None:
    """Give a KB without config.yaml the values calibrate chose for its name."""
    values = read_calibrated(path).get(calibrated_key(kb_dir))
    target = Path(kb_dir) / KB_CONFIG_NAME
    if values and not target.exists():
        target.write_text(yaml.safe_dump(values, allow_unicode=True, sort_keys=True), encoding="utf-8")


# ----------------------------------------------------------------------------- one question


def restricted(pipeline: QAPipeline, doc_ids: Iterable[str]) -> QAPipeline:
    """The pipeline over one question's candidate docs (same config, skills and policy)."""
    return QAPipeline(
        candidate_kb(pipeline.kb, doc_ids), pipeline.config, registry=pipeline.registry, policy=pipeline.policy
    ).warm_up()


def record_of(strategy: str, question: Question, result: QAResult, kb: KnowledgeBase, latency_ms: float) -> dict:
    """What the metrics need of one outcome (one JSON line)."""

    def doc_of(chunk_id: str) -> str | None:
        chunk = kb.get(chunk_id)
        return chunk.doc_id if chunk is not None else None

    evidence = [[chunk_id, doc_of(chunk_id)] for chunk_id in result.evidence_ids]
    pool = [doc_of(i) for call in result.tool_calls for i in call.hit_ids]
    cited = parse_citations(result.answer) if not result.refused else []
    shown = set(result.evidence_ids)
    budget = result.budget
    within_budget = budget is None or (
        budget.tool_calls <= budget.limits.max_tool_calls
        and budget.model_calls <= budget.limits.max_model_calls
        and all(n <= budget.limits.max_calls_per_tool for n in budget.per_tool.values())
    )
    return {
        "id": f"{strategy}|{question.qid}",
        "strategy": strategy,
        "qid": question.qid,
        "qtype": question.qtype,
        "answer": result.answer,
        "refused": result.refused,
        "refusal_reason": result.refusal_reason,
        "best_score": result.best_score,
        "evidence": evidence,
        "pool_docs": ranked_doc_ids(d for d in pool if d is not None),
        "cited_ids": cited,
        "invalid_ids": [i for i in cited if i not in shown],
        "conflicts": [c.model_dump() for c in result.conflicts],
        "arm": result.policy.arm if result.policy else None,
        "tool_calls": budget.tool_calls if budget else 0,
        "per_tool": budget.per_tool if budget else {},
        "model_calls": budget.model_calls if budget else 0,
        "within_budget": within_budget,
        "degraded": result.degradation_reasons,
        "answer_source": result.answer_source,
        "latency_ms": round(latency_ms, 2),
        "timings_ms": result.timings_ms,
        "error": None,
    }


# ----------------------------------------------------------------------------- the run


def run_dir_for(request: EvalRequest, split: Split, configs: dict[str, PipelineConfig]) -> Path:
    """<root>/runs/<split label>-<hash of what decides the outcomes>: the question choice, the
    pipeline configs (a recalibrated threshold starts a new run), the reranker weights and the
    corpus's declared document type."""
    if request.run_dir is not None:
        return Path(request.run_dir) / split.name
    decisive = request.model_dump(mode="json", include={"qtypes", "limit", "per_qtype", "seed", "history"})
    weights = DEFAULT_WEIGHTS_PATH.read_bytes() if DEFAULT_WEIGHTS_PATH.exists() else b""
    key = hashlib.sha256(
        json.dumps(
            [
                decisive,
                str(split.questions.resolve()),
                hashlib.sha256(weights).hexdigest(),
                {role: c.model_dump() for role, c in configs.items()},
                *([split.doc_type] if split.doc_type else []),
            ],
            sort_keys=True,
        ).encode()
    ).hexdigest()[:8]
    return request.root / "runs" / f"{split.label}-{key}"


def pipeline_config(request: EvalRequest, kb_dir: Path) -> PipelineConfig:
    """The KB's config (pipeline.yaml < <kb>/config.yaml < env < request): offline mode pins both
    models to offline; llm mode needs at least one model spec."""
    models = (
        {"planner": "offline", "answerer": "offline"}
        if request.mode == "offline"
        else {"planner": request.planner, "answerer": request.answerer}
    )
    config = PipelineConfig.load(kb_dir, **models, **request.overrides)
    if request.mode == "llm" and config.planner == "offline" and config.answerer == "offline":
        raise EvalError(
            "--mode llm needs a model: --planner/--answerer (or CITESCOPE_PLANNER / CITESCOPE_ANSWERER), "
            "e.g. dashscope:qwen-plus"
        )
    return config


def run_eval(request: EvalRequest) -> dict:
    """Run every split of the request; {"dataset", "request", "splits": {name: summary}}."""
    unknown = [s for s in request.strategies if s not in (POLICY, *load_arms())]
    if unknown:
        raise EvalError(f"unknown strategies {unknown} (use {POLICY} or an arm: {', '.join(load_arms())})")
    out: dict[str, Any] = {
        "dataset": Path(request.dataset_dir).name,
        "request": request.model_dump(mode="json"),
        "splits": {},
    }
    for split in find_splits(request.dataset_dir, request.questions_file):
        out["splits"][split.name] = run_split(request, split)
    return out


def run_split(request: EvalRequest, split: Split) -> dict:
    questions = choose_questions(
        load_questions(split.questions, qtypes=request.qtypes), request.limit, request.per_qtype, request.seed
    )
    started = time.perf_counter()
    kbs = open_split_kbs(split, questions, request.root, request.max_embed)
    kb_roles = [(role, kb) for role, kb in (("corpus", kbs.corpus), ("candidates", kbs.candidates)) if kb is not None]
    configs = {role: pipeline_config(request, kb.dir) for role, kb in kb_roles}
    folder = run_dir_for(request, split, configs)
    folder.mkdir(parents=True, exist_ok=True)
    results = folder / "results.jsonl"
    if not request.resume and results.exists():
        results.unlink()
    log = AnswerLog(results)
    done = log.open(retry_errors=True)
    try:
        if request.baseline:
            _run_baseline(questions, kbs, request, folder, log, done)
        for strategy in request.strategies:
            todo = [q for q in questions if f"{strategy}|{q.qid}" not in done]
            if todo:
                pipelines = {
                    role: QAPipeline(kb, configs[role], policy=policy_for(strategy)).warm_up() for role, kb in kb_roles
                }
                asyncio.run(_run_strategy(strategy, todo, pipelines, request, log))
    finally:
        log.close()
    records = log.records()
    summary = summarize(questions, records, [*([AGENTSCOPE] if request.baseline else []), *request.strategies])
    summary.update(
        {
            "split": split.name,
            "questions_file": str(split.questions),
            "corpus": [str(p) for p in split.corpus],
            "run_dir": str(folder),
            "seconds": round(time.perf_counter() - started, 1),
            "n_questions": len(questions),
            "qtypes": {t: len(g) for t, g in group_by(questions, lambda q: q.qtype).items()},
            "rebuilt_counterfactuals": len(kbs.rebuilt),
            "not_rebuilt_counterfactuals": kbs.not_rebuilt,
            "refusal_threshold": {role: config.refusal_threshold for role, config in configs.items()},
            "kb_dirs": {
                r: str(kb.dir) for r, kb in (("corpus", kbs.corpus), ("candidates", kbs.candidates)) if kb is not None
            },
        }
    )
    (folder / "summary.json").write_text(json.dumps(summary, ensure_ascii=False, indent=1), encoding="utf-8")
    return summary


def _lanes(questions: Sequence[Question]) -> list[list[Question]]:
    """One lane per conversation (turn order), one per lone question: a follow-up needs its first turn."""
    lanes: dict[str, list[Question]] = {}
    for q in questions:
        lanes.setdefault(f"s:{q.session}" if q.session else f"q:{q.qid}", []).append(q)
    return [sorted(lane, key=lambda q: q.turn or 0) for lane in lanes.values()]


async def _run_strategy(
    strategy: str, questions: Sequence[Question], pipelines: dict[str, QAPipeline], request: EvalRequest, log: AnswerLog
) -> None:
    queue: asyncio.Queue[list[Question]] = asyncio.Queue()
    for lane in _lanes(questions):
        queue.put_nowait(lane)

    async def worker(advance: Callable[[dict], None]) -> None:
        while not queue.empty():
            carried: Entity | None = None
            for question in queue.get_nowait():
                record, carried = await _ask(strategy, question, pipelines, request, carried)
                log.write(record)
                advance(record)

    with RecordProgress(f"{strategy}", len(questions), request.progress) as advance:
        await asyncio.gather(*(worker(advance) for _ in range(request.concurrency)))


async def _ask(
    strategy: str, question: Question, pipelines: dict[str, QAPipeline], request: EvalRequest, carried: Entity | None
) -> tuple[dict, Entity | None]:
    """One question (its conversation's product carried in from the previous turn)."""
    started = time.perf_counter()
    try:
        if question.candidate_doc_ids:
            pipeline = await asyncio.to_thread(restricted, pipelines["candidates"], question.candidate_doc_ids)
        else:
            pipeline = pipelines["corpus"]
        started = time.perf_counter()  # the restricted view is set-up, not answering time
        entity = carried if (question.turn or 1) > 1 else None
        # a follow-up as a session asks it: alone, its conversation's opening question carried
        result = await pipeline.arun(
            question.question,
            session_entity=entity,
            filters=question.filters,
            session_topic=question.opening if request.history else None,
        )
    except Exception as exc:  # the question's error, never the run's
        return (
            {
                "id": f"{strategy}|{question.qid}",
                "strategy": strategy,
                "qid": question.qid,
                "qtype": question.qtype,
                "error": f"{type(exc).__name__}: {exc}"[:500],
                "latency_ms": round((time.perf_counter() - started) * 1000, 2),
            },
            carried,
        )
    latency = (time.perf_counter() - started) * 1000
    products = result.features.get("products") or []
    if products:
        carried = Entity(name=products[0]["name"], product_id=products[0]["product_id"])
    return record_of(strategy, question, result, pipeline.kb, latency), carried


def _run_baseline(
    questions: Sequence[Question], kbs: SplitKBs, request: EvalRequest, folder: Path, log: AnswerLog, done: set[str]
) -> None:
    """AgentScope SimpleKnowledge (dense only) over each KB's chunks: ranked docs per question,
    restricted to a question's candidates when it has them."""
    todo = [q for q in questions if f"{AGENTSCOPE}|{q.qid}" not in done]
    for role, kb in (("corpus", kbs.corpus), ("candidates", kbs.candidates)):
        if kb is None:
            continue
        mine = [q for q in todo if kbs.for_question(q) is kb]
        if not mine:
            continue
        store = folder / f"agentscope-{role}"
        shutil.rmtree(store, ignore_errors=True)  # a fresh store: adding the chunks twice would duplicate them
        baseline = AgentScopeBaseline(kb, store)
        try:
            baseline.warm_up()
            with RecordProgress(f"{AGENTSCOPE} ({role})", len(mine), request.progress) as advance:
                for q in mine:
                    started = time.perf_counter()
                    depth = BASELINE_DEPTH if not q.candidate_doc_ids else min(len(kb), 16000)
                    docs = baseline.retrieve_doc_ids(q.asked("opening" if request.history else "none"), limit=depth)
                    if q.candidate_doc_ids:
                        allowed = set(q.candidate_doc_ids)
                        docs = [d for d in docs if d in allowed]
                    record = {
                        "id": f"{AGENTSCOPE}|{q.qid}",
                        "strategy": AGENTSCOPE,
                        "qid": q.qid,
                        "qtype": q.qtype,
                        "evidence": [[None, d] for d in ranked_doc_ids(docs)],
                        "latency_ms": round((time.perf_counter() - started) * 1000, 2),
                        "error": None,
                    }
                    log.write(record)
                    advance(record)
        finally:
            baseline.close()


# ----------------------------------------------------------------------------- scores


def outcome_of(record: dict) -> Outcome:
    return Outcome(
        qid=record["qid"],
        answer=record.get("answer", ""),
        cited_ids=record.get("cited_ids", []),
        evidence={c: d for c, d in record.get("evidence", []) if c and d},
        refused=bool(record.get("refused")),
        conflict_flagged=bool(record.get("conflicts")),
        latency_ms=record.get("latency_ms"),
    )


def retrieval_of(questions: Sequence[Question], records: dict[str, dict]) -> dict:
    """Doc-level Recall@k and MRR over the evidence order (answerable questions with gold docs);
    pool_recall: a gold doc anywhere in what the tool calls gathered."""
    pairs = [(q, records[q.qid]) for q in questions if q.qid in records and q.answerable and q.gold_doc_ids]
    ranked = [(ranked_doc_ids(d for _, d in r.get("evidence", []) if d), q.gold_doc_ids) for q, r in pairs]
    out = {f"recall@{k}": mean(recall_at_k(docs, gold, k) for docs, gold in ranked) for k in KS}
    out[f"mrr@{MRR_K}"] = mean(reciprocal_rank(docs, gold, MRR_K) for docs, gold in ranked)
    pools = [(r["pool_docs"], q.gold_doc_ids) for q, r in pairs if "pool_docs" in r]
    out["pool_recall"] = mean(recall_at_k(docs, gold, len(docs)) for docs, gold in pools) if pools else float("nan")
    out["n"] = len(pairs)
    return out


def operations_of(records: Sequence[dict]) -> dict:
    """Citation validity, tool calls, budgets, degradations and errors of some outcomes."""
    ok = [r for r in records if not r.get("error")]
    answered = [r for r in ok if not r.get("refused")]
    return {
        "invalid_ids": sum(len(r.get("invalid_ids", [])) for r in ok),
        "answers_with_invalid_ids": sum(bool(r.get("invalid_ids")) for r in answered),
        "tool_calls_mean": mean(r.get("tool_calls", 0) for r in ok),
        "tool_calls_max": max((r.get("tool_calls", 0) for r in ok), default=0),
        "budget_exceeded": sum(not r.get("within_budget", True) for r in ok),
        "degraded": sum(bool(r.get("degraded")) for r in ok),
        "errors": len(records) - len(ok),
        "latency_ms": latency_summary(r["latency_ms"] for r in ok if r.get("latency_ms") is not None),
    }


def summarize(questions: Sequence[Question], records: Iterable[dict], strategies: Sequence[str]) -> dict:
    """{"strategies": {strategy: {"all": scores, qtype: scores}}} over the given questions."""
    by_strategy: dict[str, dict[str, dict]] = {}
    for record in records:
        by_strategy.setdefault(record["strategy"], {})[record["qid"]] = record
    groups = {"all": list(questions), **group_by(questions, lambda q: q.qtype)}
    out: dict = {"strategies": {}}
    for strategy in strategies:
        mine = by_strategy.get(strategy, {})
        if strategy == AGENTSCOPE:
            out["strategies"][strategy] = {g: {"retrieval": retrieval_of(qs, mine)} for g, qs in groups.items()}
            continue
        outcomes = {qid: outcome_of(r) for qid, r in mine.items() if not r.get("error")}
        answers = answer_scores_by_qtype(questions, outcomes)
        out["strategies"][strategy] = {
            g: {
                "retrieval": retrieval_of(qs, mine),
                "answers": answers[g],
                "operations": operations_of([mine[q.qid] for q in qs if q.qid in mine]),
            }
            for g, qs in groups.items()
        }
    return out


# ----------------------------------------------------------------------------- report


def _f(value: float | None, digits: int = 3) -> str:
    return "–" if value is None or value != value else f"{value:.{digits}f}"


def strategy_row(name: str, scores: dict) -> list[str]:
    """One table row: retrieval, answers, refusal, conflicts, tools, latency."""
    r = scores["retrieval"]
    cells = [name, _f(r["recall@1"]), _f(r["recall@5"]), _f(r[f"mrr@{MRR_K}"]), _f(r.get("pool_recall"))]
    if "answers" not in scores:
        return cells + ["–"] * 12
    a, o = scores["answers"], scores["operations"]
    return cells + [
        _f(a["answer_hit"]),
        _f(a["answer_hit_all_answerable"]),
        _f(a["citation_precision"]),
        _f(a["citation_recall"]),
        str(o["invalid_ids"]),
        _f(a["refusal_recall"]),
        _f(a["false_refusal_rate"]),
        _f(a["conflict_flag_rate"]),
        _f(a["false_flag_rate"]),
        _f(a["fake_answer_asserted"]),
        f"{_f(o['tool_calls_mean'], 2)} / {o['tool_calls_max']}"
        + (f" ({o['budget_exceeded']} over)" if o["budget_exceeded"] else ""),
        f"{_f(o['latency_ms']['p50'], 0)} / {_f(o['latency_ms']['p95'], 0)}",
    ]


HEADER = [
    "",
    "R@1",
    "R@5",
    f"MRR@{MRR_K}",
    "pool R",
    "hit (answered)",
    "hit (all)",
    "cit P",
    "cit R",
    "invalid ids",
    "refusal R",
    "false refusal",
    "conflict flag",
    "false flag",
    "fake asserted",
    "tools mean / max",
    "ms p50 / p95",
]


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|---|" + "---:|" * (len(header) - 1),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def format_split(summary: dict, by_qtype_for: Sequence[str] | None = None) -> list[str]:
    """Markdown lines of one split: strategies side by side, then by qtype for some of them."""
    strategies = summary["strategies"]
    qtypes = ", ".join(f"{t} {n}" for t, n in summary["qtypes"].items())
    lines = [
        f"{summary['n_questions']} questions ({qtypes}); refusal threshold "
        f"{_thresholds(summary)}; {summary['seconds']:.0f} s.",
        "",
    ]
    lines += markdown_table(["strategy", *HEADER[1:]], [strategy_row(s, g["all"]) for s, g in strategies.items()])
    chosen = by_qtype_for if by_qtype_for is not None else [s for s in strategies if s != AGENTSCOPE]
    if len(summary["qtypes"]) > 1:
        for strategy in chosen:
            if strategy in strategies:
                lines += ["", f"By question type, {strategy}:", ""]
                lines += markdown_table(
                    ["qtype (n)", *HEADER[1:]],
                    [strategy_row(f"{t} ({summary['qtypes'][t]})", strategies[strategy][t]) for t in summary["qtypes"]],
                )
    return lines


def _thresholds(summary: dict) -> str:
    values = sorted(set(summary.get("refusal_threshold", {}).values()))
    return " / ".join(f"{v:g}" for v in values) or "–"


def format_eval_report(result: dict) -> str:
    lines = [f"## {result['dataset']}"]
    for name, summary in result["splits"].items():
        lines += ["", f"### {name}", *format_split(summary)]
    return "\n".join(lines)
