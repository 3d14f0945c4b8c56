"""Query rewriting with the demo shop lexicon: aliases, keyword form, synonyms, LLM hook."""

from __future__ import annotations

import inspect

from docstring_parser import parse

from citescope.knowledge.lexicon import Lexicon
from citescope.tools.base import SkillContext
from citescope.tools.rewrite import expand_queries, keyword_form, rewrite_query


def test_alias_is_normalised_and_synonyms_expand(demo_kb):
    lexicon = demo_kb.lexicon
    queries = expand_queries("AJ1退货运费谁出？", lexicon, max_queries=10)
    assert queries[0] == "AJ1退货运费谁出？"
    assert queries[1] == "Air Jordan 1退货运费谁出？"
    assert "AJ1" not in queries[2] and "Air Jordan 1" in queries[2] and "谁" not in queries[2]
    variants = queries[3:]
    assert any(s in v for v in variants for s in lexicon.synonyms["退货"])
    assert any(s in v for v in variants for s in lexicon.synonyms["运费"])
    assert all("Air Jordan 1" in v for v in variants)
    assert len(set(queries)) == len(queries)


def test_max_queries_bounds_the_list_and_keeps_the_original_first(demo_kb):
    queries = expand_queries("AJ1退货运费谁出？", demo_kb.lexicon, max_queries=4)
    assert len(queries) == 4 and queries[0] == "AJ1退货运费谁出？"
    assert expand_queries("AJ1退货", demo_kb.lexicon, max_queries=0) == ["AJ1退货"]


def test_a_synonym_maps_back_to_its_head_term(demo_kb):
    queries = expand_queries("星择XZ3000充电宝多少钱？", demo_kb.lexicon, max_queries=10)
    assert "星择XZ-3000充电宝多少钱？" in queries
    assert "星择XZ-3000充电宝价格？" in queries


def test_keyword_form_drops_question_words_and_keeps_case():
    lexicon = Lexicon(aliases={"xz3000": "XZ-3000"})
    form = keyword_form("请问xz3000充电宝能带上飞机吗？", lexicon)
    assert form.startswith("XZ-3000") and "请问" not in form and "吗" not in form and "？" not in form


def test_plain_query_without_lexicon_matches_is_not_padded(demo_kb):
    queries = expand_queries("花呗分期有免息吗？", demo_kb.lexicon)
    assert queries[0] == "花呗分期有免息吗？" and len(queries) == 2  # original + keyword form


def test_skill_returns_queries_in_data_and_note(demo_kb):
    result = rewrite_query("AJ1 Low有哪些配色？", ctx=SkillContext(demo_kb, {"max_queries": 3}))
    queries = result.data["queries"]
    assert len(queries) == 3 and queries[1].startswith("Air Jordan 1 Low")
    assert all(q in result.note for q in queries) and result.hits == [] and not result.degraded


def test_llm_rewrites_join_the_offline_ones(demo_kb):
    seen = []

    def llm_rewrite(question: str) -> list[str]:
        seen.append(question)
        return ["Air Jordan 1 芝加哥 配件 鞋盒", "AJ1芝加哥的鞋盒里附带什么配件？"]

    result = rewrite_query("AJ1芝加哥的鞋盒里附带什么配件？", ctx=SkillContext(demo_kb, {"llm": llm_rewrite}))
    queries = result.data["queries"]
    assert seen == ["AJ1芝加哥的鞋盒里附带什么配件？"]
    assert queries[0] == "AJ1芝加哥的鞋盒里附带什么配件？" and queries[2] == "Air Jordan 1 芝加哥 配件 鞋盒"
    assert len(queries) == len(set(queries)) == 4


def test_failing_llm_rewrite_degrades_to_offline(demo_kb):
    def llm_rewrite(question: str) -> list[str]:
        raise TimeoutError("model server did not answer")

    ctx = SkillContext(demo_kb, {"llm": llm_rewrite})
    result = rewrite_query("AJ1退货运费谁出？", ctx=ctx)
    assert result.degraded == ["llm rewrite failed: TimeoutError"]
    assert result.data["queries"] == expand_queries("AJ1退货运费谁出？", demo_kb.lexicon, 4)


def test_argument_is_documented():
    documented = {p.arg_name for p in parse(rewrite_query.__doc__).params}
    visible = [n for n, p in inspect.signature(rewrite_query).parameters.items() if p.kind != p.KEYWORD_ONLY]
    assert set(visible) == documented == {"query"}
