"""Citation parsing: every way a model writes 【chunk_id】, and answers split into cited sentences.

Parsing only decides what *looks like* an id (chunk ids `doc#section-0`, `sku-p-x#sku-ABC`,
dataset doc ids `cmrc-DEV_0`); whether an id was really in the evidence is the inspector's job.
Positional markers (`[1]`) and bracketed words (`[图片]`, `【注意】`) are never ids.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from functools import lru_cache

from pydantic import BaseModel

from citescope.agents.prompts import load_prompt
from citescope.knowledge.normalize import normalize
from citescope.knowledge.source_ids import looks_like_id
from citescope.knowledge.text import SENTENCE_BOUNDARY, SNIPPET_CUT, tokenize

# Any bracket pair, half or full width; 【id]-style mismatches are tolerated.
_BRACKET = re.compile(r"[【\[［〔]([^【】\[\]［］〔〕\n]{1,300})[】\]］〕]")
# (来源: id) / （出处：id） — parentheses count only with a label, "(3.7V / 74Wh)" is prose.
_LABELLED_PAREN = re.compile(r"[（(]\s*((?:来源|出处|引用|source|ref)[^（）()\n]{1,300})[）)]", re.IGNORECASE)
_LABEL = re.compile(
    r"^\s*(?:来源|出处|引用|参考|证据|source|ref|citation)s?\s*(?:id|ID|编号|号)?\s*[:：]?\s*", re.IGNORECASE
)
_SEPARATOR = re.compile(r"(\s*[,，;；、]\s*|\s+)")
_CANONICAL = re.compile(r"【([^【】\n]+)】")
_CANONICAL_RUN_GAP = re.compile(r"(?<=】)[^\S\n]+(?=【)")

# A sentence ends where knowledge/text.py says (SENTENCE_BOUNDARY), or at a line break; canonical
# 【…】 brackets come first in the alternation, so an id with "？" in it stays whole.
_SENTENCE_END = re.compile(r"【[^【】\n]*】|" + SENTENCE_BOUNDARY)
_FOLLOWING_CITATION = re.compile(r"[^\S\n]*(【[^【】\n]*】)")
_CLOSERS = re.compile(r"[”’」』）)\"']*")
_LIST_MARKER = re.compile(r"^(?:\s*(?:[-*•·>]+|\d{1,2}[.、)）](?!\d)|[（(]\d{1,2}[）)])\s*)+")
_DIGIT = re.compile(r"\d")

# Sentences made only of these words (and no digits) are courtesy, framing or refusal: they
# state nothing about the shop, so they need no citation.
COURTESY_PHRASES = (
    "您好",
    "你好",
    "亲",
    "感谢您的咨询",
    "谢谢您的耐心等待",
    "很高兴为您服务",
    "以下是为您查到的相关信息",
    "以下是相关信息如下",
    "希望对您有帮助",
    "如需帮助请随时联系在线客服",
    "如有其他问题欢迎再次咨询",
    "祝您购物愉快",
    "请问还有什么可以帮您",
    "为您整理总结如下",
    "抱歉，知识库中暂未找到可靠信息来回答这个问题。为避免误导您，建议您换个问法，或转人工客服进一步确认。",
    "hello hi thanks thank you here is what i found the following hope this helps please contact "
    "customer service sorry",
)


class AnswerSentence(BaseModel):
    text: str  # the claim, citation markers removed
    cited_ids: list[str]
    is_factual: bool


def _ids_in(content: str, strict: bool, known_ids: Collection[str] | None) -> list[str]:
    """Ids inside one bracket's content: `来源ID: a`, `a, b`, `a；b`; separators inside a
    chunk id (a heading may contain 、) are glued back when the piece alone is no id."""
    content = _LABEL.sub("", content).strip()
    content = re.sub(r"\s*#\s*", "#", content)
    if known_ids is not None:
        for whole in (content, normalize(content)):
            if whole in known_ids:
                return [whole]
    ids: list[str] = []
    pieces = _SEPARATOR.split(content)  # [piece, separator, piece, ...]
    for index in range(0, len(pieces), 2):
        piece = normalize(pieces[index]).strip("\"'`“”‘’")
        if not piece:
            continue
        if looks_like_id(piece, strict):
            ids.append(piece)
        elif ids and "#" in ids[-1]:
            candidate = ids[-1] + pieces[index - 1].strip() + piece
            if looks_like_id(candidate, strict):
                ids[-1] = candidate
    return ids


def _bracket_ids(match: re.Match, known_ids: Collection[str] | None) -> list[str]:
    strict = match.group(0)[0] in "[［"
    return _ids_in(match.group(1), strict, known_ids)


def normalize_citations(text: str, known_ids: Collection[str] | None = None) -> str:
    """Rewrite every citation variant to runs of canonical 【id】; other brackets stay as written."""

    def rewrite(match: re.Match) -> str:
        ids = _bracket_ids(match, known_ids)
        return "".join(f"【{i}】" for i in ids) if ids else match.group(0)

    text = _LABELLED_PAREN.sub(rewrite, text)
    text = _BRACKET.sub(rewrite, text)
    return _CANONICAL_RUN_GAP.sub("", text)


def parse_citations(text: str, known_ids: Collection[str] | None = None) -> list[str]:
    """Every cited id in order of first appearance."""
    found: list[str] = []
    for match in _CANONICAL.finditer(normalize_citations(text, known_ids)):
        for chunk_id in _ids_in(match.group(1), False, known_ids):
            if chunk_id not in found:
                found.append(chunk_id)
    return found


def strip_citations(text: str, known_ids: Collection[str] | None = None) -> str:
    """The text without its citation markers (non-id brackets are kept)."""
    normalized = normalize_citations(text, known_ids)
    return _CANONICAL.sub(lambda m: "" if _ids_in(m.group(1), False, known_ids) else m.group(0), normalized)


# What the answer says of a part of a compound question nothing in the evidence answers
# (prompts/part_not_found*.md): it asserts nothing, so it is the one sentence without a citation.
_PART_NOT_FOUND = {False: load_prompt("part_not_found").strip(), True: load_prompt("part_not_found_en").strip()}
_NOT_FOUND_FRAMES = re.compile(
    "|".join(
        re.escape(head) + r"[^。！？!?\n]+?" + re.escape(tail.rstrip("。.")) + "[。.]?"
        for head, _, tail in (template.partition("{part}") for template in _PART_NOT_FOUND.values())
    )
)


def part_not_found(part: str, english: bool = False) -> str:
    """The statement that the evidence answers nothing of `part` (its sentence ends made commas)."""
    part = re.sub(r"[。！？!?\n]+", "，", part).strip(" ，,")
    return _PART_NOT_FOUND[english].replace("{part}", part)


@lru_cache(maxsize=1)
def _courtesy_tokens() -> frozenset[str]:
    return frozenset(token for phrase in COURTESY_PHRASES for token in tokenize(phrase))


@lru_cache(maxsize=8192)
def is_factual(claim: str) -> bool:
    """False for courtesy/hedging/refusal sentences (no digits and no word beyond the courtesy
    list) and for the statement that nothing was found on a part of the question."""
    if _NOT_FOUND_FRAMES.fullmatch(claim.strip()):
        return False
    if _DIGIT.search(claim) or len(claim) > 80:
        return True
    tokens = tokenize(claim)
    return any(token not in _courtesy_tokens() for token in tokens)


def split_sentences(answer: str, known_ids: Collection[str] | None = None) -> list[AnswerSentence]:
    """Sentences of an answer with the ids cited at (or right after) their end.

    "……15天。【a】" cites a; a line holding only citations belongs to the sentence before it.
    """
    sentences: list[AnswerSentence] = []
    for line in normalize_citations(answer, known_ids).split("\n"):
        line = _LIST_MARKER.sub("", line, count=1)
        for raw in _split_line(line, known_ids):
            ids = [i for m in _CANONICAL.finditer(raw) for i in _ids_in(m.group(1), False, known_ids)]
            claim = strip_citations(raw, known_ids).strip()
            if not re.search(r"\w", claim):
                if ids and sentences:  # citations alone on their line or after a stray mark
                    sentences[-1].cited_ids.extend(i for i in ids if i not in sentences[-1].cited_ids)
                continue
            unique = list(dict.fromkeys(ids))
            sentences.append(AnswerSentence(text=claim, cited_ids=unique, is_factual=is_factual(claim)))
    return sentences


def _split_line(line: str, known_ids: Collection[str] | None) -> list[str]:
    """Cut one line after each sentence end, taking closing quotes and the citations behind it."""
    pieces: list[str] = []
    start = 0
    position = 0
    while True:
        match = _SENTENCE_END.search(line, position)
        if match is None:
            break
        position = match.end()
        if match.group(0).startswith("【"):
            continue
        closers = _CLOSERS.match(line, position)
        end = closers.end() if closers else position  # the pattern matches "" at worst
        while True:  # absorb trailing spaces + citation brackets
            follow = _FOLLOWING_CITATION.match(line, end)
            if follow is None or not _ids_in(follow.group(1)[1:-1], False, known_ids):
                break
            end = follow.end()
        pieces.append(line[start:end])
        start = position = end
    if line[start:].strip():
        pieces.append(line[start:])
    return pieces


# Where a sentence may end in a text still being written: a mark, or a line break (a bracket pair
# first, as in _SENTENCE_END, so an id with "？" in it stays whole).
_END_OR_BREAK = re.compile(_SENTENCE_END.pattern + r"|\n")
_OPENING_BRACKETS = "【[［〔"
_BRACKET_CLOSED = re.compile(r"[】\]］〕\n]")
_SPACES = re.compile(r"[^\S\n]*")


class SentenceCutter:
    """Cuts an answer that is still being written into the sentences it has completed, as
    split_sentences reads them: a sentence is complete once nothing that follows can still belong
    to it (closing quotes, the citations behind it: "……15天。【a" waits for the bracket to close).
    The pieces are consecutive slices of the text (a line break opens the next one): joined,
    they give the text back."""

    def __init__(self, known_ids: Collection[str] | None = None):
        self.known_ids = known_ids
        self.cut = 0  # how much of the text the pieces returned so far cover

    def feed(self, text: str) -> list[str]:
        """The sentences completed since the last call; text: the whole answer so far (it only grows)."""
        pieces: list[str] = []
        position = self.cut
        while (match := _END_OR_BREAK.search(text, position)) is not None:
            if match.group(0).startswith("【"):
                position = match.end()
                continue
            end = match.start() if match.group(0) == "\n" else self._sentence_end(text, match.end())
            if end is None:
                break
            if text[self.cut : end].strip():  # a blank stretch joins the sentence after it
                pieces.append(text[self.cut : end])
                self.cut = end
            position = max(end, match.end())
        return pieces

    def finish(self, text: str) -> list[str]:
        """The sentences left once the text is complete (the last may have no end mark)."""
        pieces = self.feed(text)
        if text[self.cut :].strip():
            pieces.append(text[self.cut :])
            self.cut = len(text)
        return pieces

    def _sentence_end(self, text: str, position: int) -> int | None:
        """Where the sentence whose end mark stops at position ends, its closers and citations taken;
        None while the text written so far cannot tell."""
        end = _CLOSERS.match(text, position).end()  # type: ignore[union-attr]  # "*": always matches
        while True:
            at = _SPACES.match(text, end).end()  # type: ignore[union-attr]  # "*": always matches
            if at == len(text):
                return None
            if text[at] not in _OPENING_BRACKETS:
                return end
            bracket = _BRACKET.match(text, at)
            if bracket is None:  # no id bracket: unless it has not closed yet
                return None if _BRACKET_CLOSED.search(text, at + 1) is None else end
            if not _bracket_ids(bracket, self.known_ids):
                return end
            end = bracket.end()


# Punctuation and space at a quote's end, which its frame replaces with its own.
TRAILING_MARKS = re.compile(r"[\s。！？!?；;，,、:：.]+$")
_INNER_BOUNDARY = re.compile(SENTENCE_BOUNDARY)
_LEADING_MARKS = re.compile(r"^[\s\-*•·>:：，,；;]+")


def after_heading(text: str, section: str) -> str:
    """A sentence without the "<section>：" heading its chunk opens with and the marks after it
    ("" when only the heading is left); unchanged when it does not open with the heading."""
    if section and text.startswith(section + "："):
        return _LEADING_MARKS.sub("", text[len(section) + 1 :])
    return text


# What a page's markup left behind when it dropped a pronunciation or a date: brackets holding
# nothing but separators (张世昌（）, 伊维卡·奥利奇（，；）), a separator against a bracket
# (Macedo,）), a label left without its value (松鸦（学名：）), the separator doubled where such
# brackets stood, and an opening bracket the text was cut after (票房第一（ …).
_SEPARATOR_INSIDE_BRACKET = re.compile(r"(?<=[（(])[\s，,、；;：:]+|[\s，,、；;：:]+(?=[）)])")
_EMPTY_BRACKETS = re.compile(r"\s*[（(][）)]")
_OPEN_BRACKET_AT_END = re.compile(r"\s*[（(]$")
_LABEL_WITHOUT_VALUE = re.compile(r"\s*[（(][^（）()：:，,；;]{1,6}[：:][\s，,；;、]*[）)]")  # 松鸦（学名：）
_DOUBLED_SEPARATOR = re.compile(r"([，,、；;])\s*[，,、]")  # 杜老志，（），英国人 once （） is gone
# A wiki's script-variant markup: -{后}- is 后, -{zh-hans:罗伯斯;zh-hk:罗伯列斯;}- is 罗伯斯.
_VARIANT_MARKUP = re.compile(r"-\{([^{}]*)\}-")
_SIMPLIFIED_VARIANT = re.compile(r"zh-(?:hans|cn)\s*:\s*([^;]*)")


def _variant(match: re.Match) -> str:
    inner = match.group(1)
    if ":" not in inner:
        return inner
    chosen = _SIMPLIFIED_VARIANT.search(inner) or re.search(r":\s*([^;]*)", inner)
    return chosen.group(1).strip() if chosen else inner  # a ":" is in inner, so one of them matches


def without_markup_debris(text: str) -> str:
    """The text without the markup debris described above (script variants resolved to the
    simplified one); the answer metric reads gold answers the same way, since debris says nothing."""
    text = _LABEL_WITHOUT_VALUE.sub("", _VARIANT_MARKUP.sub(_variant, text))
    return _DOUBLED_SEPARATOR.sub(r"\1", _EMPTY_BRACKETS.sub("", _SEPARATOR_INSIDE_BRACKET.sub("", text)))


# A search snippet's cut at the end of a sentence (…首次突破3000万吨之后，又 ...).
_SNIPPET_CUT_AT_END = re.compile(rf"{SNIPPET_CUT.pattern}$")
_LAST_CLAUSE = re.compile(r"[，；：][^，；：]*$")


def without_cut_clause(text: str) -> str:
    """A sentence a snippet cut without its last clause, which ran on past the cut (营收509 ... would
    quote a number cut short, 之后，又 ... a clause without its verb); a sentence of one clause is
    all cut ("" is returned), one cut right after an opening bracket keeps what came before it."""
    cut = _SNIPPET_CUT_AT_END.search(text)
    if cut is None:
        return text
    text = text[: cut.start()]
    if _OPEN_BRACKET_AT_END.search(text):
        return _OPEN_BRACKET_AT_END.sub("", text)
    clause = _LAST_CLAUSE.search(text)
    text = text[: clause.start()] if clause else ""
    # a chunk that starts inside a bracket (1819年—1901年），全名 ...) gives a quote no closer without its opener
    if text.endswith(("）", ")")) and text.count("（") + text.count("(") < text.count("）") + text.count(")"):
        text = text[:-1]
    return text


def quotable(text: str) -> str:
    """Evidence text safe to quote inside one answer sentence: no citation markers, no 【】,
    no sentence end in the middle, no markup debris, no clause a snippet cut, one line."""
    text = strip_citations(text).replace("【", "「").replace("】", "」")
    text = without_cut_clause(without_markup_debris(" ".join(text.split())))
    text = _OPEN_BRACKET_AT_END.sub("", TRAILING_MARKS.sub("", text))
    return _INNER_BOUNDARY.sub("，", TRAILING_MARKS.sub("", text)).strip("，")
