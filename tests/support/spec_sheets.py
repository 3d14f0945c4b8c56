"""A KB of spec sheets written from one template, whose siblings share a model number's letters (X3)
across brands and series: 风行 逐光X3's sheet has no battery capacity, 极岚 听澜X3's has one."""

from __future__ import annotations

import json
from pathlib import Path

from citescope.knowledge.kb import KnowledgeBase
from citescope.tools.base import EvidenceHit
from tests.conftest import ingested_kb

SPEC_SHEETS = [
    {
        "doc_id": "spec-1",
        "title": "风行 逐光X3 无线降噪耳机",
        "text": "风行 逐光X3 无线降噪耳机是风行逐光系列的一款无线降噪耳机。\n型号：逐光X3\n续航：26小时"
        "\n充电接口：Type-C",
    },
    {
        "doc_id": "spec-2",
        "title": "极岚 听澜X3 头戴式耳机",
        "text": "极岚 听澜X3 头戴式耳机是极岚听澜系列的一款头戴式耳机。\n型号：听澜X3\n续航：58小时\n电池容量：320mAh",
    },
    {
        "doc_id": "spec-3",
        "title": "声悦 逐光X5 运动蓝牙耳机",
        "text": "声悦 逐光X5 运动蓝牙耳机是声悦逐光系列的一款运动蓝牙耳机。\n型号：逐光X5\n续航：20小时"
        "\n电池容量：450mAh",
    },
]


def spec_sheet_kb(folder: Path) -> KnowledgeBase:
    """The spec sheets ingested into a new KB under folder, warmed up."""
    corpus = folder / "specs.jsonl"
    corpus.write_text("\n".join(json.dumps(doc, ensure_ascii=False) for doc in SPEC_SHEETS) + "\n", encoding="utf-8")
    kb, _ = ingested_kb(folder / "kb", [corpus])
    return kb


def spec_sheet_hits() -> list[EvidenceHit]:
    """The sheets as evidence (one chunk each, best first), for an answerer or inspector without a KB."""
    return [
        EvidenceHit(
            chunk_id=f"{sheet['doc_id']}#body-0",
            doc_id=sheet["doc_id"],
            score=1.0 - i / 10,
            title=sheet["title"],
            doc_type="product",
            text=sheet["text"],
        )
        for i, sheet in enumerate(SPEC_SHEETS)
    ]
