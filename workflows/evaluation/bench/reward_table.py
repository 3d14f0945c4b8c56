"""The reward table the policy simulation plays on, computed once and cached: for every question
of the mix (the demo shop and slices of the dev sets, over documents whose chunks the shared
embedding cache already holds) and every arm, the arm's plan runs through the real skills, and
the reward is 1 when a gold doc is among the first TOP_DOCS distinct docs of the reranked
evidence, else 0 (the rank is kept for a graded variant).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from collections.abc import Callable
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from citescope.agents.arms import DEFAULT_ARMS, Arm, load_arms
from citescope.agents.budget import Budget, BudgetTracker
from citescope.agents.evidence import EvidencePool
from citescope.agents.planner import RetrievalPlanner
from citescope.agents.policy import PolicyDecision
from citescope.agents.query_analysis import Entity, QueryAnalyzer, QueryFeatures
from citescope.knowledge.chunking import chunk_document
from citescope.knowledge.embedders import CachedEmbedder
from citescope.knowledge.ingest import embedding_text
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.lexicon import Lexicon
from citescope.knowledge.loaders import load_path
from citescope.knowledge.settings import Settings, get_settings
from citescope.tools.base import SkillContext
from citescope.tools.registry import SkillRegistry
from citescope.tools.rerank import make_reranker
from citescope.workflows.evaluation.datasets import Question, dataset_kb, load_questions
from citescope.workflows.metrics import ranked_doc_ids

REPO = Path(__file__).resolve().parents[3]
DEMO_DIR = REPO / "knowledge" / "demo"
TOP_DOCS = 5
SLICE_STEP = 500  # slice sizes move in steps, so a growing embedding cache does not rebuild the KB every run
# Dev sets of the mix -> {qtype: at most this many questions} (easy, plentiful types are capped).
DATASET_CAPS: dict[str, dict[str, int]] = {
    "baoxianzhidao": {"faq_title": 150},
    "domainrag": {},
    "cmrc2018_dev": {"extractive": 150},
}
TABLE_FORMAT = 2  # bump when RewardRow changes: cached tables of another format are not read


class RewardRow(BaseModel):
    """One question: its features and every arm's reward (None: the arm has nothing to call)."""

    qid: str
    kb: str
    qtype: str
    question: str
    features: QueryFeatures
    rewards: dict[str, float | None]
    gold_ranks: dict[str, int | None] = {}  # rank of the first gold doc in the arm's evidence (None: absent)

    def graded(self) -> RewardRow:
        """The same row with reward = 1 / rank of the first gold doc within the top 5 (MRR@5)."""
        rewards = {
            arm: None
            if self.rewards[arm] is None
            else (1.0 / rank if (rank := self.gold_ranks.get(arm)) and rank <= TOP_DOCS else 0.0)
            for arm in self.rewards
        }
        return self.model_copy(update={"rewards": rewards})

    @property
    def group(self) -> tuple[str, str]:
        return self.kb, self.features.intent


def cached_prefix(corpus: Path, settings: Settings, embedder: CachedEmbedder) -> tuple[int, int]:
    """(leading documents with every chunk in the embedding cache, documents in the corpus)."""
    docs, _, lexicon = load_path(corpus)
    lexicon = lexicon or Lexicon()
    for i, doc in enumerate(docs):
        chunks = chunk_document(doc, settings.chunk_size, settings.chunk_overlap)
        if embedder.missing([embedding_text(c, lexicon) for c in chunks]):
            return i, len(docs)
    return len(docs), len(docs)


class _QueryMemo(CachedEmbedder):
    """Every arm embeds the same question again (dense leg, reranker): compute it once."""

    def __init__(self, wrapped: CachedEmbedder):
        super().__init__(wrapped.inner, wrapped.cache, wrapped.batch_size)
        self._queries: dict[str, np.ndarray] = {}

    def embed_query(self, text: str) -> np.ndarray:
        if text not in self._queries:
            self._queries[text] = super().embed_query(text)
        return self._queries[text]


def simulation_sources(
    datasets_dir: Path, caps: dict[str, dict[str, int]] | None = None, settings: Settings | None = None
) -> list[tuple[str, KnowledgeBase, list[Question]]]:
    """(name, warmed KB, questions): the demo shop, then each dev set of DATASET_CAPS over the
    documents the embedding cache already holds (a prefix in SLICE_STEP steps, or all of it).
    Questions: answerable ones whose gold docs are all in the KB, at most caps[qtype] of a qtype."""
    settings = settings or get_settings()
    caps = DATASET_CAPS if caps is None else caps
    demo_kb = dataset_kb([DEMO_DIR], "demo", settings=settings)
    sources = [
        ("demo", demo_kb, [q for q in load_questions(DEMO_DIR / "questions.jsonl") if q.answerable and q.gold_doc_ids])
    ]
    for dataset, qtype_caps in caps.items():
        corpus = Path(datasets_dir) / dataset / "corpus.jsonl"
        if not corpus.exists():
            continue
        cached, total = cached_prefix(corpus, settings, demo_kb.embedder)
        docs = total if cached >= total else cached // SLICE_STEP * SLICE_STEP
        if not docs:
            continue
        kb = dataset_kb([corpus], f"{dataset}-sim", max_docs=None if docs >= total else docs, settings=settings)
        present = {c.doc_id for c in kb.all_chunks()}
        questions = [
            q
            for q in load_questions(corpus.parent / "questions.jsonl")
            if q.answerable and q.gold_doc_ids and set(q.gold_doc_ids) <= present
        ]
        sources.append((dataset if docs >= total else f"{dataset}[:{docs}]", kb, _capped(questions, qtype_caps)))
    return sources


def _capped(questions: list[Question], caps: dict[str, int]) -> list[Question]:
    """At most caps[qtype] questions of each capped qtype (a seeded sample), file order kept."""
    keep: set[str] = set()
    for qtype, cap in caps.items():
        of_type = [q.qid for q in questions if q.qtype == qtype]
        keep |= set(random.Random(0).sample(of_type, min(cap, len(of_type))))
    return [q for q in questions if q.qtype not in caps or q.qid in keep]


def code_fingerprint(arms_path: Path = DEFAULT_ARMS) -> str:
    """What the outcomes depend on besides the KB and the questions: the arms file, tools/ (skill
    code, skill config, reranker weights) and the knowledge layer's code."""
    files = [
        arms_path,
        *sorted(
            p
            for folder in ("tools", "knowledge")
            for p in (REPO / folder).iterdir()
            if p.suffix in (".py", ".yaml", ".json")
        ),
    ]
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _table_key(name: str, kb: KnowledgeBase, questions: list[Question], fingerprint: str, budget: Budget) -> str:
    raw = json.dumps(
        [TABLE_FORMAT, name, kb.dir.name, [q.qid for q in questions], fingerprint, budget.model_dump()],
        ensure_ascii=False,
    )
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:12]


def build_reward_table(
    sources,
    arms: dict[str, Arm] | None = None,
    budget: Budget | None = None,
    cache_dir: Path | None = None,
    arms_path: Path = DEFAULT_ARMS,
    progress: Callable[[str], None] | None = None,
) -> list[RewardRow]:
    """Every arm's reward for every question. Each source's rows are cached on their own, keyed
    by its KB, questions and code_fingerprint(), so only a changed source is rerun. Raises if
    the code changed during the run: the rows would not be one consistent table."""
    arms = arms or load_arms(arms_path)
    budget = budget or Budget()
    cache_dir = Path(cache_dir or get_settings().cache_dir) / "bench"
    fingerprint = code_fingerprint(arms_path)
    rows: list[RewardRow] = []
    for name, kb, questions in sources:
        path = cache_dir / f"policy-rewards-{_table_key(name, kb, questions, fingerprint, budget)}.json"
        if path.exists():
            rows += [RewardRow.model_validate(row) for row in json.loads(path.read_text(encoding="utf-8"))]
            continue
        computed = asyncio.run(_rewards_for(name, kb, questions, arms, budget, progress or (lambda line: None)))
        if code_fingerprint(arms_path) != fingerprint:
            raise RuntimeError(
                "tools/, knowledge/ or the arms file changed while the reward table was computed; run again"
            )
        cache_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps([row.model_dump(mode="json") for row in computed], ensure_ascii=False), encoding="utf-8"
        )
        rows += computed
    return rows


async def _rewards_for(
    name: str,
    kb: KnowledgeBase,
    questions: list[Question],
    arms: dict[str, Arm],
    budget: Budget,
    progress: Callable[[str], None],
) -> list[RewardRow]:
    embedder = kb.embedder
    kb.embedder = _QueryMemo(embedder)
    try:
        return await _run_arms(name, kb, questions, arms, budget, progress)
    finally:
        kb.embedder = embedder


async def _run_arms(
    name: str,
    kb: KnowledgeBase,
    questions: list[Question],
    arms: dict[str, Arm],
    budget: Budget,
    progress: Callable[[str], None],
) -> list[RewardRow]:
    reranker = make_reranker("offline", kb=kb)
    reranker.warm_up()
    registry = SkillRegistry.from_config()
    registry.check_health(SkillContext(kb, reranker=reranker))
    analyzer = QueryAnalyzer(kb).warm_up()
    carried: dict[str, Entity | None] = {}  # session -> the product its last turn was about
    plan_budget = budget.plan_budget()
    rows = []
    for number, question in enumerate(questions, start=1):
        features = analyzer.run(question.question, carried.get(question.session or ""))
        if question.session:
            carried[question.session] = features.product or carried.get(question.session)
        outcomes: dict[str, float | None] = {}
        ranks: dict[str, int | None] = {}
        by_plan: dict[str, int | None] = {}  # arms with identical plans share one run
        for arm_name, arm in arms.items():
            plan = arm.plan(features, plan_budget.max_calls, plan_budget.max_per_tool)
            if not plan:
                outcomes[arm_name] = ranks[arm_name] = None
                continue
            key = json.dumps([c.model_dump() for c in plan], ensure_ascii=False, sort_keys=True)
            if key not in by_plan:
                pool = EvidencePool()
                decision = PolicyDecision(arm=arm_name, plan=plan, reason="", source="rules")
                planner = RetrievalPlanner(
                    registry, SkillContext(kb, reranker=reranker), pool, BudgetTracker(budget), decision
                )
                await planner.run(question.question)
                docs = ranked_doc_ids(hit.doc_id for hit in pool.hits())
                gold = set(question.gold_doc_ids)
                by_plan[key] = next((rank for rank, doc in enumerate(docs, start=1) if doc in gold), None)
            rank = ranks[arm_name] = by_plan[key]
            outcomes[arm_name] = 1.0 if rank is not None and rank <= TOP_DOCS else 0.0
        rows.append(
            RewardRow(
                qid=question.qid,
                kb=name,
                qtype=question.qtype,
                question=question.question,
                # as the cached JSON keeps it: the shop profile is the KB's, left out of a row's JSON
                features=features.model_copy(update={"shop": None}),
                rewards=outcomes,
                gold_ranks=ranks,
            )
        )
        if number % 25 == 0 or number == len(questions):
            progress(f"{name}: {number}/{len(questions)} questions")
    return rows
