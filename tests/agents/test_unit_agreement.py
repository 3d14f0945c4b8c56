"""The inspector and the conflict check read units from one table (knowledge/units.py), so they
agree: a value the inspector accepts as supported by another is no conflict with it, and a value
it rejects is one. Each pair is run through both, on the same sentences."""

from __future__ import annotations

import pytest

from citescope.agents.conflicts import detect_conflicts
from citescope.agents.inspector import Inspector
from citescope.tools.base import EvidenceHit

# (question, the sentence with "{}" where the value stands)
WARRANTY = ("保修期多久？", "本店商品保修期为{}，自签收之日起计算。")
RETURNS = ("签收后多久可以无理由退货？", "签收后{}内可以无理由退货，商品需保持原包装。")
WEIGHT = ("这款大米的净含量是多少？", "这款大米的净含量为{}，真空包装。")
VOLUME = ("这个保温杯的容量多大？", "这个保温杯的容量为{}，可装热水。")
LENGTH = ("这根数据线的线长是多少？", "这根数据线的线长为{}，两端都是接口。")
BATTERY = ("充电宝的电池容量是多少？", "充电宝的电池容量为{}，支持快充。")
POWER = ("充电器的输出功率是多少？", "充电器的输出功率为{}，支持快充。")
PRICE = ("这台投影仪的售价是多少？", "这台投影仪的售价为{}，全国联保。")

SAME = [
    (WARRANTY, "1年", "12个月"),
    (WARRANTY, "两年", "24个月"),
    (RETURNS, "2周", "14天"),
    (RETURNS, "1星期", "7天"),
    (RETURNS, "48小时", "2天"),
    (WEIGHT, "1千克", "1000克"),
    (WEIGHT, "5斤", "2.5公斤"),
    (WEIGHT, "2kg", "2000g"),
    (VOLUME, "1.5升", "1500毫升"),
    (VOLUME, "500ml", "0.5L"),
    (LENGTH, "1米", "100厘米"),
    (LENGTH, "1.5m", "150cm"),
    (LENGTH, "25毫米", "2.5厘米"),
    (BATTERY, "20000mAh", "20000毫安"),
    (POWER, "65W", "65瓦"),
    (PRICE, "1.5万元", "15000元"),  # one numeral reader: 1.5万 = 15000 (knowledge/text.py amount)
]
DIFFERENT = [
    (WARRANTY, "1年", "13个月"),
    (WARRANTY, "2年", "12个月"),
    (RETURNS, "2周", "15天"),
    (RETURNS, "7天", "15天"),
    (WEIGHT, "1斤", "1千克"),
    (WEIGHT, "500克", "5千克"),
    (VOLUME, "1升", "100毫升"),
    (LENGTH, "1米", "10厘米"),
    (LENGTH, "1米", "1厘米"),
    (BATTERY, "20000mAh", "10000毫安"),
    (POWER, "65W", "30瓦"),
    (PRICE, "1.5万元", "1500元"),
]


def _hit(chunk_id: str, text: str) -> EvidenceHit:
    return EvidenceHit(chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], text=text, score=1.0)


def inspector_accepts(sentence: str, claimed: str, evidence_value: str) -> bool:
    """Does the inspector find the claim (the sentence with `claimed`) supported by a chunk
    that says the same sentence with `evidence_value`?"""
    evidence = _hit("faq-b#body-0", sentence.format(evidence_value))
    answer = f"{sentence.format(claimed).rstrip('。')}【faq-b#body-0】。"
    return Inspector().run(answer, [evidence]).passed


def conflict_check_agrees(question: str, sentence: str, left: str, right: str) -> bool:
    """Does the conflict check find two sources, one per value, in agreement (no conflict)?"""
    evidence = [_hit("faq-a#body-0", sentence.format(left)), _hit("faq-b#body-0", sentence.format(right))]
    return detect_conflicts(question, evidence) == []


@pytest.mark.parametrize(("asked", "left", "right"), SAME)
def test_one_amount_in_two_units_is_supported_and_no_conflict(asked, left, right):
    question, sentence = asked
    assert inspector_accepts(sentence, left, right)
    assert inspector_accepts(sentence, right, left)
    assert conflict_check_agrees(question, sentence, left, right)


@pytest.mark.parametrize(("asked", "left", "right"), DIFFERENT)
def test_two_amounts_of_one_kind_are_unsupported_and_a_conflict(asked, left, right):
    question, sentence = asked
    assert not inspector_accepts(sentence, left, right)
    assert not inspector_accepts(sentence, right, left)
    assert not conflict_check_agrees(question, sentence, left, right)


@pytest.mark.parametrize(("asked", "left", "right"), SAME + DIFFERENT)
def test_the_inspector_and_the_conflict_check_agree(asked, left, right):
    question, sentence = asked
    assert inspector_accepts(sentence, left, right) == conflict_check_agrees(question, sentence, left, right)
