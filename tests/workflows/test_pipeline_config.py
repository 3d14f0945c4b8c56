"""PipelineConfig.load's errors (its layering is tested in test_pipeline.py): one line naming
the setting and what is wrong, as the CLI prints it for --planner, --answerer and CITESCOPE_*."""

from __future__ import annotations

import pytest

from citescope.workflows.pipeline_config import PipelineConfig, PipelineConfigError


def test_a_bad_setting_is_named_with_its_value_and_no_pydantic_internals():
    with pytest.raises(PipelineConfigError) as caught:
        PipelineConfig.load(environ={"CITESCOPE_REFUSAL_THRESHOLD": "2"}, planner="bogus")
    message = str(caught.value)
    assert "\n" not in message and "Value error" not in message and "pydantic" not in message, message
    assert message.startswith("pipeline config: ")
    assert "refusal_threshold: input should be less than or equal to 1, got '2'" in message
    assert "planner: model spec 'bogus': unknown provider 'bogus'" in message  # the value once, not twice
