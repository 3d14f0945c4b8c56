"""A second shop, unlike the demo in every shop word (tests/support/cosmetics_shop, its shop.yaml):
its prompts name it, its questions are read with its own tiers, programme name and delivery zones,
and it answers from its own documents through the real offline pipeline. Nothing of the demo shop
(云栈优选, 金卡/银卡/黑钻, 江浙沪) means anything there."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from citescope.agents.answerer import answer_prompt
from citescope.agents.arms import template_values
from citescope.agents.query_analysis import analyze
from citescope.knowledge.shop_profile import SHOP_PROFILE_FILENAME
from citescope.workflows.cli import app
from citescope.workflows.evaluation.scripted_server import ReplayServer, prompt_text
from citescope.workflows.pipeline import QAPipeline
from citescope.workflows.pipeline_config import PipelineConfig
from tests.conftest import ingested_kb

SHOP_DIR = Path(__file__).resolve().parents[1] / "support" / "cosmetics_shop"
DEMO_SHOP_WORDS = ("云栈优选", "云栈", "江浙沪", "其他地区", "偏远地区", "金卡", "银卡", "黑钻")


@pytest.fixture(scope="module")
def shop_kb(tmp_path_factory):
    kb, _ = ingested_kb(tmp_path_factory.mktemp("cosmetics-kb"), [SHOP_DIR])
    yield kb
    kb.close()


@pytest.fixture(scope="module")
def pipeline(shop_kb, registry):
    return QAPipeline(shop_kb, PipelineConfig.load(shop_kb.dir, environ={}), registry=registry).warm_up()


def test_the_kb_keeps_the_profile_its_folder_shipped(shop_kb):
    assert shop_kb.shop.name == "花漾美妆" and shop_kb.shop.membership_tiers == ["粉钻", "紫晶", "星耀"]


def test_its_model_prompts_name_it_and_never_the_demo_shop(shop_kb, registry):
    with ReplayServer() as server:
        server.default_step = {"content": "检索完成"}  # no answer passes: the offline answer is used
        spec = f"compatible:test@{server.base_url}"
        config = PipelineConfig.load(
            shop_kb.dir, environ={}, planner=spec, answerer=spec, max_retries=0, backoff_s=0.01, model_timeout_s=10
        )
        QAPipeline(shop_kb, config, registry=registry).warm_up().run("紫晶会员打几折？")
        bodies = [request.body for request in server.chat_requests()]
    prompts = [prompt_text(body) for body in bodies]
    planner, answerer = prompts[0], prompts[-1]
    assert planner.startswith("你是“花漾美妆”电商店铺客服系统的检索规划员") and "【建议计划】" in planner
    assert answerer.startswith("你是“花漾美妆”电商店铺的客服助手") and "【证据】" in answerer
    assert not any(word in prompt for prompt in prompts for word in ("云栈优选", "江浙沪", "黑钻"))
    # nor do the skills' descriptions the planner reads name the demo's brands or products
    tools = json.dumps([body.get("tools") for body in bodies], ensure_ascii=False)
    assert "keyword_search" in tools
    assert not any(word in tools for word in ("云栈", "星择", "XZ-3000", "AJ1", "峰刃", "p-xz3000"))


def test_a_shop_without_a_name_is_called_this_shop():
    assert answer_prompt("多久发货？", []).startswith("你是本店的客服助手")


def test_its_tiers_and_programme_ask_its_policy_and_the_demo_shops_mean_nothing(shop_kb):
    assert analyze("紫晶能打几折", shop_kb).intent == "policy"
    assert analyze("美力值有什么用", shop_kb).intent == "policy"
    for demo_tier in ("黑钻能打几折", "金卡能打几折"):
        assert analyze(demo_tier, shop_kb).intent != "policy", demo_tier


def test_a_delivery_question_is_searched_with_its_own_zone(shop_kb):
    query = template_values(analyze("寄到深圳几天能到", shop_kb))["query"]
    assert "华南速达区" in query and "其他地区" not in query
    shanghai = template_values(analyze("寄到上海几天能到", shop_kb))["query"]
    assert not any(zone in shanghai for zone in ("江浙沪", "华南速达区", "华北标准区", "西部延时区"))


@pytest.mark.parametrize(
    "question, cited_doc, said",
    [
        ("紫晶会员打几折？", "cos-policy-membership", "9折"),
        ("寄到深圳几天能到？", "cos-policy-shipping", "华南速达区：发货后 1-2 天"),
        ("美力值怎么抵扣？", "cos-policy-membership", "200 美力值"),
        ("R1口红多少钱？", "sku-cos-lip-r1", "139"),
    ],
)
def test_it_answers_in_its_own_words(pipeline, question, cited_doc, said):
    result = pipeline.run(question)
    assert not result.refused and result.inspection.passed, (result.refusal_reason, result.answer)
    assert said in result.answer and any(c.id.startswith(cited_doc) for c in result.citations), result.answer
    assert not any(word in result.answer for word in DEMO_SHOP_WORDS), result.answer


def test_ingest_refuses_a_bad_profile_in_one_line(tmp_path):
    shop = shutil.copytree(SHOP_DIR, tmp_path / "shop")
    (shop / SHOP_PROFILE_FILENAME).write_text("name: 花漾美妆\nmembership_tier: [粉钻]\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["ingest", str(shop), "--kb", str(tmp_path / "kb")])
    line = result.stderr.strip()
    assert result.exit_code == 2 and "\n" not in line, result.stderr
    assert str(shop / SHOP_PROFILE_FILENAME) in line and "membership_tier" in line
