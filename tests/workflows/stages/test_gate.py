"""The gate alone: weak best evidence is refused before anything is generated, except a finding
read off a named product's own tables; a model the shop lacks is refused whatever it scores."""

from __future__ import annotations

from citescope.workflows.stages.gate import GateInput
from tests.workflows.stages.conftest import analysed, retrieved


def test_a_score_below_the_threshold_is_refused_and_one_above_passes(pipeline):
    features = analysed(pipeline, "你们京东上有旗舰店吗？价格一样不？").features
    verdict = pipeline.gate.run(GateInput(features, 0.04, threshold=0.1, outputs={}))
    assert not verdict.passed and verdict.refusal == "weak_evidence" and verdict.about_evidence
    assert pipeline.gate.run(GateInput(features, 0.1, threshold=0.1, outputs={})).passed
    nothing = pipeline.gate.run(GateInput(features, None, threshold=0.1, outputs={}))
    assert nothing.refusal == "no_evidence"


def test_a_price_read_off_the_named_products_table_passes_whatever_its_score(pipeline):
    analysis = analysed(pipeline, "XZ-3000 充电宝多少钱？")
    found = retrieved(pipeline, analysis)
    weak = GateInput(analysis.features, 0.01, threshold=0.99, outputs=found.outputs)
    assert pipeline.gate.run(weak).passed
    # the same score with nothing read off a table: refused
    assert pipeline.gate.run(GateInput(analysis.features, 0.01, threshold=0.99, outputs={})).refusal == "weak_evidence"


def test_a_size_worked_out_from_the_table_passes_whatever_its_score(pipeline):
    analysis = analysed(pipeline, "我身高182，体重85公斤，北极驿冰原派克棉服选哪个尺码？")
    found = retrieved(pipeline, analysis)
    assert pipeline.gate.run(GateInput(analysis.features, 0.01, 0.99, found.outputs, found.advice)).passed


def test_a_model_the_shop_lacks_is_refused_however_well_its_sibling_scores(pipeline):
    features = analysed(pipeline, "烈驹火焰8多少钱？").features
    verdict = pipeline.gate.run(GateInput(features, 0.95, threshold=0.1, outputs={}))
    assert verdict.refusal == "unknown_model" and not verdict.about_evidence
