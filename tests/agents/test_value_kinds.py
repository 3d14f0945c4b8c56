"""The kinds of value (agents/value_kinds.py): what a field's values are, and what a question asks for."""

from __future__ import annotations

import pytest

from citescope.agents.question_rules import question_rules
from citescope.agents.value_kinds import NUMBER, PERSON, PLACE, TIME, asked_kind, label_kinds, value_kind


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("2025年1月8日", TIME),
        ("2026年5月", TIME),
        ("14:00-18:00", TIME),
        ("赵强", PERSON),
        ("刘小雨", PERSON),  # jieba splits it (刘 + 小雨): a short all-Chinese value with a name part
        ("周建平", PERSON),
        ("林晓雯老师", PERSON),
        ("福建泉州", PLACE),
        ("15天", NUMBER),  # a duration, not a date
        ("2年", NUMBER),
        ("每晚488元", NUMBER),
        ("心内科", None),
        ("AB型", None),
        ("青霉素过敏", None),  # jieba tags 过敏 as a name; a five-character phrase is none
        ("", None),
    ],
)
def test_a_value_is_read_as_its_kind(value, kind):
    assert value_kind(value) == kind


def test_a_label_has_the_kind_most_of_its_values_share_and_none_when_they_are_mixed_or_too_few():
    kinds = label_kinds(
        {
            "主治医生": ["赵强", "陈秀", "王芳"],
            "入院日期": ["2025年1月8日", "2025年2月17日", "不详"],  # two of three: a majority
            "出院医嘱": ["出院后2周复查", "按时服药", "清淡饮食"],  # mixed
            "科室": ["心内科", "呼吸内科"],  # words, no kind
            "病历号": ["R-0001"],  # one value makes no majority
        }
    )
    assert kinds == {"主治医生": PERSON, "入院日期": TIME}


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("蔡秀是哪位大夫负责的？", PERSON),
        ("合同哪天到期", TIME),
        ("几号退房", TIME),  # 几号 asks a date before 几 asks a number
        ("他老家是哪里的", PLACE),
        ("住了几天院", NUMBER),
        ("每年要交多少钱", NUMBER),
        ("血型是什么", None),
        ("有没有过敏史", None),
    ],
)
def test_a_question_asks_the_kind_its_asking_words_say(question, kind):
    assert asked_kind(question, question_rules()) == kind
