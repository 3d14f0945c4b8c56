"""Inspector: invalid ids, uncited sentences, unsupported numbers/terms, undisclosed conflicts.

Evidence is made of real chunks of the demo documents (loaded and chunked, not embedded), so
ids and texts are exactly what the answerer would see.
"""

from __future__ import annotations

import pytest

from citescope.agents.inspector import Inspector, cited_doc_ids, facts_of
from citescope.agents.prompts import load_prompt
from citescope.knowledge.chunking import chunk_document
from citescope.knowledge.loaders import load_path
from citescope.tools.base import EvidenceHit
from tests.conftest import DEMO_DIR

RET26 = "policy-returns-2026#无理由退换-0"
RET24 = "policy-returns-2024#无理由退换-0"
XZ3000_INTRO = "prod-xz3000#商品简介-0"
XZ3000_SKU = "sku-p-xz3000#sku-XZ3000-GRY"
JG700_M = "prod-bjy-jiguang700#尺码表-r1-0"


@pytest.fixture(scope="module")
def evidence() -> list[EvidenceHit]:
    wanted = {RET26, RET24, XZ3000_INTRO, XZ3000_SKU, JG700_M}
    hits = []
    for path in ("policies", "products/p-xz3000.md", "products/p-bjy-jiguang700.md", "skus.csv"):
        documents, issues, _ = load_path(DEMO_DIR / path)
        assert not issues
        for document in documents:
            hits += [EvidenceHit.from_chunk(c, 1.0) for c in chunk_document(document) if c.chunk_id in wanted]
    assert {h.chunk_id for h in hits} == wanted
    return hits


@pytest.fixture(scope="module")
def inspector() -> Inspector:
    return Inspector()


def test_a_good_answer_passes(inspector, evidence):
    answer = f"您好！自签收次日起 15 天内可以无理由退换【{RET26}】。如需帮助请联系客服。"
    report = inspector.run(answer, evidence)
    assert report.passed, report
    assert report.coverage == 1.0 and report.factual_sentences == 1 and report.sentences == 3
    assert report.cited_ids == [RET26]


def test_an_id_that_was_not_shown_is_invalid(inspector, evidence):
    report = inspector.run("退货期限为15天【policy-returns-2026#不存在-0】。", evidence)
    assert not report.passed
    assert report.invalid_ids == ["policy-returns-2026#不存在-0"]
    assert report.uncited == ["退货期限为15天。"]  # an invalid citation cites nothing


def test_a_doc_id_is_not_a_valid_citation(inspector, evidence):
    report = inspector.run("退货期限为15天【policy-returns-2026】。", evidence)
    assert report.invalid_ids == ["policy-returns-2026"] and not report.passed


def test_an_uncited_factual_sentence_fails(inspector, evidence):
    answer = f"自签收次日起 15 天内可以无理由退换【{RET26}】。星择 XZ-3000 单口最大 65W 输出。"
    report = inspector.run(answer, evidence)
    assert not report.passed
    assert report.uncited == ["星择 XZ-3000 单口最大 65W 输出。"]
    assert report.coverage == 0.5
    assert Inspector(min_coverage=0.5).run(answer, evidence).passed


def test_a_wrong_number_is_unsupported(inspector, evidence):
    report = inspector.run(f"退货期限为30天【{RET26}】。", evidence)
    assert not report.passed
    assert [(u.sentence, u.missing) for u in report.unsupported] == [("退货期限为30天。", ["30天"])]
    assert inspector.run(f"退货期限为15天【{RET26}】。", evidence).passed


def test_a_number_written_in_chinese_numerals_supports_the_same_number():
    inspector = Inspector()
    news = [
        EvidenceHit(chunk_id="n-1#body-0", doc_id="n-1", text="在队两年多，孔卡率领球队夺得三次中超冠军。", score=1.0)
    ]
    assert inspector.run("在队2年多，孔卡率领球队夺得3次中超冠军【n-1#body-0】。", news).passed
    assert not inspector.run("在队3年多，孔卡率领球队夺得3次中超冠军【n-1#body-0】。", news).passed


def test_a_number_with_the_wrong_unit_is_unsupported(inspector, evidence):
    # 15 appears in the chunk as 15天, not as a price
    report = inspector.run(f"无理由退换需支付15元【{RET26}】。", evidence)
    assert report.unsupported and report.unsupported[0].missing == ["15元"]


def test_a_wrong_model_number_is_unsupported(inspector, evidence):
    report = inspector.run(f"XZ-2000 单口最大 65W 输出【{XZ3000_INTRO}】。", evidence)
    assert report.unsupported[0].missing == ["XZ2000"]
    assert inspector.run(f"xz3000 单口最大 65W 输出【{XZ3000_INTRO}】。", evidence).passed


def test_price_forms_are_normalised(inspector, evidence):
    for claim in ("XZ-3000 售价 ¥299", "XZ-3000 售价 299 元", "XZ-3000 售价299.00元", "XZ-3000 售价 299"):
        assert inspector.run(f"{claim}【{XZ3000_SKU}】。", evidence).passed, claim
    assert not inspector.run(f"XZ-3000 售价 1,299 元【{XZ3000_SKU}】。", evidence).passed


def test_content_words_must_mostly_appear(inspector, evidence):
    report = inspector.run(f"这款充电宝自带太阳能板和手电筒照明功能【{XZ3000_INTRO}】。", evidence)
    assert report.unsupported and "太阳能" in "".join(report.unsupported[0].missing)
    assert inspector.run(f"它可以给 MacBook Air 等笔记本电脑供电【{XZ3000_INTRO}】。", evidence).passed


def test_the_users_own_numbers_from_the_question_count_as_given(inspector, evidence):
    question = "身高170厘米、体重62公斤，北极驿极光700应该选哪个码？"
    answer = f"身高170厘米、体重62公斤，建议选 M 码（适合身高 165-172cm）【{JG700_M}】。"
    assert inspector.run(answer, evidence, question=question).passed
    assert not inspector.run(answer, evidence).passed


def test_dates_must_match_the_cited_chunk(inspector, evidence):
    good = f"2026-06-01 的新版政策为：自签收次日起15天无理由退换【{RET26}】。"
    assert inspector.run(good, evidence).passed
    bad = inspector.run(good.replace("2026-06-01", "2025-06-01"), evidence)
    assert bad.unsupported[0].missing == ["2025-06-01"]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("15天", "15 天"),
        ("1,299元", "1299 元"),
        ("¥899", "899元"),
        ("899.00元", "899元"),
        ("XZ-3000", "xz3000"),
        ("2026年6月1日", "2026-06-01"),
        ("1-3 个工作日", "1 至 3 工作日"),
        ("4.8克", "4.8 g"),
        ("55×38×20cm", "55cm 38cm 20cm"),  # a size's dimensions share the unit written last
        ("299美元", "299 usd"),
    ],
)
def test_facts_normalisation(a, b):
    assert facts_of(a) == facts_of(b)


def test_a_unit_the_evidence_never_gives_its_number_is_unsupported(inspector, evidence):
    """299美元 is no price in 元 (美元 is a unit of its own), 420千克 not 420克."""
    assert inspector.run(f"价格 299.00美元【{XZ3000_SKU}】。", evidence).unsupported[0].missing == ["299usd"]
    assert inspector.run(f"价格 299.00元【{XZ3000_SKU}】。", evidence).passed


def test_a_contradicting_sentence_is_unsupported_with_the_rule_that_fired(inspector, evidence):
    report = inspector.run(f"自签收次日起 15 天内不支持无理由退换【{RET26}】。", evidence)
    assert not report.passed and report.unsupported[0].missing == []
    assert report.rules_fired == ["polarity.negation"]
    assert "polarity.negation" in report.findings() and "矛盾" in report.findings()


def test_a_value_is_mentioned_only_with_its_numbers_whole(inspector):
    assert inspector.mentions("自签收之日起 7天无理由退换", "7天")
    assert inspector.mentions("自签收之日起１５天无理由退换", "15天")  # width-normalised
    assert not inspector.mentions("自签收之日起 17天无理由退换", "7天")
    assert not inspector.mentions("售价 12990 元", "1299")


def test_conflict_must_be_disclosed_with_both_values_cited(inspector, evidence):
    conflicts = pytest.importorskip("citescope.agents.conflicts")
    conflict = conflicts.Conflict(
        attribute="无理由退换期限",
        entity="退换货政策",
        values=[
            conflicts.ConflictValue(
                value="15天",
                chunk_id=RET26,
                updated_at="2026-06-01",
                authority="official",
                sentence="自签收次日起 15天无理由退换",
            ),
            conflicts.ConflictValue(
                value="7天",
                chunk_id=RET24,
                updated_at="2024-05-01",
                authority="official",
                sentence="自签收之日起 7天无理由退换",
            ),
        ],
    )
    one_sided = f"自签收次日起 15 天内可以无理由退换【{RET26}】。"
    report = inspector.run(one_sided, evidence, [conflict])
    assert not report.passed and report.missing_conflicts == ["无理由退换期限"]

    wrong_citation = f"新版政策为15天，旧版为7天【{RET26}】。"
    assert inspector.run(wrong_citation, evidence, [conflict]).missing_conflicts == ["无理由退换期限"]

    disclosed = (
        f"不同来源说法不一致：2026-06-01 的新版政策为自签收次日起 15 天无理由退换【{RET26}】；"
        f"2024-05-01 的旧版政策为 7 天【{RET24}】，以最新政策为准。"
    )
    report = inspector.run(disclosed, evidence, [conflict])
    assert report.passed, report


def test_findings_name_every_problem(inspector, evidence):
    answer = f"退货期限为30天【{RET26}】。星择 XZ-3000 单口最大 65W 输出。详见【nope#x-0】。"
    findings = inspector.run(answer, evidence).findings()
    assert "nope#x-0" in findings and "30天" in findings and "星择 XZ-3000 单口最大 65W 输出。" in findings


def test_cited_doc_ids(evidence):
    ids = [RET26, RET24, RET26, "policy-returns-2026", "gone-doc#x-0"]
    assert cited_doc_ids(ids, evidence) == ["policy-returns-2026", "policy-returns-2024", "gone-doc"]


def test_load_prompt_fills_placeholders_and_keeps_other_braces():
    text = load_prompt("inspector_judge", claims="1. 答【a#b-0】 {x}")
    assert "1. 答【a#b-0】 {x}" in text
    assert "{claims}" not in text and '{"verdicts": [{"sentence": 1,' in text
    assert "{question}" in load_prompt("answerer", evidence="e", conflicts="无")  # unknown stays as written


def test_load_prompt_names_a_missing_file():
    with pytest.raises(FileNotFoundError, match=r"no_such_prompt\.md"):
        load_prompt("no_such_prompt")


def test_every_prompt_is_chinese_first_and_the_refusal_is_fixed():
    for name in ("answerer", "answerer_retry", "inspector_judge", "refusal"):
        first_line = load_prompt(name).strip().splitlines()[0]
        assert any("\u4e00" <= ch <= "\u9fff" for ch in first_line[:10]), name
    assert load_prompt("refusal").strip() == (
        "抱歉，知识库中暂未找到可靠信息来回答这个问题。为避免误导您，建议您换个问法，或转人工客服进一步确认。"
    )
    for placeholder in ("{question}", "{evidence}", "{conflicts}"):
        assert placeholder in load_prompt("answerer") and placeholder in load_prompt("answerer_retry")
    assert "{findings}" in load_prompt("answerer_retry")


def test_each_sentence_is_checked_on_its_own_as_the_whole_answer_checks_it(inspector, evidence):
    """The streamed answer sends a sentence when check_sentence passes it: the whole answer's
    verdict is the one its sentences' verdicts give (the conflicts aside)."""
    good = f"您好！自签收次日起 15 天内可以无理由退换【{RET26}】。"
    invented = "退货期限为15天【policy-returns-2026#不存在-0】。"
    wrong = f"退货期限为30天【{RET26}】。"
    verdicts = inspector.verdicts(good + invented + wrong, evidence)
    assert [v.passed for v in verdicts] == [True, True, False, False]
    assert verdicts[2].invalid_ids == ["policy-returns-2026#不存在-0"] and verdicts[2].uncited
    assert verdicts[3].missing == ["30天"] and verdicts[3].valid_ids == [RET26]
    for answer in (good, good + invented, good + wrong):
        assert inspector.report(inspector.verdicts(answer, evidence)) == inspector.run(answer, evidence)
    assert inspector.run(good, evidence).passed and not inspector.run(good + wrong, evidence).passed


def test_a_claim_reader_rejects_what_it_reads_as_contradicted_and_passes_the_rest(evidence, tmp_path):
    from citescope.agents.claim_reader import ClaimReader
    from tests.support.claim_model import constant_claim_model

    answer = f"自签收次日起 15 天内可以无理由退换【{RET26}】。"
    assert Inspector().run(answer, evidence).passed  # the rules alone pass it
    contradicting = ClaimReader(constant_claim_model(tmp_path / "c", "contradicted"), tmp_path / "cache").warm_up()
    report = Inspector(claim_reader=contradicting).run(answer, evidence)
    assert not report.passed
    assert [hit.rule for hit in report.unsupported[0].contradicted] == ["reader.contradicted"]
    assert "P=1.00" in report.unsupported[0].contradicted[0].evidence
    # a sentence citing nothing the reader can read is the rules' to judge, not the reader's
    assert Inspector(claim_reader=contradicting).run("您好，请问还有什么可以帮您？", evidence).passed

    supporting = ClaimReader(constant_claim_model(tmp_path / "s", "supported"), tmp_path / "cache").warm_up()
    assert Inspector(claim_reader=supporting).run(answer, evidence).passed
    # the reader reads the claim without the answer's frame (the cited page's title, a user's voice)
    read: list[tuple[str, str]] = []
    check = supporting.check
    supporting.check = lambda pairs: read.extend(pairs) or check(pairs)  # type: ignore[method-assign]
    title = next(hit.title for hit in evidence if hit.chunk_id == RET26)
    framed = f"根据《{title}》，自签收次日起 15 天内可以无理由退换【{RET26}】。"
    Inspector(claim_reader=supporting).run(framed, evidence)
    assert [claim for claim, _ in read] == ["自签收次日起 15 天内可以无理由退换。"]
    # a table row's fields are the rules' to check: the reader (trained on prose) does not read rows
    row = EvidenceHit(
        chunk_id="sku-1#sku-A1", doc_id="sku-1", title="胸包", text="商品: 胸包；颜色: 黑；价格: 159.00元", score=1
    )
    assert Inspector(claim_reader=contradicting).run("胸包（黑）：价格 159.00元【sku-1#sku-A1】。", [row]).passed
    lenient = Inspector(claim_reader=contradicting, claim_reject_above=1.0)  # P never exceeds 1
    assert lenient.run(answer, evidence).passed


def test_a_sentence_citing_only_a_siblings_evidence_must_say_whose_fact_it_is():
    """The rank stage names the chunks about a sibling of the entity asked (Ranking.siblings); an LLM that
    answers 风行 逐光X3的电池容量 from 极岚 听澜X3's sheet states another product's fact as the answer."""
    own = EvidenceHit(
        chunk_id="spec-1#body-0", doc_id="spec-1", title="风行 逐光X3 无线降噪耳机", text="续航：26小时", score=0.6
    )
    other = EvidenceHit(
        chunk_id="spec-2#body-0", doc_id="spec-2", title="极岚 听澜X3 头戴式耳机", text="电池容量：320mAh", score=0.5
    )
    question, siblings = "风行 逐光X3的电池容量是多少？", {"spec-2#body-0"}
    inspector = Inspector()
    stray = "电池容量为 320mAh【spec-2#body-0】。"
    assert inspector.run(stray, [own, other], question=question).passed  # without the rank stage's siblings
    report = inspector.run(stray, [own, other], question=question, siblings=siblings)
    assert not report.passed and [h.rule for u in report.unsupported for h in u.contradicted] == ["entity.sibling"]
    # side by side, naming the sibling, it is a fact of the evidence
    beside = "资料未写逐光X3的电池容量【spec-1#body-0】。极岚 听澜X3 的电池容量为 320mAh【spec-2#body-0】。"
    assert inspector.run(beside, [own, other], question=question, siblings=siblings).passed
    # the entity's own evidence is no sibling's
    assert inspector.run("续航为 26小时【spec-1#body-0】。", [own, other], question=question, siblings=siblings).passed


def test_the_claim_reader_reads_an_amount_as_its_evidence_writes_it():
    """What the reader judges is what the evidence says, not how the answer writes an amount: the same
    amount (the rules' unit table) is written the evidence's way; another amount, a date, a model
    number and a different kind of amount are left as the answer wrote them."""
    from citescope.agents.inspector import as_evidence_writes, claims_as_read

    evidence = "价格 299.00元，保修期1年，重量约 1.2kg，2026年3月1日起生效，型号 XZ-3000，容量 2万mAh。"
    assert as_evidence_writes("价格 299元，保修12个月", evidence) == "价格 299.00元，保修1年"
    assert as_evidence_writes("重量约 1200g，容量 20000mAh", evidence) == "重量约 1.2kg，容量 2万mAh"
    for kept in ("价格 399元", "重量约 1.2kg", "2026年3月1日起生效", "XZ-3000 的价格", "共 299 件", "保修期一年"):
        assert as_evidence_writes(kept, evidence) == kept
    hit = EvidenceHit(chunk_id="p#0", doc_id="p", title="星择 XZ-3000 充电宝", text=evidence, score=1)
    assert claims_as_read("星择 XZ-3000 充电宝：保修12个月。", [hit]) == [("保修1年。", evidence)]
    row = EvidenceHit(chunk_id="s#0", doc_id="s", title="星择", text="商品: 星择；颜色: 黑；价格: 299.00元", score=1)
    assert claims_as_read("星择（黑）：价格 299元。", [row]) == []
    assert claims_as_read("保修12个月。", [row, hit]) == [("保修1年。", evidence)]  # the row is left out


def test_sources_that_disagree_laid_side_by_side_are_read_one_by_one():
    """A disclosure (agents/extractive/disclosure.py) states each source's value: together they match
    neither source, so each part is read, unframed, against the cited chunk nearest it."""
    from citescope.agents.inspector import claims_as_read

    new = EvidenceHit(chunk_id="r26#0", doc_id="r26", title="退换货政策（2026版）", score=1,
                      text="仓库签收退货并验货通过后，退款在 1-3 个工作日内原路退回至支付账户。")  # fmt: skip
    old = EvidenceHit(chunk_id="r24#0", doc_id="r24", title="退换货政策（2024版）", score=1,
                      text="仓库签收退货并验货通过后，退款在 3-5 个工作日内原路退回。")  # fmt: skip
    # each part in other words than its source's (a part its source states word for word is not read)
    told = (
        "不同来源说法不一致：2026-06-01 的《退换货政策（2026版）》为：退款 1-3 个工作日内原路退回至支付账户；"
        "2024-05-01 的《退换货政策（2024版）》为：退款 3-5 个工作日内原路退回，以最新政策为准。"
    )
    assert claims_as_read(told, [new, old]) == [
        ("退款 1-3 个工作日内原路退回至支付账户", new.text),
        ("退款 3-5 个工作日内原路退回。", old.text),
    ]
    # a part goes to the source it names, even when another source shares more of its words
    both = "退款在 1-3 个工作日内原路退回。旧版：退款在 3-5 个工作日内原路退回。"  # as many shared pairs as `old`
    wider = EvidenceHit(chunk_id="r26#1", doc_id="r26", title="退换货政策（2026版）", text=both, score=1)
    named = "2024-05-01 的《退换货政策（2024版）》为：退款 3-5 个工作日内原路退回；《退换货政策（2026版）》为：1-3 天"
    assert [evidence for _, evidence in claims_as_read(named, [wider, old])] == [old.text, wider.text]
    official = EvidenceHit(chunk_id="p#0", doc_id="p", title="冲锋衣", text="前襟采用防水拉链。", score=1)
    review = EvidenceHit(chunk_id="v#0", doc_id="v", title="评价", text="下雨就渗水。", score=1)
    voices = "官方商品详情页显示：前襟用的是防水拉链；但有用户评价称：下雨会渗水。"
    assert claims_as_read(voices, [official, review]) == [
        ("前襟用的是防水拉链", official.text),
        ("下雨会渗水。", review.text),
    ]
    # the disclosure as the answerer writes it quotes each source: nothing is left to read
    quoted = "官方商品详情页显示：前襟采用防水拉链；但有用户评价称：下雨就渗水。"
    assert claims_as_read(quoted, [official, review]) == []
    # in English too ("; " between the parts, the closing words not read)
    english = (
        "Sources disagree: “退换货政策（2026版）” (2026-06-01) says: 退款 1-3 个工作日内原路退回至支付账户; "
        "“退换货政策（2024版）” (2024-05-01) says: 退款 3-5 个工作日内原路退回; the newest one prevails."
    )
    assert claims_as_read(english, [new, old]) == [
        ("退款 1-3 个工作日内原路退回至支付账户", new.text),
        ("退款 3-5 个工作日内原路退回。", old.text),
    ]


def test_what_a_cited_chunk_states_word_for_word_is_not_read():
    """A quote cannot contradict its own source: whole clauses of a cited chunk, however framed or
    spaced, go to no reader; a stretch that is not a whole clause (支持 inside 不支持) still does."""
    from citescope.agents.claim_reader import stated_word_for_word
    from citescope.agents.inspector import claims_as_read

    care = "洗护：不建议干洗。干洗溶剂会破坏防水膜，请手洗。\n- 拉链：全开襟尼龙拉链，带防夹下巴护片\n- 重量：约 520 克"
    hit = EvidenceHit(chunk_id="c#0", doc_id="c", title="山野 暖岩 摇粒绒夹克", text=care, score=1)
    framed = "山野 暖岩 摇粒绒夹克：拉链：全开襟尼龙拉链，带防夹下巴护片。"
    for quote in ("干洗溶剂会破坏防水膜。", framed, "不建议干洗", "请手洗"):
        assert claims_as_read(quote, [hit]) == [], quote
    for changed in ("干洗溶剂不会破坏防水膜。", "建议干洗。", "拉链：半开襟尼龙拉链。", "溶剂会破坏防水膜。"):
        assert claims_as_read(changed, [hit]), changed
    assert stated_word_for_word("重量：约520克", care)  # spaces do not count
    listed = "功能特点：\n- 容量：20000mAh\n- 输出：65W"  # a label's list, quoted as the answerer joins it
    assert stated_word_for_word("功能特点：容量：20000mAh", listed) and stated_word_for_word("输出：65W", listed)
    assert stated_word_for_word("功能特点：容量：20000mAh.", "功能特点：- 容量：20000mAh。")  # English ends with "."
    assert not stated_word_for_word("温度：5℃", "温度：-5℃")  # a minus is no bullet
    assert not stated_word_for_word("支持货到付款", "本店不支持货到付款。")
    assert stated_word_for_word("不支持货到付款", "付款：不支持货到付款。")
    assert not stated_word_for_word("", care)
