"""Hostile inputs for the entry-point tests (tests/workflows/test_hostile_*.py): the text,
ids and filter values, Hypothesis strategies over them, and the oracles the properties share.

Inputs: empty, whitespace only, over the length limit (2001 characters, 1 MB), control
characters, lone surrogates, emoji, mixed scripts with RTL and zero-width marks, rich markup, and
filter values crafted as Milvus expressions. Hypothesis runs derandomized (the same examples on
every run, in CI too) with the "hostile-input" profile; `every` adds each named input as an
explicit example, so every category reaches every entry point however few examples are drawn.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

from hypothesis import HealthCheck, example, settings
from hypothesis import strategies as st

from citescope.knowledge.filters import SearchFilters, day_number
from citescope.workflows.pipeline_config import PipelineConfig
from citescope.workflows.sessions import MAX_SESSION_ID_CHARS

settings.register_profile(
    "hostile-input",
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
HOSTILE = settings.get_profile("hostile-input")
QUESTION_LIMIT = PipelineConfig.load(None, environ={}).max_question_chars

# -- inputs -------------------------------------------------------------------------------------
REAL_QUESTIONS = (
    "XZ-3000 充电宝多少钱？",
    "AJ1 Retro 的鞋面是真皮吗？",
    "现在买的东西几天之内可以无理由退换？",
    "山野峰刃冲锋衣的透湿量是多少？",
)
REAL_VALUES = {  # values that exist in the demo KB, so a filter on them keeps real results
    "brand": ("星择", "Jordan", "山野", "北极驿"),
    "category": ("手机配件", "运动鞋", "外套", "箱包"),
    "product_id": ("p-xz3000", "p-aj1-retro", "p-sy-fengren", "p-bjy-jiguang700"),
    "doc_type": ("product", "review", "policy", "faq", "post"),
    "updated_after": ("2026-01-01", "2025-12-31", "2026-03-01T08:00:00"),
    "updated_before": ("2026-02-01", "2024-05-01", "2026-12-31 23:59"),
    "as_of": ("2026", "2026-03", "2025-12-31"),  # ranks, never excludes
}
FILTER_FIELDS = tuple(REAL_VALUES)
TEXT_FIELDS = ("brand", "category", "product_id")
INJECTIONS = (  # {} is a real value of the field
    '{}" or 1==1',
    '{}" or brand != "',
    '"]) or true or (["',
    "{} or true",
    "{}\\",
    '{}\\" or \\"1',
    "{}' or '1'='1",
    "{}) or (1==1",
    'product_id in ["{}"]',
    '{}" or product_id in ["p-xz3000", "p-aj1-retro"] or "',
    "{}\x00",
    "{}\n or true",
    "  {}  ",
    "{}%",
    "{}*",
    "(({}))",
    "{} and 1==1",
    '{}") or true or ("',
    "{} || true",
    '{}" && !(doc_type == "x")',
    "{}\r\n",
    "\u202e{}",
    "{}\u200b",
    "{}; drop collection chunks",
)
SPECIAL_TEXT = (
    "",
    " ",
    "\t\r\n",
    "\u3000\u3000",
    "\x00",
    "\x1b[31m红色\x1b[0m",
    "\r\r\n",
    "XZ-3000\x00 充电宝多少钱？",
    "XZ-3000 \ud800多少钱",
    "\udc80\udcff",
    "\ud83d",
    "😀🎉👍🏽👨‍👩‍👧",
    "XZ-3000 充电宝多少钱？🔋⚡",
    "AJ1 Retro 鞋面 leather جلد кожа 真皮？",
    "\u202e退货政策\u202c",
    "\u200f退货\u200e几天？",
    "退\u200b货\u200d政\ufeff策",
    "[/red] [bold]XZ-3000[/bold] 多少钱",
    "[link=file:///etc/passwd]x[/link]",
    "' OR 1=1 --",
    '"; DROP TABLE sessions; --',
    "${jndi:ldap://x}",
    "{{7*7}}",
    "%s%n%x",
    "退" * 2001,
    "a" * 1_000_000,
)
SPECIAL_IDS = (
    "",
    " ",
    "\x00",
    "\n",
    "[/x]",
    "../../etc/passwd",
    "a/b",
    "%2F",
    "\ud800",
    "\udc80x",
    "😀",
    "' OR '1'='1",
    "x" * (MAX_SESSION_ID_CHARS + 1),
    "\u202eabc",
    "会话-1",
    ".",
    "..",
)

# st.text() covers every code point but surrogates: controls, emoji, every script, RTL and
# zero-width marks. Lone surrogates (a cut emoji in JSON, an undecodable argv byte) come separately,
# so that most generated text is otherwise valid and reaches the pipeline.
surrogate_text = st.builds("{}{}{}".format, st.text(max_size=6), st.characters(categories=["Cs"]), st.text(max_size=6))
any_text = st.one_of(st.text(min_size=1, max_size=40), surrogate_text)  # "" and blanks: SPECIAL_TEXT
MIXED_PIECES = list("退货政策星择充电宝多少钱 XZ-3000?？AJ1") + [
    "جلد",
    "кожа",
    "\u200b",
    "\u200d",
    "\u200f",
    "\u202e",
    "\ufeff",
    "😀",
    "👨‍👩‍👧",
    "\x00",
    "\x1b[1m",
    "\r",
    "\t",
    "[/b]",
]
mixed_scripts = st.lists(st.sampled_from(MIXED_PIECES), max_size=20).map("".join)
hostile_text = st.one_of(
    st.sampled_from(SPECIAL_TEXT),
    any_text,
    mixed_scripts,
    st.builds(
        lambda question, junk, at: question[:at] + junk + question[at:],
        st.sampled_from(REAL_QUESTIONS),
        st.one_of(st.text(max_size=6), mixed_scripts, surrogate_text),
        st.integers(0, 12),
    ),
)
hostile_ids = st.one_of(
    st.sampled_from(SPECIAL_IDS),
    st.text(max_size=20),
    surrogate_text,
    st.text(min_size=MAX_SESSION_ID_CHARS + 1, max_size=MAX_SESSION_ID_CHARS + 8),
)
wrong_types = st.one_of(
    st.integers(),
    st.booleans(),
    st.floats(allow_nan=False),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def crafted(field: str) -> st.SearchStrategy:
    """A value for one filter field: real, a real value turned into an expression, junk that the
    safe character set lets through ("星择 or true"), or anything."""
    real = st.sampled_from(REAL_VALUES[field])
    value = st.one_of(
        real,
        st.builds(str.format, st.sampled_from(INJECTIONS), real),
        st.text(alphabet="\"'\\[](){}=!<>|&%*,.;:-+#/ \n\t\x00orandtruein星择p-xz3000", max_size=30),
        st.text(alphabet="星择山野 Jordanortue()（）·/-+#&.p-xz3000_2026", min_size=1, max_size=20),
        any_text,
    )
    if field == "doc_type":
        return st.one_of(st.lists(value, min_size=1, max_size=3), value, wrong_types)
    return st.one_of(value, value, wrong_types)


one_filter = st.sampled_from(FILTER_FIELDS).flatmap(lambda field: st.fixed_dictionaries({field: crafted(field)}))
filter_dicts = st.one_of(
    one_filter,
    one_filter,
    st.fixed_dictionaries({}, optional={field: crafted(field) for field in FILTER_FIELDS}),
    st.fixed_dictionaries({"brnad": st.sampled_from(REAL_VALUES["brand"])}),  # a misspelt field must fail
)


def every(name: str, values, **others):
    """Each value as an explicit example: every named hostile input reaches the entry point,
    however few examples Hypothesis draws (explicit examples run on top of max_examples)."""

    def apply(test):
        for value in values:
            test = example(**{name: value}, **others)(test)
        return test

    return apply


INJECTED = [(field, template.format(REAL_VALUES[field][0])) for field in TEXT_FIELDS for template in INJECTIONS]
INJECTED += [
    ("doc_type", ['product"] or true or ["']),
    ("doc_type", "product"),
    ("updated_after", '2026-01-01") or true'),
    ("updated_before", "2026-02-01 or updated_day > 0"),
    ("updated_after", "2026-13-01"),
    ("as_of", "2026 or true"),
    ("as_of", "2026-02-30"),
]


# -- oracles ------------------------------------------------------------------------------------
def has_surrogate(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def bad_question(question: str, limit: int) -> bool:
    stripped = question.strip()
    return not stripped or len(stripped) > limit or has_surrogate(stripped)


def bad_session_id(session_id: str | None) -> bool:
    return session_id is not None and (
        not session_id.strip()
        or len(session_id) > MAX_SESSION_ID_CHARS
        or has_surrogate(session_id)
        or any(ord(c) < 32 or ord(c) == 127 for c in session_id)
    )


def quoted(filters) -> bool:
    """Any filter text value with a quote or a backslash: always refused, never reaches an index."""
    values = filters.values() if isinstance(filters, Mapping) else [filters]
    texts = [v for value in values for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)]
    return any(ch in text for text in texts for ch in "\"'\\")


def assert_matches(chunk, filters: SearchFilters) -> None:
    """The chunk satisfies every filter field exactly (written out here, not via SearchFilters.mask)."""
    assert chunk is not None
    if filters.doc_type:
        assert chunk.doc_type in filters.doc_type
    for field in TEXT_FIELDS:
        if getattr(filters, field):
            assert getattr(chunk, field) == getattr(filters, field), (field, chunk.chunk_id)
    if filters.updated_after:
        assert day_number(chunk.updated_at) >= day_number(filters.updated_after), chunk.chunk_id
    if filters.updated_before:
        assert day_number(chunk.updated_at) <= day_number(filters.updated_before), chunk.chunk_id


def assert_within_filters(kb, evidence_ids: list[str], cited_ids: list[str], filters) -> None:
    effective = SearchFilters(**filters)  # the entry point took them, so they must be valid
    assert not quoted(filters)
    assert set(cited_ids) <= set(evidence_ids)
    for chunk_id in evidence_ids:
        assert_matches(kb.get(chunk_id), effective)


def names_a_field(message: str, filters) -> bool:
    fields = [str(k) for k in filters] if isinstance(filters, Mapping) and filters else ["filters"]
    return any(field in message for field in fields)


def assert_answer_cites_its_sources(result) -> None:
    assert result.answer.strip()
    for citation in result.citations:
        assert f"【{citation.id}】" in result.answer


def copy_kb(demo_kb, tmp_path_factory, name: str) -> Path:
    """A private copy of the demo KB: Assistants write sessions, traces and experience next to it."""
    path = tmp_path_factory.mktemp(name) / "kb"
    shutil.copytree(demo_kb.dir, path)
    return path
