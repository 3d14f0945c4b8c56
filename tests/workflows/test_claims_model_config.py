"""The reader's models are opt-in per KB: `claims_model` in the config gives the pipeline's
inspector a ClaimReader (without it the answers are the rules' alone), `pair_model` gives the rank
stage a PairScorer (without it the gate reads the reranker's score alone), `sentence_model` gives the
extractive answerer one that chooses its first sentence."""

from __future__ import annotations

from citescope.agents.inspector import READER_RULE
from citescope.tools.base import EvidenceHit
from citescope.workflows.pipeline import QAPipeline
from citescope.workflows.pipeline_config import PipelineConfig
from tests.support.claim_model import constant_claim_model, constant_pair_model

QUESTION = "退货运费谁承担？"


def test_a_configured_claim_checker_judges_what_an_answer_does_not_quote(demo_kb, tmp_path):
    plain = QAPipeline(demo_kb, PipelineConfig.load(demo_kb.dir, environ={})).warm_up()
    assert plain.inspect.inspector.claim_reader is None
    answered = plain.run(QUESTION)
    assert not answered.refused and answered.citations

    rejecting = constant_claim_model(tmp_path / "contradicted", "contradicted")
    config = PipelineConfig.load(demo_kb.dir, environ={}, claims_model=rejecting)
    checking = QAPipeline(demo_kb, config).warm_up()
    assert checking.inspect.inspector.claim_reader is not None
    # the offline answer quotes its sources word for word: nothing in it is the reader's to judge
    assert checking.run(QUESTION).answer == answered.answer
    # a sentence in other words than its source's is read (here: always as contradicted)
    text = "质量问题退货，来回运费由店铺承担。"
    hit = EvidenceHit(chunk_id="faq#0", doc_id="faq", title="退货运费", text=text, score=1)
    quote, reworded = "质量问题退货，来回运费由店铺承担【faq#0】。", "质量问题退货的来回运费由店铺出【faq#0】。"
    assert checking.inspect.inspector.run(quote, [hit]).passed
    report = checking.inspect.inspector.run(reworded, [hit])
    assert not report.passed and READER_RULE in report.rules_fired
    assert plain.inspect.inspector.run(reworded, [hit]).passed


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
