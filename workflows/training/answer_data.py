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
With `replies`, FAQ-shaped candidates too (a title line, then a reply), in minimal pairs: under a sibling
question's title, the question's answer sentence answers and the sibling's own answer sentence (on the
topic: what a shop's FAQ is full of) does not.
With `yes_no`, each factoid question whose one question word can take its answer's place is asked
again as a yes/no question (范廷颂是何时去世的？ -> 范廷颂是1963年去世的吗？, the particle drawn from
YES_NO_ENDINGS): a shopper asks 能… 吗 far more often than CMRC does, and the sentence that states the fact
answers it either way.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

from citescope.agents.pair_scorer import LABELS, pair_text
from citescope.workflows.evaluation.reader_holdout import is_reader_bench_title
from citescope.workflows.training.pair_data import (
    SOURCES,
    LabelledText,
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
    title: str = ""


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
        questions[part].append(
            Question(row["question"], row["context"], answer["text"], int(answer["start"]), row.get("title", ""))
        )
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
REPLY_SIBLINGS = 2  # with `replies`: sibling questions whose titles make minimal pairs


_QUESTION_WORD = re.compile(
    r"什么时候|何时|哪一年|哪年|哪一天|多少|几[个年月天次位名种]|哪里|哪儿|哪个|哪些|哪位|哪国|什么|谁"
)
YES_NO_ANSWER_CHARS = 20  # a longer answer put into the question makes it a statement, not a question
# the particles a yes/no question ends with, written and colloquial (the last: the spoken V-不 form, 能退不)
YES_NO_ENDINGS = ("吗？", "吗", "么？", "不？")


def yes_no_question(q: Question, ending: str = YES_NO_ENDINGS[0]) -> str | None:
    """The question with its one question word replaced by the answer, asked with `ending`; None when it
    has no question word or more than one, or the answer is too long to ask about."""
    words = list(_QUESTION_WORD.finditer(q.question))
    answer = q.answer.strip().rstrip("。．.")
    if len(words) != 1 or not answer or len(answer) > YES_NO_ANSWER_CHARS:
        return None
    word = words[0]
    return (q.question[: word.start()] + answer + q.question[word.end() :]).rstrip("？?。. ") + ending


def _yes_no_examples(q: Question, rng: random.Random) -> list[LabelledText]:
    """The yes/no question against its passage, its answer's sentence alone and another sentence alone."""
    asked, sentence = yes_no_question(q, rng.choice(YES_NO_ENDINGS)), answer_sentence(q.passage, q.answer_start)
    if asked is None or not sentence:
        return []
    examples = [_labelled(asked, q.passage, q.answer), _labelled(asked, sentence, q.answer)]
    others = [s for s in passage_sentences(q.passage) if q.answer not in s]
    if others:
        examples.append(_labelled(asked, rng.choice(others), q.answer))
    return examples


def _reply_examples(q: Question, siblings: list[Question], rng: random.Random) -> list[LabelledText]:
    """FAQ-shaped entries (a title line, a reply) in minimal pairs: under a sibling question's title,
    the question's own answer sentence answers and the sibling's answer sentence (on the topic) does
    not, unless it happens to hold this answer too; under the article's title, the answer sentence
    answers. So the reply decides, not how closely the title echoes the question (a customer's
    wording seldom echoes the FAQ's). Only for a question with a sibling on its passage."""
    sentence = answer_sentence(q.passage, q.answer_start)
    others = [s for s in siblings if s.question != q.question and answer_sentence(s.passage, s.answer_start)]
    if not sentence or not others:
        return []
    examples = [_labelled(q.question, f"{q.title}\n{sentence}", q.answer)] if q.title else []
    for s in rng.sample(others, min(REPLY_SIBLINGS, len(others))):
        examples.append(_labelled(q.question, f"{s.question}\n{sentence}", q.answer))
        examples.append(_labelled(q.question, f"{s.question}\n{answer_sentence(s.passage, s.answer_start)}", q.answer))
    return examples


def answer_examples(
    questions: list[Question],
    pairs: list[tuple[str, str, int]],
    seed: int,
    sentences: bool = False,
    replies: bool = False,
    yes_no: bool = False,
) -> list[LabelledText]:
    """Three candidates per question (own passage, passage without the answer's sentence, another
    passage) and every paraphrase pair, in a seeded order. `sentences`: also the answer's sentence alone
    and up to SENTENCE_NEGATIVES other sentences of its passage alone — which of a passage's sentences
    says it, the choice the extractive answerer makes (workflows/training/sentence_choice.py measures it).
    `replies`: also FAQ-shaped entries (_reply_examples); `yes_no`: the question asked as a yes/no one too."""
    rng = random.Random(f"answers:{seed}")
    passages = sorted({q.passage for q in questions})
    by_passage: dict[str, list[Question]] = {}
    for q in questions:
        by_passage.setdefault(q.passage, []).append(q)
    examples: list[LabelledText] = []
    for q in questions:
        if replies:
            examples += _reply_examples(q, by_passage[q.passage], rng)
        if yes_no:
            examples += _yes_no_examples(q, rng)
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
