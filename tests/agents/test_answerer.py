"""Answerers: the LLM answerer's prompts, budget and failures; one call shape for both kinds."""

from __future__ import annotations

import asyncio

import pytest
from agentscope.formatter import OpenAIChatFormatter

from citescope.agents.answerer import ExtractiveAnswerer, LLMAnswerer, answer_prompt, generate
from citescope.agents.budget import Budget, BudgetTracker, ModelFailure, RetryPolicy
from citescope.agents.inspector import Inspector
from citescope.agents.offline_models import ScriptedModel
from citescope.tools.base import EvidenceHit
from tests.support.spec_sheets import spec_sheet_hits

EVIDENCE = [
    EvidenceHit(
        chunk_id="policy-returns-2026#无理由退换-0",
        doc_id="policy-returns-2026",
        score=0.9,
        title="退换货政策（2026版）",
        doc_type="policy",
        source="店铺公告",
        updated_at="2026-06-01",
        text="无理由退换：自签收次日起 15天无理由退换。",
    ),
    EvidenceHit(
        chunk_id="faq-015#body-0",
        doc_id="faq-015",
        score=0.5,
        title="可以无理由退货吗？",
        doc_type="faq",
        source="常见问题",
        updated_at="2026-06-01",
        text="自签收次日起 15天无理由退换，需保持商品原包装、吊牌完整。",
    ),
]
QUESTION = "现在退货政策是几天？"
RETRY = RetryPolicy(max_retries=1, backoff_s=0)


def llm(script, stream=False) -> tuple[LLMAnswerer, ScriptedModel]:
    model = ScriptedModel(script, stream=stream)
    return LLMAnswerer(model, OpenAIChatFormatter(), RETRY), model


def prompt_text(model: ScriptedModel, call: int = 0) -> str:
    [message] = model.calls[call].messages
    content = message["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


def test_llm_answerer_sends_the_filled_prompt_and_returns_the_text():
    answerer, model = llm(["  自签收次日起 15 天内可无理由退换【policy-returns-2026#无理由退换-0】。\n"])
    tracker = BudgetTracker()
    text = asyncio.run(answerer.run(QUESTION, EVIDENCE, budget=tracker))
    assert text == "自签收次日起 15 天内可无理由退换【policy-returns-2026#无理由退换-0】。"
    sent = prompt_text(model)
    assert sent == answer_prompt(QUESTION, EVIDENCE)
    assert "【policy-returns-2026#无理由退换-0】(policy, 2026-06-01, 店铺公告)" in sent and QUESTION in sent
    assert "【审核意见】" not in sent and tracker.model_calls == 1 and model.calls[0].tools is None


def test_a_size_a_skill_worked_out_reaches_the_model_with_its_ids():
    from citescope.tools.products import SizeAdvice

    advice = SizeAdvice(
        product="山野 峰刃 GTX 冲锋衣",
        size="L",
        reason="身高 176cm 在 L 码的适合身高 175-180cm 内",
        rows_used=["prod-sy-fengren#尺码表-r2-0"],
        sku_rows=["sku-p-sy-fengren#sku-SYFR-BLK-L"],
    )
    answerer, model = llm(["山野 峰刃 GTX 冲锋衣建议选 L 码【prod-sy-fengren#尺码表-r2-0】。"])
    asyncio.run(answerer.run("身高176体重72穿什么码？", EVIDENCE, advice=advice))
    findings = prompt_text(model).split("\n【工具结论】", 1)[1].split("【用户问题】", 1)[0]
    assert (
        "建议选 L 码；理由：身高 176cm 在 L 码的适合身高 175-180cm 内；依据【prod-sy-fengren#尺码表-r2-0】" in findings
    )
    assert "【sku-p-sy-fengren#sku-SYFR-BLK-L】" in findings
    # without a finding the section says so, in the first prompt and in the retry prompt alike
    assert answer_prompt(QUESTION, EVIDENCE).split("\n【工具结论】", 1)[1].split("\n")[1] == "无"
    report = Inspector().run("退货期是 30 天【policy-returns-2026#无理由退换-0】。", EVIDENCE)
    retry = answer_prompt(QUESTION, EVIDENCE, feedback=report, advice=advice)
    assert "【审核意见】" in retry and "建议选 L 码" in retry


def test_a_retry_carries_the_inspectors_findings():
    report = Inspector().run("退货期是 30 天【policy-returns-2026#无理由退换-0】。【made-up#id-9】", EVIDENCE)
    assert not report.passed
    answerer, model = llm(["自签收次日起 15天无理由退换【policy-returns-2026#无理由退换-0】。"])
    asyncio.run(answerer.run(QUESTION, EVIDENCE, feedback=report))
    sent = prompt_text(model)
    assert "【审核意见】" in sent and "made-up#id-9" in sent and "30天" in sent


def test_both_prompts_mark_a_siblings_evidence_and_say_what_the_mark_means():
    sheets = spec_sheet_hits()[:2]  # 风行 逐光X3's sheet, and 极岚 听澜X3's
    report = Inspector().run("电池容量为 320mAh【spec-2#body-0】。", sheets)
    for feedback in (None, report):
        prompt = answer_prompt("风行 逐光X3的电池容量是多少？", sheets, feedback=feedback, siblings={"spec-2#body-0"})
        evidence = prompt.split("\n【证据】", 1)[1].split("\n【冲突】", 1)[0]
        assert "【spec-2#body-0】(product, 日期未知, 来源未知) 〔另一对象〕极岚 听澜X3 头戴式耳机是" in evidence
        assert evidence.count("〔另一对象〕") == 2  # the format line's and the sibling's; the asked sheet has none
        assert "10. 内容前标有〔另一对象〕的证据" in prompt and "evidence marked 〔另一对象〕" in prompt
    # the answerer passes what the pipeline told it to the prompt it sends
    answerer, model = llm(["风行 逐光X3 的续航为 26小时【spec-1#body-0】。"])
    asyncio.run(generate(answerer, "风行 逐光X3的电池容量是多少？", sheets, siblings={"spec-2#body-0"}))
    assert "〔另一对象〕极岚 听澜X3" in prompt_text(model)


def test_a_streamed_reply_is_collected():
    answerer, _ = llm(["自签收次日起 15天无理由退换【faq-015#body-0】。"], stream=True)
    assert asyncio.run(answerer.run(QUESTION, EVIDENCE)).endswith("【faq-015#body-0】。")


def test_an_empty_reply_is_retried_then_fails():
    answerer, model = llm(["", "  "])
    with pytest.raises(ModelFailure, match="no text"):
        asyncio.run(answerer.run(QUESTION, EVIDENCE))
    assert len(model.calls) == 2


def test_no_model_call_without_budget():
    answerer, model = llm(["不会被调用"])
    tracker = BudgetTracker(Budget(max_model_calls=0))
    with pytest.raises(ModelFailure, match="model-call budget used up"):
        asyncio.run(answerer.run(QUESTION, EVIDENCE, budget=tracker))
    assert model.calls == []


def test_generate_runs_either_kind_of_answerer():
    extractive = asyncio.run(generate(ExtractiveAnswerer(), QUESTION, EVIDENCE))
    assert "15" in extractive and "【" in extractive
    answerer, _ = llm(["自签收次日起 15天无理由退换【faq-015#body-0】。"])
    tracker = BudgetTracker()
    assert asyncio.run(generate(answerer, QUESTION, EVIDENCE, budget=tracker)).endswith("】。")
    assert tracker.model_calls == 1


def test_both_prompts_give_the_fixed_refusals_the_pipeline_says_in_both_languages():
    from citescope.agents.prompts import load_prompt

    report = Inspector().run("退货期是 30 天【policy-returns-2026#无理由退换-0】。", EVIDENCE)
    for prompt in (answer_prompt(QUESTION, EVIDENCE), answer_prompt(QUESTION, EVIDENCE, feedback=report)):
        assert load_prompt("refusal").strip() in prompt and load_prompt("refusal_en").strip() in prompt
        assert "{refusal" not in prompt


def test_both_prompts_give_the_not_found_sentence_the_inspector_reads_as_no_claim():
    # a model told to say what it did not find, in the sentence the inspector takes uncited
    report = Inspector().run("退货期是 30 天【policy-returns-2026#无理由退换-0】。", EVIDENCE)
    for prompt in (answer_prompt(QUESTION, EVIDENCE), answer_prompt(QUESTION, EVIDENCE, feedback=report)):
        assert "关于“未查到的部分”，资料中暂未找到可靠信息。" in prompt and "{part_not_found" not in prompt
    answer = (
        "自签收次日起 15 天内可无理由退换【policy-returns-2026#无理由退换-0】。"
        "关于“退货运费谁承担”，资料中暂未找到可靠信息。"
    )
    assert Inspector().run(answer, EVIDENCE, question="退货期几天？运费谁出？").passed
    # written otherwise, the same admission is a claim without a citation
    assert (
        not Inspector()
        .run("自签收次日起 15 天内可无理由退换【policy-returns-2026#无理由退换-0】。运费由卖家承担。", EVIDENCE)
        .passed
    )
