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


def test_a_role_takes_one_spec_a_spec_with_settings_or_a_list_cheapest_first():
    listed = PipelineConfig.load(
        environ={},
        answerer=["dashscope:qwen-turbo", {"spec": "dashscope:qwen-max", "temperature": 0.1, "seed": 3}],
        planner={"spec": "openai:gpt-4o-mini", "max_tokens": 200, "enable_thinking": False},
    )
    cheap, strong = listed.model_configs("answerer")
    assert (cheap.model, cheap.temperature, strong.model, strong.temperature, strong.seed) == (
        "qwen-turbo",
        None,
        "qwen-max",
        0.1,
        3,
    )
    [planner] = listed.model_configs("planner")
    assert (
        planner.max_tokens == 200 and planner.enable_thinking is False and planner.timeout_s == listed.model_timeout_s
    )
    assert PipelineConfig.load(environ={}).model_configs("answerer") == []  # offline: the offline engine alone
    from_env = PipelineConfig.load(environ={"CITESCOPE_ANSWERER": "dashscope:qwen-turbo,dashscope:qwen-max"})
    assert [c.model for c in from_env.model_configs("answerer")] == ["qwen-turbo", "qwen-max"]


@pytest.mark.parametrize(
    "answerer, words",
    [
        ([{"spec": "dashscope:qwen-turbo", "temprature": 0.2}], "model 0: temprature: not a known field"),
        (["dashscope", {"spec": "dashscope:qwen-max", "top_p": 2}], "model 1: top_p: input should be less than"),
        (["dashscope", "bogus:x"], "model 1: model spec 'bogus:x': unknown provider 'bogus'"),
        ([], "a role's model list is empty"),
    ],
)
def test_a_bad_model_entry_is_named(answerer, words):
    with pytest.raises(PipelineConfigError) as caught:
        PipelineConfig.load(environ={}, answerer=answerer)
    message = str(caught.value)
    assert message.startswith("pipeline config: answerer: ") and words in message and "\n" not in message


def test_a_routing_rule_names_a_known_signal():
    with pytest.raises(PipelineConfigError, match=r"model_routes\[0\]\.when: input should be 'compound'"):
        PipelineConfig.load(environ={}, model_routes=[{"when": "expensive"}])
