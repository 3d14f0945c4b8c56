"""The conflict check and the disclose stage alone: a disagreement among the shown evidence is
found, and what the customer is told is the answer with its citations or a fixed refusal, in the
question's language and script, after the sensitive-word filter."""

from __future__ import annotations

import asyncio

import pytest

from citescope.agents.budget import BudgetTracker
from citescope.knowledge.chinese_script import in_traditional
from citescope.workflows.compliance import SensitiveWordFilter
from citescope.workflows.stages.answer import AnswerInput, Draft
from citescope.workflows.stages.conflicts import ConflictInput, SourcesInput
from citescope.workflows.stages.disclose import Disclose, DiscloseInput
from citescope.workflows.stages.inspect import InspectInput
from citescope.workflows.stages.rank import EvidenceLimits
from citescope.workflows.traces import StageClock
from tests.workflows.stages.conftest import analysed, ranked, retrieved


@pytest.fixture(scope="module")
def leather(pipeline):
    """The demo's planted conflict: AJ1 Retro's upper is 头层牛皮 on one page, 人造革 on another."""
    analysis = analysed(pipeline, "AJ1 Retro 的鞋面是真皮吗？")
    found = retrieved(pipeline, analysis)
    return analysis, found, ranked(pipeline, analysis, found)


def test_the_disagreement_among_the_shown_evidence_is_found(pipeline, leather):
    analysis, _, ranking = leather
    conflicts = pipeline.check_conflicts.run(ConflictInput(analysis.question, ranking.shown))
    assert {value.value for c in conflicts for value in c.values} >= {"头层牛皮", "人造革"}
    assert pipeline.check_conflicts.run(ConflictInput(analysis.question, ranking.shown[:1])) == []


def test_nothing_below_the_cut_is_scanned_when_the_scan_stops_at_it(pipeline, leather):
    analysis, found, ranking = leather
    limits = EvidenceLimits.of(pipeline.config)
    unscanned = SourcesInput(
        analysis.question, ranking, found.pinned, EvidenceLimits(**{**vars(limits), "conflict_scan_top_n": 0})
    )
    assert pipeline.check_conflicts.with_sources(unscanned) == ranking.shown


def test_an_answer_that_passed_is_said_with_its_citations_and_one_that_failed_is_not(pipeline, leather):
    analysis, _, ranking = leather
    conflicts = pipeline.check_conflicts.run(ConflictInput(analysis.question, ranking.shown))
    written = AnswerInput(analysis, ranking.shown, conflicts)
    draft = asyncio.run(pipeline.answer.run(written, BudgetTracker(pipeline.config.budget())))
    report = pipeline.inspect.run(InspectInput(draft.text, ranking.shown, conflicts, analysis.question))
    assert report.passed
    told = pipeline.disclose.run(
        DiscloseInput(analysis.whole, analysis, ranking.shown, conflicts, None, draft, report), StageClock()
    )
    assert not told.refused and told.answer_source == "extractive"
    assert [c.id for c in told.citations] == report.cited_ids and all(
        f"【{i}】" in told.answer for i in report.cited_ids
    )
    invented = Draft("鞋面是头层牛皮【prod-aj1-retro#材质-9】。", "llm")
    rejected = pipeline.inspect.run(InspectInput(invented.text, ranking.shown, conflicts, analysis.question))
    told = pipeline.disclose.run(
        DiscloseInput(analysis.whole, analysis, ranking.shown, conflicts, None, invented, rejected), StageClock()
    )
    # a draft the inspector rejects is never said: the refusal that names the disagreement
    assert told.refused and told.refusal_reason == "no_supported_answer" and told.answer_source == "refusal"
    assert told.answer == pipeline.refusals.conflict and told.citations == []


def test_a_draft_that_only_refuses_is_the_refusal(pipeline, leather):
    analysis, _, ranking = leather
    refusing = pipeline.refusals.plain
    report = pipeline.inspect.run(InspectInput(refusing, ranking.shown, [], analysis.question))
    told = pipeline.disclose.run(
        DiscloseInput(analysis.whole, analysis, ranking.shown, [], None, Draft(refusing, "extractive"), report),
        StageClock(),
    )
    assert told.refused and told.refusal_reason == "no_supported_answer" and told.answer == pipeline.refusals.plain


def test_the_gates_refusal_says_the_sources_disagree(pipeline, leather):
    analysis, _, ranking = leather
    conflicts = pipeline.check_conflicts.run(ConflictInput(analysis.question, ranking.shown))
    told = pipeline.disclose.run(
        DiscloseInput(analysis.whole, analysis, ranking.shown, conflicts, "weak_evidence"), StageClock()
    )
    assert told.refused and told.refusal_reason == "weak_evidence" and told.answer == pipeline.refusals.conflict
    plain = pipeline.disclose.run(
        DiscloseInput(analysis.whole, analysis, ranking.shown, [], "weak_evidence"), StageClock()
    )
    assert plain.answer == pipeline.refusals.plain


def test_a_refusal_speaks_the_language_and_script_of_the_question(pipeline):
    english = analysed(pipeline, "can I wash the fleece jacket in a washing machine?")
    told = pipeline.disclose.run(DiscloseInput(english.whole, english, [], [], "deadline"), StageClock())
    assert told.refusal_reason == "deadline" and told.answer == pipeline.refusals.english[pipeline.refusals.deadline]
    typed = "退貨運費誰承擔？"
    traditional = analysed(pipeline, "退货运费谁承担？")
    told = pipeline.disclose.run(DiscloseInput(typed, traditional, [], [], "deadline"), StageClock())
    assert told.answer == in_traditional(pipeline.refusals.deadline) != pipeline.refusals.deadline


def test_the_sensitive_word_filter_masks_or_refuses_the_settled_answer(pipeline, leather, tmp_path):
    analysis, _, ranking = leather
    material = next(hit for hit in ranking.shown if hit.chunk_id == "prod-aj1-retro#材质-0")
    text = f"鞋面是头层牛皮【{material.chunk_id}】。"
    report = pipeline.inspect.run(InspectInput(text, ranking.shown, [], analysis.question))
    words = tmp_path / "words.txt"
    words.write_text("牛皮\n", encoding="utf-8")
    settled = DiscloseInput(analysis.whole, analysis, ranking.shown, [], None, Draft(text, "extractive"), report)
    for action in ("mask", "refuse"):
        screen = SensitiveWordFilter(words, action).warm_up()
        disclose = Disclose(pipeline.refusals, pipeline.disclose.extractive, pipeline.analyzer, screen)
        clock = StageClock()
        told = disclose.run(settled, clock)
        assert told.compliance == ["牛皮"] and "compliance" in clock.timings
        if action == "mask":
            assert not told.refused and "牛皮" not in told.answer and told.citations
        else:
            assert told.refused and told.refusal_reason == "sensitive" and told.answer == pipeline.refusals.plain
            assert told.citations == []
