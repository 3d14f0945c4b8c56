"""The shared tokenizer's helpers."""
from __future__ import annotations

import pytest

from knowledge.text import tokenize, unglued


@pytest.mark.parametrize(("question", "name"), [
    ("潘淑是怎么死的？", "潘淑"),
    ("尚恩有什么爱好？", "尚恩"),
    ("钟惺在万历四十四年和谁一起登泰山？", "钟惺"),
])
def test_a_name_jieba_glued_to_the_verb_after_it_is_read_alone(question, name):
    tokens = tokenize(question)
    assert name not in tokens  # jieba's new-word guess: 潘淑是, 尚恩有, 钟惺在
    assert name in [unglued(t) for t in tokens]


@pytest.mark.parametrize("word", ["误以为", "普遍存在", "晋升为", "有没有", "是不是", "潘淑"])
def test_a_dictionary_word_or_a_short_word_stays_whole(word):
    assert unglued(word) == word
