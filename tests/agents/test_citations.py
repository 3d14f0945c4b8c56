"""Citation parsing: every variant a model writes, and answers split into cited sentences."""

from __future__ import annotations

import pytest

from citescope.agents.citations import (
    SentenceCutter,
    is_factual,
    looks_like_id,
    normalize_citations,
    parse_citations,
    part_not_found,
    quotable,
    split_sentences,
    strip_citations,
)

RET = "policy-returns-2026#无理由退换-0"


@pytest.mark.parametrize(
    ("text", "ids", "normalized"),
    [
        (f"退货期限15天。【{RET}】", [RET], f"退货期限15天。【{RET}】"),
        (f"15天【来源ID: {RET}】。", [RET], f"15天【{RET}】。"),
        (f"15天【来源：{RET}】", [RET], f"15天【{RET}】"),
        (f"15天【来源ID：{RET}】", [RET], f"15天【{RET}】"),
        (
            "价格299元[sku-p-xz3000#sku-XZ3000-GRY]",
            ["sku-p-xz3000#sku-XZ3000-GRY"],
            "价格299元【sku-p-xz3000#sku-XZ3000-GRY】",
        ),
        (
            "价格299元［sku-p-xz3000#sku-XZ3000-GRY］",
            ["sku-p-xz3000#sku-XZ3000-GRY"],
            "价格299元【sku-p-xz3000#sku-XZ3000-GRY】",
        ),
        ("见【a#b-0】【c#d-1】", ["a#b-0", "c#d-1"], "见【a#b-0】【c#d-1】"),
        ("见【a#b-0】 【c#d-1】", ["a#b-0", "c#d-1"], "见【a#b-0】【c#d-1】"),
        ("见【a#b-0, c#d-1】", ["a#b-0", "c#d-1"], "见【a#b-0】【c#d-1】"),
        ("见【a#b-0；c#d-1】", ["a#b-0", "c#d-1"], "见【a#b-0】【c#d-1】"),
        ("见【a#b-0，c#d-1、e#f-2】", ["a#b-0", "c#d-1", "e#f-2"], "见【a#b-0】【c#d-1】【e#f-2】"),
        ("见【 bx-00001 # body-0 】", ["bx-00001#body-0"], "见【bx-00001#body-0】"),
        ("见【bx-00001#body-0]", ["bx-00001#body-0"], "见【bx-00001#body-0】"),
        ("见（来源：faq-001）", ["faq-001"], "见【faq-001】"),
        ("答案【cmrc-DEV_0】", ["cmrc-DEV_0"], "答案【cmrc-DEV_0】"),
        ("答案[cmrc-DEV_0]", ["cmrc-DEV_0"], "答案【cmrc-DEV_0】"),
        # a heading with 、 inside a chunk id stays one id
        ("见【prod-x#材质、产地-0】", ["prod-x#材质、产地-0"], "见【prod-x#材质、产地-0】"),
        # a heading with ？ inside a chunk id stays one id
        ("见【doc#为什么选我们？-0】。", ["doc#为什么选我们？-0"], "见【doc#为什么选我们？-0】。"),
        # not ids: positional markers, bracketed words, prose in parentheses
        ("参考[1]和[2]", [], "参考[1]和[2]"),
        ("[图片] 【注意】 [USB-C]", [], "[图片] 【注意】 [USB-C]"),
        ("容量 20000mAh（3.7V / 74Wh）", [], "容量 20000mAh（3.7V / 74Wh）"),
    ],
)
def test_citation_variants(text, ids, normalized):
    assert parse_citations(text) == ids
    assert normalize_citations(text) == normalized


def test_full_width_id_characters_are_normalised():
    assert parse_citations("见【faq－001】") == ["faq-001"]


def test_known_ids_keep_an_id_whole_even_with_separators_inside():
    odd = "doc#规格，尺码-0"
    assert parse_citations(f"见【{odd}】", known_ids={odd}) == [odd]


@pytest.mark.parametrize(
    ("token", "strict", "expected"),
    [
        ("doc-id#section-0", False, True),
        ("sku-p-x#sku-ABC", True, True),
        ("cmrc-DEV_0", True, True),
        ("prod-mm-tote", False, True),
        ("prod-mm-tote", True, False),  # square brackets need a digit or '#'
        ("1", False, False),
        ("图片", False, False),
        ("OK", False, False),
        ("#section", False, False),
        ("a#b#c", False, False),
    ],
)
def test_looks_like_id(token, strict, expected):
    assert looks_like_id(token, strict) is expected


def test_strip_citations_keeps_other_brackets():
    assert strip_citations("价格299元【a#b-0】，见[图片]") == "价格299元，见[图片]"


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("《战国无双3》（）是由光荣和ω-force开发的。", "《战国无双3》是由光荣和ω-force开发的"),
        ("伊维卡·奥利奇（，；），克罗地亚足球运动员", "伊维卡·奥利奇，克罗地亚足球运动员"),
        (
            "莱昂德罗·内托（Leandro Netto de Macedo,），巴西足球运动员",
            "莱昂德罗·内托（Leandro Netto de Macedo），巴西足球运动员",
        ),
        ("中国零点场票房第一（ ...", "中国零点场票房第一"),  # a snippet cut after its bracket opened
        # a snippet cut: the clause it cut goes (a number cut short, a clause without its verb) ...
        ("2021年，塔里木油田产量突破3000万吨之后，又 ...", "2021年，塔里木油田产量突破3000万吨之后"),
        ("美团第二季度营收509 ...", ""),  # ... and a sentence of one clause with it
        ("1819年5月24日—1901年1月22日），全名亚历山德 ...", "1819年5月24日—1901年1月22日"),  # begun inside a bracket
        ("质量还行吧...", "质量还行吧"),  # a writer's own ellipsis is no cut
        ("梁雅琳（1987-）是歌手", "梁雅琳（1987-）是歌手"),  # brackets that hold something stay
        ("按公式f(x)计算", "按公式f(x)计算"),
        ("杜老志，Malcolm Struan Tonnochy，（），英国人", "杜老志，Malcolm Struan Tonnochy，英国人"),
        ("大臣们请求立徐夫人为-{后}-", "大臣们请求立徐夫人为后"),  # a wiki's script-variant markup
        ("球员-{zh-hk:罗伯列斯;zh-hans:罗伯斯;zh-tw:罗伯斯;}-入选", "球员罗伯斯入选"),
        ("人口为1,000,000人", "人口为1,000,000人"),
        ("松鸦（学名：），又名㭴鸟", "松鸦，又名㭴鸟"),
        ("谢尔（法语：）是瑞士的一座城市", "谢尔是瑞士的一座城市"),
        ("松鸦（学名：Garrulus glandarius）", "松鸦（学名：Garrulus glandarius）"),
    ],
)
def test_a_quote_drops_the_debris_a_page_markup_left(text, quoted):
    assert quotable(text) == quoted


def test_split_sentences_attaches_trailing_citations():
    answer = (
        "您好！退货期限为15天。【policy-returns-2026#x-0】运费由运费险赔付【a#b-0】【c#d-1】。\n"
        "【e#f-0】\n- 1. 以下是相关信息：\n如需帮助请联系客服。"
    )
    sentences = split_sentences(answer)
    assert [(s.text, s.cited_ids, s.is_factual) for s in sentences] == [
        ("您好！", [], False),
        ("退货期限为15天。", ["policy-returns-2026#x-0"], True),
        ("运费由运费险赔付。", ["a#b-0", "c#d-1", "e#f-0"], True),  # a citation line joins the sentence before
        ("以下是相关信息：", [], False),
        ("如需帮助请联系客服。", [], False),
    ]


def test_split_sentences_keeps_decimals_and_inline_list_numbers():
    sentences = split_sentences("重量 26.5 克，搭配：1. 白T 2. 牛仔裤【a#b-0】。It costs 899. Done【c#d-0】.")
    assert [s.text for s in sentences] == ["重量 26.5 克，搭配：1. 白T 2. 牛仔裤。", "It costs 899. Done."]
    assert [s.cited_ids for s in sentences] == [["a#b-0"], ["c#d-0"]]


def test_a_question_mark_inside_an_id_does_not_end_the_sentence():
    sentences = split_sentences("见说明【doc#为什么？-0】。下一句【a#b-0】。")
    assert [s.cited_ids for s in sentences] == [["doc#为什么？-0"], ["a#b-0"]]


@pytest.mark.parametrize(
    ("sentence", "factual"),
    [
        ("您好！", False),
        ("感谢您的咨询。", False),
        ("如需帮助请联系客服。", False),
        ("以下是为您查到的信息：", False),
        ("抱歉，知识库中暂未找到可靠信息来回答这个问题。", False),
        ("为避免误导您，建议您换个问法，或转人工客服进一步确认。", False),
        ("退货期限为15天。", True),
        ("该商品不支持货到付款。", True),
        ("建议选M码。", True),
    ],
)
def test_is_factual(sentence, factual):
    assert is_factual(sentence) is factual


def test_the_not_found_sentence_makes_no_claim_and_keeps_its_part_in_one_sentence():
    statement = part_not_found("2022年考研报名人数是多少？它还有吗？")
    assert statement == "关于“2022年考研报名人数是多少，它还有吗”，资料中暂未找到可靠信息。"
    [sentence] = split_sentences(statement)
    assert not sentence.is_factual and not is_factual(statement.rstrip("。"))
    assert is_factual(statement + "价格是299元")  # a claim after it is a claim
    english = part_not_found("When does it ship?", english=True)
    assert english == 'No reliable information was found on "When does it ship".'
    assert [s.is_factual for s in split_sentences("It costs 5 yuan【a#b-0】. " + english)] == [True, False]


def test_a_growing_answer_is_cut_into_the_sentences_split_sentences_reads():
    """Fed a character at a time, the cutter returns each sentence once nothing after it can still
    belong to it (its citations included); the pieces join back into the text."""
    text = f"您好！退货期限是15天。【{RET}】 运费由买家承担【{RET}】。\n- 第二行【{RET}】\n最后一句没有句号"
    cutter = SentenceCutter()
    cuts = [(end, piece) for end in range(1, len(text) + 1) for piece in cutter.feed(text[:end])]
    pieces = [piece for _, piece in cuts] + cutter.finish(text)
    assert "".join(pieces) == text
    assert [p.strip().lstrip("- ") for p in pieces] == [
        "您好！",
        f"退货期限是15天。【{RET}】",
        f"运费由买家承担【{RET}】。",
        f"第二行【{RET}】",
        "最后一句没有句号",
    ]
    first_cited_at = cuts[1][0]  # the sentence waits for the bracket behind it, and what follows
    assert text[:first_cited_at].endswith(f"【{RET}】 运")  # a space may still be followed by a citation
    assert [s.cited_ids for p in pieces for s in split_sentences(p)] == [s.cited_ids for s in split_sentences(text)]
