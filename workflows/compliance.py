"""Output compliance: a sensitive-word filter applied to every generated answer.

Customer-service deployments must keep some words out of what the shop says: profanity,
disparaging competitors, and claims Chinese advertising law (广告法 art. 9) forbids such as
"最低价" or "国家级". The shop keeps its list in a UTF-8 file (one word per line, `#` comments);
matching runs on normalised text — full/half width and case folded (NFKC + casefold),
whitespace and zero-width characters ignored — so "最 低 价", "最\u200b低价" and "ＶＩＰ" are caught.
Citation markers 【chunk_id】 are barriers: never masked, never part of a match. A word of
Latin letters or digits only matches at word boundaries of the original text ("ass" not in "class").
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from citescope.knowledge.source_ids import looks_like_id

if TYPE_CHECKING:
    from citescope.workflows.pipeline_config import PipelineConfig

Action = Literal["mask", "refuse"]
MASK = "＊"
REPO = Path(__file__).resolve().parents[1]
_END = ""  # trie key marking "a word ends here" (never a character of normalised text)
_BARRIER = "\x00"  # stands for a citation marker in the normalised text: no word contains it


class ComplianceError(ValueError):
    """A word list that cannot be used; the message names the file (and line)."""


@dataclass(frozen=True)
class FilterResult:
    text: str  # masked for "mask"; unchanged for "refuse" (the caller must not show it)
    hits: list[str] = field(default_factory=list)  # words of the list found, in order of first hit
    action: Literal["pass", "mask", "refuse"] = "pass"  # what the caller must do: "pass" when no hit


def _fold(char: str) -> str:
    """A character as matching sees it: "" for what is ignored, else its NFKC casefold."""
    if char.isspace() or unicodedata.category(char) == "Cf":  # Cf: zero-width space/joiners, BOM, soft hyphen
        return ""
    return unicodedata.normalize("NFKC", char).casefold()


def _is_latin(char: str) -> bool:
    return bool(char) and char.isascii() and char.isalnum()


def resolve_word_list(setting: str, kb_dir: Path | str | None) -> Path:
    """An absolute path as is; a relative one from the KB folder if the file is there, else from
    the repository root (where workflows/sensitive_words.txt ships)."""
    path = Path(setting).expanduser()
    if path.is_absolute():
        return path
    if kb_dir is not None and (Path(kb_dir) / path).is_file():
        return Path(kb_dir) / path
    return REPO / path


class SensitiveWordFilter:
    def __init__(self, path: Path | str, action: Action = "mask"):
        if action not in ("mask", "refuse"):
            raise ValueError(f"sensitive_action must be 'mask' or 'refuse', not {action!r}")
        self.path = Path(path)
        self.action = action
        self.words: list[str] = []
        self._trie: dict | None = None

    @classmethod
    def for_config(cls, config: PipelineConfig, kb_dir: Path | str | None) -> SensitiveWordFilter | None:
        """The warmed filter a PipelineConfig asks for, or None when sensitive_words_file is empty."""
        if not config.sensitive_words_file.strip():
            return None
        return cls(resolve_word_list(config.sensitive_words_file.strip(), kb_dir), config.sensitive_action).warm_up()

    def warm_up(self) -> SensitiveWordFilter:
        if self._trie is not None:
            return self
        try:
            raw = self.path.read_bytes()
        except OSError as exc:
            raise ComplianceError(f"{self.path}: cannot read the sensitive-word list ({exc.strerror or exc})") from exc
        trie: dict = {}
        for number, line in enumerate(raw.removeprefix(b"\xef\xbb\xbf").splitlines(), start=1):
            try:
                word = line.decode("utf-8").strip()
            except UnicodeDecodeError:
                raise ComplianceError(f"{self.path}:{number}: not UTF-8 text") from None
            if not word or word.startswith("#"):
                continue
            if any(bracket in word for bracket in "【】"):
                raise ComplianceError(f"{self.path}:{number}: {word!r} contains a citation bracket 【】")
            key = "".join(_fold(char) for char in word)
            if not key:
                raise ComplianceError(f"{self.path}:{number}: {word!r} has no visible characters")
            node = trie
            for char in key:
                node = node.setdefault(char, {})
            if _END not in node:
                node[_END] = word
                self.words.append(word)
        self._trie = trie
        return self

    def run(self, text: str) -> FilterResult:
        self.warm_up()
        folded, origin = self._fold_text(text)
        spans: list[tuple[int, int]] = []  # original [first, last] character of each hit
        hits: list[str] = []
        i = 0
        while i < len(folded):
            found = self._longest_match(text, folded, origin, i)
            if found is None:
                i += 1
                continue
            word, end = found
            spans.append((origin[i], origin[end]))
            if word not in hits:
                hits.append(word)
            i = end + 1
        if not hits:
            return FilterResult(text=text)
        if self.action == "refuse":
            return FilterResult(text=text, hits=hits, action="refuse")
        chars = list(text)
        for first, last in spans:
            for k in range(first, last + 1):
                if _fold(chars[k]):  # the hit's own characters; ignored separators stay as they were
                    chars[k] = MASK
        return FilterResult(text="".join(chars), hits=hits, action="mask")

    @staticmethod
    def _fold_text(text: str) -> tuple[str, list[int]]:
        """The normalised text (citation markers as barriers) and, per character, its index in text."""
        out: list[str] = []
        origin: list[int] = []
        i = 0
        while i < len(text):
            if text[i] == "【":
                close = text.find("】", i + 1)
                if close != -1 and "\n" not in text[i:close] and looks_like_id(text[i + 1 : close].strip()):
                    out.append(_BARRIER)
                    origin.append(i)
                    i = close + 1
                    continue
            for char in _fold(text[i]):
                out.append(char)
                origin.append(i)
            i += 1
        return "".join(out), origin

    def _longest_match(self, text: str, folded: str, origin: list[int], start: int) -> tuple[str, int] | None:
        """The longest word starting at folded[start] that respects word boundaries, and its last index."""
        node = self._trie
        assert node is not None  # run() loaded the list first
        ends: list[tuple[str, int]] = []
        for j in range(start, len(folded)):
            node = node.get(folded[j])
            if node is None:
                break
            if _END in node:
                ends.append((node[_END], j))
        for word, end in reversed(ends):
            first, last = origin[start], origin[end]
            if _is_latin(folded[start]) and first > 0 and _is_latin(_fold(text[first - 1])[-1:]):
                continue
            if _is_latin(folded[end]) and last + 1 < len(text) and _is_latin(_fold(text[last + 1])[:1]):
                continue
            return word, end
        return None
