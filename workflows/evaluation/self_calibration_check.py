"""How a self-calibrated threshold does on real questions nobody tuned on (issue #44): the
`cmrc2018_trial` rows of ../shared/training/mrc_valid.jsonl, reserved for this. Their passages
become a KB (`source`), self-calibration chooses its threshold from those passages alone, then each
question is asked as it is (answerable) and with its passage held out of the KB (unanswerable),
and both thresholds, the self-calibrated one and the default, are read against those scores.

    python -m citescope.workflows.evaluation.self_calibration_check source DIR   # passages.jsonl, questions.jsonl
    python run.py ingest DIR/passages.jsonl --kb KB --self-calibrate
    python -m citescope.workflows.evaluation.self_calibration_check measure --kb KB --questions DIR/questions.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from citescope.agents.self_probes import Probe
from citescope.knowledge.kb import KnowledgeBase
from citescope.workflows.evaluation.mrc_kb import rows_by_passage
from citescope.workflows.pipeline_config import DEFAULTS_PATH, PipelineConfig
from citescope.workflows.self_calibration import CONFIG_KEY, score_probes

TRAINING = Path(__file__).resolve().parents[3] / "shared" / "training" / "mrc_valid.jsonl"
SOURCE = "cmrc2018_trial"


def write_source(
    out_dir: Path,
    limit: int = 150,
    training: Path = TRAINING,
    source: str = SOURCE,
    last: bool = False,
    prefix: str = "cmrc-trial",
) -> tuple[int, int]:
    """The first (or, `last`, the last) `limit` passages of one source of a training MRC file as documents,
    and their questions: (passages, questions)."""
    grouped = list(rows_by_passage(training, source))
    out_dir.mkdir(parents=True, exist_ok=True)
    passages, questions = [], []
    for i, (context, rows) in enumerate(grouped[-limit:] if last else grouped[:limit]):
        doc_id = f"{prefix}-{i:03d}"
        passages.append({"doc_id": doc_id, "title": rows[0]["title"], "text": context, "doc_type": "doc"})
        questions += [{"question": row["question"], "doc_id": doc_id} for row in rows]
    for name, records in (("passages.jsonl", passages), ("questions.jsonl", questions)):
        text = "\n".join(json.dumps(r, ensure_ascii=False) for r in records)
        (out_dir / name).write_text(text + "\n", encoding="utf-8")
    return len(passages), len(questions)


def measure(kb_dir: Path, questions_file: Path) -> dict:
    """False refusals (asked as is) and refusal recall (passage held out) at the KB's self-calibrated
    threshold and at the default one."""
    asked = [json.loads(line) for line in questions_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    # the probe kind is only a label here: what counts is what each one holds out
    probes = [Probe(q["question"], "masked", q["doc_id"], True) for q in asked]
    probes += [Probe(q["question"], "held_out", q["doc_id"], False, excluded=((q["doc_id"], None),)) for q in asked]
    kb = KnowledgeBase(kb_dir)
    try:
        scores = score_probes(kb, probes)
    finally:
        kb.close()
    answerable, removed = scores[: len(asked)], scores[len(asked) :]
    stored = yaml.safe_load((kb_dir / "config.yaml").read_text(encoding="utf-8")) or {}
    thresholds = {
        "self": float(stored[CONFIG_KEY]["threshold"]),
        "default": PipelineConfig.load(None, environ={}, defaults_path=DEFAULTS_PATH).refusal_threshold,
    }
    return {
        "questions": len(asked),
        "self_calibration": stored[CONFIG_KEY],
        "at": {
            name: {
                "threshold": t,
                "false_refusals": sum(s < t for s in answerable),
                "false_refusal_rate": round(sum(s < t for s in answerable) / len(asked), 4),
                "refusal_recall": round(sum(s < t for s in removed) / len(asked), 4),
            }
            for name, t in thresholds.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    source = commands.add_parser("source", help="write passages.jsonl and questions.jsonl")
    source.add_argument("out_dir", type=Path)
    source.add_argument("--limit", type=int, default=150)
    check = commands.add_parser("measure", help="score the questions against both thresholds")
    check.add_argument("--kb", type=Path, required=True)
    check.add_argument("--questions", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "source":
        passages, questions = write_source(args.out_dir, args.limit)
        print(f"{passages} passages, {questions} questions in {args.out_dir}")
    else:
        print(json.dumps(measure(args.kb, args.questions), ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
