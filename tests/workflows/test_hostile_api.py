"""Hostile input at the Python API (Assistant) and the filter layer under every entry point
(SearchFilters -> the BM25 mask and the Milvus expression); inputs in tests/support/hostile.py.

Properties: the Assistant answers, or raises only its documented errors naming the field
(QuestionError for a question or filters, ValueError for a session id, rating or comment,
KeyError for an unknown trace id); a filter never widens the result set: every retrieved, shown
or cited chunk matches every filter field exactly, and a value with a quote or a backslash is
always refused.
"""

from __future__ import annotations

import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from citescope.knowledge.filters import SearchFilters
from citescope.workflows.assistant import Assistant
from citescope.workflows.pipeline import QuestionError
from citescope.workflows.pipeline_config import PipelineConfig
from tests.support.hostile import (
    FILTER_FIELDS,
    HOSTILE,
    INJECTED,
    INJECTIONS,
    QUESTION_LIMIT,
    REAL_QUESTIONS,
    SPECIAL_IDS,
    SPECIAL_TEXT,
    assert_answer_cites_its_sources,
    assert_matches,
    assert_within_filters,
    bad_question,
    bad_session_id,
    copy_kb,
    crafted,
    every,
    filter_dicts,
    has_surrogate,
    hostile_ids,
    hostile_text,
    names_a_field,
    quoted,
)


# -- the KB filter layer ------------------------------------------------------------------------
@settings(HOSTILE, max_examples=60)
@given(
    field=st.sampled_from(FILTER_FIELDS).flatmap(lambda f: st.tuples(st.just(f), crafted(f))),
    query=st.sampled_from(REAL_QUESTIONS),
)
@every("field", INJECTED, query=REAL_QUESTIONS[0])
def test_a_crafted_filter_value_never_widens_a_search(demo_kb, field, query):
    name, value = field
    try:
        filters = SearchFilters(**{name: value})
    except ValidationError as exc:
        assert {str(error["loc"][0]) for error in exc.errors()} == {name}
        event("refused")
        return
    assert not quoted({name: value})
    for hits in (demo_kb.search_dense(query, 20, filters), demo_kb.search_keyword(query, 20, filters)):
        event("searched, hits" if hits else "searched, nothing matches")
        for hit in hits:
            assert_matches(demo_kb.get(hit.chunk_id), filters)


def test_filters_keep_real_results_and_injected_variants_find_nothing(demo_kb):
    """The property above is not vacuous: a real value keeps matching results, the same value
    with an expression after it is refused or matches nothing (it is one quoted literal)."""
    for field, value, query in (
        ("brand", "星择", "充电宝多少钱"),
        ("product_id", "p-aj1-retro", "鞋面是真皮吗"),
        ("category", "外套", "透湿量"),
    ):
        kept = demo_kb.search_dense(query, 10, SearchFilters(**{field: value}))
        assert kept and all(getattr(demo_kb.get(h.chunk_id), field) == value for h in kept)
        assert len(demo_kb.search_dense(query, 10)) == 10
        for injection in INJECTIONS:
            try:
                filters = SearchFilters(**{field: injection.format(value)})
            except ValidationError:
                continue
            if getattr(filters, field) != value:  # e.g. "  星择  " is 星择 after stripping
                assert demo_kb.search_dense(query, 10, filters) == []
                assert demo_kb.search_keyword(query, 10, filters) == []
    with pytest.raises(ValidationError, match="updated_after"):
        SearchFilters(updated_after='2026-01-01") or true')


# -- the Python API -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def assistant(demo_kb, tmp_path_factory):
    kb_dir = copy_kb(demo_kb, tmp_path_factory, "hostile-api")
    with Assistant(kb_dir, config=PipelineConfig.load(kb_dir, environ={})) as warmed:
        yield warmed


@pytest.fixture(scope="module")
def answered(assistant):
    """A real answer in a real session: its trace id is the one known id."""
    result = assistant.ask_sync(REAL_QUESTIONS[0], "hostile-known")
    assert result.citations
    return result


@settings(HOSTILE, max_examples=50)
@given(question=hostile_text, session_id=st.one_of(st.none(), st.text(min_size=1, max_size=20), hostile_ids))
@example(question=REAL_QUESTIONS[0] + " " * 5000, session_id="  padded  ")  # stripped to fit
@every("question", SPECIAL_TEXT, session_id=None)
@every("session_id", SPECIAL_IDS, question=REAL_QUESTIONS[0])
def test_python_api_answers_any_text_or_names_what_is_wrong(assistant, question, session_id):
    try:
        result = assistant.ask_sync(question, session_id)
    except QuestionError as exc:
        assert bad_question(question, QUESTION_LIMIT) and "question" in str(exc)
        event("bad question")
        return
    except ValueError as exc:
        assert not bad_question(question, QUESTION_LIMIT) and bad_session_id(session_id) and "session id" in str(exc)
        event("bad session id")
        return
    assert not bad_question(question, QUESTION_LIMIT) and not bad_session_id(session_id)
    event("answered with citations" if result.citations else "answered without citations")
    assert_answer_cites_its_sources(result)
    assert assistant.trace(result.trace_id) is not None
    if session_id is not None:
        assert assistant.session(session_id.strip()).turns[-1].trace_id == result.trace_id


@settings(HOSTILE, max_examples=60)
@given(question=st.sampled_from(REAL_QUESTIONS), filters=filter_dicts)
@example(question=REAL_QUESTIONS[0], filters={"brand": "星择"})
@example(question=REAL_QUESTIONS[1], filters={"product_id": 'p-aj1-retro" or 1==1'})
@example(question=REAL_QUESTIONS[0], filters={"brnad": ""})  # misspelt and empty: still an error
@example(question=REAL_QUESTIONS[0], filters="brand == '星择'")
@every("filters", [{field: value} for field, value in INJECTED], question=REAL_QUESTIONS[0])
def test_python_api_filters_never_widen_the_answer(assistant, question, filters):
    try:
        result = assistant.ask_sync(question, None, filters)
    except QuestionError as exc:
        assert names_a_field(str(exc), filters), str(exc)
        event("filters refused")
        return
    event("filtered answer with citations" if result.citations else "filtered answer without citations")
    assert_answer_cites_its_sources(result)
    assert_within_filters(assistant.kb, result.evidence_ids, [c.id for c in result.citations], filters)


@settings(HOSTILE, max_examples=50)
@given(
    trace_id=st.one_of(hostile_ids, st.just("known")),
    rating=st.one_of(st.sampled_from([1, -1, 0, 2, "up", "👍", "", None]), st.integers(), st.floats()),
    comment=st.one_of(st.none(), hostile_text.filter(lambda text: len(text) < 3000)),
)
@every("trace_id", SPECIAL_IDS, rating=1, comment=None)
@every("comment", SPECIAL_TEXT, trace_id="known", rating=-1)
def test_python_api_feedback_sessions_and_traces_take_any_id(assistant, answered, trace_id, rating, comment):
    trace_id = answered.trace_id if trace_id == "known" else trace_id
    known, rating_ok = trace_id == answered.trace_id, rating in (1, -1)
    comment_ok = comment is None or not has_surrogate(comment)
    try:
        assistant.feedback(trace_id, rating, comment)
    except KeyError as exc:
        assert not known and "trace id" in str(exc)
        event("unknown trace id")
    except ValueError as exc:
        assert not (rating_ok and comment_ok)
        assert ("rating" in str(exc) and not rating_ok) or ("comment" in str(exc) and not comment_ok), str(exc)
        event("bad rating or comment")
    else:
        assert known and rating_ok and comment_ok
        event("rated")
    assert (assistant.trace(trace_id) is not None) == known
    state = assistant.session(trace_id)  # sessions other examples opened may exist; the lookup never fails
    assert state is None or state.id == trace_id


def test_a_cached_answer_does_not_skip_filter_validation(assistant):
    assistant.ask_sync(REAL_QUESTIONS[0])  # cached without filters
    for filters in ({"brnad": ""}, {"brand": ""}, {"doc_type": "product"}):
        with pytest.raises(QuestionError, match="brnad|brand|doc_type"):
            assistant.ask_sync(REAL_QUESTIONS[0], None, filters)
