"""The conversation the models read: the resolved product and the last turns, within a token bound."""

from __future__ import annotations

from citescope.agents.conversation import NONE_TEXT, Conversation, PastTurn, estimate_tokens
from citescope.agents.entity_index import Entity

POWER_BANK = Entity(name="星择 XZ-3000 充电宝", product_id="p-xz3000")


def test_the_estimate_counts_chinese_characters_one_each_and_other_text_by_four():
    assert estimate_tokens("") == 0
    assert estimate_tokens("充电宝") == 3
    assert estimate_tokens("power bank") == 3  # ten characters, four a token, rounded up
    assert estimate_tokens("XZ-3000 多少钱") == 3 + 2


def test_no_session_context_is_none():
    assert Conversation().render(400) == NONE_TEXT
    assert Conversation.of([POWER_BANK], None, [], last=3).render(0) == NONE_TEXT


def test_the_product_and_the_last_turns_are_rendered_oldest_first_without_citations():
    turns = [PastTurn(f"第{n}个问题？", f"第{n}个回答【sku-p-xz3000#row-{n}】。") for n in range(1, 6)]
    text = Conversation.of([POWER_BANK], None, turns, last=2).render(400)
    assert text.startswith("当前讨论的商品：星择 XZ-3000 充电宝（p-xz3000）")
    assert "第3个问题" not in text and text.index("第4个问题") < text.index("第5个问题")
    assert "【" not in text.replace("【对话", "") and "第5个回答。" in text  # no id of an earlier turn to copy


def test_the_oldest_turns_give_way_to_the_bound_and_a_long_newest_answer_is_cut():
    long_answer = "这款充电宝支持快充，" * 60
    turns = [PastTurn("它多少钱？", "199元。"), PastTurn("它支持快充吗？", long_answer)]
    for bound in (60, 100, 150):
        text = Conversation.of([POWER_BANK], None, turns, last=3).render(bound)
        assert estimate_tokens(text) <= bound, (bound, estimate_tokens(text))
        assert "它支持快充吗？" in text and "它多少钱？" not in text and text.endswith("…")
    roomy = Conversation.of([POWER_BANK], None, turns, last=3).render(2000)
    assert "它多少钱？" in roomy and long_answer.strip() in roomy


def test_a_follow_up_about_no_product_carries_the_opening_question():
    text = Conversation.of(
        [], "国学院有哪些下设系别？", [PastTurn("国学院有哪些下设系别？", "有三个系。")], last=3
    ).render(400)
    assert text.startswith("对话开始时的问题：国学院有哪些下设系别？") and "顾客：国学院有哪些下设系别？" in text
