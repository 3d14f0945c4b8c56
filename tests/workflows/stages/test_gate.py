"""The gate alone: weak best evidence is refused before anything is generated, except a finding
read off a named product's own tables; a model the shop lacks is refused whatever it scores."""

from __future__ import annotations

from copy import copy

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


def test_a_score_in_the_hedging_band_passes_as_doubtful(pipeline):
    features = analysed(pipeline, "你们京东上有旗舰店吗？价格一样不？").features
    band = {"threshold": 0.1, "outputs": {}, "hedge_threshold": 0.3}
    inside = pipeline.gate.run(GateInput(features, 0.2, **band))
    assert inside.passed and inside.doubtful
    above = pipeline.gate.run(GateInput(features, 0.3, **band))
    assert above.passed and not above.doubtful
    assert not pipeline.gate.run(GateInput(features, 0.2, threshold=0.1, outputs={})).doubtful  # no band


def test_the_hedging_band_refuses_a_hedged_answer_below_it_and_answers_above_it(pipeline):
    """One pipeline, three bands: a question whose offline answer hedges (根据现有资料) is refused when
    its best score is in the band and answered, hedged, above it; an answer that does not hedge is
    answered in the band too."""
    hedging, plain = "顺丰到新疆要加钱吗，几天到？", "充电宝能带上高铁和飞机吗？"

    def asked(question: str, hedge_threshold: float):
        banded = copy(pipeline)
        banded.config = pipeline.config.model_copy(update={"hedge_threshold": hedge_threshold})
        return banded.run(question)

    unbanded = asked(hedging, 0.0)
    assert unbanded.answer.startswith("根据现有资料") and not unbanded.refused
    score = unbanded.best_score
    assert score is not None and score > pipeline.config.refusal_threshold
    below = asked(hedging, min(1.0, score + 0.05))
    assert below.refused and below.best_score == score
    above = asked(hedging, max(pipeline.config.refusal_threshold, score - 0.05))
    assert not above.refused and above.answer == unbanded.answer
    sure = asked(plain, 1.0)  # every score is in this band: only a hedged answer is refused
    assert not sure.refused and not sure.answer.startswith("根据现有资料")
