"""workflows/evaluation/mrc_kb.py: an MRC source made into a dataset folder `run.py eval` reads, with a
holdout split that takes a share of the passages (and so their questions' answers) out of the KB."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from citescope.workflows.evaluation.datasets import load_questions
from citescope.workflows.evaluation.mrc_kb import main, write_dataset
from citescope.workflows.evaluation.splits import find_splits


def _mrc_file(path: Path, passages: int = 10, per_passage: int = 2) -> Path:
    rows = []
    for p in range(passages):
        context = f"第{p}段：某地的人口为{1000 + p}人。"
        for q in range(per_passage):
            rows.append(
                {
                    "qid": f"x-{p}-{q}",
                    "question": f"第{p}段的问题{q}？",
                    "context": context,
                    "answers": [{"text": str(1000 + p), "start": 9}],
                    "answerable": True,
                    "source": "xquad_zh",
                    "title": f"Article_{p // 3}",
                }
            )
    rows.append({**rows[0], "qid": "other", "source": "cmrc2018_trial", "context": "别的来源的段落。"})
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_every_passage_is_a_document_and_a_fifth_is_held_out(tmp_path):
    training = _mrc_file(tmp_path / "mrc.jsonl")
    counts = write_dataset(tmp_path / "set", training, "xquad_zh", removed_share=0.2, seed=1)
    assert counts == {"passages": 10, "questions": 20, "removed_passages": 2, "removed_questions": 4}

    corpus, holdout_corpus = _lines(tmp_path / "set/corpus.jsonl"), _lines(tmp_path / "set/corpus_holdout.jsonl")
    assert len(corpus) == 10 and all(d["source"] == "xquad_zh" for d in corpus)  # the other source is not read
    assert corpus[0]["title"] == "Article 0"  # the article title, underscores as spaces
    removed = {d["doc_id"] for d in corpus} - {d["doc_id"] for d in holdout_corpus}
    assert len(removed) == 2

    asked = load_questions(tmp_path / "set/questions.jsonl")
    assert all(q.answerable and q.answers == [q.answers[0]] and q.gold_doc_ids for q in asked)
    held = {q.qid: q for q in load_questions(tmp_path / "set/questions_holdout.jsonl")}
    for q in asked:  # a removed passage's questions become unanswerable, every other one stays answerable
        gone = q.gold_doc_ids[0] in removed
        assert held[q.qid].answerable is not gone
        assert (held[q.qid].qtype == "unanswerable_kb_removed") is gone

    # each question file is asked against its own corpus
    splits = {s.name: s for s in find_splits(tmp_path / "set")}
    assert splits["questions"].corpus == (tmp_path / "set/corpus.jsonl",)
    assert splits["questions_holdout"].corpus == (tmp_path / "set/corpus_holdout.jsonl",)


def test_the_draw_is_seeded(tmp_path):
    training = _mrc_file(tmp_path / "mrc.jsonl", passages=30)
    for name, seed in (("a", 5), ("b", 5), ("c", 6)):
        write_dataset(tmp_path / name, training, "xquad_zh", seed=seed)
    held = {n: (tmp_path / n / "corpus_holdout.jsonl").read_text(encoding="utf-8") for n in "abc"}
    assert held["a"] == held["b"] and held["a"] != held["c"]


def test_bad_input_is_named(tmp_path, capsys):
    training = _mrc_file(tmp_path / "mrc.jsonl")
    with training.open("a", encoding="utf-8") as handle:
        handle.write("{not json\n")
    with pytest.raises(ValueError, match=r"mrc\.jsonl:22: not an MRC row"):
        write_dataset(tmp_path / "set", training)
    with pytest.raises(ValueError, match="no rows of source 'nope'"):
        write_dataset(tmp_path / "set", _mrc_file(tmp_path / "ok.jsonl"), "nope")
    with pytest.raises(SystemExit) as exit_info:
        main([str(tmp_path / "set"), "--training", str(tmp_path / "ok.jsonl"), "--removed-share", "1.5"])
    assert exit_info.value.code == 2 and "--removed-share" in capsys.readouterr().err


def test_passages_takes_the_first_ones_only(tmp_path):
    training = _mrc_file(tmp_path / "mrc.jsonl", passages=10)
    counts = write_dataset(tmp_path / "set", training, "xquad_zh", passages=4)
    assert counts["passages"] == 4 and counts["questions"] == 8
    assert [d["doc_id"] for d in _lines(tmp_path / "set/corpus.jsonl")] == [f"xquad_zh-000{i}" for i in range(4)]
    with pytest.raises(ValueError, match="--passages"):
        write_dataset(tmp_path / "set", training, "xquad_zh", passages=0)
