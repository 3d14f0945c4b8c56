"""Chinese words for English questions (knowledge/crosslingual.py, knowledge/glossary_en.json)."""
from __future__ import annotations

import json

import pytest

from knowledge.crosslingual import chinese_query, chinese_words, with_chinese_words


def test_phrases_before_their_words_whole_words_and_plurals():
    assert chinese_words("whats the minimum order for free shipping") == ["包邮"]  # not also 运费 of shipping
    assert chinese_words("Are the earbuds waterproof?")[:2] == ["耳机", "防水"]
    assert chinese_words("any warm jackets?") == ["保暖", "外套", "夹克", "冲锋衣"]  # a plural s
    assert chinese_words("flights to stockholm please") == ["飞机", "登机"]  # stock only as a word
    # a Chinese question with an English word or title is no English question
    assert chinese_words("这双鞋防水吗") == [] and chinese_words("《Gold Rush》是谁唱的") == []


def test_a_question_is_worded_as_chinese_evidence_words_it():
    assert chinese_query("can i take the XZ-3000 power bank on a plane?") == "XZ-3000 充电宝 飞机 登机"
    assert chinese_query("What's the UPF rating of the 轻风 sun protection jacket?").startswith("轻风 防晒")
    assert chinese_query("hello there") is None
    assert with_chinese_words("how long for a refund?") == "how long for a refund? 退款"
    assert with_chinese_words("退款几天到账") == "退款几天到账"


def test_a_broken_glossary_is_named(tmp_path):
    bad = tmp_path / "glossary.json"
    bad.write_text(json.dumps({"about": "no words"}), encoding="utf-8")
    with pytest.raises(ValueError, match="glossary.json: not a valid glossary"):
        chinese_words("what is the price", bad)
