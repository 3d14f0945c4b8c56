"""The one unit table: every form's unit is found by its name, and amounts compare across units."""

from __future__ import annotations

import pytest

from citescope.knowledge.units import BY_NAME, COUNT, UNITS, lower_case, same_amount


def test_each_unit_name_stands_for_one_unit():
    for form, unit in UNITS.items():
        assert BY_NAME[unit.name] == unit, form


def test_a_lower_cased_reader_sees_one_unit_for_each_form():
    lowered = lower_case(UNITS)
    assert lowered["mah"] == UNITS["mAh"] and lowered["l"] == UNITS["L"] and lowered["°c"] == UNITS["℃"]


@pytest.mark.parametrize(
    ("left", "right"),
    [((1, "年"), (12, "个月")), ((2, "周"), (14, "天")), ((1, "斤"), (500, "克")), ((1.5, "升"), (1500, "毫升"))]
    + [((1, "米"), (100, "厘米")), ((3, "km"), (3000, "m")), ((1, "kW"), (1000, "W")), ((90, "个"), (90, "名"))],
)
def test_one_amount_in_two_units_is_the_same(left, right):
    assert same_amount((left[0], UNITS[left[1]]), (right[0], UNITS[right[1]]))


@pytest.mark.parametrize(
    ("left", "right"),
    [((1, "年"), (1, "个月")), ((5, "工作日"), (5, "天")), ((1, "千克"), (1000, "毫升")), ((3, "分"), (3, "个"))],
)
def test_other_amounts_or_kinds_differ(left, right):
    assert not same_amount((left[0], UNITS[left[1]]), (right[0], UNITS[right[1]]))


def test_counters_only_count():
    assert {UNITS[form].dimension for form in "个 件 名 人 位 次 双 张".split()} == {COUNT}
