"""Sessions and clarifying questions: SQLite round trip seen by a fresh store, turns appended
concurrently without loss, and the Clarifier on the demo KB (ask for exactly the facts the size
skill needs, ask which product a bare "它", "这双鞋" or a subjectless "适合新手吗？" means, and which of
the products a shared name such as "轻羽" fits; never ask on policy questions, FAQ questions or a
KB that sells nothing) and how a reply completes the waiting question (bare numbers included)."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime

import pytest

from citescope.agents.query_analysis import Entity, QueryAnalyzer
from citescope.workflows.sessions import (
    ASK_PRODUCT,
    FILE_NAME,
    Clarifier,
    PendingTask,
    SessionState,
    SessionStore,
    Turn,
    check_session_id,
    new_session_id,
)
from tests.conftest import DEMO_DIR

FENGREN = Entity(name="山野 峰刃 GTX 冲锋衣", product_id="p-sy-fengren", brand="山野", category="外套")


def turn(question: str, trace_id: str = "t", **extra) -> Turn:
    return Turn(question=question, answer=f"答：{question}", trace_id=trace_id, at=datetime.now(UTC), **extra)


@pytest.fixture(scope="module")
def analyzer(demo_kb) -> QueryAnalyzer:
    return QueryAnalyzer(demo_kb).warm_up()


@pytest.fixture(scope="module")
def clarifier(demo_kb, analyzer) -> Clarifier:
    return Clarifier(demo_kb, analyzer)


def test_store_round_trip_seen_by_a_fresh_store(tmp_path):
    store = SessionStore.for_kb(tmp_path)
    assert store.path == tmp_path / FILE_NAME and store.get("s-1") is None
    pending = PendingTask(
        kind="facts", need=["height_cm", "weight_kg"], question="峰刃冲锋衣穿什么码？", entity=FENGREN, trace_id="t1"
    )
    store.add_turn("s-1", turn("峰刃冲锋衣穿什么码？", "t1", clarification={"kind": "facts"}), FENGREN, pending)
    store.add_turn("s-1", turn("175cm 70kg", "t2", refused=True), FENGREN, None)
    store.add_turn("s-2", turn("退货政策是几天？", "t3"), None, None)
    store.close()

    fresh = SessionStore.for_kb(tmp_path)
    state = fresh.get("s-1")
    assert state.id == "s-1" and state.entity == FENGREN and state.pending is None
    assert [t.question for t in state.turns] == ["峰刃冲锋衣穿什么码？", "175cm 70kg"]
    assert [t.trace_id for t in state.turns] == ["t1", "t2"] and state.turns[1].refused
    assert state.turns[0].clarification == {"kind": "facts"} and state.turns[1].clarification is None
    assert state.created_at == state.turns[0].at <= state.updated_at == state.turns[1].at
    assert fresh.get("s-2").entity is None and len(fresh.get("s-2").turns) == 1
    fresh.add_turn("s-1", turn("它多少钱？", "t4"), FENGREN, pending)
    assert fresh.get("s-1").pending == pending and len(fresh.get("s-1").turns) == 3
    fresh.close()


def test_concurrent_turns_are_all_kept_in_order_per_writer(tmp_path):
    stores = [SessionStore.for_kb(tmp_path) for _ in range(2)]  # two connections, like two processes

    def write(writer: int) -> None:
        for i in range(15):
            stores[writer % 2].add_turn("busy", turn(f"w{writer}-{i}", f"w{writer}-{i}"), None, None)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    turns = stores[0].get("busy").turns
    assert len(turns) == 60 and len({t.trace_id for t in turns}) == 60
    for writer in range(4):
        mine = [t.question for t in turns if t.question.startswith(f"w{writer}-")]
        assert mine == [f"w{writer}-{i}" for i in range(15)]
    for store in stores:
        store.close()


def test_session_ids_are_checked():
    assert check_session_id(" abc ") == "abc" and len(new_session_id()) == 32
    for bad in ("", "   ", "x" * 129, None, 12):
        with pytest.raises(ValueError):
            check_session_id(bad)


def test_size_question_asks_exactly_for_the_missing_facts(clarifier, analyzer):
    asked = clarifier.check(analyzer.run("山野峰刃冲锋衣我穿什么码？"))
    assert asked.kind == "facts" and asked.need == ["height_cm", "weight_kg"]
    assert asked.text == "为了给您推荐合适的尺码，请告诉我您的身高（cm）和体重（kg）。"
    assert asked.product.product_id == "p-sy-fengren" and asked.skill == "size_recommend"
    assert asked.arguments == {"product": "p-sy-fengren"}

    half = clarifier.check(analyzer.run("山野峰刃冲锋衣我穿什么码？体重140斤"))
    assert half.need == ["height_cm"] and half.text == "为了给您推荐合适的尺码，请告诉我您的身高（cm）。"
    assert half.arguments == {"product": "p-sy-fengren", "weight_kg": 70.0}

    shoe = clarifier.check(analyzer.run("AJ1 Low 我该穿多大码？"))
    assert shoe.need == ["foot_length_cm"] and "脚长（cm）" in shoe.text and shoe.product.product_id == "p-aj1-low"

    # A follow-up about the carried product is checked the same way.
    carried = clarifier.check(analyzer.run("这件我穿什么码？", FENGREN))
    assert carried.need == ["height_cm", "weight_kg"] and carried.product == FENGREN


def test_no_question_back_when_nothing_is_missing(clarifier, analyzer):
    for question, entity in [
        ("山野峰刃冲锋衣我穿什么码？身高175cm体重70kg", None),  # every fact given
        ("AJ1 Low 脚长26cm穿多大码？", None),
        ("山野峰刃冲锋衣多少钱？", None),  # not a size question
        ("它多少钱？", FENGREN),  # the session knows the product
        ("这个退货政策是几天？", None),  # a policy question names no product
        ("星择充电宝有哪些型号？", None),  # a brand narrows the search
        ("XZ-3000 我该选哪个码？", None),  # no size table with body measures: nothing to ask for
        ("收到货箱子压坏了咋办", None),  # a parcel's mishap is the after-sales policy's, whatever was in it
        ("包裹到了发现少发了一件", None),
    ]:
        assert clarifier.check(analyzer.run(question, entity)) is None, question


def test_a_bare_reference_without_a_product_asks_which_product(clarifier, analyzer):
    for question in ("它多少钱？", "这款有货吗", "那M码呢？", "这个能机洗吗"):
        asked = clarifier.check(analyzer.run(question))
        assert asked is not None and asked.kind == "product" and asked.need == ["product"], question
        assert asked.text == ASK_PRODUCT and asked.product is None


def test_a_reply_with_the_facts_completes_the_waiting_question(clarifier):
    pending = PendingTask(
        kind="facts",
        need=["height_cm", "weight_kg"],
        question="山野峰刃冲锋衣我穿什么码？",
        entity=FENGREN,
        trace_id="t1",
    )
    assert clarifier.complete(pending, "175cm 70kg") == ("山野峰刃冲锋衣我穿什么码？ 175cm 70kg", FENGREN)
    assert clarifier.complete(pending, "我一米七五，140斤")[0].endswith("我一米七五，140斤")
    assert clarifier.complete(pending, "峰刃冲锋衣，身高175cm") is not None  # the same product named again
    assert clarifier.complete(pending, "XZ-3000 多少钱？") is None  # a new question: the task is dropped
    assert clarifier.complete(pending, "AJ1 Low 脚长26cm") is None  # facts, but for another product


def test_a_reply_naming_the_product_completes_the_waiting_question(clarifier):
    pending = PendingTask(kind="product", need=["product"], question="它多少钱？", trace_id="t1")
    question, entity = clarifier.complete(pending, "星择XZ-3000")
    assert question == "星择XZ-3000 它多少钱？" and entity.product_id == "p-xz3000"
    assert clarifier.complete(pending, "XZ-3000 的容量是多少？") is None  # its own question
    assert clarifier.complete(pending, "算了") is None


def test_a_name_two_products_fit_asks_which_one(clarifier, analyzer):
    asked = clarifier.check(analyzer.run("AJ1多少钱？"))
    assert asked is not None and asked.kind == "product" and asked.need == ["product"]
    assert [o.product_id for o in asked.options] == ["p-aj1-low", "p-aj1-retro"]
    assert "1. Air Jordan 1 Low 低帮板鞋；2. Air Jordan 1 Retro High OG 芝加哥" in asked.text
    # a name only one product fits asks nothing
    assert clarifier.check(analyzer.run("AJ1 Low 多少钱？")) is None


def test_a_reply_picks_an_offered_product_by_number_or_name(clarifier, analyzer):
    asked = clarifier.check(analyzer.run("AJ1多少钱？"))
    pending = PendingTask(
        kind="product", need=["product"], question="AJ1多少钱？", options=asked.options, trace_id="t1"
    )
    for reply, product_id in [
        ("2", "p-aj1-retro"),
        ("第一个", "p-aj1-low"),
        ("Retro", "p-aj1-retro"),
        ("芝加哥那款", "p-aj1-retro"),
        ("低帮的", "p-aj1-low"),
    ]:
        question, entity = clarifier.complete(pending, reply)
        assert entity.product_id == product_id, reply
        assert question == f"{entity.name} AJ1多少钱？"
        assert clarifier.check(analyzer.run(question, entity)) is None, reply  # now it can be answered
    for reply in ("3", "星择XZ-3000", "退货要几天？"):  # no such option, another product, a new question
        assert clarifier.complete(pending, reply) is None, reply


def test_a_shared_series_name_asks_which_one_and_the_reply_picks_it(clarifier, analyzer):
    """轻羽 and 极光 have no lexicon alias: each is the series name of two products' model segments."""
    for question, options, replies in [
        (
            "轻羽多少钱",
            ["p-fc-qingyu3", "p-yd-qingyu-pro"],
            {
                "第二个": "p-yd-qingyu-pro",
                "2": "p-yd-qingyu-pro",
                "Pro": "p-yd-qingyu-pro",
                "缓震那款": "p-fc-qingyu3",
                "3": "p-fc-qingyu3",
            },
        ),  # no third option: 3 is the model number of 轻羽3
        (
            "极光羽绒服有货吗",
            ["p-bjy-jiguang700", "p-xy-jiguangpro"],
            {
                "1": "p-bjy-jiguang700",
                "长款的": "p-xy-jiguangpro",
                "活力橙那件": "p-xy-jiguangpro",
                "雪域": "p-xy-jiguangpro",
            },
        ),
    ]:
        asked = clarifier.check(analyzer.run(question))
        assert asked is not None and [o.product_id for o in asked.options] == options, question
        assert (
            asked.text.startswith(f"“{question[:2]}”对应本店的多款商品") and "1. " in asked.text and "2. " in asked.text
        )
        pending = PendingTask(kind="product", need=["product"], question=question, options=asked.options, trace_id="t")
        for reply, product_id in replies.items():
            completed, entity = clarifier.complete(pending, reply)
            assert entity.product_id == product_id and completed == f"{entity.name} {question}", (question, reply)
            assert clarifier.check(analyzer.run(completed, entity)) is None, reply
        for reply in (
            "退货要几天？",
            "星择XZ-3000",
            "羽绒服",
            "跑鞋有哪些",
        ):  # a new question, another product, both fit
            assert clarifier.complete(pending, reply) is None, (question, reply)


def test_a_reference_to_a_kind_of_product_lists_the_shop_s_products_of_that_kind(clarifier, analyzer):
    shoes = clarifier.check(analyzer.run("这双鞋雨天防滑吗？"))
    assert shoes.kind == "product" and shoes.text.startswith("请问您问的是哪一款鞋？1. ")
    assert len(shoes.options) == 7 and {o.category for o in shoes.options} == {"运动鞋"}
    banks = clarifier.check(analyzer.run("这款充电宝多少钱"))
    assert [o.product_id for o in banks.options] == ["p-xz2000", "p-xz3000"]
    coats = clarifier.check(analyzer.run("这件外套有货吗"))  # a category named after the reference
    assert coats.text.startswith("请问您问的是哪一款外套？") and {o.category for o in coats.options} == {"外套"}
    generic = clarifier.check(analyzer.run("这件衣服能机洗吗"))  # no product is called 衣服: nothing to list
    assert generic.text == ASK_PRODUCT and generic.options == []
    pending = PendingTask(
        kind="product", need=["product"], question="这双鞋雨天防滑吗？", options=shoes.options, trace_id="t"
    )
    completed, entity = clarifier.complete(pending, "岩途")
    assert entity.product_id == "p-sy-yantu" and completed == "山野 岩途 GTX 中帮防水徒步鞋 这双鞋雨天防滑吗？"


def test_a_short_question_about_an_unnamed_product_asks_which_product(clarifier, analyzer):
    for question in ("适合新手吗？", "多少钱？有货吗？", "能机洗吗", "续航多久"):
        asked = clarifier.check(analyzer.run(question))
        assert asked is not None and asked.text == ASK_PRODUCT, question
    # Questions about the shop are not: every FAQ title of the demo, and a kind of product asked about.
    faq = [
        json.loads(line)["title"]
        for line in (DEMO_DIR / "faq.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    for question in [*faq, "怎么付款", "外套尺码怎么选"]:
        assert clarifier.check(analyzer.run(question)) is None, question


def test_a_name_several_products_fit_as_the_reply_keeps_the_question_waiting(clarifier, analyzer):
    pending = PendingTask(kind="product", need=["product"], question="适合新手吗？", trace_id="t")
    completed, entity = clarifier.complete(pending, "轻羽")
    assert (completed, entity) == ("轻羽 适合新手吗？", None)
    asked = clarifier.check(analyzer.run(completed))  # asked back next, the question still waiting
    assert [o.product_id for o in asked.options] == ["p-fc-qingyu3", "p-yd-qingyu-pro"]


def test_bare_numbers_in_a_reply_complete_the_size_question(clarifier, analyzer):
    pending = PendingTask(
        kind="facts",
        need=["height_cm", "weight_kg"],
        question="峰刃冲锋衣穿什么码合适？",
        entity=FENGREN,
        trace_id="t1",
    )
    completed, entity = clarifier.complete(pending, "175，72公斤")
    # beside its 72公斤 the bare 175 is read as the height by the analysis itself, so nothing is spelled out
    assert completed == "峰刃冲锋衣穿什么码合适？ 175，72公斤" and entity == FENGREN
    features = analyzer.run(completed, entity)
    assert (features.height_cm, features.weight_kg) == (175, 72) and clarifier.check(features) is None
    half = clarifier.complete(pending, "175")[0]  # the weight is asked for next, then a bare 72 is it
    assert clarifier.check(analyzer.run(half, FENGREN)).need == ["weight_kg"]
    rest = PendingTask(kind="facts", need=["weight_kg"], question=half, entity=FENGREN, trace_id="t2")
    assert clarifier.check(analyzer.run(clarifier.complete(rest, "72")[0], FENGREN)) is None

    low = Entity(name="Air Jordan 1 Low 低帮板鞋", product_id="p-aj1-low")
    foot = PendingTask(kind="facts", need=["foot_length_cm"], question="AJ1 Low我穿多大码", entity=low, trace_id="t3")
    for reply in ("26", "26cm", "260mm"):
        completed, _ = clarifier.complete(foot, reply)
        assert (
            analyzer.run(completed, low).foot_length_cm == 26 and clarifier.check(analyzer.run(completed, low)) is None
        )
    assert clarifier.complete(foot, "42码") is None  # a size, not the foot length asked for


def test_a_follow_up_naming_one_variant_keeps_the_other_from_the_last_turn(clarifier):
    now = datetime.now(UTC)
    jiguang = Entity(name="北极驿 极光700 连帽羽绒服", product_id="p-bjy-jiguang700")

    def state(last_question: str, entity: Entity | None = jiguang) -> SessionState:
        return SessionState(id="s", created_at=now, updated_at=now, entity=entity, turns=[turn(last_question)])

    assert clarifier.carry_variant(state("雪山白L码还有吗？"), "那M码呢？") == "雪山白 那M码呢？"
    assert clarifier.carry_variant(state("雪山白L码还有吗？"), "那黑色呢？") == "L码 那黑色呢？"
    for last, question in [
        ("雪山白L码还有吗？", "那黑色M码呢？"),  # both named: nothing to carry
        ("有哪些颜色？", "那M码呢？"),  # the last turn named no colour
        ("雪山白和黑色哪个好看？", "那M码呢？"),  # two colours: which one is not known
        ("雪山白L码还有吗？", "星择XZ-3000 M码呢？"),  # another product
        ("雪山白L码还有吗？", "它能机洗吗？"),  # no variant named
    ]:
        assert clarifier.carry_variant(state(last), question) == question, (last, question)
    assert clarifier.carry_variant(state("雪山白L码还有吗？", entity=None), "那M码呢？") == "那M码呢？"


def test_a_kb_without_products_never_asks_which_product(tmp_path):
    from citescope.knowledge.ingest import Ingestor
    from citescope.knowledge.kb import KnowledgeBase
    from citescope.knowledge.settings import get_settings

    doc = tmp_path / "docs" / "school.md"
    doc.parent.mkdir()
    doc.write_text("# 文学院简介\n文学院的前身是1939年成立的华北联合大学文艺学院。\n", encoding="utf-8")
    kb = KnowledgeBase(tmp_path / "kb", get_settings(kb_dir=tmp_path / "kb"), create=True)
    try:
        assert not Ingestor(kb, show_progress=False).run([doc.parent]).issues
        analyzer = QueryAnalyzer(kb).warm_up()
        assert Clarifier(kb, analyzer).check(analyzer.run("它成立于哪一年")) is None
    finally:
        kb.close()
