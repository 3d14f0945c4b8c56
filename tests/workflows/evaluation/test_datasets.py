"""Dataset loading, slicing, cached dataset KBs and the candidate-docs view, on the real shared
datasets (the baoxianzhidao slice used here is already in the embedding cache)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import date

import pytest

from citescope.tools.base import SkillContext
from citescope.tools.search import hybrid_search
from citescope.workflows.evaluation.datasets import (
    MARKER,
    Question,
    candidate_kb,
    dataset_kb,
    kb_doc_ids,
    load_questions,
    missing_embeddings,
    sample,
)

SLICE_DOCS = 40


def _first_lines(src, dst, n):
    with open(src, encoding="utf-8") as lines:
        dst.write_text("".join(next(lines) for _ in range(n)), encoding="utf-8")
    return dst


@pytest.fixture(scope="module")
def bx_corpus(datasets_dir):
    return datasets_dir / "baoxianzhidao" / "corpus.jsonl"


@pytest.fixture(scope="module")
def slice_kb(bx_corpus, tmp_path_factory):
    kb = dataset_kb([bx_corpus], "bx", max_docs=SLICE_DOCS, root=tmp_path_factory.mktemp("kbs"))
    yield kb
    kb.close()


def test_load_questions_reads_every_field_of_the_format(datasets_dir):
    questions = load_questions(datasets_dir / "domainrag" / "questions.jsonl")
    conflict = next(q for q in questions if q.expect_conflict)
    assert conflict.candidate_doc_ids and conflict.fake_answers and conflict.gold_doc_ids
    assert conflict.answer_groups == conflict.answers_all_of
    follow_up = next(q for q in questions if q.qtype == "conversational")
    assert follow_up.history and follow_up.history[0]["question"]
    plain = next(q for q in questions if not q.answers_all_of)
    assert plain.answer_groups == [plain.answers]


def test_a_follow_up_is_asked_alone_after_every_turn_or_after_the_opening_one():
    follow_up = Question(
        qid="c-2",
        question="保研率是多少",
        meta={
            "history": [
                {"question": "国学院有哪些下设系别", "answers": []},
                {"question": "学生主要就业方向有哪些？", "answers": []},
            ]
        },
    )
    assert follow_up.asked("none") == "保研率是多少"
    assert follow_up.asked("all") == "国学院有哪些下设系别 学生主要就业方向有哪些？ 保研率是多少"
    assert follow_up.asked("opening") == "国学院有哪些下设系别 保研率是多少"
    assert Question(qid="q", question="国学院在哪").asked("opening") == "国学院在哪"


def test_a_time_sensitive_question_is_sent_with_its_as_of_year():
    timed = Question(qid="t", question="中国人民大学的校长是谁？", meta={"as_of": 2014})
    assert timed.as_of == "2014" and timed.filters.as_of == "2014"
    assert timed.reference_day == date(2014, 7, 1)
    plain = Question(qid="p", question="中国人民大学的校长是谁？")
    assert plain.as_of is None and plain.filters is None and plain.reference_day is None


def test_load_questions_filters_qtypes_then_limits(datasets_dir):
    path = datasets_dir / "baoxianzhidao" / "questions.jsonl"
    picked = load_questions(path, limit=5, qtypes=["faq_description"])
    assert len(picked) == 5 and {q.qtype for q in picked} == {"faq_description"}
    assert [q.qid for q in picked] == [q.qid for q in load_questions(path, qtypes=["faq_description"])[:5]]


def test_session_turn_and_unknown_fields_are_kept(tmp_path):
    path = tmp_path / "questions.jsonl"
    path.write_text(
        json.dumps(
            {
                "qid": "s1-2",
                "question": "那它呢？",
                "answers": [],
                "gold_doc_ids": [],
                "answerable": False,
                "qtype": "unanswerable_kb_removed",
                "session": "s1",
                "turn": 2,
                "new_field": 7,
            },
            ensure_ascii=False,
        )
        + "\n\n",
        encoding="utf-8",
    )
    (question,) = load_questions(path)
    assert (question.session, question.turn, question.answerable) == ("s1", 2, False)
    assert question.answer_groups == [] and question.model_extra == {"new_field": 7}


def test_sample_is_deterministic_stratified_and_in_file_order():
    questions = [Question(qid=f"q{i}", question="?", qtype="big" if i % 4 else "small") for i in range(100)]
    first, again = sample(questions, 20, seed=3), sample(questions, 20, seed=3)
    assert [q.qid for q in first] == [q.qid for q in again]
    assert Counter(q.qtype for q in first) == {"big": 15, "small": 5}  # 75% / 25% of 20
    assert [int(q.qid[1:]) for q in first] == sorted(int(q.qid[1:]) for q in first)
    assert [q.qid for q in sample(questions, 20, seed=4)] != [q.qid for q in first]
    assert sample(questions, None) == questions and sample(questions, 500) == questions


def test_dataset_kb_is_built_once_and_reused(bx_corpus, slice_kb):
    assert kb_doc_ids(slice_kb) == {f"bx-{i:05d}" for i in range(SLICE_DOCS)}
    assert slice_kb.dir.name.startswith("bx-")
    marker = (slice_kb.dir / MARKER).read_text(encoding="utf-8")
    generation = slice_kb.version
    again = dataset_kb([bx_corpus], "bx", max_docs=SLICE_DOCS, root=slice_kb.dir.parent)
    assert again.dir == slice_kb.dir
    assert (slice_kb.dir / MARKER).read_text(encoding="utf-8") == marker  # no second ingest
    assert again.version == generation and len(again) == len(slice_kb)
    again.catalog.close()


def test_a_changed_corpus_gets_its_own_kb(bx_corpus, slice_kb, tmp_path):
    corpus = _first_lines(bx_corpus, tmp_path / "corpus.jsonl", 3)
    first = dataset_kb([corpus], "small", root=tmp_path / "kbs")
    _first_lines(bx_corpus, corpus, 4)
    second = dataset_kb([corpus], "small", root=tmp_path / "kbs")
    assert first.dir != second.dir
    assert len(kb_doc_ids(first)) == 3 and len(kb_doc_ids(second)) == 4
    first.close()
    second.close()


def test_missing_embeddings_counts_without_embedding(bx_corpus, slice_kb, tmp_path):
    assert missing_embeddings([bx_corpus], max_docs=SLICE_DOCS) == 0
    novel = tmp_path / "novel.jsonl"
    text = "这段文字只为测试而写，从未被嵌入过：" + tmp_path.name
    novel.write_text(
        json.dumps({"doc_id": "n-1", "title": "测试", "text": text}, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    assert missing_embeddings([novel]) == 1
    assert missing_embeddings([novel]) == 1  # counting did not fill the cache


def test_candidate_kb_searches_only_the_candidate_docs(slice_kb):
    candidates = {"bx-00003", "bx-00007", "bx-00021"}
    view = candidate_kb(slice_kb, candidates)
    query = slice_kb.chunks_of("bx-00007")[0].title
    dense = view.search_dense(query, k=10)
    assert {view.get(h.chunk_id).doc_id for h in dense} == candidates
    assert view.get(dense[0].chunk_id).doc_id == "bx-00007"
    full = {h.chunk_id: h.score for h in slice_kb.search_dense(query, k=len(slice_kb))}
    for hit in dense:  # exact cosines, the same as the KB's own dense leg
        assert hit.score == pytest.approx(full[hit.chunk_id], abs=1e-4)
    keyword = view.search_keyword(query, k=10)
    assert keyword and {view.get(h.chunk_id).doc_id for h in keyword} <= candidates
    outside = next(c for c in slice_kb.all_chunks() if c.doc_id not in candidates)
    assert view.get(outside.chunk_id) is None and view.chunks_of(outside.doc_id) == []
    assert len(view) == sum(len(slice_kb.chunks_of(d)) for d in candidates)
    result = hybrid_search(query, top_k=5, ctx=SkillContext(view, {"candidates": 10}))
    assert result.hits and {h.doc_id for h in result.hits} <= candidates and not result.degraded
