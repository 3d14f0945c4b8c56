"""The inversion corpus (workflows/evaluation/inversions.jsonl, written before the semantic checks)
measured with the real inspector, built as the pipeline builds it, on the demo KB's real chunks:
no inversion passes, and at least 95% of the faithful paraphrases do (so the checks cannot simply
reject everything)."""

from __future__ import annotations

import json

from citescope.workflows.evaluation.bench.llm import TOPICS, inversion_metrics
from citescope.workflows.evaluation.bench.llm_inversions import CORPUS, run_llm_inversions
from tests.conftest import DEMO_DIR


def test_the_corpus_is_the_one_the_issue_asks_for():
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    families = {row["family"] for row in rows}
    assert inversion_metrics in TOPICS  # `run.py bench llm --json` reports inversions_passed
    assert len(rows) == 60 and families == {"negation", "stock_flip", "number_change", "unit_change", "entity_swap"}
    assert all(row["inversion"] != row["paraphrase"] and "【" in row["inversion"] for row in rows)


def test_no_inversion_passes_and_paraphrases_do():
    result = run_llm_inversions(DEMO_DIR)
    assert result["cases"] == 60
    assert result["inversions_passed"] == 0, result["passed_inversion_examples"]
    assert result["paraphrases_passed"] >= 0.95 * result["cases"], result["rejected_paraphrase_examples"]
    # each of the rules met the kind of inversion it is for
    assert {"polarity.negation", "yes_no.opening", "stock.status", "entity.product"} <= set(
        result["rules_fired_on_inversions"]
    )


def test_with_a_claim_checker_the_inspector_reads_each_sentence_with_it_too(tmp_path):
    """`bench reader --claims-model` puts the corpus to the inspector with the checker on: a checker that
    reads everything as contradicted rejects the paraphrases it is given, one that reads all as supported
    leaves the rules' verdicts."""
    from citescope.agents.claim_reader import ClaimReader
    from tests.support.claim_model import constant_claim_model

    rules = run_llm_inversions(DEMO_DIR)
    always = ClaimReader(constant_claim_model(tmp_path / "always", "contradicted"), tmp_path / "cache").warm_up()
    rejecting = run_llm_inversions(DEMO_DIR, claim_reader=always)
    assert rejecting["inversions_passed"] == 0 and rejecting["paraphrases_passed"] < rules["paraphrases_passed"] / 2
    never = ClaimReader(constant_claim_model(tmp_path / "never", "supported"), tmp_path / "cache").warm_up()
    passing = run_llm_inversions(DEMO_DIR, claim_reader=never)
    assert (passing["inversions_passed"], passing["paraphrases_passed"]) == (
        rules["inversions_passed"],
        rules["paraphrases_passed"],
    )
