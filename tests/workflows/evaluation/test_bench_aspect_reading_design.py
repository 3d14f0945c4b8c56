"""The aspect reader's design benchmark (workflows/evaluation/bench/aspect_reading_design.py): the margin
shipped is the one its fit part chooses, and its check part, read after, reads no field wrongly."""

from __future__ import annotations

import json

import pytest

from citescope.agents.aspect_reading import KIND_WEIGHT, MARGIN, ReadAspect
from citescope.workflows.evaluation.bench.aspect_reading_design import (
    chosen_kind_weight,
    chosen_margin,
    read_design,
    run,
    tally,
)


def test_the_fit_part_chooses_the_shipped_margin_and_the_check_part_reads_nothing_wrongly():
    report = run()
    assert report["margin_chosen_on_fit"] == report["margin_shipped"] == MARGIN
    check = report["parts"]["check"][str(MARGIN)]
    assert check["read_wrong"] == 0 and check["read_right"] >= 5
    assert report["parts"]["fit"]["0.0"]["read_wrong"] > 0  # without a margin the nearest label is often wrong


def test_the_fit_part_chooses_the_shipped_kind_weight_and_the_kinds_read_more_right_and_nothing_more_wrong():
    report = run()
    assert report["kind_weight_chosen_on_fit"] == report["kind_weight_shipped"] == KIND_WEIGHT
    for part in ("fit", "check", "check2"):
        with_kinds, without = report["parts"][part][str(MARGIN)], report["parts_without_kinds"][part][str(MARGIN)]
        assert with_kinds["read_right"] >= without["read_right"], part
        assert with_kinds["read_wrong"] <= without["read_wrong"], part
        assert with_kinds["unanswerable_read"] <= without["unanswerable_read"], part
    assert (
        report["parts"]["fit"][str(MARGIN)]["read_right"]
        > report["parts_without_kinds"]["fit"][str(MARGIN)]["read_right"]
    )


def test_the_kind_weight_chosen_reads_most_right_with_nothing_wrong_and_is_the_lowest_of_those():
    right, wrong = ("车主", ReadAspect("车主", 0.9, 0.05)), ("排量", ReadAspect("车主", 0.9, 0.05))
    assert chosen_kind_weight({0.0: [right], 0.01: [right, right], 0.02: [right, right], 0.03: [right, wrong]}) == 0.01
    assert chosen_kind_weight({0.0: [wrong]}) is None


def test_the_tally_counts_what_is_read_at_a_margin():
    rows = [
        ("保险到期", ReadAspect("保险到期", 0.95, 0.05)),
        ("排量", ReadAspect("车主", 0.90, 0.01)),
        (None, ReadAspect("车主", 0.90, 0.03)),
        ("车主", None),
    ]
    assert tally(rows, 0.02) == {
        "answerable": 3,
        "read_right": 1,
        "read_wrong": 0,
        "unanswerable": 1,
        "unanswerable_read": 1,
    }
    assert chosen_margin(rows, margins=(0.0, 0.02, 0.04)) == 0.04


def test_a_line_that_is_neither_template_nor_question_is_named(tmp_path):
    path = tmp_path / "design.jsonl"
    template = {"template": "V", "aspects": ["排量", "车主"]}
    lines = [template, {"part": "fit", "template": "V", "question": "q", "aspect": None}, {"template": "X"}]
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    with pytest.raises(ValueError, match=r"design.jsonl:3"):
        read_design(path)
