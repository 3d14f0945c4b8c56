"""Pair-scorer examples for the reader (#46): (question, candidate) -> answers / does not answer.

Only sources a shop may use commercially (../shared/training/README.md): CMRC 2018 (CC BY-SA 4.0)
and PAWS-X (any use, credit Google). The claim benchmark's articles are dropped
(`is_reader_bench_title`); articles go to valid by the pair trainer's title hash.

Per CMRC question, three candidates, each labelled by what the scorer will read of it (its
`pair_scorer.pair_text` window, the sentences nearest the question): its own passage (answers when
the window holds the answer text — the window misses it for about one question in seven, and then
the window does not answer); the same passage with the answer's sentence taken out (the entity is in
the KB, the fact is not: what a refusal gate must tell apart); another passage of the same split.
PAWS-X pairs (high word overlap, half of them not paraphrases) teach what a matching FAQ question is:
label 1 answers, label 0 does not.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from citescope.agents.pair_scorer import LABELS, pair_text
from citescope.workflows.evaluation.reader_holdout import is_reader_bench_title
from citescope.workflows.training.cross_encoder_training import LabelledText
from citescope.workflows.training.pair_data import (
    SOURCES,
    answer_sentence,
    passage_sentences,
    read_rows,
    split_of_title,
)

ANSWERS, DOES_NOT = LABELS.index("answers"), LABELS.index("does_not_answer")
USED_SOURCES = (SOURCES["cmrc2018"], SOURCES["pawsx_zh"])


@dataclass(frozen=True)
class Question:
    question: str
    passage: str
    answer: str
    answer_start: int


def read_answer_data(data_dir: Path) -> tuple[dict[str, list[Question]], dict[str, list[tuple[str, str, int]]], dict]:
    """CMRC questions and PAWS-X pairs by split, and counts for the manifest."""
    cmrc, pawsx = SOURCES["cmrc2018"], SOURCES["pawsx_zh"]
    questions: dict[str, list[Question]] = {"train": [], "valid": []}
    counts = {cmrc.name: {"train": 0, "valid": 0, "held_out": 0}, pawsx.name: {"train": 0, "valid": 0}}
    for row in read_rows(data_dir / "mrc_train.jsonl"):
        if row.get("source") != cmrc.source_field or not row.get("answers"):
            continue
        if is_reader_bench_title(row.get("title", "")):
            counts[cmrc.name]["held_out"] += 1
            continue
        part = split_of_title(row.get("title", ""))
        answer = row["answers"][0]
        questions[part].append(Question(row["question"], row["context"], answer["text"], int(answer["start"])))
        counts[cmrc.name][part] += 1
    pairs: dict[str, list[tuple[str, str, int]]] = {"train": [], "valid": []}
    for row in read_rows(data_dir / "paraphrase_pairs.jsonl"):
        if row.get("source") == pawsx.source_field:
            pairs[row["split"]].append((row["a"], row["b"], int(row["label"])))
            counts[pawsx.name][row["split"]] += 1
    return questions, pairs, counts


def _labelled(question: str, candidate: str, answer: str) -> LabelledText:
    text = pair_text(question, candidate)
    return LabelledText(text, ANSWERS if answer and answer in text.split("\n", 1)[1] else DOES_NOT)


SENTENCE_NEGATIVES = 2  # with `sentences`: other sentences of the passage beside the one that answers


def answer_examples(
    questions: list[Question], pairs: list[tuple[str, str, int]], seed: int, sentences: bool = False
) -> list[LabelledText]:
    """Three candidates per question (own passage, passage without the answer's sentence, another
    passage) and every paraphrase pair, in a seeded order. `sentences`: also the answer's sentence alone
    and up to SENTENCE_NEGATIVES other sentences of its passage alone — which of a passage's sentences
    says it, the choice the extractive answerer makes (workflows/training/sentence_choice.py measures it)."""
    rng = random.Random(f"answers:{seed}")
    passages = sorted({q.passage for q in questions})
    examples: list[LabelledText] = []
    for q in questions:
        examples.append(_labelled(q.question, q.passage, q.answer))
        sentence = answer_sentence(q.passage, q.answer_start)
        if sentences and sentence:
            examples.append(_labelled(q.question, sentence, q.answer))
            others = [s for s in passage_sentences(q.passage) if q.answer not in s]
            for other in rng.sample(others, min(SENTENCE_NEGATIVES, len(others))):
                examples.append(_labelled(q.question, other, q.answer))
        without = q.passage.replace(sentence, "", 1) if sentence else ""
        if without.strip():
            examples.append(_labelled(q.question, without, q.answer))
        other = rng.choice(passages)
        if other != q.passage:
            examples.append(_labelled(q.question, other, q.answer))
    examples += [LabelledText(pair_text(a, b), ANSWERS if label == 1 else DOES_NOT) for a, b, label in pairs]
    rng.shuffle(examples)
    return examples
