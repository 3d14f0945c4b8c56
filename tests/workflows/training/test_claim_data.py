"""The claim checker's stated answers (workflows/training/claim_data.py): a CMRC question with its answer
written as the statement it makes, supported by its passage, and a share of them changed by a training
family (contradicted). No torch: the data is plain Python."""

from __future__ import annotations

from citescope.agents.claim_reader import LABELS
from citescope.workflows.evaluation.perturbations import HELD_OUT_FAMILIES, Passage
from citescope.workflows.training.claim_data import claim_examples, stated_answer

PASSAGE = "该球队建立于1979年，主场位于海滨体育场，可容纳12000名观众。球队目前没有获得过联赛冠军。"


def test_the_answer_goes_where_the_question_word_stands():
    assert stated_answer("该球队建立于什么时候？", "1979年") == "该球队建立于1979年。"
    assert stated_answer("谁继承了俺巴孩的汗位？", "侄子忽图剌") == "侄子忽图剌继承了俺巴孩的汗位。"
    assert stated_answer("主场可容纳多少名观众？", "12000名") == "主场可容纳12000名观众。"  # 名 written once
    assert stated_answer("袁喆是谁饰的？", "吴佩慈饰") == "袁喆是吴佩慈饰的。"
    assert stated_answer("椰子罐头是什么？", "是一款休闲网路游戏") == "椰子罐头是一款休闲网路游戏。"


def test_a_question_that_does_not_read_as_a_statement_makes_none():
    assert stated_answer("谁在什么时候建立了球队？", "张三") is None  # two question words
    assert stated_answer("球队的主场在海滨。", "海滨") is None  # no question word
    assert stated_answer("他做了什么？", "他奏请升六部为二品官衔。得到批准") is None  # an answer that is sentences
    assert stated_answer("是谁？", "张三") is None  # too little left
    assert stated_answer("球队的全名是什么？", "海滨" * 11) is None  # a long answer is a clause of its own


def test_stated_answers_are_supported_and_a_share_changed_contradicts():
    passages = [Passage(f"p{i}", PASSAGE + f"第{i}段。", "cmrc2018", f"文章{i}") for i in range(40)]
    asked = [("该球队建立于哪一年？", "1979年"), ("主场可容纳多少名观众？", "12000名")]
    asked.append(("主场位于哪里？", "海滨体育场"))
    examples = claim_examples(passages, [0], {p.text: asked for p in passages})
    stated = [e for e in examples if e.family == "answer_stated"]
    changed = [e for e in examples if e.family.startswith("answer_") and e.family != "answer_stated"]
    supported, contradicted = LABELS.index("supported"), LABELS.index("contradicted")
    assert stated and all(e.label == supported for e in stated)
    assert "主场位于海滨体育场。" in {e.claim for e in stated}
    assert changed and all(e.label == contradicted for e in changed)
    assert not {e.family.removeprefix("answer_") for e in changed} & HELD_OUT_FAMILIES
    assert all(e.claim not in PASSAGE for e in changed)
    # without questions, no stated answers
    assert not [e for e in claim_examples(passages, [0]) if e.family.startswith("answer_")]
