"""A text's normal form: half-width ASCII, no control characters, single spaces, at most one blank
line. Its own module, with nothing but the standard library, so code that must run where jieba and the
rest of the runtime are not installed (training on a lent GPU) normalizes as the pipeline does."""

from __future__ import annotations

import re
import unicodedata

# Full-width letters, digits, space and a few symbols become half-width; Chinese punctuation
# (，。！？；：（）) stays, because answers quote the text back to Chinese readers.
_KEEP_FULLWIDTH = set("，。！？；：（）")
_WIDTH_TABLE = {cp: cp - 0xFEE0 for cp in range(0xFF01, 0xFF5F) if chr(cp) not in _KEEP_FULLWIDTH}
_WIDTH_TABLE[0x3000] = 0x20
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")
_BLANK_LINES = re.compile(r"\n\s*\n+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b-\u200f\u2028\u2029\ufeff]")


def normalize(text: str) -> str:
    """Half-width ASCII, no control characters, single spaces, at most one blank line."""
    text = unicodedata.normalize("NFC", text).translate(_WIDTH_TABLE)
    text = _CONTROL.sub("", text)
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()
