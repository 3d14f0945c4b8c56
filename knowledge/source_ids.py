"""What a source id looks like: chunk ids `doc#section-0`, `sku-p-x#sku-ABC`, dataset doc ids
`cmrc-DEV_0`. It lives here, under the citation parser (agents/citations.py), because ingest's
injection screen (knowledge/injection.py) must recognise a planted "citation" too.
"""

from __future__ import annotations

import re

_NOT_IN_ID = re.compile(r"[\s【】\[\]［］\"'`\\|<>{}]")
_ASCII_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.~\-]*[A-Za-z0-9]$")
_DIGIT = re.compile(r"\d")


def looks_like_id(token: str, strict: bool = False) -> bool:
    """Does a bracketed token look like a chunk or doc id? `strict` (square brackets, which prose
    also uses) additionally needs a digit or '#', so `[USB-C]` stays prose."""
    if not token or _NOT_IN_ID.search(token):
        return False
    if "#" in token:
        doc, _, section = token.partition("#")
        return bool(doc) and bool(section) and "#" not in section
    if not _ASCII_ID.match(token) or not re.search(r"[A-Za-z]", token) or not re.search(r"[-_]", token):
        return False
    return not strict or bool(_DIGIT.search(token))
