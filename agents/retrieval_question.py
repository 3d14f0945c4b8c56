"""The part of a long message that retrieval reads.

A shopper may paste a whole story into the chat box: the order, the sizes, what went wrong, and at
the end what they want to know. Every retrieval stage costs more with every character it reads (the
query embedding most: ~3 s of CPU for 2,000 characters against ~0.05 s for a usual question), and the
story adds words that match everything. So analysis, search, rerank, the conflict check and the
offline answerer read at most `retrieval_max_chars` characters of it, chosen by sentence:

  1. the last sentence (a message usually ends with what it asks),
  2. the sentences that end in a question mark, latest first,
  3. the sentences with a question word (什么, 多少, 能不能, 吗…; agents.question_cues.is_asking), latest first,

each kept if it still fits, and put back in the message's order; when nothing but the last sentence
asks, the sentences just before it fill the room instead. When the last sentence alone is too
long, its end is kept, from a clause boundary. The whole message stays the question of the result,
the session and the trace, and is what an LLM answerer reads. A message no longer than the limit
(every question of the demo and dataset question sets: the longest has 139 characters) is read whole.
"""

from __future__ import annotations

import re

from citescope.agents.question_cues import is_asking
from citescope.knowledge.text import split_sentences

_ASKED = ("？", "?")
_CLAUSE_BREAK = re.compile(r"[，,、：:\s]")


def retrieval_question(question: str, max_chars: int) -> str:
    """The question as retrieval reads it: whole when it has at most max_chars characters, else its
    asking sentences within max_chars (module docstring)."""
    if len(question) <= max_chars:
        return question
    sentences = split_sentences(question, at_clauses=True)
    if not sentences:
        return question[-max_chars:].strip()
    last = len(sentences) - 1
    if len(sentences[last]) >= max_chars:
        return _tail(sentences[last], max_chars)
    latest_first = list(range(last - 1, -1, -1))
    marked = [i for i in latest_first if sentences[i].endswith(_ASKED)]
    worded = [i for i in latest_first if not sentences[i].endswith(_ASKED) and is_asking(sentences[i])]
    kept, used = _fill(sentences, [last, *marked, *worded], set(), 0, max_chars)
    if kept == {last}:  # nothing else asks: the sentences just before the last say what it is about
        kept, used = _fill(sentences, latest_first, kept, used, max_chars)
    return " ".join(sentences[i] for i in sorted(kept))


def _fill(sentences: list[str], order: list[int], kept: set[int], used: int, max_chars: int) -> tuple[set[int], int]:
    """Sentences taken in `order` while each fits what is left of max_chars (a space joins two)."""
    for i in order:
        cost = len(sentences[i]) + (1 if kept else 0)
        if i not in kept and used + cost <= max_chars:
            kept = kept | {i}
            used += cost
    return kept, used


def _tail(sentence: str, max_chars: int) -> str:
    """The end of an over-long sentence: its last max_chars characters, from the first clause
    boundary among them when one falls in their first half (no clause cut in the middle)."""
    tail = sentence[-max_chars:]
    boundary = _CLAUSE_BREAK.search(tail, 0, max_chars // 2)
    return (tail[boundary.end() :] if boundary else tail).strip()
