"""The documents' words for English questions and everyday Chinese ones (knowledge/crosslingual.py,
knowledge/glossary_en.json, knowledge/glossary_zh.json), and a shop's delivery zones for the places
a question about delivery names (its shop profile's, knowledge/demo/shop.yaml for the demo shop)."""

from __future__ import annotations

import json

import pytest

from citescope.knowledge.crosslingual import (
    chinese_concepts,
    chinese_words,
    document_query,
    document_words,
    english_names,
    everyday_words,
    says_name,
    with_document_words,
)
from citescope.knowledge.shop_profile import ShopProfile
from tests.conftest import DEMO_DIR

DEMO_SHOP = ShopProfile.load(DEMO_DIR / "shop.yaml")


def test_phrases_before_their_words_whole_words_and_plurals():
    assert chinese_words("whats the minimum order for free shipping") == ["订单", "包邮"]  # not also 运费 of shipping
    assert chinese_words("Are the earbuds waterproof?")[:2] == ["耳机", "防水"]
    assert chinese_words("any warm jackets?") == ["保暖", "外套", "夹克", "冲锋衣"]  # a plural s
    assert chinese_words("flights to stockholm please") == ["飞机", "登机"]  # stock only as a word
    # a Chinese question with an English word or title is no English question
    assert chinese_words("这双鞋防水吗") == [] and chinese_words("《Gold Rush》是谁唱的") == []


def test_a_glossary_word_is_found_inflected():
    assert chinese_words("Can I change my address after ordering?") == ["修改", "更换", "地址", "订单"]
    assert chinese_words("I cancelled my order last night") == ["取消", "订单"]
    assert chinese_words("have my points expired already") == ["积分", "过期"]
    assert chinese_words("when will my order be shipped") == ["订单", "发货", "配送"]
    assert chinese_words("is free shipping available") == ["包邮", "有货", "库存"]  # a listed form keeps its words


def test_a_question_is_worded_as_chinese_evidence_words_it():
    assert document_query("can i take the XZ-3000 power bank on a plane?") == "XZ-3000 充电宝 飞机 登机"
    assert document_query("What's the UPF rating of the 轻风 sun protection jacket?").startswith("轻风 防晒")
    assert document_query("hello there") is None
    assert with_document_words("how long for a refund?") == "how long for a refund? 退款"
    assert with_document_words("退款几天到账") == "退款几天到账"


def test_a_broken_glossary_is_named(tmp_path):
    bad = tmp_path / "glossary.json"
    bad.write_text(json.dumps({"about": "no words"}), encoding="utf-8")
    with pytest.raises(ValueError, match="glossary.json: not a valid glossary"):
        chinese_words("what is the price", bad)


def test_everyday_words_are_worded_as_the_documents_word_them():
    assert everyday_words("S1耳机能戴着洗澡吗") == ["淋浴"]
    assert everyday_words("XZ-3000充电宝能带上飞机吗") == ["登机"]  # 带上飞机 whole, before 上飞机
    # a document word the rest of the question says is not added; 洗衣机洗 holds 机洗 only across two words
    assert everyday_words("冰原棉服能扔洗衣机洗吗") == ["机洗"]
    assert everyday_words("退款几天到账") == []  # 到账 is 退款, which it says
    assert everyday_words("这双鞋防水吗") == [] and everyday_words("can i wear it in the shower") == []
    assert document_words("S1耳机能戴着洗澡吗") == ["淋浴"]
    assert document_words("are the earbuds waterproof") == chinese_words("are the earbuds waterproof")


def test_a_comparison_by_weight_or_price_asks_the_attribute():
    assert everyday_words("轻羽3和轻羽Pro哪个更轻") == ["重量"]
    assert everyday_words("火焰7和轻羽3哪个贵") == ["价格"]
    assert everyday_words("T20和T24哪个更重 重量多少") == []  # it says 重量 itself


def test_regions_and_delivery_times_only_in_a_question_about_delivery():
    def zoned(question: str) -> list[str]:
        return everyday_words(question, shop=DEMO_SHOP)

    assert zoned("寄到上海一般几天能到") == ["江浙沪", "送达", "配送时效"]
    assert zoned("上海东方明珠的母公司是什么") == []  # 上海 is in 江浙沪 only for a parcel
    assert zoned("退款一般几天能到账") == []  # 几天能到 is a parcel's, not a refund's
    assert zoned("我在上海几天能到") == ["江浙沪", "送达", "配送时效"]  # a part of 发顺丰要加多少钱 我在上海几天能到
    assert zoned("我在北京 几天能到") == ["其他地区", "送达", "配送时效"]  # neither 江浙沪 nor remote
    assert zoned("能发到广州吗") == ["其他地区"]
    assert zoned("黑龙江龙属化石被发现的地点是哪里") == []  # 发现 sends nothing
    # how long a parcel takes, however it is asked; how long until it is sent is the sending time
    assert zoned("寄到成都要几天") == ["其他地区", "送达", "配送时效"]
    assert zoned("发货要几天") == ["发货时效"]
    assert zoned("要几天才能学会") == []  # nothing is sent


def test_zones_are_the_shops_own_words():
    # without a shop profile a place is in no zone; how long delivery takes is every shop's word
    assert everyday_words("寄到上海一般几天能到") == ["送达", "配送时效"]
    assert everyday_words("能发到广州吗") == []
    assert document_query("寄到上海一般几天能到") == "寄到上海一般 送达 配送时效"
    island = ShopProfile(delivery_zones={"离岛": ["澎湖", "金门"], "本岛": ["台北", "高雄"]})
    assert everyday_words("寄到澎湖要几天", shop=island) == ["离岛", "送达", "配送时效"]
    assert everyday_words("寄到上海要几天", shop=island) == ["送达", "配送时效"]  # the demo's zones mean nothing here
    assert with_document_words("能寄到高雄吗", island) == "能寄到高雄吗 本岛"


def test_chat_spellings_and_trade_terms():
    assert everyday_words("收到货箱子压坏了咋办") == ["破损", "怎么办"]
    assert everyday_words("轻风防晒等级多少") == ["UPF"]


def test_a_chinese_question_is_scored_with_the_documents_words_in_place_of_its_own():
    assert document_query("S1耳机能戴着洗澡吗") == "s1耳机能戴着 淋浴 吗"
    assert document_query("寄到上海一般几天能到", DEMO_SHOP) == "寄到 江浙沪 一般 送达 配送时效"
    assert document_query("这双鞋防水吗") is None
    assert with_document_words("S1耳机能戴着洗澡吗") == "S1耳机能戴着洗澡吗 淋浴"


def test_a_broken_everyday_glossary_is_named(tmp_path):
    bad = tmp_path / "glossary_zh.json"
    bad.write_text(json.dumps({"words": {"洗澡": ["淋浴"]}, "in_context": [{"words": {}}]}), encoding="utf-8")
    with pytest.raises(ValueError, match="glossary_zh.json: not a valid glossary"):
        everyday_words("能洗澡吗", bad)


def test_names_the_glossary_does_not_translate_stay_in_the_documents_wording():
    assert english_names("Do you ship to Hong Kong?") == ["hong kong"]
    assert english_names("Hi, do you accept PayPal?") == ["paypal"]  # Hi, do: openers, not names
    assert english_names("Does the XZ-3000 support USB-C charging?") == ["usb-c"]  # the model number is _NAME's
    assert english_names("Can I choose SF Express?") == []  # a glossary phrase: 顺丰
    assert english_names("Any discount for students?") == english_names("where do orders ship from?") == []
    # said as written, or in the characters whose pinyin it is, syllable by syllable
    assert says_name("Orders ship from our Shenzhen warehouse.", "shenzhen")
    assert says_name("声屿 S1 是一款入耳式真无线耳机", "shengyu") and says_name("云迹 B15 城市通勤双肩包", "yunji")
    assert not says_name("配送时效：江浙沪地区：发货后 1-2 天送达", "hong kong")
    assert not says_name("声屿 S1 耳机", "shengyuan") and not says_name("声屿 S1 耳机", "engyu")  # whole syllables


def test_what_an_english_question_asks_in_the_glossarys_words():
    assert chinese_concepts("Do you accept cash on delivery?") == [("货到付款",)]
    # one entry per word or phrase, the phrase and not its words
    assert chinese_concepts("whats the minimum order for free shipping") == [("订单",), ("包邮",)]
    assert chinese_concepts("你们支持货到付款吗") == []  # a Chinese question
