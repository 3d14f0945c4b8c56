"""Self-calibration (workflows/self_calibration.py): the threshold choice on synthetic scores, the
KB config it writes as PipelineConfig reads it, and `run.py calibrate --self` on a copy of the demo KB
(real pipeline, real Milvus Lite). That the module never imports workflows.evaluation is held by
pyproject's import contracts (tests/test_architecture.py)."""

from __future__ import annotations

import json
import math
import shutil

import pytest
import yaml
from typer.testing import CliRunner

from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.settings import get_settings
from citescope.workflows.cli.app import app
from citescope.workflows.cli.common import REPO
from citescope.workflows.pipeline_config import PipelineConfig
from citescope.workflows.self_calibration import (
    CONFIG_KEY,
    LABELLED_KEY,
    ProbeOutcome,
    SelfCalibrationError,
    calibration_due,
    choose_hedge_band,
    choose_threshold,
    confident_catches,
    confident_refusals,
    self_calibrate,
    write_kb_config,
)


def test_the_threshold_keeps_the_bound_with_confidence_and_refuses_all_it_can_of_the_rest():
    answerable = [0.05, 0.06, 0.07, 0.08, 0.09, *[0.3 + i / 1000 for i in range(75)]]  # 80 probes
    unanswerable = [0.01, 0.02, 0.04, 0.2, 0.25, 0.5, 0.6, 0.7, 0.75, 0.8]
    choice = choose_threshold(answerable, unanswerable, bound=0.10)
    # 10% of 80 is 8, but 8 refusals of 80 do not show a rate under 10%: 3 do, with 95% confidence
    assert choice.false_refusals == 3 and choice.false_refusal_rate == 0.0375
    assert choice.threshold == 0.08  # the fourth lowest answerable: any higher refuses a fourth
    assert choice.refusal_recall == 0.3  # 0.01, 0.02, 0.04 are under it
    tighter = choose_threshold(answerable, unanswerable, bound=0.0)
    assert tighter.false_refusals == 0 and tighter.threshold == 0.05 and tighter.refusal_recall == 0.3


def test_the_confident_number_of_refusals_grows_with_the_probes():
    assert [confident_refusals(n, 0.10) for n in (20, 40, 80, 160, 400)] == [0, 0, 3, 9, 29]
    assert confident_refusals(80, 0.0) == 0
    # each is the largest k whose binomial tail at the bound is at most 5%
    for n in (80, 160):
        k = confident_refusals(n, 0.10)
        tail = [sum(math.comb(n, i) * 0.1**i * 0.9 ** (n - i) for i in range(j + 1)) for j in (k, k + 1)]
        assert tail[0] <= 0.05 < tail[1]


def test_once_held_out_probes_show_the_refusal_target_the_threshold_goes_no_higher():
    """Where answerable probes score far above the real questions (a masked probe keeps its sentence's
    words), the held-out probes' cut decides: the lowest threshold refusing enough of them to show a
    0.80 refusal recall with 95% confidence (71 of 80)."""
    answerable = [0.3 + i / 1000 for i in range(80)]  # the false-refusal cut alone: 0.303
    held_out = [0.01 + i / 1000 for i in range(80)]  # 0.010 .. 0.089
    choice = choose_threshold(answerable, held_out, bound=0.10, held_out=held_out)
    assert confident_catches(80, 0.80) == 71
    assert choice.limited_by == "refusal_target" and choice.false_refusal_cut == 0.303
    assert choice.threshold == choice.refusal_target_cut == 0.0801  # just above the 71st lowest, 0.080
    assert sum(s < choice.threshold for s in held_out) == 71 and choice.false_refusals == 0
    # a KB whose held-out probes score high keeps the false-refusal cut: the target cut would refuse more
    high = [0.25 + i / 1000 for i in range(80)]
    kept = choose_threshold(answerable, high, bound=0.10, held_out=high)
    assert kept.limited_by == "false_refusals" and kept.threshold == 0.303 and kept.refusal_target_cut == 0.3201
    # without held-out scores only the false-refusal cut counts
    alone = choose_threshold(answerable, held_out, bound=0.10)
    assert alone.threshold == 0.303 and alone.refusal_target_cut is None


def test_the_confident_number_of_catches_shrinks_as_a_share_with_more_probes():
    assert [confident_catches(n, 0.80) for n in (10, 13, 14, 20, 80, 160)] == [None, None, 14, 20, 71, 137]
    for n in (20, 80, 160):  # each is the smallest k whose upper binomial tail at the target is at most 5%
        k = confident_catches(n, 0.80)
        assert k is not None
        tail = [sum(math.comb(n, i) * 0.8**i * 0.2 ** (n - i) for i in range(j, n + 1)) for j in (k, k - 1)]
        assert tail[0] <= 0.05 < tail[1]
    # too few held-out probes to show the target: the false-refusal cut alone
    assert choose_threshold([0.5] * 40, [0.01] * 10, held_out=[0.01] * 10).limited_by == "false_refusals"


def test_the_threshold_is_rounded_down_so_the_answerable_probe_at_the_cut_stays_answered():
    answerable = [0.123456] + [0.5] * 19
    choice = choose_threshold(answerable, [0.1] * 10, bound=0.0)
    assert choice.threshold == 0.1234 and choice.false_refusals == 0 and choice.refusal_recall == 1.0


def test_too_few_probes_choose_nothing():
    with pytest.raises(SelfCalibrationError, match="too few probes"):
        choose_threshold([0.5] * 19, [0.1] * 10)
    with pytest.raises(SelfCalibrationError, match="too few probes"):
        choose_threshold([0.5] * 40, [0.1] * 9)


def test_the_written_threshold_is_what_pipeline_config_reads_and_other_keys_stay(tmp_path):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"evidence_top_n": 4, "owner": "ops"}), encoding="utf-8")
    write_kb_config(tmp_path, 0.2345, {"threshold": 0.2345, "answerable": 80}, hedge_threshold=0.3)
    config = PipelineConfig.load(tmp_path, environ={})
    assert config.refusal_threshold == 0.2345 and config.evidence_top_n == 4 and config.hedge_threshold == 0.3
    stored = yaml.safe_load((tmp_path / "config.yaml").read_text(encoding="utf-8"))
    assert stored["owner"] == "ops" and stored[CONFIG_KEY]["answerable"] == 80
    write_kb_config(tmp_path, 0.2, {"threshold": 0.2})  # no band given (calibrate --self without --hedging-band)
    assert PipelineConfig.load(tmp_path, environ={}).hedge_threshold == 0.3
    assert [p.name for p in tmp_path.iterdir()] == ["config.yaml"]  # written by rename: no temporary file left


def test_calibrate_self_on_a_kb_writes_its_threshold_and_figures(demo_kb, tmp_path):
    kb_dir = tmp_path / "kb"
    shutil.copytree(demo_kb.dir, kb_dir)  # the session's demo KB must not change
    shown = CliRunner().invoke(
        app,
        ["calibrate", "--self", "--kb", str(kb_dir), "--max-probes", "50", "--hedging-band", "--json"],
        catch_exceptions=False,
    )
    assert shown.exit_code == 0, shown.output
    figures = json.loads(shown.output)
    assert figures["answerable"] + figures["unanswerable"] <= 50
    assert figures["false_refusal_rate"] <= 0.10
    assert set(figures["by_kind"]) == {"masked", "held_out", "sibling"}
    assert figures["documents"] == len(demo_kb.catalog.content_hashes())
    # the answer stage refuses some probes whatever the threshold: counted in the end, never fewer
    assert all(c["refused"] <= c["refused_in_the_end"] <= c["probes"] for c in figures["by_kind"].values())
    assert figures["in_the_end"]["false_refusal_rate"] >= figures["false_refusal_rate"]
    assert figures["in_the_end"]["refusal_recall"] >= figures["refusal_recall"]
    config = PipelineConfig.load(kb_dir, environ={})
    assert config.refusal_threshold == figures["threshold"]
    # --hedging-band: the band chosen on the same probes (0.0 when they cannot tell) is stored and read
    assert config.hedge_threshold == figures["hedging_band"]["hedge_threshold"]
    assert (
        yaml.safe_load((kb_dir / "config.yaml").read_text(encoding="utf-8"))["hedge_threshold"]
        == (figures["hedging_band"]["hedge_threshold"])
    )
    assert yaml.safe_load((kb_dir / "config.yaml").read_text(encoding="utf-8"))[CONFIG_KEY] == figures


def test_calibrate_self_needs_a_kb_and_says_so(tmp_path):
    shown = CliRunner().invoke(app, ["calibrate", "--self"])
    assert shown.exit_code == 2 and "--kb" in shown.output
    missing = CliRunner().invoke(app, ["calibrate", "--self", "--kb", str(tmp_path / "none")])
    assert missing.exit_code == 2 and "no knowledge base" in missing.output


def test_a_first_ingest_self_calibrates_by_default_and_too_small_a_kb_warns_before_any_probe_runs(tmp_path):
    corpus = tmp_path / "faq.jsonl"
    corpus.write_text(
        json.dumps({"doc_id": "faq-1", "title": "多久发货？", "text": "付款后 48 小时内发货。", "doc_type": "faq"}),
        encoding="utf-8",
    )
    kb_dir = tmp_path / "kb"
    shown = CliRunner().invoke(app, ["ingest", str(corpus), "--kb", str(kb_dir)])
    assert shown.exit_code == 0, shown.output
    assert "self-calibrating: the KB runs on the default refusal threshold" in shown.output
    assert "not self-calibrated" in shown.output and "too few probes" in shown.output
    assert not (kb_dir / "config.yaml").exists()
    ran: list[int] = []
    kb = KnowledgeBase(kb_dir, get_settings(kb_dir=kb_dir))
    try:
        with pytest.raises(SelfCalibrationError, match="too few probes"):
            self_calibrate(kb, on_probe=lambda done, total: ran.append(done))
    finally:
        kb.close()
    assert ran == []  # refused on the probes' count, before the pipeline ran one


def test_a_new_kb_chooses_its_threshold_at_its_first_ingest(tmp_path):
    corpus = tmp_path / "policies.jsonl"
    rows = [
        {
            "doc_id": f"policy-{i}",
            "title": f"{topic}说明",
            "doc_type": "policy",
            "text": f"{topic}由{city}仓库负责处理。订单满{10 * i + 59}元可以享受{topic}服务。"
            f"{topic}的申请须在签收后{i + 3}天内提交给客服专员{name}。{name}会在{i + 1}个工作日内答复申请人。",
        }
        for i, (topic, city, name) in enumerate(
            [
                ("退货", "杭州", "王芳"),
                ("换货", "苏州", "李娜"),
                ("保价", "上海", "张伟"),
                ("发票", "南京", "刘洋"),
                ("维修", "成都", "陈静"),
                ("配送", "广州", "杨帆"),
                ("赠品", "武汉", "赵磊"),
                ("会员", "西安", "孙丽"),
            ]
        )
    ]
    corpus.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    kb_dir = tmp_path / "kb"
    shown = CliRunner().invoke(app, ["ingest", str(corpus), "--kb", str(kb_dir), "--json"], catch_exceptions=False)
    assert shown.exit_code == 0, shown.output
    figures = json.loads(shown.stdout)["self_calibration"]
    assert figures["answerable"] >= 20 and figures["unanswerable"] >= 10 and figures["documents"] == 8
    stored = yaml.safe_load((kb_dir / "config.yaml").read_text(encoding="utf-8"))
    assert stored["refusal_threshold"] == figures["threshold"] and stored[CONFIG_KEY] == figures
    default = PipelineConfig.load(tmp_path / "none", environ={}).refusal_threshold
    assert figures["previous_threshold"]["threshold"] == default  # it ran on the default until now
    # calibrated now: a small ingest keeps the threshold (under a fifth of the documents changed)
    more = tmp_path / "more.jsonl"
    more.write_text(json.dumps({**rows[0], "doc_id": "policy-9"}, ensure_ascii=False), encoding="utf-8")
    kept = CliRunner().invoke(app, ["ingest", str(more), "--kb", str(kb_dir)])
    assert kept.exit_code == 0 and "self-calibrating" not in kept.output


def outcomes(scores: list[float], hedged: bool, right: bool, answerable: bool = True) -> list[ProbeOutcome]:
    return [ProbeOutcome(score, answerable=answerable, hedged=hedged, right=right) for score in scores]


def test_the_hedging_band_refuses_wrong_guesses_up_to_the_loss_the_bound_allows():
    wrong = outcomes([0.15, 0.2, 0.25, 0.3, 0.45], hedged=True, right=False, answerable=False)
    wrong_doc = outcomes([0.22] * 2, hedged=True, right=False)  # answerable, but cites another document
    right = outcomes([0.28, 0.5, 0.6, *[0.7] * 5], hedged=True, right=True)
    sure = outcomes([0.2, 0.9], hedged=False, right=True)  # not hedged: never in the band's count
    below = outcomes([0.05], hedged=True, right=False)  # under the threshold: refused anyway
    probes = [*wrong, *wrong_doc, *right, *sure, *below]
    band = choose_hedge_band(probes, answerable=50, threshold=0.1, bound=0.02)
    # 2% of 50 allows one right hedged answer refused: the cut goes past 0.28 up to the wrong 0.45
    assert band.hedge_threshold == 0.4501 and band.refused_right == 1 and band.refused_wrong == 7
    assert band.hedged_answerable == 10 and band.hedged_right == 8 and band.hedged_wrong == 7
    strict = choose_hedge_band(probes, answerable=50, threshold=0.1, bound=0.0)
    assert strict.hedge_threshold == 0.2501 and strict.refused_right == 0 and strict.refused_wrong == 5


def test_too_few_guesses_of_either_kind_choose_no_band():
    few_wrong = outcomes([0.2, 0.3, 0.4, 0.5], hedged=True, right=False, answerable=False)
    many_right = outcomes([0.6] * 10, hedged=True, right=True)
    band = choose_hedge_band([*few_wrong, *many_right], answerable=50, threshold=0.1)
    assert band.hedge_threshold == 0.0 and "4 wrong hedged answers" in band.reason
    # many wrong guesses, but answerable probes that rarely hedge cannot tell what a band costs
    many_wrong = outcomes([0.2, 0.3, 0.4, 0.5, 0.55, 0.6], hedged=True, right=False, answerable=False)
    rare = choose_hedge_band([*many_wrong, *many_right[:2]], answerable=50, threshold=0.1)
    assert rare.hedge_threshold == 0.0 and "2 answerable probes" in rare.reason


def test_calibration_is_due_for_a_kb_on_the_default_and_a_self_calibrated_kb_after_a_large_ingest(tmp_path):
    assert "default refusal threshold" in (calibration_due(tmp_path, changed=1) or "")  # no config: the default
    assert calibration_due(tmp_path, changed=0) is None  # an ingest that changed nothing
    write_kb_config(tmp_path, 0.2, {"threshold": 0.2, "documents": 100})
    assert calibration_due(tmp_path, changed=19) is None  # under a fifth of what it was calibrated on
    assert "20 documents added, changed or removed" in (calibration_due(tmp_path, changed=20) or "")
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"refusal_threshold": 0.3}), encoding="utf-8")
    assert calibration_due(tmp_path, changed=100) is None  # a threshold someone set by hand stays
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"evidence_top_n": 4}), encoding="utf-8")
    assert calibration_due(tmp_path, changed=1) is not None  # other settings: still on the default threshold


def test_an_ingest_into_a_self_calibrated_kb_calibrates_again_and_no_self_calibrate_keeps_it(tmp_path):
    corpus = tmp_path / "faq.jsonl"
    corpus.write_text(
        json.dumps({"doc_id": "faq-1", "title": "多久发货？", "text": "付款后 48 小时内发货。", "doc_type": "faq"}),
        encoding="utf-8",
    )
    kb_dir = tmp_path / "kb"
    assert CliRunner().invoke(app, ["ingest", str(corpus), "--kb", str(kb_dir)]).exit_code == 0
    write_kb_config(kb_dir, 0.2, {"threshold": 0.2, "documents": 1})
    more = tmp_path / "more.jsonl"
    more.write_text(
        json.dumps({"doc_id": "faq-2", "title": "能开发票吗？", "text": "可以，下单时填写抬头。", "doc_type": "faq"}),
        encoding="utf-8",
    )
    kept = CliRunner().invoke(app, ["ingest", str(more), "--kb", str(kb_dir), "--no-self-calibrate"])
    assert kept.exit_code == 0 and "self-calibrating" not in kept.output
    again = tmp_path / "again.jsonl"
    again.write_text(more.read_text(encoding="utf-8").replace("faq-2", "faq-3"), encoding="utf-8")
    shown = CliRunner().invoke(app, ["ingest", str(again), "--kb", str(kb_dir)])
    assert shown.exit_code == 0, shown.output
    # one added document is a large share of the one it was calibrated on: it tries (too few probes here)
    assert "self-calibrating: 1 documents added" in shown.output and "too few probes" in shown.output
    assert PipelineConfig.load(kb_dir, environ={}).refusal_threshold == 0.2  # nothing chosen, nothing written


UNASKED = [  # nothing the demo shop's documents say
    "可以用比特币付款吗？",
    "你们有实体店可以试穿吗？",
    "汽车轮胎怎么换？",
    "店里卖宠物粮吗？",
    "可以开发票抬头写外国公司吗？",
    "今年双十一有什么抽奖活动？",
    "客服几点下班？",
    "能寄到南极科考站吗？",
    "手机贴膜可以上门服务吗？",
    "羽绒服可以租吗？",
]


def test_a_shops_labelled_questions_choose_its_threshold_and_override_the_probes(demo_kb, tmp_path):
    kb_dir = tmp_path / "kb"
    shutil.copytree(demo_kb.dir, kb_dir)
    write_kb_config(kb_dir, 0.3, {"threshold": 0.3, "documents": 1})  # as if self-calibrated before
    faq = [json.loads(line) for line in (REPO / "knowledge" / "demo" / "faq.jsonl").read_text("utf-8").splitlines()]
    asked = [{"question": row["title"], "answerable": True} for row in faq[:20]]
    asked += [{"question": q, "answerable": False} for q in UNASKED]
    questions = tmp_path / "labelled.jsonl"
    questions.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in asked), encoding="utf-8")
    shown = CliRunner().invoke(
        app, ["calibrate", "--kb", str(kb_dir), "--questions", str(questions), "--json"], catch_exceptions=False
    )
    assert shown.exit_code == 0, shown.output
    figures = json.loads(shown.output)
    assert figures["answerable"] == 20 and figures["unanswerable"] == 10 and figures["false_refusals"] == 0
    stored = yaml.safe_load((kb_dir / "config.yaml").read_text(encoding="utf-8"))
    assert stored["refusal_threshold"] == figures["threshold"] and stored[LABELLED_KEY] == figures
    assert CONFIG_KEY not in stored  # the probes' figures go: a later large ingest keeps this threshold
    assert calibration_due(kb_dir, changed=1000) is None


def test_a_labelled_question_file_that_does_not_read_names_its_line(demo_kb, tmp_path):
    questions = tmp_path / "labelled.jsonl"
    questions.write_text('{"question": "多久发货？", "answerable": true}\n{"question": "退货？"}\n', encoding="utf-8")
    shown = CliRunner().invoke(app, ["calibrate", "--kb", str(demo_kb.dir), "--questions", str(questions)])
    assert shown.exit_code == 2 and "labelled.jsonl:2" in shown.output and "answerable" in shown.output
    missing = CliRunner().invoke(app, ["calibrate", "--questions", str(questions)])
    assert missing.exit_code == 2 and "--kb" in missing.output
