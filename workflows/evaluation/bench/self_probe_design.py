"""Benchmark: do a KB's self-probes score as its real questions do? The design check behind
agents/self_probes.py (issue #44), on training data only: the last 150 `cmrc2018_train` passages of
../shared/training/mrc_train.jsonl become a KB, and their real questions are scored beside the KB's
masked probes (two seeds). Reported: both score distributions' 5th / 10th percentiles, the same for the
held-out probes beside the real questions with their passage held out, and what the plain 10% quantile
of the probes, the confident cut, and the threshold self-calibration chooses (the lower of the confident
cut and the refusal-target cut, workflows/self_calibration.py) would refuse of the real questions (asked
as they are) and catch of them with their passage held out.

    python -m citescope.workflows.evaluation.bench.self_probe_design [--work DIR] [--passages N]

The KB is built under --work (default /tmp/citescope-probe-design) on first use: ~2 minutes of embedding.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

from citescope.agents.self_probes import Probe, make_probes
from citescope.knowledge.ingest import Ingestor
from citescope.knowledge.kb import KnowledgeBase
from citescope.workflows.evaluation.self_calibration_check import TRAINING
from citescope.workflows.evaluation.self_calibration_check import write_source as write_check_source
from citescope.workflows.self_calibration import (
    FALSE_REFUSAL_BOUND,
    choose_threshold,
    confident_refusals,
    score_probes,
)

MRC_TRAIN = TRAINING.with_name("mrc_train.jsonl")
SOURCE = "cmrc2018_train"


def write_source(out_dir: Path, passages: int = 150, training: Path = MRC_TRAIN) -> None:
    """The last `passages` passages of cmrc2018_train as documents, and their questions."""
    write_check_source(out_dir, passages, training, source=SOURCE, last=True, prefix="cmrc-train")


def percentiles(scores: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(scores, n=20)
    return {"p5": round(cuts[0], 4), "p10": round(cuts[1], 4), "median": round(statistics.median(scores), 4)}


def run(work: Path, passages: int = 150, seeds: tuple[int, ...] = (0, 1)) -> dict:
    source, kb_dir = work / "source", work / "kb"
    if not (source / "questions.jsonl").exists():
        write_source(source, passages)
    kb = KnowledgeBase(kb_dir, create=True)
    try:
        if not kb.catalog.content_hashes():
            Ingestor(kb, show_progress=False).run([source / "passages.jsonl"])
        kb.warm_up()
        asked = [json.loads(line) for line in (source / "questions.jsonl").read_text("utf-8").splitlines()]
        real = score_probes(kb, [Probe(q["question"], "masked", q["doc_id"], True) for q in asked])
        held = [(q["doc_id"], None) for q in asked]
        removed = score_probes(
            kb,
            [
                Probe(q["question"], "held_out", q["doc_id"], False, excluded=(h,))
                for q, h in zip(asked, held, strict=True)
            ],
        )
        report: dict = {
            "passages": passages,
            "questions": len(asked),
            "real": percentiles(real),
            "real_removed": percentiles(removed),
            "seeds": {},
        }
        for seed in seeds:
            probes = make_probes(kb.all_chunks(), seed=seed)
            probe_scores = score_probes(kb, probes)
            scores = sorted(s for p, s in zip(probes, probe_scores, strict=True) if p.answerable)
            held_out = sorted(s for p, s in zip(probes, probe_scores, strict=True) if p.kind == "held_out")
            cuts = {
                "quantile": scores[math.floor(FALSE_REFUSAL_BOUND * len(scores) + 1e-9)],
                "confident": scores[confident_refusals(len(scores), FALSE_REFUSAL_BOUND)],
                # the rule self-calibration applies: the lower of the confident cut and the refusal-target cut
                "chosen": choose_threshold(scores, held_out, held_out=held_out).threshold,
            }
            report["seeds"][seed] = {
                "probes": percentiles(scores),
                "held_out_probes": percentiles(held_out),
                **{
                    name: {
                        "threshold": round(cut, 4),
                        "real_false_refusals": round(sum(s < cut for s in real) / len(real), 4),
                        "real_refusal_recall": round(sum(s < cut for s in removed) / len(removed), 4),
                    }
                    for name, cut in cuts.items()
                },
            }
        return report
    finally:
        kb.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("/tmp/citescope-probe-design"))
    parser.add_argument("--passages", type=int, default=150)
    args = parser.parse_args()
    print(json.dumps(run(args.work, args.passages), ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
