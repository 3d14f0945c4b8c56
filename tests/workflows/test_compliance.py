"""The sensitive-word filter: normalisation evasions caught, citation markers intact, word-list
errors named by file:line; and end to end through QAPipeline on the demo KB (mask and refuse)."""

from __future__ import annotations

import pytest

from citescope.agents.citations import parse_citations
from citescope.agents.prompts import load_prompt
from citescope.workflows.compliance import ComplianceError, SensitiveWordFilter, resolve_word_list
from citescope.workflows.pipeline import QAPipeline
from citescope.workflows.pipeline_config import PipelineConfig
from citescope.workflows.traces import build_trace

AJ1 = "AJ1 Retro 的鞋面是真皮吗？"  # the demo answer quotes a review calling the upper "人造革"


def word_filter(tmp_path, text: str, action: str = "mask") -> SensitiveWordFilter:
    path = tmp_path / "words.txt"
    path.write_text(text, encoding="utf-8")
    return SensitiveWordFilter(path, action).warm_up()


@pytest.fixture
def words(tmp_path) -> SensitiveWordFilter:
    return word_filter(tmp_path, "# 广告法 absolute claims\n最低价\n国家级\n\nVIP\nass\n材质\n")


@pytest.mark.parametrize(
    "evasion",
    [
        "本店最低价",
        "本店最 低 价",  # spaces between the characters
        "本店最\u200b低\u200d价",  # zero-width space and joiner
        "本店最\u3000低价",  # full-width space
        "本店最\n低价",
    ],
)
def test_evasions_are_caught_and_only_the_word_is_masked(words, evasion):
    result = words.run(evasion + "，欢迎选购。")
    assert result.hits == ["最低价"] and result.action == "mask"
    assert result.text.startswith("本店＊") and result.text.endswith("＊，欢迎选购。")
    assert result.text.count("＊") == 3
    assert "最" not in result.text and "低" not in result.text and "价" not in result.text


def test_width_and_case_are_folded_but_latin_words_need_word_boundaries(words):
    assert words.run("开通ｖｉｐ会员").text == "开通＊＊＊会员"
    assert words.run("Ｖip 专享").hits == ["VIP"]
    clean = "a class was social; VIPs only"
    assert words.run(clean).hits == [] and words.run(clean).text == clean
    assert words.run("a s s").text == "＊ ＊ ＊"


def test_citation_markers_are_never_masked_nor_matched_across(words):
    text = "鞋面为头层牛皮【prod-aj1-retro#材质-0】，材质很好。国家【sku-p-x#sku-1】级"
    result = words.run(text)
    assert result.hits == ["材质"]
    assert result.text == "鞋面为头层牛皮【prod-aj1-retro#材质-0】，＊＊很好。国家【sku-p-x#sku-1】级"
    assert parse_citations(result.text) == parse_citations(text)
    # a bracketed word that is no id is prose, and filtered like prose
    assert words.run("【最低价】").text == "【＊＊＊】"


def test_refuse_reports_the_hits_and_leaves_the_text_to_the_caller(tmp_path):
    result = word_filter(tmp_path, "国家级\n", action="refuse").run("国家级 品质，国家级认证")
    assert (result.action, result.hits, result.text) == ("refuse", ["国家级"], "国家级 品质，国家级认证")
    assert word_filter(tmp_path, "国家级\n", action="refuse").run("品质好").action == "pass"


@pytest.mark.parametrize(
    "content, line, message",
    [
        ("最低价\n\u200b\u200b\n", 2, "no visible characters"),
        ("# ok\n最低价\n坏【词】\n", 3, "citation bracket"),
    ],
)
def test_word_list_errors_name_file_and_line(tmp_path, content, line, message):
    path = tmp_path / "words.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ComplianceError, match=f"words.txt:{line}: .*{message}"):
        SensitiveWordFilter(path).warm_up()


def test_word_list_that_is_not_utf8_or_missing_is_named(tmp_path):
    path = tmp_path / "gbk.txt"
    path.write_bytes("最低价\n".encode() + "国家级\n".encode("gbk"))
    with pytest.raises(ComplianceError, match="gbk.txt:2: not UTF-8"):
        SensitiveWordFilter(path).warm_up()
    with pytest.raises(ComplianceError, match="missing.txt: cannot read"):
        SensitiveWordFilter(tmp_path / "missing.txt").warm_up()


def test_relative_lists_resolve_from_the_kb_then_the_repo(tmp_path):
    (tmp_path / "words.txt").write_text("最低价\n", encoding="utf-8")
    assert resolve_word_list("words.txt", tmp_path) == tmp_path / "words.txt"
    shipped = resolve_word_list("workflows/sensitive_words.txt", tmp_path)
    assert shipped.is_file() and "最低价" in SensitiveWordFilter(shipped).warm_up().words
    assert PipelineConfig.load(None, environ={}).sensitive_words_file == ""  # shipped off


@pytest.fixture(scope="module")
def plain_answer(demo_kb):
    result = QAPipeline(demo_kb, PipelineConfig.load(demo_kb.dir, environ={})).warm_up().run(AJ1)
    assert not result.refused and "人造革" in result.answer and result.compliance == []
    return result


@pytest.mark.parametrize("action", ["mask", "refuse"])
def test_pipeline_applies_the_filter_to_the_settled_answer(demo_kb, plain_answer, tmp_path, action):
    path = tmp_path / "words.txt"
    path.write_text("人造革\n材质\n", encoding="utf-8")  # 材质 occurs only inside a citation id here
    config = PipelineConfig.load(demo_kb.dir, environ={}, sensitive_words_file=str(path), sensitive_action=action)
    result = QAPipeline(demo_kb, config).warm_up().run(AJ1)

    assert result.compliance == ["人造革"]
    assert build_trace(result, demo_kb)["compliance"] == ["人造革"]
    assert "人造革" not in result.answer
    if action == "mask":
        assert not result.refused
        assert result.answer == plain_answer.answer.replace("人造革", "＊＊＊")
        assert [c.id for c in result.citations] == [c.id for c in plain_answer.citations]
        assert parse_citations(result.answer) == parse_citations(plain_answer.answer)
    else:
        assert result.refused and result.refusal_reason == "sensitive" and result.answer_source == "refusal"
        assert result.answer == load_prompt("refusal").strip() and result.citations == []
