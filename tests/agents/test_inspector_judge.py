"""The inspector's model judge wired over real HTTP (AgentScope's OpenAI client to the scripted server
of workflows/evaluation/scripted_server.py). A scripted verdict cannot measure the judge; these test its
wiring: the request it sends, a "contradicted" verdict rejecting the sentence, a reply that is no
verdict and an exhausted budget skipping it with a reason, and the pipeline switch (off by default)."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from rich.console import Console

from citescope.agents.budget import Budget, BudgetTracker, RetryPolicy
from citescope.agents.inspector import Inspector
from citescope.agents.inspector_judge import ModelJudge
from citescope.agents.models import make_chat_model
from citescope.knowledge.chunking import chunk_document
from citescope.knowledge.loaders import load_path
from citescope.tools.base import EvidenceHit
from citescope.workflows.evaluation.scripted_server import ReplayServer, prompt_text
from citescope.workflows.pipeline import QAPipeline
from citescope.workflows.pipeline_config import PipelineConfig
from citescope.workflows.studio_texts import verdict_markdown
from citescope.workflows.traces import build_trace, render_trace
from tests.conftest import DEMO_DIR

RET26 = "policy-returns-2026#无理由退换-0"
ANSWER = f"自签收次日起 15天无理由退换【{RET26}】。需保持商品原包装、吊牌完整【{RET26}】。"


@pytest.fixture(scope="module")
def evidence() -> list[EvidenceHit]:
    documents, issues, _ = load_path(DEMO_DIR / "policies" / "returns-2026.md")
    assert not issues
    return [EvidenceHit.from_chunk(c, 1.0) for d in documents for c in chunk_document(d) if c.chunk_id == RET26]


def verdicts(*kinds: str) -> dict:
    rows = [{"sentence": n, "verdict": kind, "reason": f"第{n}句的依据"} for n, kind in enumerate(kinds, 1)]
    return {"content": "```json\n" + json.dumps({"verdicts": rows}, ensure_ascii=False) + "\n```"}


def judge_for(server: ReplayServer, retries: int = 0) -> ModelJudge:
    model, formatter = make_chat_model(f"compatible:judge-model@{server.base_url}")
    return ModelJudge(model, formatter, RetryPolicy(max_retries=retries, backoff_s=0.01, call_timeout_s=10))


def judged(judge: ModelJudge, evidence, tracker: BudgetTracker | None = None):
    inspector = Inspector()
    report = inspector.run(ANSWER, evidence)
    assert report.passed  # the offline checks pass the draft: only the judge can reject it
    skipped = asyncio.run(judge.judge(report, inspector.cited_claims(ANSWER, evidence), tracker or BudgetTracker()))
    return report, skipped


def test_a_contradicted_verdict_rejects_that_sentence(evidence):
    with ReplayServer(script=[verdicts("supported", "contradicted")]) as server:
        report, skipped = judged(judge_for(server), evidence)
        sent = prompt_text(server.chat_requests()[0].body)
    assert skipped is None and not report.passed
    assert [u.sentence for u in report.unsupported] == ["需保持商品原包装、吊牌完整。"]
    assert report.rules_fired == ["judge"] and "第2句的依据" in report.findings()
    assert report.judge["status"] == "ran" and report.judge["model"] == "judge-model"
    assert [v["verdict"] for v in report.judge["verdicts"]] == ["supported", "contradicted"]
    # the request: both sentences numbered, each with the chunk it cites, the verdict format asked for
    assert "1. 自签收次日起 15天无理由退换。" in sent and "2. 需保持商品原包装、吊牌完整。" in sent
    assert sent.count(f"【{RET26}】") == 2 and '{"verdicts": [{"sentence": 1,' in sent


def test_supported_and_not_enough_info_keep_the_draft(evidence):
    with ReplayServer(script=[verdicts("supported", "not_enough_info")]) as server:
        report, skipped = judged(judge_for(server), evidence)
    assert skipped is None and report.passed and report.judge["supported"]


def test_an_exhausted_budget_skips_the_judge_with_its_reason(evidence):
    with ReplayServer(script=[verdicts("contradicted", "contradicted")]) as server:
        report, skipped = judged(judge_for(server), evidence, BudgetTracker(Budget(max_model_calls=0)))
        requests = server.chat_requests()
    assert requests == [] and report.passed
    assert skipped == "inspector judge skipped: model-call budget used up (0 calls)"
    assert report.judge["status"] == "skipped" and report.judge["reason"] == skipped


def test_a_reply_that_is_no_verdict_is_retried_then_skipped(evidence):
    with ReplayServer(script=[{"content": "我觉得都对"}, verdicts("supported")]) as server:  # one verdict of two
        report, skipped = judged(judge_for(server, retries=1), evidence)
        attempts = len(server.chat_requests())
    assert attempts == 2 and report.passed
    assert skipped is not None and "no JSON object" in skipped and "sentences [1] of 1..2" in skipped


def test_the_pipeline_asks_the_judge_when_configured(demo_kb, registry):
    """judge: a model spec. Every passed draft is judged; a contradicted sentence rejects the
    extractive answer too, and with no draft left the question is refused."""
    question = "XZ-3000 充电宝多少钱？"

    def contradict_all(body: dict) -> dict:
        count = len(re.findall(r"^\d+\. ", prompt_text(body), re.MULTILINE))
        return verdicts(*["contradicted"] * count)

    with ReplayServer(default_step=contradict_all) as server:
        config = PipelineConfig.load(demo_kb.dir, environ={}, judge=f"compatible:judge-model@{server.base_url}")
        assert PipelineConfig.load(demo_kb.dir, environ={}).judge == "offline"  # off by default
        result = QAPipeline(demo_kb, config, registry=registry).warm_up().run(question)
        judged_requests = len(server.chat_requests())
    assert result.models["judge"] == "judge-model" and judged_requests == 2  # the draft and its regeneration
    assert result.refused and result.inspection.rules_fired == ["judge"]
    assert result.budget.model_calls == 2 and result.inspection.judge["status"] == "ran"
    assert result.usage.requests == 2 and set(result.usage.by_model) == {"judge-model"}  # counted like any call
    # the decision trace shows which check rejected the sentences
    console = Console(record=True, width=200)
    console.print(render_trace(build_trace(result, demo_kb)))
    assert re.search(r"rules fired\s*│\s*judge", console.export_text())
    assert "这句与所引证据矛盾（judge" in verdict_markdown(result, "zh")  # and Studio's inspector message


_SKU_LINE = re.compile(r"【(sku-p-xz3000#sku-[^】]+)】[^\n]*?价格: ([\d.]+)元")


def stock_answer(body: dict) -> dict:
    """A price the SKU row gives, then a stock flip of that same row (库存: N件 > 0) that keeps its
    price: the support checks pass it (its number is the row's), only the stock rule rejects it."""
    chunk_id, price = _SKU_LINE.search(prompt_text(body)).groups()
    return {
        "content": f"星择 XZ-3000 充电宝的价格是 {price}元【{chunk_id}】。这款 {price}元，目前已售罄【{chunk_id}】。"
    }


def streaming_pipeline(demo_kb, registry, server, **overrides) -> QAPipeline:
    spec = f"compatible:test@{server.base_url}"
    config = PipelineConfig.load(
        demo_kb.dir, environ={}, answerer=spec, max_retries=0, backoff_s=0.01, model_timeout_s=10, **overrides
    )
    return QAPipeline(demo_kb, config, registry=registry).warm_up()


def test_a_streamed_sentence_a_rule_rejects_is_never_sent(demo_kb, registry):
    with ReplayServer(script=[stock_answer]) as server:
        pipeline = streaming_pipeline(demo_kb, registry, server)
        events = asyncio.run(_events(pipeline))
    *sentences, last = events
    assert [s.text for s in sentences] and not any("售罄" in s.text for s in sentences)
    assert "价格是" in sentences[0].text and "售罄" not in last.result.answer


def test_with_a_judge_the_answer_is_sent_once_judged(demo_kb, registry):
    """The judge reads the whole draft, so nothing is streamed before its verdict."""
    seen_at_first_sentence: list[int] = []

    def all_supported(body: dict) -> dict:
        return verdicts(*["supported"] * len(re.findall(r"^\d+\. ", prompt_text(body), re.MULTILINE)))

    def price_only(body: dict) -> dict:
        chunk_id, price = _SKU_LINE.search(prompt_text(body)).groups()
        return {"content": f"星择 XZ-3000 充电宝的价格是 {price}元【{chunk_id}】。"}

    with ReplayServer(script=[price_only, all_supported]) as server:
        judge = f"compatible:judge-model@{server.base_url}"
        pipeline = streaming_pipeline(demo_kb, registry, server, judge=judge)

        async def run() -> list:
            events = []
            async for event in pipeline.astream("XZ-3000 充电宝多少钱？"):
                if not events:
                    seen_at_first_sentence.append(len(server.chat_requests()))
                events.append(event)
            return events

        events = asyncio.run(run())
    assert seen_at_first_sentence == [2]  # the answer and the judge's request, before anything was sent
    assert events[-1].result.inspection.judge["status"] == "ran" and events[-1].result.inspection.passed


async def _events(pipeline: QAPipeline) -> list:
    return [event async for event in pipeline.astream("XZ-3000 充电宝多少钱？")]
