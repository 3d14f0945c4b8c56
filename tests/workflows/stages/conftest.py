"""The stage units of workflows/stages/, each run alone on the real components a warmed
QAPipeline built them from (the demo KB, the configured skills, the calibrated reranker)."""

from __future__ import annotations

import asyncio

import pytest

from citescope.agents.budget import BudgetTracker
from citescope.knowledge.filters import SearchFilters
from citescope.workflows.pipeline import QAPipeline
from citescope.workflows.pipeline_config import PipelineConfig
from citescope.workflows.stages.analyse import AnalyseInput, Analysis
from citescope.workflows.stages.context import QuestionRun
from citescope.workflows.stages.plan import PlanInput
from citescope.workflows.stages.rank import EvidenceLimits, Ranking, RankInput
from citescope.workflows.stages.retrieve import Retrieved, RetrieveInput


@pytest.fixture(scope="module")
def pipeline(demo_kb, registry) -> QAPipeline:
    return QAPipeline(demo_kb, PipelineConfig.load(demo_kb.dir, environ={}), registry=registry).warm_up()


def question_run(pipeline: QAPipeline) -> QuestionRun:
    return QuestionRun(BudgetTracker(pipeline.config.budget()), pipeline.priority, long=False)


def analysed(pipeline: QAPipeline, question: str) -> Analysis:
    return pipeline.analyse.run(AnalyseInput(question))


def retrieved(pipeline: QAPipeline, analysis: Analysis, filters: SearchFilters | None = None) -> Retrieved:
    """The plan the rules policy picks for the question, run by the retrieve stage offline."""
    decision = pipeline.plan.run(PlanInput(analysis.features, pipeline.config.budget().plan_budget()))
    given = RetrieveInput(analysis, decision, filters, pipeline.config.retry())
    return asyncio.run(pipeline.retrieve.run(given, BudgetTracker(pipeline.config.budget())))


def ranked(pipeline: QAPipeline, analysis: Analysis, found: Retrieved, filters: SearchFilters | None = None) -> Ranking:
    given = RankInput(analysis, found.pool, found.pinned, filters, EvidenceLimits.of(pipeline.config))
    return asyncio.run(pipeline.rank.run(given, question_run(pipeline)))
