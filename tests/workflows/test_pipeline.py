"""The offline QA pipeline end to end on the demo KB and its 119 labelled questions: real skills,
a real ReActAgent planner, the calibrated reranker, the extractive answerer and the inspector."""

from __future__ import annotations

import json
import statistics

import pytest
import yaml
from typer.testing import CliRunner

from citescope.agents.citations import parse_citations
from citescope.agents.query_analysis import Entity
from citescope.agents.question_cues import asking_clauses
from citescope.knowledge.chinese_script import in_traditional
from citescope.knowledge.crosslingual import document_query
from citescope.tools.base import EvidenceHit
from citescope.workflows.cli import app
from citescope.workflows.evaluation.datasets import candidate_kb
from citescope.workflows.pipeline import QAPipeline, QuestionError
from citescope.workflows.pipeline_config import PipelineConfig, PipelineConfigError
from citescope.workflows.result import QAResult
from citescope.workflows.stages.rank import at_most_per_doc, new_sections_first, overviews_as_rows, with_pinned
from tests.conftest import DEMO_DIR
from tests.support.spec_sheets import spec_sheet_kb

QUESTIONS = [
    json.loads(line) for line in (DEMO_DIR / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()
]
# Floors: measured on the demo set (refusal_threshold 0.1) minus a margin; the print in
# test_demo_metrics shows the current values.
MIN_ANSWERED_SHARE = 0.82  # measured 78/86
MIN_ANSWER_FOUND_SHARE = 0.78  # measured 75/86 answers contain a gold answer string
MIN_UNANSWERABLE_REFUSED = 8  # measured 10/11
MIN_CONFLICTS_DISCLOSED = 3  # measured 4/5


@pytest.fixture(scope="module")
def pipeline(demo_kb) -> QAPipeline:
    config = PipelineConfig.load(demo_kb.dir, environ={})  # the defaults, whatever the shell exports
    return QAPipeline(demo_kb, config).warm_up()


@pytest.fixture(scope="module")
def demo_results(pipeline) -> list[tuple[dict, QAResult]]:
    """Every demo question once; a session's follow-up carries the product of its first turn."""
    carried: dict[str, Entity] = {}
    out = []
    for question in QUESTIONS:
        entity = carried.get(question.get("session")) if question.get("turn", 1) > 1 else None
        result = pipeline.run(question["question"], session_entity=entity)
        if question.get("session") and result.features["products"]:
            first = result.features["products"][0]
            carried[question["session"]] = Entity(name=first["name"], product_id=first["product_id"])
        out.append((question, result))
    return out


def _contains(answer: str, expected: str) -> bool:
    return expected.replace(" ", "") in answer.replace(" ", "")


def test_every_citation_is_valid_shown_evidence_in_order(demo_results):
    for question, result in demo_results:
        cited = [c.id for c in result.citations]
        assert set(cited) <= set(result.evidence_ids), question["qid"]
        assert cited == parse_citations(result.answer, known_ids=result.evidence_ids), question["qid"]
        if result.refused:
            assert not cited and result.answer_source == "refusal"
        else:
            assert cited and result.inspection.passed and not result.inspection.invalid_ids, question["qid"]


def test_budgets_hold_on_every_question(demo_results):
    for question, result in demo_results:
        used = result.budget
        assert used.tool_calls <= used.limits.max_tool_calls, question["qid"]
        assert all(n <= used.limits.max_calls_per_tool for n in used.per_tool.values()), question["qid"]
        assert sum(call.outcome == "ran" for call in result.tool_calls) == used.tool_calls
        assert used.model_calls == 0 and result.planner_source == "offline"
        assert not result.degraded, (question["qid"], result.degradation_reasons)


def test_demo_metrics(demo_results):
    answerable = [(q, r) for q, r in demo_results if q["answerable"]]
    unanswerable = [(q, r) for q, r in demo_results if not q["answerable"]]
    answered = sum(not r.refused for _, r in answerable)
    found = sum(any(_contains(r.answer, a) for a in q["answers"]) for q, r in answerable)
    refused = sum(r.refused for _, r in unanswerable)
    gated = sum(r.refusal_reason == "weak_evidence" for _, r in unanswerable)
    conflicting = [(q, r) for q, r in demo_results if q["qtype"] == "conflicting"]
    disclosed = [
        q["qid"]
        for q, r in conflicting
        if all(any(_contains(r.answer, a) for a in group) for group in q["answers_all_of"])
    ]
    totals = sorted(r.timings_ms["total"] for _, r in demo_results)
    stages = {
        stage: statistics.median(r.timings_ms.get(stage, 0.0) for _, r in demo_results)
        for stage in ("analyze", "policy", "planner", "rerank", "conflicts", "answer", "inspect")
    }
    print(
        f"\nanswerable answered {answered}/{len(answerable)}, gold answer in text {found}/{len(answerable)}; "
        f"unanswerable refused {refused}/{len(unanswerable)} ({gated} by the evidence gate); "
        f"conflicts disclosed {len(disclosed)}/{len(conflicting)} {disclosed}"
    )
    print(
        f"offline latency p50 {totals[len(totals) // 2]:.0f} ms, p95 {totals[int(len(totals) * 0.95)]:.0f} ms; "
        "median per stage (ms): " + ", ".join(f"{k} {v:.1f}" for k, v in stages.items())
    )
    assert answered >= MIN_ANSWERED_SHARE * len(answerable)
    assert found >= MIN_ANSWER_FOUND_SHARE * len(answerable)
    assert refused >= MIN_UNANSWERABLE_REFUSED
    assert len(disclosed) >= MIN_CONFLICTS_DISCLOSED


def test_detected_conflicts_are_disclosed_with_each_side_cited(demo_results):
    with_conflicts = [(q, r) for q, r in demo_results if r.conflicts and not r.refused]
    assert len(with_conflicts) >= MIN_CONFLICTS_DISCLOSED
    for question, result in with_conflicts:
        assert not result.inspection.missing_conflicts, question["qid"]
        cited = {c.id for c in result.citations}
        for conflict in result.conflicts:
            assert len({v.chunk_id for v in conflict.values} & cited) >= 2, question["qid"]


def test_weak_evidence_is_refused_without_generating(pipeline):
    result = pipeline.run("你们京东上有旗舰店吗？价格一样不？")
    assert result.refused and result.refusal_reason == "weak_evidence"
    assert result.best_score < pipeline.config.refusal_threshold
    assert result.answer == pipeline.refusals.plain and result.citations == [] and result.inspection is None
    assert "answer" not in result.timings_ms and result.tool_calls  # it searched, then generated nothing


def test_the_threshold_decides_the_gate_but_not_for_findings_read_off_the_product_tables(demo_kb, pipeline):
    question = "默认发什么快递？"
    answered = pipeline.run(question)
    # a clear answer, well above the calibrated gate
    assert not answered.refused and answered.best_score > 3 * pipeline.config.refusal_threshold
    strict = QAPipeline(
        demo_kb, pipeline.config.model_copy(update={"refusal_threshold": 0.99}), registry=pipeline.registry
    ).warm_up()
    assert strict.run(question).refusal_reason == "weak_evidence"
    # the price of a product the question names and the size size_recommend works out from its table
    # are relevant by construction: no text-match score refuses them (they still pass the inspector)
    price = strict.run("XZ-3000 充电宝多少钱？")
    assert not price.refused and "299.00元" in price.answer and price.best_score < 0.99
    size = strict.run("身高183 体重85kg 峰刃冲锋衣穿什么码")
    assert not size.refused and "建议选 XL 码" in size.answer
    # a product the shop does not sell is no finding of its tables
    assert strict.run("你们店有卖Air Jordan 11吗？多少钱？").refused


@pytest.mark.parametrize(
    "question, model",
    [
        ("烈驹火焰8多少钱？", "火焰8"),
        ("XZ-4000充电宝什么时候上市？", "XZ-4000"),
        ("你们店有卖Air Jordan 11吗？多少钱？", "Air Jordan 11"),
    ],
)
def test_a_model_the_shop_lacks_is_refused_by_name_whatever_its_sibling_scores(pipeline, question, model):
    # the 火焰7's page matches 烈驹火焰8 on every word but one: well above the gate, and about another model
    result = pipeline.run(question)
    assert result.refused and result.refusal_reason == "unknown_model" and result.citations == []
    assert result.answer == pipeline.refusals.unknown_model[False].format(models=model)
    assert result.features["unknown_models"] == [model] and result.features["products"] == []
    if model.isascii():  # asked in English, refused in English
        english = pipeline.run(f"How much is the {model}?")
        assert (
            english.refusal_reason == "unknown_model" and english.answer.startswith("Sorry") and model in english.answer
        )


def test_a_model_the_shop_lacks_beside_one_it_sells_is_said_to_be_missing(pipeline):
    result = pipeline.run("火焰7和火焰8哪个贵？")
    assert not result.refused and result.inspection.passed and "699.00元" in result.answer
    assert result.answer.endswith("关于“火焰8”，资料中暂未找到可靠信息。")
    assert {c.doc_id for c in result.citations} <= {"prod-lj-huoyan7", "sku-p-lj-huoyan7"}


def test_each_product_compared_is_shown_the_best_chunk_of_its_page(pipeline):
    # the second product's SKU overview and rows outrank its page's 材质 line for a weight question and
    # would take its slots; each product compared is shown its page's best chunk, and answered from it
    result = pipeline.run("风驰轻羽3和跃动轻羽Pro哪双更轻？分别多重？")
    assert {"prod-fc-qingyu3#材质-0", "prod-yd-qingyu-pro#材质-0"} <= set(result.evidence_ids)
    assert "235 克" in result.answer and "198 克" in result.answer and "价格" not in result.answer, result.answer
    ranked = pipeline.run("跃动轻羽Pro多重？")  # one product: its chunks as ranked, nothing pinned
    assert not ranked.refused and "198 克" in ranked.answer


def test_a_compound_question_is_ranked_and_gated_by_its_parts_too(demo_kb, pipeline):
    # two questions in one match no passage as well as each matches its own; the answer is given
    # part by part, so the gate reads the best chunk of the weakest part
    question = "退货运费谁承担？退款几天到账？"
    ungated = QAPipeline(
        demo_kb, pipeline.config.model_copy(update={"refusal_threshold": 0.0}), registry=pipeline.registry
    ).warm_up()

    def best(query: str, result: QAResult) -> float:  # over everything the skills found
        pool = list(dict.fromkeys(i for call in result.tool_calls for i in call.hit_ids))
        return max(pipeline.reranker.score(query, [demo_kb.get(i) for i in pool]))

    result = ungated.run(question)
    parts = pipeline.analyzer.run(question).parts
    assert len(parts) == 2 and result.best_score == round(min(best(part, result) for part in parts), 4)
    assert result.best_score > best(question, result)
    between = QAPipeline(
        demo_kb,
        pipeline.config.model_copy(update={"refusal_threshold": (best(question, result) + result.best_score) / 2}),
        registry=pipeline.registry,
    )
    answered = between.warm_up().run(question)
    assert not answered.refused and answered.citations, answered.answer
    # one part alone (地址在哪) matching a passage about something else (修改地址) passes nothing
    unanswerable = pipeline.run("你们在上海有线下门店吗？地址在哪？")
    assert (
        unanswerable.refused
        and best("地址在哪", ungated.run("你们在上海有线下门店吗？地址在哪？")) > pipeline.config.refusal_threshold
    )
    # a question of one part is ranked and gated on its own score, as before
    single = ungated.run("退款几天到账？")
    assert single.best_score == round(best("退款几天到账？", single), 4)


def test_a_chat_message_is_also_ranked_by_what_it_asks_without_what_the_shopper_adds(demo_kb, pipeline):
    question = "东西坏了想保修 发票早丢了还能修不"
    asked = asking_clauses(question)
    assert asked == "发票早丢了还能修不"
    ungated = QAPipeline(
        demo_kb, pipeline.config.model_copy(update={"refusal_threshold": 0.0}), registry=pipeline.registry
    ).warm_up()
    result = ungated.run(question)
    pool = [demo_kb.get(i) for i in dict.fromkeys(i for call in result.tool_calls for i in call.hit_ids)]
    readings = [r for r in (question, document_query(question), asked, document_query(asked)) if r]
    assert result.best_score == round(max(max(pipeline.reranker.score(r, pool)) for r in readings), 4)
    assert result.best_score > max(pipeline.reranker.score(question, pool))
    # the FAQ entry on repairs without an invoice, not a product's warranty paragraph
    answered = pipeline.run(question)
    assert not answered.refused and "无需纸质发票" in answered.answer, answered.answer


def test_a_return_window_written_in_words_finds_the_policies_written_in_digits(pipeline):
    # the policies say 7天 (2024) and 15天 (2026); the customer writes 七天
    answered = pipeline.run("XZ-3000可以七天无理由退货吗")
    assert not answered.refused and "15天无理由" in answered.answer, answered.answer
    cited = [c.id for c in answered.citations]
    assert {"policy-returns-2026#无理由退换-0", "policy-returns-2024#无理由退换-0"} <= set(cited), cited


def test_a_shop_policy_answers_a_question_naming_a_product_and_the_page_adds_nothing(pipeline):
    answered = pipeline.run("暖岩抓绒衣寄到新疆要运费吗")  # the shipping policy names no product
    assert not answered.refused and "15 元" in answered.answer, answered.answer
    assert [c.id for c in answered.citations] == ["policy-shipping#包邮规则-0"], answered.answer


def test_a_shipping_question_naming_a_product_is_answered_from_the_shops_shipping_terms(pipeline):
    answered = pipeline.run("轻羽3跑鞋下单后几天能发货")  # the product's page says nothing of shipping
    assert not answered.refused and {c.doc_type for c in answered.citations} <= {"faq", "policy"}, answered.answer
    assert "发货" in answered.answer, answered.answer


def test_weak_evidence_that_disagrees_is_refused_saying_so(demo_kb, pipeline):
    # The planted AJ1 leather conflict behind a gate no evidence passes: the customer hears that
    # the sources disagree, and neither side is asserted.
    strict = QAPipeline(
        demo_kb, pipeline.config.model_copy(update={"refusal_threshold": 0.99}), registry=pipeline.registry
    ).warm_up()
    result = strict.run("AJ1 Retro 的鞋面是真皮吗？")
    assert result.refused and result.refusal_reason == "weak_evidence"
    assert result.answer == strict.refusals.conflict and result.citations == []
    assert {v.value for c in result.conflicts for v in c.values} >= {"头层牛皮", "人造革"}
    assert "answer" not in result.timings_ms
    plain = strict.run("默认发什么快递？")  # no disagreement: the plain refusal
    assert plain.refused and plain.answer == strict.refusals.plain and plain.conflicts == []


def test_the_per_document_cap_only_leaves_slots_empty_when_nothing_else_can_fill_them(demo_kb, pipeline):
    # Searching one product's page alone (a question's candidate documents, as RGB and DomainRAG
    # conflict questions are asked): the evidence takes more than evidence_per_doc of its
    # chunks instead of stopping at the cap.
    view = QAPipeline(candidate_kb(demo_kb, ["prod-aj1-retro"]), pipeline.config, registry=pipeline.registry).warm_up()
    result = view.run("AJ1 Retro 的鞋面是什么材质？保修多久？")
    assert {i.split("#")[0] for i in result.evidence_ids} == {"prod-aj1-retro"}
    assert pipeline.config.evidence_per_doc < len(result.evidence_ids) <= pipeline.config.evidence_top_n
    # the cap itself: the best `limit` of each document first, the rest kept apart in order
    hits = [
        EvidenceHit(chunk_id=f"{doc}#{i}", doc_id=doc, text="t", score=1.0)
        for doc, i in [("a", 0), ("a", 1), ("b", 0), ("a", 2), ("b", 1), ("b", 2)]
    ]
    kept, spare = at_most_per_doc(hits, 2)
    assert [h.chunk_id for h in kept] == ["a#0", "a#1", "b#0", "b#1"] and [h.chunk_id for h in spare] == ["a#2", "b#2"]


def test_a_product_pages_table_rows_take_one_of_its_slots(pipeline):
    # every size-table row repeats the page's title (…中帮防水徒步鞋 尺码表 — 尺码: 41), so for a question
    # about the shoe the rows outscore the line that answers it; they take one slot of the page, and
    # further rows only slots nothing else fills
    result = pipeline.run("岩途徒步鞋防水吗 过小溪会不会湿脚")
    rows = [n for n, i in enumerate(result.evidence_ids) if "#尺码表-r" in i]
    assert result.evidence_ids.index("prod-sy-yantu#功能特点-0") < (rows[1:] or [99])[0]
    assert "不渗水" in result.answer and any("#功能特点" in c.id for c in result.citations)

    def row(doc, i, product):
        return EvidenceHit(
            chunk_id=f"{doc}#尺码表-r{i}-0", doc_id=doc, section="尺码表", text="t", score=1.0, product_id=product
        )

    page = EvidenceHit(chunk_id="p#功能特点-0", doc_id="p", section="功能特点", text="t", score=0.5, product_id="x")
    kept, spare = at_most_per_doc([row("p", 0, "x"), row("p", 1, "x"), page], 2)
    assert [h.chunk_id for h in kept] == ["p#尺码表-r0-0", "p#功能特点-0"] and [h.chunk_id for h in spare] == [
        "p#尺码表-r1-0"
    ]
    # a table that is no product's (DomainRAG's admission scores) keeps the plain cap
    kept, _ = at_most_per_doc([row("t", 0, None), row("t", 1, None)], 2)
    assert len(kept) == 2


def test_slots_beyond_the_cap_go_to_sections_not_shown_yet(pipeline):
    # The charger's size table (devices and the watts each gets) and its SKU rows fill the
    # per-document cap; the next slot goes to a section not shown yet (功能特点, where the
    # single-port maximum is) before a third size-table row, which answered "20W" before.
    result = pipeline.run("星择GaN充电器C65单口最大多少瓦？")
    assert not result.refused and "65W" in result.answer
    assert "20W" not in result.answer
    assert any("#功能特点" in c.id for c in result.citations)

    # the order itself: the best spare hit of each unseen (document, section), then the rest
    def hit(doc, section, i):
        return EvidenceHit(chunk_id=f"{doc}#{section}-{i}", doc_id=doc, section=section, text="t", score=1.0)

    shown = [hit("a", "table", 0), hit("a", "table", 1)]
    spare = [hit("a", "table", 2), hit("a", "notes", 0), hit("a", "notes", 1), hit("b", "table", 0)]
    fresh, rest = new_sections_first(spare, shown)
    assert [h.chunk_id for h in fresh] == ["a#notes-0", "b#table-0"]
    assert [h.chunk_id for h in rest] == ["a#table-2", "a#notes-1"]


def test_a_products_variants_are_answered_from_its_sku_overview(pipeline):
    # The overview ranks with the product's best SKU row, so it is in the evidence to answer
    # "有哪些颜色" with every colour at once (a row would answer for one colour as if it were all).
    result = pipeline.run("行旅T20登机箱有几种颜色可选？")
    assert not result.refused and "sku-p-xl-t20#skus-0" in {c.id for c in result.citations}
    assert all(colour in result.answer for colour in ("曜石黑", "月光银", "雾霾蓝")) and "缺货：雾霾蓝" in result.answer
    # a follow-up's price question: its rows tie, and the overview still takes one of the slots
    jiguang = Entity(name="北极驿 极光700 连帽羽绒服", product_id="p-bjy-jiguang700")
    price = pipeline.run("它多少钱？", session_entity=jiguang)
    assert [c.id for c in price.citations] == ["sku-p-bjy-jiguang700#skus-0"] and "1299.00元" in price.answer
    # a question about one section of the page keeps that section: the overview is no new section
    weight = pipeline.run("声屿S1耳机单只耳朵有多重？")
    assert "4.8" in weight.answer

    # the rule itself: an overview scores as its document's best SKU row, nothing else changes
    def hit(chunk_id, section):
        return EvidenceHit(chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], section=section, text="t", score=0.0)

    hits = [hit("sku-a#sku-1", "SKU"), hit("sku-a#sku-2", "SKU"), hit("sku-a#skus-0", "规格汇总"), hit("p#x-0", "x")]
    assert overviews_as_rows(hits, [0.3, 0.6, 0.1, 0.9]) == [0.3, 0.6, 0.6, 0.9]


def test_a_size_worked_out_by_the_skill_is_the_answer(pipeline):
    result = pipeline.run("我身高182，体重85公斤，北极驿冰原派克棉服选哪个尺码？")
    assert result.answer.startswith("北极驿 冰原 派克棉服建议选 XL 码：身高 182cm 在 XL 码的适合身高 181-186cm 内")
    cited = [c.id for c in result.citations]
    assert cited[0] == "prod-bjy-bingyuan#尺码表-r3-0" and "sku-p-bjy-bingyuan#sku-BJYBY-BLK-XL" in cited
    # pinned evidence: every pinned hit is shown, each in place of the lowest-ranked unpinned one
    ranked = [EvidenceHit(chunk_id=f"c{i}", doc_id=f"d{i}", text="t", score=1.0 - i / 10) for i in range(6)]
    assert [h.chunk_id for h in with_pinned(ranked[:3], ranked, ["c5", "c4"], 3)] == ["c0", "c4", "c5"]
    assert with_pinned(ranked[:3], ranked, ["c1", "c9"], 3) == ranked[:3]  # shown already; unknown ids ignored
    assert [h.chunk_id for h in with_pinned(ranked[:2], ranked, ["c5"], 3)] == ["c0", "c1", "c5"]


def test_result_trace_json_and_text(pipeline):
    result = pipeline.run("北极驿极光700羽绒服的蓬松度是多少？")
    assert not result.refused and len(result.trace_id) == 32
    assert result.policy.arm and result.plan and result.features["intent"]
    assert [c.name for c in result.tool_calls] == [c.skill for c in result.plan]
    assert result.models == {"planner": "policy-planner", "answerer": "extractive", "reranker": "offline"}
    assert len(result.evidence_ids) <= pipeline.config.evidence_top_n
    assert {"analyze", "policy", "planner", "rerank", "conflicts", "answer", "inspect", "total"} <= set(
        result.timings_ms
    )
    assert QAResult.model_validate_json(result.model_dump_json()) == result
    text = result.render_text()
    first = result.citations[0]
    assert text.startswith(result.answer) and "来源：" in text
    assert f"[1] 【{first.id}】 {first.title} — {first.source}, {first.updated_at}" in text


def test_caller_filters_bound_the_evidence(pipeline):
    result = pipeline.run("退货运费谁承担？", filters={"doc_type": ["policy"]})
    assert result.evidence_ids
    assert {pipeline.kb.get(i).doc_type for i in result.evidence_ids} == {"policy"}
    with pytest.raises(QuestionError, match="invalid filters"):
        pipeline.run("退货运费谁承担？", filters={"brand": '星择" or 1==1'})


@pytest.mark.parametrize(
    "question, message",
    [
        ("", "empty"),
        ("   \n\t", "empty"),
        ("退" * 2001, "2001 characters long; the limit is 2000"),
        (None, "must be text"),
    ],
)
def test_bad_questions_are_clear_errors(pipeline, question, message):
    with pytest.raises(ValueError, match=message):
        pipeline.run(question)


def test_config_layers(tmp_path):
    (tmp_path / "config.yaml").write_text(
        yaml.safe_dump({"refusal_threshold": 0.25, "evidence_top_n": 4, "calibrated_by": "someone else's key"}),
        encoding="utf-8",
    )
    env = {"CITESCOPE_EVIDENCE_TOP_N": "5", "CITESCOPE_KB_DIR": "not ours"}
    config = PipelineConfig.load(tmp_path, environ=env, max_retries=3, planner=None)
    assert config.refusal_threshold == 0.25  # the KB's calibrated value over the default
    assert config.evidence_top_n == 5  # the environment over the KB
    assert config.max_retries == 3 and config.planner == "offline"  # overrides; None means unset
    assert config.budget().max_tool_calls == 4 and config.retry().call_timeout_s == config.model_timeout_s
    with pytest.raises(PipelineConfigError, match="refusal_threshold"):
        PipelineConfig.load(environ={"CITESCOPE_REFUSAL_THRESHOLD": "high"})
    with pytest.raises(PipelineConfigError, match="unknown provider"):
        PipelineConfig.load(environ={}, answerer="gpt5")
    bad_defaults = tmp_path / "pipeline.yaml"
    bad_defaults.write_text("max_tool_call: 3\n", encoding="utf-8")
    with pytest.raises(PipelineConfigError, match=r"unknown setting\(s\) \['max_tool_call'\]"):
        PipelineConfig.load(environ={}, defaults_path=bad_defaults)


def test_ask_command(demo_kb, tmp_path):
    runner = CliRunner()
    shown = runner.invoke(app, ["ask", "XZ-3000 充电宝多少钱？", "--kb", str(demo_kb.dir)])
    assert shown.exit_code == 0, shown.output
    assert "【sku-p-xz3000#" in shown.output and "来源：\n[1] 【sku-p-xz3000#" in shown.output
    as_json = runner.invoke(app, ["ask", "XZ-3000 充电宝多少钱？", "--kb", str(demo_kb.dir), "--json"])
    assert as_json.exit_code == 0 and QAResult.model_validate_json(as_json.output).citations
    for args, message in (
        (["  "], "empty"),
        (["退" * 2001], "limit is 2000"),
        (["hi", "--planner", "bogus"], "unknown provider"),
    ):
        failed = runner.invoke(app, ["ask", *args, "--kb", str(demo_kb.dir)])
        assert failed.exit_code == 2 and message in " ".join(failed.output.split())
    missing = runner.invoke(app, ["ask", "你好", "--kb", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and "no knowledge base" in " ".join(missing.output.split())


def test_a_question_about_what_a_product_is_like_is_answered_by_its_page_opening(pipeline):
    # SKU rows and size-table rows repeat the name and outrank the page's prose for such a question;
    # the opening (商品简介) is pinned into the evidence when a search found it
    result = pipeline.run("山野峰刃冲锋衣怎么样？")
    assert result.features["asks_overview"] and not result.refused
    assert [c.id for c in result.citations] == ["prod-sy-fengren#商品简介-0"] and "三层压胶冲锋衣" in result.answer
    narrow = pipeline.run("山野峰刃冲锋衣防水怎么样？")
    assert not narrow.features["asks_overview"]


def test_a_conflict_just_below_the_evidence_cut_is_disclosed(demo_kb, pipeline):
    # Two shown slots hold one return-policy version; the other version is gathered but ranked
    # below the cut. The conflict check reads the pool's best conflict_scan_top_n chunks, so the
    # disagreement is disclosed with both sides shown and cited, within the same slots.
    question = "现在买的东西几天之内可以无理由退换？"
    narrow = pipeline.config.model_copy(update={"evidence_top_n": 2})
    blind = (
        QAPipeline(demo_kb, narrow.model_copy(update={"conflict_scan_top_n": 0}), registry=pipeline.registry)
        .warm_up()
        .run(question)
    )
    assert blind.conflicts == [] and len(blind.evidence_ids) == 2  # the control: the cut hides it
    result = QAPipeline(demo_kb, narrow, registry=pipeline.registry).warm_up().run(question)
    assert not result.refused and len(result.evidence_ids) == 2
    assert [{v.value for v in c.values} for c in result.conflicts] == [{"7天", "15天"}]
    cited = {c.id for c in result.citations}
    assert {v.chunk_id for v in result.conflicts[0].values} <= cited <= set(result.evidence_ids)
    assert "7天" in result.answer and "15天" in result.answer


ENGLISH_SHOP = [  # a cross-border shop's English pages: two versions of one policy, and distractors
    {
        "doc_id": "en-returns-2024",
        "title": "Returns policy (2024 version)",
        "doc_type": "policy",
        "updated_at": "2024-05-01",
        "version": 1,
        "source": "store policy",
        "text": "Items can be returned within 7 days of delivery. "
        "Returned items must be unused and in their original box.",
    },
    {
        "doc_id": "en-returns-2026",
        "title": "Returns policy (2026 version)",
        "doc_type": "policy",
        "updated_at": "2026-06-01",
        "version": 2,
        "source": "store policy",
        "text": "Items can be returned within 15 days of delivery. "
        "Returned items must be unused and in their original box.",
    },
    {
        "doc_id": "en-shipping",
        "title": "Shipping policy",
        "doc_type": "policy",
        "updated_at": "2026-01-10",
        "source": "store policy",
        "text": "Orders ship from our Shenzhen warehouse within 2 days of payment. "
        "Standard delivery takes 5 to 9 days.",
    },
    {
        "doc_id": "en-warranty",
        "title": "Warranty",
        "doc_type": "policy",
        "updated_at": "2025-09-01",
        "source": "store policy",
        "text": "Every charger comes with a 12 months warranty. Keep the receipt to claim it.",
    },
]


@pytest.fixture(scope="module")
def english_pipeline(tmp_path_factory) -> QAPipeline:
    from citescope.knowledge.ingest import Ingestor
    from citescope.knowledge.kb import KnowledgeBase
    from citescope.knowledge.settings import get_settings

    folder = tmp_path_factory.mktemp("english-shop")
    corpus = folder / "pages.jsonl"
    corpus.write_text("\n".join(json.dumps(doc) for doc in ENGLISH_SHOP) + "\n", encoding="utf-8")
    kb_dir = folder / "kb"
    kb = KnowledgeBase(kb_dir, get_settings(kb_dir=kb_dir), create=True)
    Ingestor(kb, show_progress=False).run([corpus])
    return QAPipeline(kb.warm_up(), PipelineConfig.load(kb_dir, environ={})).warm_up()


def test_an_english_policy_conflict_is_detected_and_disclosed_in_english(english_pipeline):
    result = english_pipeline.run("How many days do I have to return an item?")
    assert not result.refused
    assert [[v.value for v in c.values] for c in result.conflicts] == [["15 days", "7 days"]]  # newest first
    assert [v.chunk_id.split("#")[0] for v in result.conflicts[0].values] == ["en-returns-2026", "en-returns-2024"]
    assert result.answer.startswith("Sources disagree") and result.answer.endswith("the newest one prevails.")
    assert result.inspection.passed and not result.inspection.missing_conflicts
    # both sides cited, and nothing else: the shipping page's "within 2 days of payment" answers nothing asked
    assert {c.id for c in result.citations} == {v.chunk_id for v in result.conflicts[0].values}
    shipping = english_pipeline.run("Where do orders ship from?")
    assert shipping.conflicts == [] and "within 2 days of payment" in shipping.answer
    assert [c.id for c in shipping.citations] == ["en-shipping#body-0"]


def test_an_english_question_is_refused_in_english(english_pipeline):
    result = english_pipeline.run("Do you sell gift cards?")
    assert result.refused and result.answer.startswith("Sorry, the knowledge base has no reliable information")
    title = english_pipeline.run("Warranty")  # a page's title typed alone, in an English shop
    assert title.answer.startswith("Based on the available information, every charger comes with a 12 months")
    terse = english_pipeline.run("Gift card price?")  # no function word: English beyond the pages' titles
    assert terse.refused and terse.answer == result.answer
    chinese = english_pipeline.run("你们卖礼品卡吗？")
    assert chinese.refused and chinese.answer == english_pipeline.refusals.plain


def test_an_english_question_about_a_chinese_shop_is_answered_from_its_chinese_evidence(pipeline):
    # the glossary's Chinese words (knowledge/glossary_en.json) let BM25, the reranker and the gate
    # read Chinese evidence: each of these was refused with a gate score under 0.05
    shipping = pipeline.run("whats the minimum order for free shipping")
    assert not shipping.refused and "99 元包邮" in shipping.answer, shipping.answer
    assert shipping.answer.startswith("Based on the available information, ")
    stock = pipeline.run("how many white XZ-2000 left in stock")
    assert not stock.refused and "(白色): price 149.00元, in stock" in stock.answer, stock.answer


def test_an_english_question_naming_a_place_the_chinese_shop_never_names_is_refused(pipeline):
    # "ship" is 发货 / 配送 to the glossary, "Hong Kong" nothing: the delivery times of 江浙沪 answered it until
    # the names the glossary does not translate counted as words the evidence must say (knowledge/crosslingual.py)
    for question in ("Do you ship to Hong Kong?", "Do you ship internationally to Germany?"):
        result = pipeline.run(question)
        assert result.refused and result.answer.startswith("Sorry"), result.answer
    # the same question without the name is answered from the shipping policy, as before
    shipping = pipeline.run("How soon do you ship after I place an order?")
    assert not shipping.refused and "policy-shipping#" in shipping.answer, shipping.answer
    # a brand written in pinyin is the shop's own name: 星择 is Xingze
    price = pipeline.run("How much is the Xingze XZ-3000 power bank?")
    assert not price.refused and "299.00元" in price.answer, price.answer


def test_an_english_shop_that_names_the_place_answers_it(english_pipeline):
    shipping = english_pipeline.run("Do orders ship from Shenzhen?")
    assert not shipping.refused and "Shenzhen warehouse" in shipping.answer, shipping.answer


def test_an_english_question_the_chinese_shop_does_not_answer_is_refused(pipeline):
    # the training-fitted reranker scores it 0.187, over the default 0.1775 (issue #46's restated baseline); the
    # glossary's word for it, 货到付款, is in no sentence: 付款 of "16:00 前付款的订单当天发货" answered it until
    # an English question's sentence had to state half of what it asks in the glossary's words
    unknown = pipeline.run("Do you accept cash on delivery?")
    assert unknown.refused and unknown.answer.startswith("Sorry")
    assert unknown.refusal_reason == "no_supported_answer"  # the gate let it through: the answer stage refused


def test_a_question_in_traditional_characters_is_answered_in_them_from_the_simplified_pages(pipeline):
    # a customer in Hong Kong or Taiwan: read as the shop's pages write it, answered in the script asked
    for asked, simplified in (
        ("退貨運費誰承擔？", "退货运费谁承担？"),
        ("星擇XZ-3000充電寶多少錢？", "星择XZ-3000充电宝多少钱？"),
    ):
        result, plain = pipeline.run(asked), pipeline.run(simplified)
        assert result.question == asked and not result.refused and result.inspection.passed, result.answer
        assert result.evidence_ids == plain.evidence_ids and result.citations == plain.citations
        assert result.answer == in_traditional(plain.answer) != plain.answer
        assert all(f"【{c.id}】" in result.answer for c in result.citations)  # the ids as the KB has them
    assert "299.00元" in pipeline.run("星擇XZ-3000充電寶多少錢？").answer
    refused = pipeline.run("你們有實體店嗎？")
    assert refused.refused and refused.answer == in_traditional(pipeline.refusals.plain) != pipeline.refusals.plain


def test_a_heading_the_products_share_that_this_page_lacks_is_answered_by_the_shops_rule_or_refused(
    tmp_path_factory,
):
    """保修 and 产地 are headings of every charger page here (agents/aspects.py). A page without them is not
    answered with its other facts (its charging time was the answer to 保修多久); the shop's warranty
    policy, which gives pages without a 保修 section a default period, is looked up for it (the
    retrieve stage's shop rules), and nothing states an origin, so that is refused."""
    from tests.conftest import ingested_kb

    folder = tmp_path_factory.mktemp("aspects-shop")
    pages = folder / "products"
    pages.mkdir()
    for name in ("p-xz2000.md", "p-xz3000.md", "p-xz-c65.md"):
        text = (DEMO_DIR / "products" / name).read_text(encoding="utf-8")
        if name == "p-xz2000.md":  # its warranty and origin sections left out
            for heading in ("## 保修", "## 产地"):
                head, _, tail = text.partition(heading)
                text = head + (tail.partition("\n## ")[2] and "## " + tail.partition("\n## ")[2])
            assert "保修" not in text and "产地" not in text
        (pages / name).write_text(text, encoding="utf-8")
    policies = folder / "policies"
    policies.mkdir()
    (policies / "warranty.md").write_text((DEMO_DIR / "policies" / "warranty.md").read_text(encoding="utf-8"))
    kb, _ = ingested_kb(folder / "kb", [pages, policies])
    pipeline = QAPipeline(kb, PipelineConfig.load(kb.dir, environ={})).warm_up()
    try:
        lacking = pipeline.run("星择XZ-2000充电宝保修多久？")
        assert not lacking.refused and "3.5 小时" not in lacking.answer, lacking.answer
        assert {c.doc_id for c in lacking.citations} == {"policy-warranty"}, lacking.answer
        assert "保修" in lacking.answer  # the rule for chargers or the default for pages without a period
        stated = pipeline.run("星择XZ-3000充电宝保修多久？")
        assert not stated.refused and {c.doc_id for c in stated.citations} == {"prod-xz3000"}, stated.answer
        assert not any(i.startswith("policy-") for i in stated.evidence_ids)  # its page says it: no rule looked up
        origin = pipeline.run("星择XZ-2000充电宝的产地是哪里？")
        assert origin.refused, origin.answer
    finally:
        pipeline.close()
        kb.close()


def test_a_siblings_fact_is_no_answer_about_the_entity_asked(tmp_path_factory):
    """风行 逐光X3's sheet has no battery capacity; 极岚 听澜X3's has one. The answer stage quoted it
    (the model number matched) before it read the rank stage's siblings (agents/entity_scope.py)."""
    kb = spec_sheet_kb(tmp_path_factory.mktemp("spec-sheets"))
    pipeline = QAPipeline(kb, PipelineConfig.load(kb.dir, environ={"CITESCOPE_REFUSAL_THRESHOLD": "0"})).warm_up()
    try:
        lacking = pipeline.run("风行 逐光X3的电池容量是多少？")
        assert lacking.refused and lacking.refusal_reason == "no_supported_answer", lacking.answer
        assert "320mAh" not in lacking.answer
        stated = pipeline.run("极岚 听澜X3的电池容量是多少？")
        assert "320mAh" in stated.answer and {c.doc_id for c in stated.citations} == {"spec-2"}, stated.answer
    finally:
        pipeline.close()
        kb.close()


def test_a_shop_rule_asked_of_no_product_is_answered_from_the_shops_policy(pipeline):
    """Every demo product page has a 保修 section; the question names none of them, so one of them is no
    answer (it was: a tote bag's 30 days), and the warranty policy is."""
    result = pipeline.run("保修多久？")
    assert not result.refused, result.answer
    assert {c.doc_id for c in result.citations} == {"policy-warranty"}, result.answer


def test_the_shops_rules_looked_up_for_a_silent_page_are_about_the_aspect_not_mentioning_it(demo_kb, pipeline):
    """云迹 S5 writes 防泼水, not 防水: its page is silent on 防水, and the warranty policy mentions 防水 only in
    its exclusions (进水…超出商品标注的防水等级), which is no rule about it."""
    from citescope.agents.evidence import EvidencePool

    question = "云迹S5胸包防水吗"
    features = pipeline.analyzer.run(question)
    page = [EvidenceHit.from_chunk(c, 0.5) for c in demo_kb.chunks_of("prod-yj-s5")]
    assert pipeline.answer.extractive.asked_aspects(question) == {"防水"}
    assert pipeline.retrieve.shop_rules(EvidencePool.from_hits(page), features, question) == []
    # a page that states the aspect asked gets none looked up either
    warranty = "云迹S5胸包保修多久"
    assert pipeline.retrieve.shop_rules(EvidencePool.from_hits(page), pipeline.analyzer.run(warranty), warranty) == []
