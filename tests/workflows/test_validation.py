"""describe_validation_error: a pydantic ValidationError as one line for people, on the real
models the CLI and the batch runner validate (SearchFilters, EvalRequest)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from citescope.knowledge.filters import SearchFilters
from citescope.workflows.evaluation.evaluate import EvalRequest
from citescope.workflows.service import AskRequest
from citescope.workflows.validation import describe_validation_error


def _error(model, **values) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        model(**values)
    return caught.value


def test_a_validators_own_words_follow_the_option_and_the_value():
    assert (
        describe_validation_error(_error(SearchFilters, as_of="2024-13"), {"as_of": "--as-of"})
        == "--as-of: '2024-13' is not a real date (month must be in 1..12)"
    )
    assert describe_validation_error(_error(SearchFilters, as_of="去年")).startswith("as_of: '去年' must be a year")


def test_pydantics_own_checks_every_field_and_unknown_fields_are_one_line():
    line = describe_validation_error(
        _error(EvalRequest, dataset_dir=".", mode="bogus", concurrency=0),
        {"mode": "--mode", "concurrency": "--concurrency"},
    )
    assert line == (
        "--mode: input should be 'offline' or 'llm', got 'bogus'; "
        "--concurrency: input should be greater than or equal to 1, got 0"
    )
    assert describe_validation_error(_error(SearchFilters, doc_type=["manual"])).startswith(
        "doc_type[0]: input should be"
    )
    assert describe_validation_error(_error(SearchFilters, colour="red")) == "colour: not a known field"
    assert describe_validation_error(_error(EvalRequest)) == "dataset_dir: field required"


def test_nested_fields_keep_their_path_and_long_values_are_cut():
    line = describe_validation_error(_error(AskRequest, question="退货", filters={"as_of": "2024-" + "9" * 500}))
    assert line.startswith("filters.as_of: '2024-9999") and "…" in line and len(line) < 200
