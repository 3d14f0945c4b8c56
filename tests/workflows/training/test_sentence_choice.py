"""The sentence-choice measurement of the pair scorer (workflows/training/sentence_choice.py): which rows it
reads, and how each way of choosing is counted, with a scorer that gives every sentence the same P(answers)."""

from __future__ import annotations

import itertools
import json

from citescope.workflows.evaluation.reader_holdout import is_reader_bench_title
from citescope.workflows.training.pair_data import split_of_title
from citescope.workflows.training.sentence_choice import measure, valid_questions
from tests.support.claim_model import constant_pair_model

PASSAGE = (
    "星择 XZ-3000 是一款笔记本充电宝。XZ-3000 的电池容量是 20000mAh。XZ-3000 支持 100W 快充。XZ-3000 于 2024 年上市。"
)


def titles(split: str, n: int) -> list[str]:
    """n article titles the pair trainer puts in `split`, none of the claim benchmark's."""
    found = (f"文章{i}" for i in itertools.count())
    return list(itertools.islice((t for t in found if split_of_title(t) == split and not is_reader_bench_title(t)), n))


def write_rows(folder, rows) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(row, ensure_ascii=False) for row in rows]
    (folder / "mrc_train.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def row(title: str, question: str, answer: str, source: str = "cmrc2018_train") -> dict:
    return {
        "source": source,
        "title": title,
        "question": question,
        "context": PASSAGE,
        "answers": [{"text": answer, "start": PASSAGE.index(answer)}],
    }


def test_only_the_valid_articles_cmrc_questions_are_read(tmp_path):
    valid, train = titles("valid", 2), titles("train", 1)
    write_rows(
        tmp_path,
        [
            row(valid[0], "XZ-3000的电池容量是多少？", "20000mAh"),
            row(valid[1], "XZ-3000支持多大功率的快充？", "100W"),
            row(train[0], "XZ-3000哪年上市？", "2024"),  # a training article
            row(valid[0], "XZ-3000哪年上市？", "2024", source="squad_zh"),  # another source
        ],
    )
    assert [q for q, _, _ in valid_questions(tmp_path)] == ["XZ-3000的电池容量是多少？", "XZ-3000支持多大功率的快充？"]


def test_each_way_is_counted_right_when_its_sentence_holds_the_answer(tmp_path):
    valid = titles("valid", 1)
    rows = [
        row(valid[0], "XZ-3000的电池容量是多少？", "20000mAh"),
        row(valid[0], "XZ-3000支持多大功率的快充？", "100W"),
        row(valid[0], "XZ-3000的电池容量和快充？", "20000mAh。XZ-3000 支持 100W"),  # no one sentence holds it
    ]
    write_rows(tmp_path / "data", rows)
    report = measure(constant_pair_model(tmp_path / "model", 0.5), tmp_path / "data", limit=10)
    assert report["questions"] == 3
    # a constant P(answers) adds nothing: every way picks the sentence scorer's sentence, right for two of three
    assert set(report["right"].values()) == {round(2 / 3, 3)}
