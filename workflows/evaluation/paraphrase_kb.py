"""A dataset folder made from one source of the training paraphrase pairs: sentences as documents, their
paraphrases as the questions that must find them (issue #46: what `run.py calibrate` fits the reranker
on, beside reading comprehension, without an evaluation question).

The default source is `pawsx_zh` (PAWS-X, free for any use, crediting Google): Wikipedia sentences whose
non-paraphrases share nearly all their words, so word matching alone ranks the wrong sentence first. Every
distinct first side (`a`) of the split's pairs becomes a document; the second side (`b`) of a pair labelled
a paraphrase becomes an answerable question citing it, unless it is itself a document's text. The holdout
split takes a fifth of the documents out of the KB (`corpus_holdout.jsonl`): their paraphrases become
unanswerable (`unanswerable_kb_removed`) while the documents sharing their words stay.

    python -m citescope.workflows.evaluation.paraphrase_kb OUT_DIR [--source pawsx_zh] [--split train]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from citescope.workflows.evaluation.mrc_kb import REMOVED_SHARE, SEED, check_removed_share, write_with_holdout

TRAINING = Path(__file__).resolve().parents[3] / "shared" / "training" / "paraphrase_pairs.jsonl"
SOURCE = "pawsx_zh"
SPLIT = "train"


def read_pairs(training: Path, source: str, split: str) -> list[dict]:
    """The pairs of one source and split, in file order; a bad line is named by file and line."""
    pairs = []
    with training.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                if row["source"] == source and row["split"] == split:
                    pairs.append({"a": str(row["a"]), "b": str(row["b"]), "label": int(row["label"])})
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
                raise ValueError(f"{training}:{number}: not a paraphrase pair ({error})") from error
    return pairs


def write_dataset(
    out_dir: Path,
    training: Path = TRAINING,
    source: str = SOURCE,
    split: str = SPLIT,
    removed_share: float = REMOVED_SHARE,
    seed: int = SEED,
) -> dict[str, int]:
    """Write corpus, questions and their holdout variants; return the counts."""
    check_removed_share(removed_share)
    pairs = read_pairs(training, source, split)
    if not pairs:
        raise ValueError(f"{training}: no pairs of source {source!r} in split {split!r}")
    doc_of: dict[str, str] = {}
    for pair in pairs:
        doc_of.setdefault(pair["a"], f"{source}-{len(doc_of):05d}")
    documents = [{"doc_id": doc_id, "title": "", "text": text, "source": source} for text, doc_id in doc_of.items()]
    questions = [
        {
            "qid": f"{source}-q{i:05d}",
            "question": pair["b"],
            "answers": [],
            "gold_doc_ids": [doc_of[pair["a"]]],
            "answerable": True,
            "qtype": "paraphrase",
        }
        for i, pair in enumerate(pairs)
        if pair["label"] == 1 and pair["b"] not in doc_of  # a question that is a document's text is no test
    ]
    removed, removed_questions = write_with_holdout(out_dir, documents, questions, removed_share, f"{seed}:{source}")
    return {
        "documents": len(documents),
        "questions": len(questions),
        "removed_documents": removed,
        "removed_questions": removed_questions,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--training", type=Path, default=TRAINING, help="a paraphrase file (paraphrase_pairs.jsonl)")
    parser.add_argument("--source", default=SOURCE, help="which rows (default: pawsx_zh)")
    parser.add_argument("--split", default=SPLIT, help="train or valid (default: train)")
    parser.add_argument("--removed-share", type=float, default=REMOVED_SHARE, help="documents taken out (0.2)")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    try:
        counts = write_dataset(args.out_dir, args.training, args.source, args.split, args.removed_share, args.seed)
    except (OSError, ValueError) as error:
        parser.exit(2, f"error: {error}\n")
    print(json.dumps(counts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
