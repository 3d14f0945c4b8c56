"""Stage retrieve: the policy's plan run by a real AgentScope ReActAgent over the skill toolkit,
under the question's budget (agents/planner.py). Offline its model replays the plan call by call;
with a planner LLM configured, the LLM runs its own ReAct loop with the plan as a suggestion in its
prompt (with the conversation's product and last turns); the question starts on the model of the
planner's route its signals pick (agents/routing.py), a model that fails hands it to the next, and
after the last the offline replay runs (also when the models gather nothing). The agent's closing
text is not read: what counts is the evidence its tool calls gathered, and the structured findings
(a size worked out, the size rows a question names, a product page's opening) pinned into what is shown."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from agentscope.tool import Toolkit

from citescope.agents.aspects import states_aspect
from citescope.agents.budget import BudgetTracker, RetryPolicy
from citescope.agents.conversation import NONE_TEXT
from citescope.agents.evidence import EvidencePool
from citescope.agents.extractive.scoring import is_shop_wide
from citescope.agents.planner import PlannerChoice, RetrievalPlanner, ToolCallRecord
from citescope.agents.policy import PolicyDecision
from citescope.agents.query_analysis import QueryFeatures
from citescope.agents.routing import ModelRoute, RouteStep, question_signals
from citescope.knowledge.filters import SearchFilters
from citescope.knowledge.kb import Chunk, KnowledgeBase
from citescope.tools.base import EvidenceHit, SkillContext
from citescope.tools.products import SizeAdvice
from citescope.tools.registry import SkillRegistry
from citescope.workflows.stages.analyse import Analysis, with_asked_time
from citescope.workflows.stages.rank import Scorer


class AspectReader(Protocol):
    """Which of the KB's aspects a question names, and text as they are matched (the extractive answerer)."""

    def asked_aspects(self, question: str) -> set[str]: ...

    def canonical(self, text: str) -> str: ...


SHOP_RULES = "shop_rules"  # what found a chunk added by `Retrieve.shop_rules` (its found_by)
_MAX_SHOP_RULES = 4  # chunks: the rank stage picks among them


@dataclass(frozen=True)
class RetrieveInput:
    analysis: Analysis
    decision: PolicyDecision
    filters: SearchFilters | None  # the caller's, which override a model's on every skill that takes them
    retry: RetryPolicy
    reserve_model_calls: int = 0  # model calls the planner leaves for the answerer
    conversation: str = NONE_TEXT  # the 【对话上下文】 a planner model reads (agents/conversation.py)


@dataclass(frozen=True)
class Retrieved:
    pool: EvidencePool  # every hit any skill found
    source: Literal["offline", "llm"]  # who chose the tool calls
    tool_calls: list[ToolCallRecord]  # every call, run, cached or refused by the budget
    outputs: dict[str, dict]  # skill -> its latest result data
    degradations: list[str]
    advice: SizeAdvice | None  # the size size_recommend worked out from the table
    overview: list[str]  # the opening chunk of each asked product's page, for "what is it like"
    pinned: list[str]  # chunk ids shown whatever their rank: what the findings rest on
    route: list[RouteStep]  # the planner models asked, why, and how each ended


class Retrieve:
    def __init__(
        self,
        kb: KnowledgeBase,
        registry: SkillRegistry,
        reranker: Scorer,
        toolkit_template: Toolkit,
        route: ModelRoute | None = None,
        aspects: AspectReader | None = None,
    ):
        """toolkit_template: the toolkit's schemas, parsed once at warm-up. route: the planner's
        models, if any (agents/routing.py). aspects: reads the KB's aspects a question names (the
        extractive answerer); None: no shop rules are looked up."""
        self.kb = kb
        self.registry = registry
        self.reranker = reranker
        self.toolkit_template = toolkit_template
        self.route = route
        self.aspects = aspects
        # the KB's shop-wide chunks with their heading and their title with heading as matched, per KB version
        self._rules: tuple[int, list[tuple[Chunk, str, str]]] | None = None

    def choices(self, features: QueryFeatures) -> list[PlannerChoice]:
        """The planner models this question tries, in order: from the one its signals pick on."""
        if self.route is None:
            return []
        start, reason = self.route.start(question_signals(features))
        models = self.route.models[start:]
        return [PlannerChoice(m.name, m.model, m.formatter, reason) for m in models]

    async def run(self, given: RetrieveInput, tracker: BudgetTracker) -> Retrieved:
        features, filters = given.analysis.features, given.filters
        pool = EvidencePool()
        planner = RetrievalPlanner(
            self.registry,
            SkillContext(self.kb, reranker=self.reranker, as_of=filters.reference_day() if filters else None),
            pool,
            tracker,
            given.decision,
            retry=given.retry,
            filters=filters,
            toolkit_template=self.toolkit_template,
            reserve_model_calls=given.reserve_model_calls,
            route=self.choices(features),
            conversation=given.conversation,
        )
        message = with_asked_time(
            planner_message(given.analysis.question, features), filters.as_of if filters else None
        )
        outcome = await planner.run(message)
        degradations = list(outcome.degradations)
        degradations += [f"tool {r.name}: {reason}" for r in planner.records if r.degraded for reason in r.reasons]

        # Structured findings are shown with the rows they rest on: a size the size_recommend skill
        # worked out from the table, and the size-table rows of two or more sizes asked about.
        advice = SizeAdvice.of(planner.outputs.get("size_recommend"))
        pinned = advice.chunk_ids() if advice else []
        named_sizes = list(((planner.outputs.get("product_lookup") or {}).get("size_rows") or {}).values())
        pinned += named_sizes if len(named_sizes) > 1 else []
        # A question about what a product is like is answered by its page's opening section.
        overview = self._openings(pool, features) if features.asks_overview else []
        pinned += overview
        self.shop_rules(pool, features, given.analysis.question)
        return Retrieved(
            pool=pool,
            source=outcome.source,
            tool_calls=planner.records,
            outputs=planner.outputs,
            degradations=degradations,
            advice=advice,
            overview=overview,
            pinned=pinned,
            route=planner.steps,
        )

    def _openings(self, pool: EvidencePool, features: QueryFeatures) -> list[str]:
        """The opening chunk (商品简介) of each asked product's page, where the pool holds it."""
        gathered = {hit.chunk_id: hit for hit in pool.hits()}
        pages = {
            hit.product_id: hit.doc_id for hit in gathered.values() if hit.doc_type == "product" and hit.product_id
        }
        openings = []
        for product in features.focus_products:
            chunks = self.kb.chunks_of(pages[product.product_id]) if product.product_id in pages else []
            if chunks and chunks[0].chunk_id in gathered:
                openings.append(chunks[0].chunk_id)
        return openings

    def shop_rules(self, pool: EvidencePool, features: QueryFeatures, question: str) -> list[str]:
        """When the question names an aspect (保修: agents/aspects.py) that no chunk of the asked product's
        page states, the shop's rules for every product that do (the warranty policy's period for a page
        without a 保修 section), added to the pool for the rank stage to score; their chunk ids. A lookup
        in the catalogue, like the page openings, not a search: no tool call, no budget spent."""
        if self.aspects is None or not features.focus_products:
            return []
        products = {p.product_id for p in features.focus_products if p.product_id}
        pages = {hit.doc_id for hit in pool.hits() if hit.product_id and hit.product_id in products}
        if not pages:
            return []
        asked = self.aspects.asked_aspects(question)  # the question read again: only when a page was found
        if not asked:
            return []
        canonical = self.aspects.canonical
        if any(states_aspect(canonical(f"{c.section} {c.text}"), asked) for p in pages for c in self.kb.chunks_of(p)):
            return []
        # a rule about the aspect: its title or heading says it (保修期限, 商品保修说明, an FAQ entry asking about
        # 保修), not one mentioning it in passing (防水等级 in the warranty's exclusions, for 防水吗)
        rules = [
            (chunk, heading) for chunk, heading, named in self._shop_wide(canonical) if states_aspect(named, asked)
        ]
        # a rule under the aspect's heading before one of a document named for it
        rules.sort(key=lambda rule: not states_aspect(rule[1], asked))
        hits = [EvidenceHit.from_chunk(chunk, 0.0) for chunk, _ in rules[:_MAX_SHOP_RULES]]
        pool.add(SHOP_RULES, hits)
        return [hit.chunk_id for hit in hits]

    def _shop_wide(self, canonical: Callable[[str], str]) -> list[tuple[Chunk, str, str]]:
        """The KB's policies and FAQ entries, each with its heading and its title with its heading as the
        aspects are matched (read once per KB version: a big KB's thousands of entries are not canonicalised
        per question)."""
        version = self.kb.version
        if self._rules is None or self._rules[0] != version:
            shop_wide = [c for c in self.kb.all_chunks() if is_shop_wide(c)]
            self._rules = (
                version,
                [(c, canonical(c.section), canonical(f"{c.title} {c.section}")) for c in shop_wide],
            )
        return self._rules[1]


def planner_message(question: str, features: QueryFeatures) -> str:
    """The planner's user message: the question, plus the product or topic a follow-up refers to."""
    carried = features.carried_entity
    if carried is not None and not features.products:
        return f"{question}\n（这是追问，指的是上一轮提到的商品「{carried.name}」）"
    if features.carried_topic and not features.products:
        return f"{question}\n（这是追问，对话开始时问的是「{features.carried_topic}」）"
    return question
