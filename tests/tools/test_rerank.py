"""Rerankers on the real demo KB: measured ranking quality and calibration, fitting, the skill,
and the BGE loading path (only with the optional `bge` extra installed)."""

from __future__ import annotations

import inspect
import json
from datetime import date

import numpy as np
import pytest
from docstring_parser import parse

from citescope.tools.base import SkillContext
from citescope.tools.rerank import (
    FEATURES,
    BGEReranker,
    OfflineReranker,
    load_weights,
    make_reranker,
    rerank,
    save_weights,
)
from citescope.tools.rerank_fit import fit_offline_reranker
from citescope.tools.search import hybrid_search
from tests.conftest import DEMO_DIR

QUESTIONS = [
    json.loads(line) for line in (DEMO_DIR / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()
]
CANDIDATES = 20


def _squash(text: str) -> str:
    return text.replace(" ", "")


def is_gold(question: dict, chunk) -> bool:
    """A chunk of a gold document that contains one of the expected answers."""
    return chunk.doc_id in question["gold_doc_ids"] and any(
        _squash(a) in _squash(chunk.text) for a in question["answers"]
    )


@pytest.fixture(scope="module")
def reranker(demo_kb):
    model = OfflineReranker(demo_kb)
    model.warm_up()
    return model


@pytest.fixture(scope="module")
def measured(demo_kb, reranker):
    """Per question: hybrid candidates, their reranker scores, and the gold chunk's rank both ways."""
    rows = []
    for question in QUESTIONS:
        if question["qtype"] not in ("factual", "numeric", "unanswerable"):
            continue
        hits = hybrid_search(question["question"], top_k=CANDIDATES, ctx=SkillContext(demo_kb)).hits
        chunks = [demo_kb.get(h.chunk_id) for h in hits]
        scores = reranker.score(question["question"], chunks)
        gold = [is_gold(question, c) for c in chunks]
        reranked = sorted(range(len(chunks)), key=lambda i: (-scores[i], chunks[i].chunk_id))
        rows.append(
            {
                "question": question,
                "scores": scores,
                "hybrid_top3": any(gold[:3]),
                "rerank_top3": any(gold[i] for i in reranked[:3]),
            }
        )
    return rows


def test_scores_are_probabilities(measured):
    all_scores = np.concatenate([row["scores"] for row in measured])
    assert all_scores.size > 500
    assert np.all(np.isfinite(all_scores)) and np.all((all_scores >= 0) & (all_scores <= 1))


def test_gold_chunk_in_top3_for_most_factual_and_numeric_questions(measured):
    answerable = [row for row in measured if row["question"]["answerable"]]
    assert len(answerable) >= 25
    rerank_rate = np.mean([row["rerank_top3"] for row in answerable])
    hybrid_rate = np.mean([row["hybrid_top3"] for row in answerable])
    assert rerank_rate >= 0.7, f"gold in reranked top-3 for {rerank_rate:.0%} of questions"
    # The reranker must earn its place: no worse than the fused order it was given.
    assert rerank_rate >= hybrid_rate, (rerank_rate, hybrid_rate)


def test_best_score_separates_answerable_from_unanswerable(measured):
    best = {True: [], False: []}
    for row in measured:
        best[row["question"]["answerable"]].append(max(row["scores"]))
    assert len(best[False]) >= 8
    assert np.mean(best[True]) > np.mean(best[False]) + 0.15, (np.mean(best[True]), np.mean(best[False]))


def test_model_number_and_number_features(demo_kb, reranker):
    column = {name: i for i, name in enumerate(FEATURES)}
    right, wrong = demo_kb.get("prod-xz2000#功能特点-0"), demo_kb.get("prod-xz3000#功能特点-0")
    rows = reranker.features("移动电源XZ2000有多重？", [right, wrong])  # alias spelling of XZ-2000
    assert rows[:, column["model_match"]].tolist() == [1.0, -1.0]
    size_rows = [c for c in demo_kb.chunks_of("sku-p-lj-huoyan7") if "42" in c.text][:1]
    other_rows = [c for c in demo_kb.chunks_of("sku-p-lj-huoyan7") if "42" not in c.text][:1]
    numbers = reranker.features("烈驹火焰7黑武士42码还有几双？", size_rows + other_rows)[:, column["number_match"]]
    assert numbers[0] > numbers[1]
    assert reranker.features("烈驹的鞋有几种颜色", size_rows)[0, column["number_match"]] == 0.0


def test_a_name_typed_with_letters_and_digits_glued_is_found_written_apart(demo_kb, reranker):
    # the case's page says "不适配 iPhone 14 系列"; a shopper types iphone14
    columns = [FEATURES.index("term_coverage"), FEATURES.index("body_coverage")]
    opening = demo_kb.get("prod-gk-case15#商品简介-0")
    glued = reranker.features("果壳磁吸壳 iphone14能用吗", [opening])[0, columns]
    absent = reranker.features("果壳磁吸壳 galaxy14能用吗", [opening])[0, columns]  # the same shape, a name it lacks
    assert (glued > absent).all()


def test_a_question_made_of_title_words_is_matched_in_the_chunk_content(demo_kb, reranker):
    # 岩途 and 防水 are both in the title 山野 岩途 GTX 中帮防水徒步鞋: the chunk that says 防水 again in
    # its own content is about it; a size-table row that only repeats the title is not
    column = FEATURES.index("body_coverage")
    chunks = [demo_kb.get("prod-sy-yantu#功能特点-0"), demo_kb.get("prod-sy-yantu#尺码表-r2-0")]
    coverage = reranker.features("岩途防水吗", chunks)[:, column]
    assert coverage[0] > 0 and coverage[1] == 0.0
    # the page opening that says both again outranks the row
    opening, row = demo_kb.get("prod-sy-yantu#商品简介-0"), chunks[1]
    assert reranker.score("岩途防水吗", [opening, row])[0] > reranker.score("岩途防水吗", [opening, row])[1]


def test_as_of_match_prefers_the_document_of_the_asked_time(demo_kb, reranker):
    column = FEATURES.index("as_of_match")
    chunk = demo_kb.get("prod-xz3000#功能特点-0")
    dated = [chunk.model_copy(update={"updated_at": day}) for day in ("2016-01-20", "2020-01-20", None)]
    near_2016 = reranker.features("XZ-3000 能带上飞机吗", dated, as_of=date(2016, 7, 1))[:, column]
    assert near_2016[0] > near_2016[1] > 0 and near_2016[2] == 0.0  # an undated chunk gets nothing
    near_2020 = reranker.features("XZ-3000 能带上飞机吗", dated, as_of=date(2020, 7, 1))[:, column]
    assert near_2020[1] > near_2020[0]
    assert not reranker.features("XZ-3000 能带上飞机吗", dated)[:, column].any()  # no asked time: no preference
    assert load_weights()["weights"]["as_of_match"] > 0  # calibrated on DomainRAG's time-sensitive questions
    scores = reranker.score("XZ-3000 能带上飞机吗", dated[:2], as_of=date(2016, 7, 1))
    assert scores[0] > scores[1]


def test_refitted_weights_load_and_change_scores(demo_kb, reranker, tmp_path):
    chunks = demo_kb.chunks_of("prod-xz3000")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, len(FEATURES)))
    y = (x[:, FEATURES.index("authority")] > 0).astype(int)  # a deliberately odd model
    path = tmp_path / "weights.json"
    save_weights(fit_offline_reranker(zip(x, y, strict=False)), path)
    refitted = OfflineReranker(demo_kb, path)
    before = reranker.score("XZ-3000 能带上飞机吗", chunks)
    after = refitted.score("XZ-3000 能带上飞机吗", chunks)
    assert all(0 <= s <= 1 for s in after) and not np.allclose(before, after)
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"intercept": 0, "weights": {"dense": 1}}), encoding="utf-8")
    with pytest.raises(ValueError):
        load_weights(broken)


def test_shipped_weights_cover_every_feature():
    data = load_weights()
    assert set(data["weights"]) == set(FEATURES)


def test_make_reranker_specs(demo_kb):
    assert isinstance(make_reranker("offline", kb=demo_kb), OfflineReranker)
    bge = make_reranker("bge:/models/bge-reranker-base")
    assert isinstance(bge, BGEReranker) and bge.name == "bge:bge-reranker-base"
    for bad in ("offline", "bge", "cohere:x"):
        with pytest.raises(ValueError):
            make_reranker(bad, kb=None if bad == "offline" else demo_kb)


def pool_ctx(demo_kb, question: str) -> SkillContext:
    ctx = SkillContext(demo_kb)
    ctx.remember(hybrid_search(question, top_k=12, ctx=ctx).hits)
    return ctx


def test_rerank_skill_reorders_the_pool_and_keeps_attribution(demo_kb):
    question = "星择XZ-3000充电宝的额定能量是多少Wh？"
    ctx = pool_ctx(demo_kb, question)
    result = rerank(question, top_k=5, ctx=ctx)
    assert isinstance(ctx.reranker, OfflineReranker)  # built on first use
    assert len(result.hits) == 5 and not result.degraded
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    assert [h.legs["rerank"].rank for h in result.hits] == [1, 2, 3, 4, 5]
    for hit in result.hits:
        assert set(ctx.pool[hit.chunk_id].legs) <= set(hit.legs)  # bm25 / dense legs kept
    assert "74Wh" in result.hits[0].text


def test_rerank_given_ids_reports_unknown_ones(demo_kb):
    ctx = SkillContext(demo_kb)
    ids = ["prod-xz2000#功能特点-0", "faq-003#body-0", "no-such#chunk"]
    result = rerank("XZ-2000 有多重", chunk_ids=ids, ctx=ctx)
    assert [h.chunk_id for h in result.hits] == ["prod-xz2000#功能特点-0", "faq-003#body-0"]
    assert "no-such#chunk" in result.note
    assert result.hits[0].score > result.hits[1].score


def test_rerank_with_empty_pool_says_so(demo_kb):
    result = rerank("随便问问", ctx=SkillContext(demo_kb))
    assert result.hits == [] and "先检索" in result.note


def test_failing_reranker_keeps_previous_order(demo_kb):
    question = "风驰轻羽3跑鞋的跟差是多少？"
    ctx = pool_ctx(demo_kb, question)
    ctx.reranker = BGEReranker(str(demo_kb.dir / "no-such-model"))  # cannot load: extra missing or no files
    previous = sorted(ctx.pool.values(), key=lambda h: (-h.score, h.chunk_id))
    result = rerank(question, top_k=4, ctx=ctx)
    assert len(result.degraded) == 1 and result.degraded[0].startswith("reranker failed:")
    assert [h.chunk_id for h in result.hits] == [h.chunk_id for h in previous[:4]]
    assert all("rerank" not in h.legs for h in result.hits)


def test_bge_without_the_extra_fails_with_a_clear_error():
    try:
        import FlagEmbedding  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match=r"\.\[bge\]"):
            BGEReranker("/models/x").warm_up()
    else:
        pytest.skip("FlagEmbedding is installed; the loading test below covers BGE")


def test_bge_reranker_loads_a_tiny_checkpoint(tmp_path, demo_kb):
    """Proves the loading and scoring path with a 2-layer BERT built here; its scores mean nothing."""
    pytest.importorskip("FlagEmbedding")
    transformers = pytest.importorskip("transformers")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"充电宝多少钱能带上飞机吗价格重量克星择的是"]
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(vocab) + "\n", encoding="utf-8")
    model_dir = tmp_path / "tiny-reranker"
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
        num_labels=1,
    )
    transformers.BertForSequenceClassification(config).save_pretrained(model_dir)
    transformers.BertTokenizer(str(vocab_file)).save_pretrained(model_dir)
    model = make_reranker(f"bge:{model_dir}")
    model.max_length = 64
    chunks = demo_kb.chunks_of("prod-xz3000")[:3]
    scores = model.score("充电宝多少钱", chunks)
    assert len(scores) == 3 and all(0.0 <= s <= 1.0 for s in scores)
    assert model.score("充电宝多少钱", chunks[:1])[0] == pytest.approx(scores[0], abs=1e-5)


def test_rerank_argument_is_documented():
    documented = {p.arg_name for p in parse(rerank.__doc__).params}
    visible = [n for n, p in inspect.signature(rerank).parameters.items() if p.kind != p.KEYWORD_ONLY]
    assert set(visible) == documented
