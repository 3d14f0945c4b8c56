"""A records KB written from one template per kind, with sibling entities (issue #44): patient records
of one hospital form and spec sheets of one product series. Every value is drawn from a seeded random
generator and the word lists below; nothing comes from an evaluation set.

Records are siblings: same fields, same wording, other values. None carries a product_id (a shop or a
clinic that imports its records as plain documents gives none), so who a record is about is only in its
title and text. A few records get a second version (a corrected record: same title plus a version mark,
one field changed): those are the real disagreements, asked with expect_conflict.

Questions ask one field of one record, in the field's words (`王建国的血型是什么？`) or, half of them, as a
customer words it (`王建国是什么血？`): answerable when the record states it, and
unanswerable (`answerable: false`, qtype `missing_field`) when that record leaves out an optional field
that its siblings state (the entity is in the KB, its fact is not, a near entity's fact is).

    python -m citescope.workflows.evaluation.records_kb OUT_DIR [--per-kind N] [--seed S]

writes OUT_DIR/corpus.jsonl and OUT_DIR/questions.jsonl in the datasets' format (`run.py eval --dataset
OUT_DIR` reads it); bench/records_conflicts.py reads the same records without writing them.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

SEED = 44
PER_KIND = 24
CORRECTED = 4  # records per kind that get a corrected second version (the real conflicts)
REWORDED_SHARE = 0.5  # of the questions, asked as a customer words them rather than in the field's words

_SURNAMES = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘蒋蔡余杜叶程苏魏吕丁任沈姚卢"
_GIVEN = "伟芳娜敏静丽强磊军洋勇艳杰娟涛明超秀英华慧巧美建国志红玉兰桂霞平刚辉鹏飞宇浩然晨曦雪梅春燕海波文博"
_DIAGNOSES = ("2型糖尿病", "高血压", "社区获得性肺炎", "急性阑尾炎", "冠心病", "慢性胃炎", "腰椎间盘突出", "胆囊结石")
_DEPARTMENTS = ("内分泌科", "心内科", "呼吸内科", "普外科", "消化内科", "骨科", "神经内科")
_ALLERGIES = ("青霉素过敏", "头孢类药物过敏", "磺胺类药物过敏", "海鲜过敏", "无已知过敏")
_BRANDS = ("风行", "声悦", "远澜", "极岚")
_SERIES = ("逐光", "听澜", "云雀", "星轨")
_KINDS = ("无线降噪耳机", "运动蓝牙耳机", "头戴式耳机")
_COLOURS = ("曜石黑", "月光白", "雾霾蓝", "薄荷绿", "暮光紫")


@dataclass
class Record:
    doc_id: str
    title: str
    name: str  # how a question names the record's entity
    fields: dict[str, str]  # label -> value, in the template's order
    lead: str  # the template's prose line about the record
    kind: str
    version: str = ""  # a corrected record's version mark

    def text(self) -> str:
        return "\n".join([self.lead, *(f"{label}：{value}" for label, value in self.fields.items())])

    def document(self) -> dict:
        return {"doc_id": self.doc_id, "title": self.title, "text": self.text(), "source": f"records:{self.kind}"}


@dataclass(frozen=True)
class Field:
    label: str
    ask: str  # the question, {name} for the record's entity, in the field's own words
    reworded: str  # the same question as a customer words it, without the label (住了几天 for 住院天数)
    optional: bool = False  # a record may leave it out


@dataclass
class Template:
    kind: str
    fields: tuple[Field, ...]
    make: Callable[[random.Random, int, set[str]], Record]
    corrections: dict[str, Callable[[random.Random, str], str]] = field(default_factory=dict)


def _person(rng: random.Random, taken: set[str]) -> str:
    while True:
        name = rng.choice(_SURNAMES) + "".join(rng.sample(_GIVEN, rng.choice((1, 2))))
        if name not in taken:
            taken.add(name)
            return name


def _patient(rng: random.Random, index: int, taken: set[str]) -> Record:
    name = _person(rng, taken)
    sex, age = rng.choice("男女"), rng.randint(18, 88)
    diagnosis, admitted = rng.choice(_DIAGNOSES), f"2025年{rng.randint(1, 12)}月{rng.randint(1, 28)}日"
    doctor = _person(rng, taken)
    fields = {
        "病历号": f"R-{index + 1:04d}",
        "姓名": name,
        "性别": sex,
        "年龄": f"{age}岁",
        "科室": rng.choice(_DEPARTMENTS),
        "入院日期": admitted,
        "主要诊断": diagnosis,
        "血型": rng.choice(("A型", "B型", "AB型", "O型")),
        "住院天数": f"{rng.randint(3, 21)}天",
        "主治医生": doctor,
        "过敏史": rng.choice(_ALLERGIES),
        "出院医嘱": f"出院后{rng.choice((1, 2, 4))}周复查",
    }
    lead = f"患者{name}，{sex}，{age}岁，因{diagnosis}于{admitted}入院。"
    return Record(f"rec-patient-{index + 1:03d}", f"{name}的住院病历", name, fields, lead, "patient")


def _product(rng: random.Random, index: int, taken: set[str]) -> Record:
    brand, series = _BRANDS[index % len(_BRANDS)], _SERIES[(index // len(_BRANDS)) % len(_SERIES)]
    kind = _KINDS[index % len(_KINDS)]
    while True:
        model = f"{series}{rng.choice('XSP')}{rng.randint(1, 9)}"
        name = f"{brand} {model}"
        if name not in taken:
            taken.add(name)
            break
    fields = {
        "型号": model,
        "续航": f"{rng.choice(range(20, 61, 2))}小时",
        "重量": f"{rng.randint(4, 9)}.{rng.randint(0, 9)}克",
        "电池容量": f"{rng.choice(range(300, 701, 20))}mAh",
        "蓝牙版本": f"5.{rng.randint(0, 4)}",
        "防水等级": rng.choice(("IPX4", "IPX5", "IPX7")),
        "充电接口": rng.choice(("Type-C", "Lightning", "无线充电")),
        "价格": f"{rng.choice(range(199, 1300, 50))}元",
        "保修": f"{rng.choice((6, 12, 18, 24))}个月",
        "颜色": "、".join(rng.sample(_COLOURS, 2)),
    }
    title = f"{brand} {model} {kind}"
    lead = f"{title}是{brand}{series}系列的一款{kind}。"
    return Record(f"rec-product-{index + 1:03d}", title, name, fields, lead, "product")


PATIENT = Template(
    "patient",
    (
        Field("血型", "{name}的血型是什么？", "{name}是什么血？"),
        Field("住院天数", "{name}住院了多少天？", "{name}在医院一共待了几天？"),
        Field("主治医生", "{name}的主治医生是谁？", "{name}是哪位大夫负责的？"),
        Field("入院日期", "{name}是哪天入院的？", "{name}什么时候住进医院的？"),
        Field("科室", "{name}住在哪个科室？", "{name}在哪个病区看的病？"),
        Field("过敏史", "{name}有什么过敏史？", "{name}对什么东西过敏？", optional=True),
        Field("出院医嘱", "{name}的出院医嘱是什么？", "{name}出院以后要注意什么？", optional=True),
    ),
    _patient,
    {
        "住院天数": lambda rng, old: f"{int(old[:-1]) + rng.randint(2, 5)}天",
        "血型": lambda rng, old: next(t for t in ("B型", "O型", "A型") if t != old),
    },
)
PRODUCT = Template(
    "product",
    (
        Field("续航", "{name}的续航是多少小时？", "{name}充满电能用多久？"),
        Field("重量", "{name}重多少克？", "{name}戴着沉不沉，有多重？"),
        Field("价格", "{name}的价格是多少？", "{name}卖多少钱？"),
        Field("防水等级", "{name}的防水等级是多少？", "{name}下雨天能戴吗，防不防水？"),
        Field("保修", "{name}保修多久？", "{name}坏了多长时间内能免费修？"),
        Field("电池容量", "{name}的电池容量是多少？", "{name}电池有多大？", optional=True),
        Field("充电接口", "{name}用什么充电接口？", "{name}用什么线充电？", optional=True),
    ),
    _product,
    {
        "续航": lambda rng, old: f"{int(old[:-2]) + rng.choice((4, 6, 8))}小时",
        "保修": lambda rng, old: f"{int(old[:-2]) + 12}个月",
    },
)
TEMPLATES = (PATIENT, PRODUCT)


@dataclass
class RecordsKB:
    documents: list[dict]
    questions: list[dict]


def make_records_kb(per_kind: int = PER_KIND, seed: int = SEED, corrected: int = CORRECTED) -> RecordsKB:
    """The records and their questions, the same for the same arguments."""
    rng = random.Random(seed)
    documents: list[dict] = []
    questions: list[dict] = []
    for template in TEMPLATES:
        taken: set[str] = set()
        records = [template.make(rng, i, taken) for i in range(per_kind)]
        optional = [f.label for f in template.fields if f.optional]
        for record in records:  # about half of the records leave out one optional field
            if optional and rng.random() < 0.5:
                del record.fields[rng.choice(optional)]
        for number, record in enumerate(records):
            documents.append(record.document())
            asked = [f for f in template.fields if not f.optional or f.label not in record.fields]
            for f in rng.sample(asked, min(3, len(asked))) + [f for f in asked if f.label not in record.fields]:
                if any(q["qid"] == f"{record.doc_id}-{f.label}" for q in questions):
                    continue
                value = record.fields.get(f.label)
                wording = f.reworded if rng.random() < REWORDED_SHARE else f.ask
                questions.append(
                    {
                        "qid": f"{record.doc_id}-{f.label}",
                        "question": wording.format(name=record.name),
                        "answers": [value] if value else [],
                        "gold_doc_ids": [record.doc_id] if value else [],
                        "answerable": value is not None,
                        "qtype": f"{template.kind}_field" if value else "missing_field",
                        "meta": {"kind": template.kind, "field": f.label},
                    }
                )
            if number < corrected:
                documents.append(_corrected(record, template, rng, questions))
                # the plain question about the corrected field is now the corrected record's question
                asked_twice = {q["qid"].replace("-v2", "") for q in questions if q.get("expect_conflict")}
                questions[:] = [q for q in questions if q["qid"] not in asked_twice]
    return RecordsKB(documents, questions)


def _corrected(record: Record, template: Template, rng: random.Random, questions: list[dict]) -> dict:
    """A second version of the record with one field changed, and the question about that field."""
    label = rng.choice([label for label in template.corrections if label in record.fields])
    old = record.fields[label]
    new = template.corrections[label](rng, old)
    fields = {**record.fields, label: new}
    second = Record(
        f"{record.doc_id}-v2", f"{record.title}（2026修订版）", record.name, fields, record.lead, record.kind
    )
    ask = next(f.ask for f in template.fields if f.label == label)
    questions.append(
        {
            "qid": f"{record.doc_id}-v2-{label}",
            "question": ask.format(name=record.name),
            "answers": [new, old],
            "gold_doc_ids": [record.doc_id, second.doc_id],
            "candidate_doc_ids": None,
            "answerable": True,
            "qtype": "corrected_record",
            "expect_conflict": True,
            "fake_answers": [],
            "meta": {"kind": template.kind, "field": label},
        }
    )
    return second.document()


def write_records_kb(out_dir: Path, per_kind: int = PER_KIND, seed: int = SEED) -> tuple[int, int]:
    """corpus.jsonl and questions.jsonl under out_dir: (documents, questions)."""
    kb = make_records_kb(per_kind, seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, rows in (("corpus.jsonl", kb.documents), ("questions.jsonl", kb.questions)):
        lines = [json.dumps({k: v for k, v in row.items() if v is not None}, ensure_ascii=False) for row in rows]
        (out_dir / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(kb.documents), len(kb.questions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--per-kind", type=int, default=PER_KIND)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    documents, questions = write_records_kb(args.out_dir, args.per_kind, args.seed)
    print(f"{documents} documents, {questions} questions -> {args.out_dir}")


if __name__ == "__main__":
    main()
