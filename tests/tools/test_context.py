"""Context expansion over the real demo KB: neighbours, tables, sections, bounded documents."""

from __future__ import annotations

import inspect
from collections import defaultdict

import pytest
from docstring_parser import parse

from citescope.tools.base import EvidenceHit, LegScore, SkillContext
from citescope.tools.context import expand_context


def sections(kb) -> dict[tuple[str, str], list]:
    grouped = defaultdict(list)
    for chunk in kb.all_chunks():
        grouped[(chunk.doc_id, chunk.section)].append(chunk)
    return {key: sorted(chunks, key=lambda c: c.position) for key, chunks in grouped.items()}


def test_neighbours_are_the_chunks_before_and_after_in_the_same_section(demo_kb):
    # Every section of three or more plain chunks (no table) in the demo data.
    plain = [
        chunks
        for chunks in sections(demo_kb).values()
        if len(chunks) >= 3 and not any("-table-" in c.chunk_id for c in chunks)
    ]
    assert plain
    for chunks in plain[:10]:
        middle = chunks[1]
        result = expand_context(middle.chunk_id, ctx=SkillContext(demo_kb))
        assert [h.chunk_id for h in result.hits] == [c.chunk_id for c in chunks[:3]]
        wide = expand_context(middle.chunk_id, window=5, ctx=SkillContext(demo_kb))
        assert [h.chunk_id for h in wide.hits] == [c.chunk_id for c in chunks[:7]]
        first = expand_context(chunks[0].chunk_id, ctx=SkillContext(demo_kb))
        assert [h.chunk_id for h in first.hits] == [c.chunk_id for c in chunks[:2]]


def test_table_row_brings_its_whole_table(demo_kb):
    result = expand_context("prod-xz3000#尺码表-r2-0", ctx=SkillContext(demo_kb))
    assert [h.chunk_id for h in result.hits] == [
        "prod-xz3000#尺码表-table-0",
        "prod-xz3000#尺码表-r1-0",
        "prod-xz3000#尺码表-r2-0",
    ]
    assert all(h.section == "尺码表" for h in result.hits)


def test_section_mode_returns_the_whole_section(demo_kb):
    skus = sections(demo_kb)[("sku-p-sy-fengren", "SKU")]
    result = expand_context(skus[-1].chunk_id, mode="section", ctx=SkillContext(demo_kb))
    assert [h.chunk_id for h in result.hits] == [c.chunk_id for c in skus]


def test_document_mode_is_bounded_and_centred_on_the_chunk(demo_kb):
    document = demo_kb.chunks_of("prod-sy-fengren")
    anchor = document[len(document) // 2]
    whole = expand_context(anchor.chunk_id, mode="document", ctx=SkillContext(demo_kb, {"max_chars": 100000}))
    assert [h.chunk_id for h in whole.hits] == [c.chunk_id for c in document]
    small = expand_context(anchor.chunk_id, mode="document", ctx=SkillContext(demo_kb, {"max_chars": 400}))
    ids = [h.chunk_id for h in small.hits]
    assert anchor.chunk_id in ids and 1 < len(ids) < len(document)
    assert sum(len(h.text) for h in small.hits) <= 400
    order = [c.chunk_id for c in document]
    start = order.index(ids[0])
    assert order[start : start + len(ids)] == ids  # one contiguous passage in document order


def test_pool_hits_keep_their_score_and_legs(demo_kb):
    ctx = SkillContext(demo_kb)
    known = demo_kb.get("prod-xz3000#尺码表-r1-0")
    ctx.remember([EvidenceHit.from_chunk(known, 0.7, {"bm25": LegScore(score=7.0, rank=1)})])
    result = expand_context("prod-xz3000#尺码表-r2-0", ctx=ctx)
    by_id = {h.chunk_id: h for h in result.hits}
    assert by_id[known.chunk_id].score == 0.7 and set(by_id[known.chunk_id].legs) == {"bm25", "context"}
    assert by_id["prod-xz3000#尺码表-r2-0"].score == 0.0
    assert [h.legs["context"].rank for h in result.hits] == [1, 2, 3]


@pytest.mark.parametrize("chunk_id, mode", [("no-such#chunk", "neighbours"), ("prod-xz3000#保修-0", "paragraph")])
def test_unknown_id_or_mode_gives_a_note_and_no_hits(demo_kb, chunk_id, mode):
    result = expand_context(chunk_id, mode=mode, ctx=SkillContext(demo_kb))
    assert result.hits == [] and result.note.startswith("未知")


def test_arguments_are_documented():
    documented = {p.arg_name for p in parse(expand_context.__doc__).params}
    visible = [n for n, p in inspect.signature(expand_context).parameters.items() if p.kind != p.KEYWORD_ONLY]
    assert set(visible) == documented
