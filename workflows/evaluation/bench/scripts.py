"""A dataset in traditional characters, or half of it (#43): does a KB in 繁體 answer as one in 简体?

Writes four copies of one slice of a dataset into a folder outside the repository, converted with
OpenCC's `s2t` (the public tables, not the answers' Taiwan forms), each then measured with
`run.py eval --dataset <folder>/<variant>`:

    simplified       corpus and questions as published
    traditional      corpus and questions converted
    mixed-kb         corpus converted, questions as published
    mixed-questions  corpus as published, questions converted

The slice: `answerable` questions (sampled with the eval's seeded sampler) over a corpus of only
their gold passages, plus as many other questions of the set whose passages are not in it
(answerable false), so refusals are measured both ways without embedding the whole corpus.

    python -m citescope.workflows.evaluation.bench.scripts ../shared/datasets/cmrc2018_dev /tmp/script-bench
"""

from __future__ import annotations

import json
from pathlib import Path

import opencc
import typer

from citescope.workflows.evaluation.datasets import load_questions, sample

VARIANTS = {
    "simplified": (False, False),
    "traditional": (True, True),
    "mixed-kb": (True, False),
    "mixed-questions": (False, True),
}  # (corpus converted, questions converted)
_TEXT_FIELDS = ("title", "text", "section")


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


def write_variants(
    dataset: Path, out: Path, answerable: int = 150, others: int = 150, seed: int = 0
) -> dict[str, Path]:
    """The four folders (variant -> path), written afresh from the dataset's corpus.jsonl and questions.jsonl."""
    questions = load_questions(dataset / "questions.jsonl")
    chosen = sample([q for q in questions if q.answerable and q.gold_doc_ids], answerable, seed=seed)
    gold = {doc_id for q in chosen for doc_id in q.gold_doc_ids}
    chosen_ids = {q.qid for q in chosen}
    outside = sample(
        [q for q in questions if q.qid not in chosen_ids and q.gold_doc_ids and not set(q.gold_doc_ids) & gold],
        others,
        seed=seed,
    )
    corpus = [doc for doc in _records(dataset / "corpus.jsonl") if doc["doc_id"] in gold]
    by_qid = {r["qid"]: r for r in _records(dataset / "questions.jsonl")}
    asked = [by_qid[q.qid] for q in chosen]
    asked += [
        {**by_qid[q.qid], "answers": [], "answerable": False, "gold_doc_ids": [], "qtype": "unanswerable_not_in_kb"}
        for q in outside
    ]
    s2t, s2tw = opencc.OpenCC("s2t"), opencc.OpenCC("s2tw")
    converted_corpus = [
        {**doc, **{f: s2t.convert(doc[f]) for f in _TEXT_FIELDS if isinstance(doc.get(f), str)}} for doc in corpus
    ]
    folders = {}
    for variant, (kb_converted, questions_converted) in VARIANTS.items():
        folder = out / variant
        _write(folder / "corpus.jsonl", converted_corpus if kb_converted else corpus)
        # a gold answer counts in either script: quoted from a traditional passage (s2t) or given
        # back to a traditional question (the pipeline answers in Taiwan's forms, s2tw)
        _write(
            folder / "questions.jsonl",
            [
                {
                    **q,
                    "question": s2t.convert(q["question"]) if questions_converted else q["question"],
                    "answers": list(
                        dict.fromkeys(
                            form for a in q.get("answers", []) for form in (a, s2t.convert(a), s2tw.convert(a))
                        )
                    ),
                }
                for q in asked
            ],
        )
        folders[variant] = folder
    return folders


def main(
    dataset: Path = typer.Argument(..., help="a dataset folder with corpus.jsonl and questions.jsonl"),
    out: Path = typer.Argument(..., help="where the four variant folders are written (not in the repository)"),
    answerable: int = typer.Option(150, help="answerable questions, over their gold passages"),
    others: int = typer.Option(150, help="questions whose passages are not in the slice"),
    seed: int = typer.Option(0),
) -> None:
    for variant, folder in write_variants(dataset, out, answerable, others, seed).items():
        print(f"{variant}: {folder}")


if __name__ == "__main__":
    typer.run(main)
