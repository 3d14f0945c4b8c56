"""Benchmark: the inversion corpus (workflows/evaluation/inversions.jsonl, issue #42) put to the
inspector with its offline checks alone, as the pipeline puts an answer to it: the answer sentence
with its 【id】 citations, the evidence the cited chunks of the demo KB's documents (loaded and
chunked by the project's own loader and chunker), the inspector built as workflows/pipeline.py
builds it (the KB's lexicon, its entity index). `inversions_passed` should be 0 and every faithful
paraphrase should pass. The model judge is not measured here: a scripted verdict cannot measure
it (its wiring is tested in tests/agents/test_inspector_judge.py).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

from citescope.agents.claim_reader import ClaimReader
from citescope.workflows.evaluation.bench.reader import kb_source

CORPUS = Path(__file__).resolve().parents[1] / "inversions.jsonl"
DEMO_KB = Path(__file__).resolve().parents[3] / "knowledge" / "demo"


def run_llm_inversions(
    kb_dir: Path = DEMO_KB,
    corpus: Path = CORPUS,
    examples: int = 5,
    claim_reader: ClaimReader | None = None,
    reject_above: float | None = None,
) -> dict:
    """inversions_passed (of the corpus' inversions, how many the inspector passes: target 0) and
    paraphrases_passed, overall and per family, with the semantic rules that fired; with `claim_reader`,
    the inspector reads each sentence with that trained checker too, as the pipeline's does when
    `claims_model` is set (`bench reader --claims-model` reports it: the corpus' paraphrases are written as a
    model writes, more freely than the generated ones)."""
    started = time.perf_counter()
    source = kb_source(kb_dir)  # its inspector is built as the pipeline builds it: lexicon and entity index
    hits, inspector = source.hits, source.inspector
    inspector.claim_reader, inspector.claim_reject_above = claim_reader, reject_above
    rows = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    families: dict[str, Counter[str]] = {}
    fired: Counter[str] = Counter()
    passed_inversions: list[str] = []
    rejected_paraphrases: list[str] = []
    for row in rows:
        evidence = [hits[chunk_id] for chunk_id in row["evidence"]]
        inversion = inspector.run(row["inversion"], evidence)
        paraphrase = inspector.run(row["paraphrase"], evidence)
        counts = families.setdefault(row["family"], Counter())
        counts["cases"] += 1
        counts["inversions_passed"] += inversion.passed
        counts["paraphrases_passed"] += paraphrase.passed
        fired.update(inversion.rules_fired)
        if inversion.passed:
            passed_inversions.append(row["inversion"])
        if not paraphrase.passed:
            rejected_paraphrases.append(row["paraphrase"])
    return {
        "inversions_passed": len(passed_inversions),
        "paraphrases_passed": len(rows) - len(rejected_paraphrases),
        "cases": len(rows),
        "by_family": {family: dict(counts) for family, counts in families.items()},
        "rules_fired_on_inversions": dict(fired.most_common()),
        "passed_inversion_examples": passed_inversions[:examples],
        "rejected_paraphrase_examples": rejected_paraphrases[:examples],
        "seconds": round(time.perf_counter() - started, 1),
    }
