"""A dataset folder made from one source of a training MRC file, for text of another kind (issue #46):
the `xquad_zh` rows of ../shared/training/mrc_valid.jsonl (English Wikipedia translated by professionals,
CC BY-SA 4.0), which nothing here trains on, chooses on or tunes on — they only measure.

Every distinct passage becomes a document (its article's title, underscores as spaces), every question an
answerable one citing it (`questions.jsonl` against `corpus.jsonl`). The holdout split takes a fifth of the
passages out of the KB, drawn by the seed (`corpus_holdout.jsonl`); their questions become unanswerable
(`answerable: false`, qtype `unanswerable_kb_removed`, as the datasets' holdout files mark them) and the
other questions stay answerable (`questions_holdout.jsonl`). A removed passage's article keeps its other
passages: the entity is in the KB, the fact is not.

    python -m citescope.workflows.evaluation.mrc_kb OUT_DIR [--source xquad_zh] [--removed-share 0.2] [--seed 46]
    python run.py eval --no-baseline --dataset OUT_DIR

`--training mrc_train.jsonl --source cmrc2018_train --passages N` makes the same kind of folder from training
rows: what `run.py calibrate` fits the reranker and the default threshold on (training_sets.py).
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator
from pathlib import Path

TRAINING = Path(__file__).resolve().parents[3] / "shared" / "training" / "mrc_valid.jsonl"
SOURCE = "xquad_zh"
REMOVED_SHARE = 0.2
SEED = 46


def rows_by_passage(training: Path, source: str) -> Iterator[tuple[str, list[dict]]]:
    """(passage, its rows) for one source of an MRC file, passages in file order."""
    by_context: dict[str, list[dict]] = {}
    with training.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                if row["source"] == source:
                    by_context.setdefault(row["context"], []).append(row)
            except (json.JSONDecodeError, KeyError, TypeError) as error:
                raise ValueError(f"{training}:{number}: not an MRC row ({error})") from error
    yield from by_context.items()


def write_dataset(
    out_dir: Path,
    training: Path = TRAINING,
    source: str = SOURCE,
    removed_share: float = REMOVED_SHARE,
    seed: int = SEED,
    passages: int | None = None,
) -> dict[str, int]:
    """Write the four files; return the counts (passages, questions, removed passages, their questions).
    passages: the source's first N passages only (None: all)."""
    check_removed_share(removed_share)
    if passages is not None and passages < 1:
        raise ValueError(f"--passages must be at least 1 (got {passages})")
    documents, questions = [], []
    for i, (context, rows) in enumerate(rows_by_passage(training, source)):
        if passages is not None and i >= passages:
            break
        doc_id = f"{source}-{i:04d}"
        title = str(rows[0].get("title") or "").replace("_", " ")
        documents.append({"doc_id": doc_id, "title": title, "text": context, "source": source})
        for row in rows:
            if not row.get("answerable", True) or not row.get("answers"):
                continue  # a source's unanswerable rows have no passage to remove
            answers = sorted({a["text"] if isinstance(a, dict) else str(a) for a in row["answers"]})
            questions.append(
                {
                    "qid": row["qid"],
                    "question": row["question"],
                    "answers": answers,
                    "gold_doc_ids": [doc_id],
                    "answerable": True,
                    "qtype": "extractive",
                }
            )
    if not documents:
        raise ValueError(f"{training}: no rows of source {source!r}")
    removed, removed_questions = write_with_holdout(out_dir, documents, questions, removed_share, f"{seed}:{source}")
    return {
        "passages": len(documents),
        "questions": len(questions),
        "removed_passages": removed,
        "removed_questions": removed_questions,
    }


def check_removed_share(removed_share: float) -> None:
    """Before any file is read: a share of the documents to take out must leave some and take some."""
    if not 0 < removed_share < 1:
        raise ValueError(f"--removed-share must lie between 0 and 1 (got {removed_share})")


def write_with_holdout(
    out_dir: Path, documents: list[dict], questions: list[dict], removed_share: float, seed: str
) -> tuple[int, int]:
    """corpus / questions and their holdout variants: a seeded share of the documents taken out, their
    questions made unanswerable (`unanswerable_kb_removed`, as the datasets' holdout files mark them).
    Returns (documents removed, questions made unanswerable). Shared with paraphrase_kb.py."""
    ids = [d["doc_id"] for d in documents]
    removed = set(random.Random(seed).sample(ids, max(1, round(len(ids) * removed_share))))
    holdout = [
        {**q, "answers": [], "answerable": False, "qtype": "unanswerable_kb_removed"}
        if q["gold_doc_ids"][0] in removed
        else q
        for q in questions
    ]
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {
        "corpus.jsonl": documents,
        "questions.jsonl": questions,
        "corpus_holdout.jsonl": [d for d in documents if d["doc_id"] not in removed],
        "questions_holdout.jsonl": holdout,
    }
    for name, records in files.items():  # questions_holdout.jsonl last: its presence means a whole folder
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        (out_dir / name).write_text(text, encoding="utf-8")
    return len(removed), sum(not q["answerable"] for q in holdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--training", type=Path, default=TRAINING, help="an MRC file (default: mrc_valid.jsonl)")
    parser.add_argument("--source", default=SOURCE, help="which rows (default: xquad_zh)")
    parser.add_argument("--removed-share", type=float, default=REMOVED_SHARE, help="passages taken out (0.2)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--passages", type=int, default=None, help="the source's first N passages only")
    args = parser.parse_args(argv)
    try:
        counts = write_dataset(
            args.out_dir, args.training, args.source, args.removed_share, args.seed, passages=args.passages
        )
    except (OSError, ValueError) as error:
        parser.exit(2, f"error: {error}\n")
    print(json.dumps(counts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
