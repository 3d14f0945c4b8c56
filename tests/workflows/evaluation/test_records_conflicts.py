"""The records KB (workflows/evaluation/records_kb.py) and its conflict bench: template-written sibling
records are not flagged, and each corrected record is flagged with both of its versions (issue #44)."""

from __future__ import annotations

from citescope.workflows.evaluation.bench.records_conflicts import FALSE_FLAG_TARGET, run_records_bench
from citescope.workflows.evaluation.records_kb import make_records_kb


def test_the_records_kb_is_the_same_for_a_seed_and_its_siblings_share_one_template():
    first, again, other = make_records_kb(8, seed=1), make_records_kb(8, seed=1), make_records_kb(8, seed=2)
    assert first == again and first.documents != other.documents
    patients = [d for d in first.documents if d["source"] == "records:patient" and "-v2" not in d["doc_id"]]
    labels = [[line.split("：")[0] for line in d["text"].splitlines()[1:]] for d in patients]
    assert len(patients) == 8 and all(set(row) <= set(max(labels, key=len)) for row in labels)
    assert {q["qtype"] for q in first.questions} >= {"patient_field", "product_field", "corrected_record"}


def test_sibling_records_are_not_flagged_and_corrected_records_are():
    report = run_records_bench(per_kind=10, seed=3)
    assert report["questions"] > 40 and report["expect_conflict"] == 8
    assert report["false_flag_rate"] <= FALSE_FLAG_TARGET, [
        r["qid"] for r in report["rows"] if not r["expect_conflict"]
    ]
    assert report["conflict_recall"] == 1.0
