"""Query rewriting: alias normalisation, a keyword-only form, synonym variants, optional LLM.

The offline rewrite only uses the shop lexicon (knowledge/lexicon.py), so it is deterministic;
an LLM rewriter (HyDE, paraphrases) is a hook in the skill config and may fail without taking
the offline queries down with it.

No `from __future__ import annotations` here: AgentScope reads the skill's real annotations.
"""

from citescope.knowledge.lexicon import Lexicon
from citescope.knowledge.text import tokenize
from citescope.tools.base import SkillContext, SkillResult

DEFAULT_MAX_QUERIES = 4
# Interrogatives the stopword list keeps (they are words in documents too, but not in a
# keyword query); meaning-bearing ones such as 多重 / 多久 stay.
_QUESTION_WORDS = frozenset("哪里 哪儿 哪款 哪一款 一款 谁 几 怎样 是不是 有没有 能不能 多长时间".split())


def keyword_form(text: str, lexicon: Lexicon) -> str:
    """The question's content words in order, without question words or overlapping pieces."""
    canonical = lexicon.canonicalize(text)
    tokens = [t for t in dict.fromkeys(tokenize(canonical, lexicon)) if t not in _QUESTION_WORDS]
    # cut_for_search also yields the parts of long words (笔记, 笔记本, 笔记本电脑): keep the whole.
    words = [t for t in tokens if not any(t != other and t in other for other in tokens)]
    lowered = canonical.lower()
    out = []
    for word in words:  # give each word back its original case (tokens are lower-cased)
        at = lowered.find(word)
        out.append(canonical[at : at + len(word)] if at >= 0 else word)
    return " ".join(out)


def _synonym_groups(lexicon: Lexicon) -> list[list[str]]:
    """Each synonym entry as [head term, *its synonyms], in table order."""
    return [[head, *values] for head, values in lexicon.synonyms.items()]


def _alternatives(term: str, lexicon: Lexicon) -> list[str]:
    """Replacements for a term: the head term first (the wording documents tend to use)."""
    out: list[str] = []
    for group in _synonym_groups(lexicon):
        if term in group:
            out += [word for word in group if word != term and word not in out]
    return out


def _terms_in(text: str, lexicon: Lexicon) -> list[str]:
    """Synonym-table terms in the text, longest match first, non-overlapping, in text order."""
    candidates = sorted({w for group in _synonym_groups(lexicon) for w in group}, key=len, reverse=True)
    taken: list[tuple[int, int, str]] = []
    for word in candidates:
        start = text.find(word)
        while start >= 0:
            end = start + len(word)
            if all(end <= s or start >= e for s, e, _ in taken):
                taken.append((start, end, word))
                break
            start = text.find(word, start + 1)
    return [word for _, _, word in sorted(taken)]


def expand_queries(query: str, lexicon: Lexicon, max_queries: int = DEFAULT_MAX_QUERIES) -> list[str]:
    """The original, its alias-canonical form, a keyword-only form, then synonym variants
    (one term replaced at a time, round-robin over the terms found), deduplicated."""
    original = query.strip()
    canonical = lexicon.canonicalize(original)
    queries = [original, canonical, keyword_form(original, lexicon)]
    options = [(term, _alternatives(term, lexicon)) for term in _terms_in(canonical, lexicon)]
    for depth in range(max((len(alts) for _, alts in options), default=0)):
        for term, alternatives in options:
            if depth < len(alternatives):
                queries.append(canonical.replace(term, alternatives[depth], 1))
    return _dedupe(queries)[: max(1, max_queries)]


def _dedupe(queries: list[str]) -> list[str]:
    return list(dict.fromkeys(q for q in (q.strip() for q in queries) if q))


def rewrite_query(query: str, *, ctx: SkillContext) -> SkillResult:
    """改写查询：把别名换成商品表里的标准名，生成关键词形式和同义词变体，供后续多路检索。

    Args:
        query: 需要改写的用户问题。
    """
    max_queries = int(ctx.config.get("max_queries", DEFAULT_MAX_QUERIES))
    offline = expand_queries(query, ctx.kb.lexicon, max_queries)
    degraded = []
    llm_rewrite = ctx.config.get("llm")  # Callable[[str], list[str]] when an LLM is configured
    queries = offline
    if callable(llm_rewrite):
        try:
            generated = [str(q) for q in llm_rewrite(query)]
            # The original and canonical question stay first; LLM rewrites come before the
            # lexicon variants, which are cheaper to lose.
            queries = _dedupe(offline[:2] + generated + offline[2:])[: max(1, max_queries)]
        except Exception as exc:  # the offline rewrite still stands
            degraded.append(f"llm rewrite failed: {type(exc).__name__}")
    note = "改写后的查询：" + "；".join(f"{i}) {q}" for i, q in enumerate(queries, start=1))
    return SkillResult(skill="rewrite_query", data={"queries": queries}, degraded=degraded, note=note)
