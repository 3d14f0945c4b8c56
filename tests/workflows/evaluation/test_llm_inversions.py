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
