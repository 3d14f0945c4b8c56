"""The self-calibration benchmarks' own logic (workflows/evaluation/self_calibration_parity.py,
self_probe_design.py): both thresholds read against the same rows, and the design KB's source written
from training rows only. The runs themselves take minutes of embedding and scoring: docs/knowledge.md."""

from __future__ import annotations

import json

from citescope.workflows.evaluation.bench.self_probe_design import percentiles, write_source
from citescope.workflows.evaluation.self_calibration_parity import compare, separation


def rows(answerable: list[float], unanswerable: list[float], anyway: float | None = None) -> list[dict]:
    """Rows as refusal_rows makes them; `anyway`: the score of an answerable question the answer stage refuses."""
    made = [{"answerable": True, "best": s, "refused_anyway": s == anyway} for s in answerable]
    return made + [{"answerable": False, "best": s, "refused_anyway": False} for s in unanswerable]


def test_both_thresholds_are_read_against_the_same_rows():
    answerable = [0.05, 0.11, 0.13, 0.9, *[0.4] * 16]  # 20
    unanswerable = [0.02, 0.08, 0.12, 0.5]
    shown = compare(rows(answerable, unanswerable), fitted=0.1, self_threshold=0.14)
    assert shown["fitted"]["false_refusal"] == 0.05 and shown["self"]["false_refusal"] == 0.15
    assert shown["fitted"]["refusal_recall"] == 0.5 and shown["self"]["refusal_recall"] == 0.75
    assert shown["points"] == 0.1 and not shown["within"]  # 10 points more than the fitted one
    close = compare(rows(answerable, unanswerable, anyway=0.9), fitted=0.1, self_threshold=0.12)
    # a question the answer stage refuses is a false refusal at both thresholds; 5 points is within
    assert close["fitted"]["false_refusal"] == 0.1 and close["self"]["false_refusal"] == 0.15 and close["within"]


def test_separation_is_the_gates_roc_auc_with_a_refusal_anyway_scoring_zero():
    assert separation(rows([0.5, 0.6], [0.1, 0.2])) == 1.0
    # the answer stage refusing the 0.6 question puts it below both unanswerable ones
    assert separation(rows([0.5, 0.6], [0.1, 0.2], anyway=0.6)) == 0.5


def test_the_design_kb_is_written_from_the_last_cmrc2018_train_passages_only(tmp_path):
    training = tmp_path / "mrc_train.jsonl"
    lines = []
    for i in range(5):
        for j in range(2):
            lines.append(
                {"source": "cmrc2018_train", "context": f"第{i}段。", "title": f"T{i}", "question": f"问{i}{j}"}
            )
    lines.append({"source": "squad2_zh", "context": "译文。", "title": "X", "question": "译问"})
    training.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in lines), encoding="utf-8")
    write_source(tmp_path / "src", passages=3, training=training)
    docs = [json.loads(x) for x in (tmp_path / "src" / "passages.jsonl").read_text("utf-8").splitlines()]
    asked = [json.loads(x) for x in (tmp_path / "src" / "questions.jsonl").read_text("utf-8").splitlines()]
    assert [d["title"] for d in docs] == ["T2", "T3", "T4"]  # the last three, no other source
    assert len(asked) == 6 and {q["doc_id"] for q in asked} == {d["doc_id"] for d in docs}
    shown = percentiles([i / 100 for i in range(101)])
    assert abs(shown["p5"] - 0.05) < 0.01 and abs(shown["p10"] - 0.1) < 0.01 and shown["median"] == 0.5
