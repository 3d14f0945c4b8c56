"""workflows/evaluation/paraphrase_kb.py: training paraphrase pairs made into a dataset folder (sentences
as documents, their paraphrases as questions), with a holdout split whose removed documents' paraphrases
must be refused; and training_sets.py, which makes the sets `run.py calibrate` fits on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from citescope.workflows.evaluation.datasets import load_questions
from citescope.workflows.evaluation.paraphrase_kb import write_dataset
from citescope.workflows.evaluation.training_sets import calibration_sets, is_evaluation_set
from tests.conftest import DEMO_DIR
from tests.workflows.evaluation.test_mrc_kb import _mrc_file


def _pairs_file(path: Path, sentences: int = 10) -> Path:
    rows = []
    for i in range(sentences):
        a = f"第{i}座桥建于{1900 + i}年。"
        rows.append({"a": a, "b": f"{1900 + i}年建成了第{i}座桥。", "label": 1, "source": "pawsx_zh", "split": "train"})
        rows.append({"a": a, "b": f"第{i}座桥毁于{1900 + i}年。", "label": 0, "source": "pawsx_zh", "split": "train"})
    rows.append({"a": rows[2]["a"], "b": rows[0]["a"], "label": 1, "source": "pawsx_zh", "split": "train"})
    rows.append({"a": "别的来源。", "b": "别的来源的句子。", "label": 1, "source": "lcqmc", "split": "train"})
    rows.append({"a": "验证集的句子。", "b": "验证集的另一句。", "label": 1, "source": "pawsx_zh", "split": "valid"})
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_sentences_are_documents_and_paraphrases_find_them(tmp_path):
    counts = write_dataset(tmp_path / "set", _pairs_file(tmp_path / "pairs.jsonl"), removed_share=0.2, seed=1)
    # one document per distinct first side of the split's own source; a paraphrase that is itself a
    # document's text is no question; a non-paraphrase is no question
    assert counts == {"documents": 10, "questions": 10, "removed_documents": 2, "removed_questions": 2}
    corpus = {d["doc_id"]: d["text"] for d in _lines(tmp_path / "set/corpus.jsonl")}
    asked = load_questions(tmp_path / "set/questions.jsonl")
    for q in asked:
        year = q.question[:4]
        assert q.answerable and year in corpus[q.gold_doc_ids[0]] and "毁" not in q.question
    removed = set(corpus) - {d["doc_id"] for d in _lines(tmp_path / "set/corpus_holdout.jsonl")}
    for q in load_questions(tmp_path / "set/questions_holdout.jsonl"):
        assert (q.qtype == "unanswerable_kb_removed") is (q.gold_doc_ids[0] in removed) is (not q.answerable)


def test_bad_input_is_named(tmp_path):
    pairs = _pairs_file(tmp_path / "pairs.jsonl")
    with pairs.open("a", encoding="utf-8") as handle:
        handle.write('{"a": "x"}\n')
    with pytest.raises(ValueError, match=r"pairs\.jsonl:24: not a paraphrase pair"):
        write_dataset(tmp_path / "set", pairs)
    with pytest.raises(ValueError, match="no pairs of source 'pawsx_zh' in split 'test'"):
        write_dataset(tmp_path / "set", _pairs_file(tmp_path / "ok.jsonl"), split="test")


def test_calibration_sets_are_made_from_training_files_once(tmp_path, datasets_dir):
    training = tmp_path / "training"
    training.mkdir()
    _pairs_file(training / "paraphrase_pairs.jsonl")
    mrc = _mrc_file(training / "mrc_train.jsonl", passages=5)
    mrc.write_text(mrc.read_text(encoding="utf-8").replace('"xquad_zh"', '"cmrc2018_train"'), encoding="utf-8")
    folders = calibration_sets(tmp_path / "root", training)
    assert [f.name for f in folders] == ["cmrc2018_train", "pawsx_zh"]
    assert len(_lines(folders[0] / "corpus.jsonl")) == 5 and len(_lines(folders[1] / "corpus.jsonl")) == 10
    stamp = (folders[1] / "questions.jsonl").stat().st_mtime_ns
    assert calibration_sets(tmp_path / "root", training) == folders
    assert (folders[1] / "questions.jsonl").stat().st_mtime_ns == stamp  # written once
    assert not any(is_evaluation_set(f) for f in folders)
    assert is_evaluation_set(datasets_dir / "rgb_zh") and is_evaluation_set(DEMO_DIR)
