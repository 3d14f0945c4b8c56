"""The shared tokenizer's helpers."""

from __future__ import annotations

import pytest

from citescope.knowledge.text import (
    SENTENCE_END,
    amount,
    arabic_numerals,
    chinese_int,
    has_term,
    in_vocabulary,
    is_english,
    split_sentences,
    tokenize,
    unglued,
)


@pytest.mark.parametrize(
    ("question", "name"),
    [
        ("潘淑是怎么死的？", "潘淑"),
        ("尚恩有什么爱好？", "尚恩"),
        ("钟惺在万历四十四年和谁一起登泰山？", "钟惺"),
    ],
)
def test_a_name_jieba_glued_to_the_verb_after_it_is_read_alone(question, name):
    tokens = tokenize(question)
    assert name not in tokens  # jieba's new-word guess: 潘淑是, 尚恩有, 钟惺在
    assert name in [unglued(t) for t in tokens]


def test_a_modal_verb_jieba_glued_to_the_word_after_it_is_read_apart():
    # 能机洗吗 -> 能机 / 洗: 机 and 洗 stand together again in the answerer's and the reranker's terms
    assert [unglued(t) for t in tokenize("冰原棉服能机洗吗")][-2:] == ["机", "洗"]


@pytest.mark.parametrize("word", ["误以为", "普遍存在", "晋升为", "有没有", "是不是", "潘淑", "可以", "会员", "要求"])
def test_a_dictionary_word_or_a_short_word_stays_whole(word):
    assert unglued(word) == word


def test_english_function_words_are_not_search_terms_of_english_text():
    assert tokenize("How many days does standard delivery take?") == ["many", "days", "standard", "delivery", "take"]
    # in Chinese text they are names, and single letters letters of one
    assert {"am", "ted"} <= set(tokenize("AM最后把Ted改造成什么样了？")) and "it" in tokenize("IT行业的前景")
    assert "a" in tokenize("她又要买什么哆啦A保")


@pytest.mark.parametrize(
    "question, english",
    [
        ("How long is the warranty?", True),
        ("XZ-3000 price please", True),
        ("I want a refund", True),
        ("AJ1 Retro", False),  # a product name typed alone
        ("XZ-3000 多少钱", False),
    ],
)
def test_a_question_is_english_when_it_has_no_chinese_and_an_english_function_word(question, english):
    assert is_english(question) is english


def test_a_question_of_english_words_beyond_the_names_it_is_about_is_english():
    names = "xz-3000 充电宝 air jordan 1 retro 高帮篮球鞋"
    assert is_english("xz-3000 price", names=names) and not is_english("xz-3000 price")
    assert not is_english("air jordan 1 retro", names=names)  # a name typed alone, in a Chinese shop
    assert is_english("Warranty", names="Warranty Returns policy (2026 version)")  # in an English one
    assert not is_english("xz-3000 多少钱", names=names)


def test_titles_of_one_series_differ_in_a_name():
    from citescope.knowledge.text import series_names

    assert series_names("2021年甘肃省录取分数线", "2021年安徽省录取分数线") == ("甘肃", "安徽")
    assert series_names("2014年圆梦计划推荐中学名单(山西)", "2014年圆梦计划推荐中学名单(山东)") == ("西", "东")
    assert series_names("30万旅游保险多少钱", "50万旅游保险多少钱") is None  # numbers are no names
    assert series_names("退换货政策", "退换货政策") is None
    assert series_names("沼鹿", "泽鹿") is None  # too little shared to be one series


@pytest.mark.parametrize(
    ("text", "term", "found"),
    [
        ("emnlp 2022会议在阿布扎比举办", "emnlp2022", True),  # typed glued, written apart
        ("gpt-4发布于3月", "gpt4", True),
        ("xz_3000", "xz3000", True),
        ("l码偏大", "l", True),
        ("led灯", "l", False),  # an ASCII word stands alone
        ("emnlp2022", "emnlp", False),
        ("emnlp 2023会议", "emnlp2022", False),
        ("abc2022", "abc 2022", False),  # only the term's glued joints may be apart, not the other way
    ],
)
def test_an_ascii_term_stands_alone_and_may_be_written_apart_where_letters_meet_digits(text, term, found):
    assert has_term(text, term) is found


def test_a_chinese_numeral_is_read_as_its_number():
    assert [chinese_int(t) for t in ("十五", "两", "一百二十", "十三", "七", "三千零五")] == [15, 2, 120, 13, 7, 3005]
    assert chinese_int("第七") is None and chinese_int("七届") is None  # a plain numeral only


@pytest.mark.parametrize(
    "text, digits",
    [
        ("可以七天无理由退货吗", "可以7天无理由退货吗"),
        ("保修两年吗", "保修2年吗"),
        ("十五个工作日", "15个工作日"),
        ("积分多少个能抵一块钱", "积分多少个能抵1块钱"),
        # no amounts: names, ordinals, 哪一年 / 每一天, and a numeral whose unit is not one of amounts
        ("百年人寿", "百年人寿"),
        ("第七届", "第七届"),
        ("哪一年开业", "哪一年开业"),
        ("每一天", "每一天"),
        ("统一", "统一"),
        ("三体", "三体"),
    ],
)
def test_a_chinese_numeral_before_a_unit_is_written_in_digits(text, digits):
    assert arabic_numerals(text) == digits


def test_a_query_is_also_searched_with_its_numerals_in_digits(demo_kb):
    tokens = demo_kb.search_tokens("可以七天无理由退货吗")
    assert "七天" in tokens and "7" in tokens  # the pages write 7天
    assert demo_kb.search_tokens("可以7天无理由退货吗") == tokenize("可以7天无理由退货吗", demo_kb.lexicon)
    assert "7" not in demo_kb.query_tokens("可以七天无理由退货吗")  # scored as typed


@pytest.mark.parametrize(
    ("written", "multiplier", "value"),
    [
        ("15", "", 15),
        ("1,299", "", 1299),
        ("1.5", "万", 15000),
        ("两", "万", 20000),
        ("十五", "", 15),
        ("3", "亿", 3e8),
    ],
)
def test_one_numeral_reader_reads_digits_chinese_numerals_and_large_units(written, multiplier, value):
    assert amount(written, multiplier) == value


def test_a_text_that_is_no_number_is_refused():
    with pytest.raises(ValueError):
        amount("十五个")


def test_sentences_end_at_a_run_of_marks_a_full_stop_before_a_space_or_a_line_break():
    text = "尺码不对！！能退吗？运费谁出；多久到账\n版本3.5可用. It broke. 1. 第一条"
    assert split_sentences(text) == [
        "尺码不对！！",
        "能退吗？",
        "运费谁出；多久到账",
        "版本3.5可用.",
        "It broke.",
        "1. 第一条",  # the point of a list item's number ends nothing
    ]
    assert split_sentences("运费谁出；多久到账？", at_clauses=True) == ["运费谁出；", "多久到账？"]


def test_a_text_split_at_its_sentence_ends_joins_back_into_the_text():
    answer = "退货运费由买家承担【faq-1#body-0】。\n七天无理由退换【policy#退换-0】！？Done. Thanks"
    pieces = SENTENCE_END.split(answer)
    assert "".join(pieces) == answer
    assert pieces[:2] == ["退货运费由买家承担【faq-1#body-0】。", "\n"]


def test_a_glued_run_is_cut_into_the_documents_words_and_the_rest_is_kept():
    vocabulary = {"发顺丰", "顺丰", "快递", "另外"}
    # jieba cut 想发顺丰要加钱吗 as 发顺 / 丰要 / 加钱: the documents say 发顺丰 (an FAQ title) and 顺丰
    assert in_vocabulary(["发顺", "丰要", "加钱"], vocabulary) == ["发顺丰", "顺丰", "加钱"]
    assert in_vocabulary(["顺丰要", "另外"], vocabulary) == ["顺丰", "另外"]  # a known token ends the run
    assert in_vocabulary(["想要", "顺丰得", "多"], vocabulary) == ["顺丰", "想要", "多"]  # 得 glued on too
    assert in_vocabulary(["顺丰寄"], vocabulary) == ["顺丰寄"]  # not a function character: the token stays
    assert in_vocabulary(["机洗", "t20", "箱子"], vocabulary) == ["机洗", "t20", "箱子"]  # nothing covers it: kept
    assert in_vocabulary(["快递", "快递"], vocabulary) == ["快递", "快递"]  # as tokenize gave them: BM25 counts each
    # a word inside one whole token is the documents lacking that word, not jieba hiding one: 货到付款 is no 付款
    assert in_vocabulary(["货到付款"], {"付款", "到付"}) == ["货到付款"]
