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

This module runs the questions; splits.py finds the splits and opens their KBs, eval_report.py
scores the records and writes the report.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

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
from citescope.workflows.evaluation.datasets import (
    Question,
    candidate_kb,
    load_questions,
)
from citescope.workflows.evaluation.eval_report import (
    AGENTSCOPE,
    format_eval_report,
    format_split,
    markdown_table,
    summarize,
)
from citescope.workflows.evaluation.splits import (
    EvalError,
    Split,
    SplitKBs,
    choose_questions,
    find_splits,
    forget_dev_fitted_threshold,
    open_split_kbs,
)
from citescope.workflows.metrics import group_by, ranked_doc_ids
from citescope.workflows.pipeline import QAPipeline
from citescope.workflows.pipeline_config import PipelineConfig
from citescope.workflows.progress import RecordProgress
from citescope.workflows.result import QAResult

POLICY = "policy"  # the pipeline's own strategy choice
BASELINE_DEPTH = 30  # chunks the AgentScope baseline returns per question
DEFAULT_MAX_EMBED = 2000  # refuse to build a KB that would embed more texts (~3 min per 500 here)


def default_root() -> Path:
    """Eval KBs, subset corpora and run folders. Not the benchmark's KB folder: Milvus Lite opens a
    file from one process only, so an eval and a benchmark must not share a KB."""
    return get_settings().cache_dir / "eval"


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
        "usage": result.usage.model_dump(mode="json"),
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
    pipeline configs (a recalibrated threshold starts a new run), the reranker weights, the reader's
    model folders' files (a model retrained into the same folder starts a new run) and the corpus's
    declared document type."""
    if request.run_dir is not None:
        return Path(request.run_dir) / split.name
    decisive = request.model_dump(mode="json", include={"qtypes", "limit", "per_qtype", "seed", "history"})
    weights = DEFAULT_WEIGHTS_PATH.read_bytes() if DEFAULT_WEIGHTS_PATH.exists() else b""
    models = [model_digest(folder) for c in configs.values() for folder in (c.claims_model, c.pair_model)]
    key = hashlib.sha256(
        json.dumps(
            [
                decisive,
                str(split.questions.resolve()),
                hashlib.sha256(weights).hexdigest(),
                {role: keyed(c) for role, c in configs.items()},
                *([models] if any(models) else []),  # without a model folder, the keys of earlier runs
                *([split.doc_type] if split.doc_type else []),
            ],
            sort_keys=True,
        ).encode()
    ).hexdigest()[:8]
    return request.root / "runs" / f"{split.label}-{key}"


def keyed(config: PipelineConfig) -> dict:
    """A config as it keys a run: without the pair scorer's settings when it is off (they decide
    nothing then, and runs made before it existed keep their keys)."""
    values = config.model_dump(mode="json")
    if config.pair_model is None:
        del values["pair_model"], values["pair_top_n"]
    return values


def model_digest(folder: Path | None) -> str | None:
    """A hash of a model folder's files (names and bytes); None for no folder."""
    if folder is None:
        return None
    digest = hashlib.sha256()
    for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


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


# the harness's parts, imported from here by the CLI, calibrate, quality_report and the tests
__all__ = [
    "AGENTSCOPE",
    "EvalError",
    "Split",
    "choose_questions",
    "find_splits",
    "forget_dev_fitted_threshold",
    "format_eval_report",
    "format_split",
    "markdown_table",
    "open_split_kbs",
    "summarize",
]
