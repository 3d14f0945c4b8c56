"""Traditional and simplified Chinese (knowledge/chinese_script.py), with OpenCC's real tables."""

from __future__ import annotations

import json
from pathlib import Path

from citescope.knowledge.chinese_script import in_traditional, to_simplified, written_in_traditional

REPO = Path(__file__).resolve().parents[2]


def test_a_traditional_question_is_read_in_simplified_characters():
    assert to_simplified("退貨運費誰承擔？") == "退货运费谁承担？"
    assert to_simplified("星擇XZ-3000充電寶多少錢") == "星择XZ-3000充电宝多少钱"
    assert to_simplified("这双鞋雨天防滑吗？") == "这双鞋雨天防滑吗？"  # simplified comes back as it is
    assert to_simplified("乾隆年间的头发") == "乾隆年间的头发"  # by phrase, not character: 乾隆 is no 干隆
    assert to_simplified("XZ-3000 price?") == "XZ-3000 price?"


def test_a_question_is_traditional_when_a_tenth_of_its_chinese_is():
    assert written_in_traditional("退貨運費誰承擔？")
    assert written_in_traditional("岩途徒步鞋防水嗎")  # one character of eight
    # a simplified question with one traditional character typed by habit
    assert not written_in_traditional("富德生命人寿如意險犹豫期内撤销保险合同会全额退款吗")
    assert not written_in_traditional("这双鞋雨天防滑吗？")
    assert not written_in_traditional("XZ-3000 price?")
    assert not written_in_traditional("")


def test_no_simplified_question_of_the_demo_reads_as_traditional():
    questions = [
        json.loads(line)["question"]
        for path in sorted((REPO / "knowledge" / "demo").glob("questions*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    assert len(questions) > 400 and not [q for q in questions if written_in_traditional(q)]


def test_an_answer_is_given_in_traditional_characters_with_its_citation_ids_untouched():
    answer = (
        "根据现有资料，摩擦系数为 0.52，湿滑岩石面也防滑【prod-sy-yantu#功能特点-0】。"
        "关于“发票”，资料中暂未找到可靠信息。"
    )
    assert in_traditional(answer) == (
        "根據現有資料，摩擦係數為 0.52，溼滑岩石面也防滑【prod-sy-yantu#功能特点-0】。"
        "關於“發票”，資料中暫未找到可靠信息。"
    )  # characters, not Taiwan words (資訊)
