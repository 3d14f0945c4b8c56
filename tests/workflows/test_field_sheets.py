"""A KB of field sheets (records written from one template) answers a field asked in other words: the
aspect reader (agents/aspect_reading.py) reads 保险到期 into "张伟的车险啥时候过期？", so retrieval, the gate
and the answerer's aspect rule see the label; a question no field answers is refused as before."""

from __future__ import annotations

import json

import pytest

from citescope.agents.aspect_reading import AspectReading
from citescope.agents.aspects import field_sheet_labels
from citescope.workflows.pipeline import QAPipeline
from citescope.workflows.pipeline_config import PipelineConfig
from tests.conftest import DEMO_DIR, ingested_kb

OWNERS = [
    ("张伟", "沪A·12345", "2021年3月5日", "2026年3月4日", "4.2万公里", "白色"),
    ("李娜", "京B·67890", "2019年8月20日", "2026年8月19日", "9.8万公里", "黑色"),
    ("王强", "粤C·24680", "2023年1月12日", "2027年1月11日", "1.5万公里", "灰色"),
    ("刘洋", "苏D·13579", "2020年6月30日", "2026年6月29日", "7.1万公里", "红色"),
    ("陈静", "浙E·11223", "2022年11月2日", "2026年11月1日", "3.3万公里", "蓝色"),
]


def vehicle_sheet(number: int, owner: str, plate: str, bought: str, insured: str, km: str, colour: str) -> dict:
    lines = [f"车牌号：{plate}", f"车主：{owner}", f"购车日期：{bought}", f"保险到期：{insured}"]
    lines += [f"行驶里程：{km}", f"车身颜色：{colour}", "排量：1.5L"]
    return {"doc_id": f"car-{number:03d}", "title": f"{owner}的车辆档案", "text": "\n".join(lines)}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fleet")
    corpus = folder / "cars.jsonl"
    sheets = [vehicle_sheet(i, *owner) for i, owner in enumerate(OWNERS, 1)]
    corpus.write_text("\n".join(json.dumps(s, ensure_ascii=False) for s in sheets) + "\n", encoding="utf-8")
    kb, _ = ingested_kb(folder / "kb", [corpus])
    pipeline = QAPipeline(kb, PipelineConfig.load(kb.dir, environ={})).warm_up()
    yield kb, pipeline
    pipeline.close()
    kb.close()


def test_a_kb_of_field_sheets_reads_its_labels_and_a_shop_of_prose_pages_does_not(fleet, demo_kb):
    kb, _ = fleet
    assert {"保险到期", "车主", "行驶里程", "车身颜色"} <= field_sheet_labels(kb.all_chunks())
    assert field_sheet_labels(demo_kb.all_chunks()) == frozenset()  # its pages are prose sections


def test_a_field_asked_in_other_words_is_answered_from_the_named_record(fleet):
    _, pipeline = fleet
    result = pipeline.run("张伟的车险啥时候过期？")
    assert not result.refused, result.answer
    assert "2026年3月4日" in result.answer and {c.doc_id for c in result.citations} == {"car-001"}, result.answer
    assert result.features["read_aspect"].startswith("aspect read: 保险到期"), result.trace.features
    assert result.question == "张伟的车险啥时候过期？"  # the question as typed stays the result's
    # the reader off, the same question is not answered with the date
    reading, pipeline.analyse.aspects = pipeline.analyse.aspects, None
    try:
        unread = pipeline.run("张伟的车险啥时候过期？")
    finally:
        pipeline.analyse.aspects = reading
    assert "2026年3月4日" not in unread.answer, unread.answer


def test_the_kind_of_value_asked_reads_a_field_the_words_alone_do_not(fleet):
    _, pipeline = fleet
    assert pipeline.analyse.aspects.kinds()["车主"] == "person"  # read off the KB's values (agents/value_kinds.py)
    result = pipeline.run("京B·67890是谁的车？")
    assert result.features["read_aspect"].startswith("aspect read: 车主"), result.features
    assert "asks a person" in result.features["read_aspect"]
    assert "李娜" in result.answer and {c.doc_id for c in result.citations} == {"car-002"}, result.answer
    # the same reader without the kinds of value reads nothing: 车主 does not stand clear by its cosine alone
    reading = pipeline.analyse.aspects
    pipeline.analyse.aspects = AspectReading(reading.embedder, reading.aspects).warm_up()
    try:
        assert pipeline.run("京B·67890是谁的车？").features["read_aspect"] is None
    finally:
        pipeline.analyse.aspects = reading


def test_a_question_no_field_answers_reads_no_field(fleet):
    _, pipeline = fleet
    result = pipeline.run("李娜的车值多少钱？")
    assert result.features["read_aspect"] is None
    assert result.refused, result.answer


def test_the_demo_shops_answers_read_no_aspect(demo_kb):
    pipeline = QAPipeline(demo_kb, PipelineConfig.load(DEMO_DIR, environ={})).warm_up()
    try:
        assert pipeline.analyse.aspects is not None and pipeline.analyse.aspects.aspects() == frozenset()
    finally:
        pipeline.close()
