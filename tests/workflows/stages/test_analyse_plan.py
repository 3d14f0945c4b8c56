"""The analyse and plan stages alone: the analyzer's reading of a question, and the arm and plan
the rules policy picks from it."""

from __future__ import annotations

from citescope.workflows.stages.analyse import AnalyseInput, with_asked_time
from citescope.workflows.stages.plan import PlanInput
from tests.workflows.stages.conftest import analysed


def test_the_question_is_read_once_and_a_callers_reading_is_kept(pipeline):
    price = analysed(pipeline, "XZ-3000 充电宝多少钱？")
    assert [p.product_id for p in price.features.products] == ["p-xz3000"] and price.features.asks_price_stock
    assert price.question == price.whole == "XZ-3000 充电宝多少钱？"
    # the Assistant hands in the features it already read: the stage does not read the question again
    kept = pipeline.analyse.run(AnalyseInput("它多少钱？", features=price.features))
    assert kept.features is price.features and kept.whole == "它多少钱？"


def test_a_long_message_is_read_by_what_it_asks(pipeline):
    story = "我上个月在你们店买了好几样东西，物流很快，客服也很耐心，家里人都很满意。" * 6
    analysis = analysed(pipeline, story + "XZ-3000 充电宝多少钱？")
    assert len(analysis.question) <= pipeline.config.retrieval_max_chars < len(analysis.whole)
    assert "XZ-3000" in analysis.question


def test_the_policy_picks_the_arm_whose_plan_fits_the_question(pipeline):
    budget = pipeline.config.budget().plan_budget()
    price = pipeline.plan.run(PlanInput(analysed(pipeline, "XZ-3000 充电宝多少钱？").features, budget))
    assert price.arm == "product_lookup_hybrid" and price.plan[0].skill == "product_lookup"
    size = pipeline.plan.run(
        PlanInput(analysed(pipeline, "我身高182，体重85公斤，北极驿冰原派克棉服选哪个尺码？").features, budget)
    )
    assert size.arm == "size_advice" and "size_recommend" in [call.skill for call in size.plan]
    assert size.scores[size.arm] == max(size.scores.values()) and size.source == "rules"


def test_a_model_is_told_the_time_a_question_is_about():
    assert with_asked_time("退货政策是什么？", None) == "退货政策是什么？"
    assert "2024-03" in with_asked_time("退货政策是什么？", "2024-03")
