"""SearchFilters.as_of: the time a question is about, which ranks documents and excludes none."""

from __future__ import annotations

from datetime import date

import numpy as np
import pytest
from pydantic import ValidationError

from citescope.knowledge.filters import SearchFilters, as_of_day


@pytest.mark.parametrize(
    "period, day",
    [
        ("2023", date(2023, 7, 1)),
        ("2023-05", date(2023, 5, 15)),
        ("2023-05-04", date(2023, 5, 4)),
        (" 2016 ", date(2016, 7, 1)),
    ],
)
def test_as_of_stands_for_the_middle_of_its_period(period, day):
    filters = SearchFilters(as_of=period)
    assert filters.reference_day() == day == as_of_day(period.strip())
    assert filters.as_of == period.strip()


@pytest.mark.parametrize("period", ["去年", "2023/05", "23", "2023-13", "2023-02-30", "2023 or true", "2023-5"])
def test_a_bad_as_of_names_the_field(period):
    with pytest.raises(ValidationError, match="as_of"):
        SearchFilters(as_of=period)


def test_as_of_alone_excludes_nothing():
    columns = {
        "doc_type": np.array(["faq", "doc"]),
        "brand": np.array(["", ""]),
        "category": np.array(["", ""]),
        "product_id": np.array(["", ""]),
        "updated_day": np.array([0, 19000]),
    }
    alone = SearchFilters(as_of="2016")
    assert not alone.is_empty() and not alone.restricts()
    assert alone.mask(columns) is None and alone.milvus_expr() == ""
    both = SearchFilters(as_of="2016", doc_type=["faq"])
    assert both.restricts() and both.mask(columns).tolist() == [True, False]
    assert both.milvus_expr() == 'doc_type in ["faq"]'
