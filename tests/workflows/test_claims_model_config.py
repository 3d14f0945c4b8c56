"""The reader's claim checker is opt-in per KB: `claims_model` in the config gives the pipeline's
inspector a ClaimReader; without it the answers are the rules' alone."""

from __future__ import annotations

from citescope.workflows.pipeline import QAPipeline
from citescope.workflows.pipeline_config import PipelineConfig
from tests.support.claim_model import constant_claim_model

QUESTION = "退货运费谁承担？"


def test_a_configured_claim_checker_judges_the_offline_answer(demo_kb, tmp_path):
    plain = QAPipeline(demo_kb, PipelineConfig.load(demo_kb.dir, environ={})).warm_up()
    answered = plain.run(QUESTION)
    assert not answered.refused and answered.citations

    rejecting = constant_claim_model(tmp_path / "contradicted", "contradicted")
    config = PipelineConfig.load(demo_kb.dir, environ={}, claims_model=rejecting)
    checked = QAPipeline(demo_kb, config).warm_up().run(QUESTION)
    assert checked.answer != answered.answer  # every factual sentence read as contradicted
    assert checked.refused or checked.degraded

    passing = constant_claim_model(tmp_path / "supported", "supported")
    config = PipelineConfig.load(demo_kb.dir, environ={}, claims_model=passing)
    assert QAPipeline(demo_kb, config).warm_up().run(QUESTION).answer == answered.answer
