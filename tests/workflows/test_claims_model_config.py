"""The reader's models are opt-in per KB: `claims_model` in the config gives the pipeline's
inspector a ClaimReader (without it the answers are the rules' alone), `pair_model` gives the rank
stage a PairScorer (without it the gate reads the reranker's score alone), `sentence_model` gives the
extractive answerer one that chooses its first sentence."""

from __future__ import annotations

from citescope.workflows.pipeline import QAPipeline
from citescope.workflows.pipeline_config import PipelineConfig
from tests.support.claim_model import constant_claim_model, constant_pair_model

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


def test_a_configured_pair_scorer_moves_the_gates_score(demo_kb, tmp_path):
    plain = QAPipeline(demo_kb, PipelineConfig.load(demo_kb.dir, environ={})).warm_up()
    assert plain.rank.pair_scorer is None
    answered = plain.run(QUESTION)
    doubting = constant_pair_model(tmp_path / "pairs", 0.001)  # reads nothing as an answer
    config = PipelineConfig.load(demo_kb.dir, environ={"CITESCOPE_PAIR_MODEL": str(doubting)}, pair_top_n=3)
    read = QAPipeline(demo_kb, config).warm_up()
    assert read.rank.pair_scorer is not None and read.rank.pair_top_n == 3
    result = read.run(QUESTION)
    assert result.best_score is not None and answered.best_score is not None
    assert result.best_score < answered.best_score


def test_a_configured_sentence_model_reads_the_extractive_answers_sentences(demo_kb, tmp_path):
    plain = QAPipeline(demo_kb, PipelineConfig.load(demo_kb.dir, environ={})).warm_up()
    assert plain.answer.extractive.sentence_reader is None
    level = constant_pair_model(tmp_path / "sentences", 0.5)  # cannot tell sentences apart: the scorer's order stays
    config = PipelineConfig.load(demo_kb.dir, environ={"CITESCOPE_SENTENCE_MODEL": str(level)})
    read = QAPipeline(demo_kb, config).warm_up()
    assert read.answer.extractive.sentence_reader is not None
    assert read.run(QUESTION).answer == plain.run(QUESTION).answer
