"""Opt-in packs of question rules: a KB turns them on in its config.yaml (off for a shop), the
evaluation's dataset KBs by the kind of text of their corpus, and the rules that read a question are
named in its result and its decision trace."""

from __future__ import annotations

import pytest
import yaml

from citescope.workflows.evaluation.splits import find_splits
from citescope.workflows.pipeline import QAPipeline
from citescope.workflows.pipeline_config import KB_CONFIG_NAME, PipelineConfig, PipelineConfigError
from citescope.workflows.traces import TraceStore


@pytest.fixture(scope="module")
def shop_pipeline(demo_kb) -> QAPipeline:
    return QAPipeline(demo_kb, PipelineConfig.load(demo_kb.dir, environ={})).warm_up()


def test_a_kb_turns_packs_on_in_its_config_and_a_shop_has_none(tmp_path):
    assert PipelineConfig.load(tmp_path, environ={}).rule_packs == []
    (tmp_path / KB_CONFIG_NAME).write_text(yaml.safe_dump({"rule_packs": ["news"]}), encoding="utf-8")
    assert PipelineConfig.load(tmp_path, environ={}).rule_packs == ["news"]
    environ = {"CITESCOPE_RULE_PACKS": "news, encyclopedia"}
    assert PipelineConfig.load(tmp_path, environ=environ).rule_packs == ["news", "encyclopedia"]
    with pytest.raises(PipelineConfigError, match=r"rule_packs: unknown rule pack\(s\) \['sport'\]"):
        PipelineConfig.load(tmp_path, environ={"CITESCOPE_RULE_PACKS": "sport"})


def test_the_pipeline_reads_questions_with_the_packs_its_config_turns_on(demo_kb, shop_pipeline):
    assert shop_pipeline.answer.extractive.reader.rules.packs == {"core"}
    config = PipelineConfig.load(demo_kb.dir, environ={}, rule_packs=["news"])
    articles = QAPipeline(demo_kb, config).warm_up()
    assert articles.answer.extractive.reader.rules.packs == {"core", "news"}


def test_the_rules_that_read_a_question_are_in_its_result_and_its_trace(tmp_path, demo_kb, shop_pipeline):
    result = shop_pipeline.run("XZ-3000 充电宝多少钱？")
    assert result.answer_source == "extractive" and "price" in result.rules_fired
    store = TraceStore.for_kb(tmp_path)
    trace = store.record(result, demo_kb)
    store.close()
    assert trace["rules_fired"] == result.rules_fired


@pytest.mark.parametrize(
    ("folder", "packs"),
    [("cmrc2018_dev", ("encyclopedia",)), ("rgb_zh", ("news",)), ("baoxianzhidao", ()), ("demo", ())],
)
def test_a_dataset_turns_on_the_packs_of_its_kind_of_text(tmp_path, folder, packs):
    dataset = tmp_path / folder
    dataset.mkdir()
    (dataset / "questions.jsonl").write_text("", encoding="utf-8")
    (dataset / "corpus.jsonl").write_text("", encoding="utf-8")
    assert [split.rule_packs for split in find_splits(dataset)] == [packs]
