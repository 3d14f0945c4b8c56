"""Evidence about a sibling of the entity a question names (agents/entity_scope.py): records of one
template, product pages of one series, and what is never a sibling (FAQ entries, other kinds of
document, a page that names the asked entity itself)."""

from __future__ import annotations

from citescope.agents.entity_scope import about_other_entities
from citescope.knowledge.schema import Chunk


def chunk(chunk_id: str, title: str, text: str, doc_type: str = "doc", category: str | None = None) -> Chunk:
    return Chunk(chunk_id=chunk_id, doc_id=chunk_id, title=title, text=text, doc_type=doc_type, category=category)


RECORDS = [
    chunk("tang", "唐霞的住院病历", "患者唐霞，女，52岁。血型：A型"),
    chunk("yao", "姚美静的住院病历", "患者姚美静，女，54岁。过敏史：青霉素过敏"),
    chunk("faq", "病历可以复印吗？", "可以，凭身份证到病案室复印。", doc_type="faq"),
]

EARPHONES = [
    chunk("p9", "极岚 听澜P9 运动蓝牙耳机", "保修：1年"),
    chunk("s3", "声悦 听澜S3 无线降噪耳机", "保修：2年"),
    chunk("p3", "极岚 云雀P3 运动蓝牙耳机", "保修：2年"),
]


def test_a_siblings_record_does_not_answer_a_question_naming_another_record():
    assert about_other_entities("唐霞有什么过敏史？", RECORDS) == [False, True, False]
    assert about_other_entities("姚美静对什么过敏？", RECORDS) == [True, False, False]


def test_a_question_naming_no_entity_counts_every_passage():
    assert about_other_entities("过敏史一般写在哪里？", RECORDS) == [False, False, False]


def test_titles_are_named_by_their_parts_and_a_comparison_counts_both():
    assert about_other_entities("极岚 听澜P9保修多久？", EARPHONES) == [False, True, True]
    assert about_other_entities("极岚听澜p9保修多久？", EARPHONES) == [False, True, True]  # spaces, case
    assert about_other_entities("极岚的耳机保修多久？", EARPHONES) == [False, True, False]  # the brand names two
    assert about_other_entities("听澜P9和云雀P3哪个保修更长？", EARPHONES) == [False, True, False]


def test_a_page_that_names_the_asked_entity_still_counts():
    table = chunk("cmp", "声悦 听澜S3 无线降噪耳机", "与极岚 听澜P9 相比，续航多 2 小时。")
    assert about_other_entities("极岚 听澜P9续航多久？", [EARPHONES[0], table]) == [False, False]


def test_other_kinds_of_document_and_other_categories_are_not_siblings():
    policy = chunk("ret", "退换货政策", "签收后7天内可无理由退货。", doc_type="policy")
    assert about_other_entities("极岚 听澜P9可以退货吗？", [EARPHONES[0], policy]) == [False, False]
    bag = chunk("bag", "极岚 行者 双肩包", "保修：3年", doc_type="product", category="背包")
    phone = chunk("ph", "极岚 听澜P9 耳机", "保修：1年", doc_type="product", category="耳机")
    other = chunk("ph2", "声悦 听澜S3 耳机", "保修：2年", doc_type="product", category="耳机")
    assert about_other_entities("极岚 听澜P9保修多久？", [phone, bag, other]) == [False, False, True]


def test_a_product_the_shop_found_named_by_an_alias_always_counts():
    low = Chunk(
        chunk_id="low",
        doc_id="low",
        title="Air Jordan 1 Low 低帮板鞋",
        text="鞋舌：Jumpman",
        doc_type="product",
        product_id="p-low",
        category="运动鞋",
    )
    high = Chunk(
        chunk_id="high",
        doc_id="high",
        title="Air Jordan 1 Retro High OG 芝加哥",
        text="鞋舌：Nike Air",
        doc_type="product",
        product_id="p-high",
        category="运动鞋",
    )
    question = "aj1低帮和高帮芝加哥 鞋舌上的标一样吗"  # 低帮 is the low's alias, not a word of its title
    assert about_other_entities(question, [low, high]) == [True, False]
    assert about_other_entities(question, [low, high], named_products=["p-low", "p-high"]) == [False, False]
