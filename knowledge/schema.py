"""Typed records that flow through ingestion: Document -> Chunk, plus SKU rows."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Literal, get_args

from pydantic import BaseModel, Field

DocType = Literal["product", "review", "policy", "faq", "post", "doc"]
DOC_TYPES: tuple[str, ...] = get_args(DocType)
Authority = Literal["official", "community"]
AUTHORITY_RANK = {"official": 2, "community": 1}
# What the shop itself writes: its product pages and SKU tables, policies and FAQ. A record that
# does not state its authority is official only when it is one of these; a review, a post or a
# text of unknown type is a stranger's until the record says otherwise.
OFFICIAL_DOC_TYPES = frozenset({"product", "policy", "faq"})


def authority_of_type(doc_type: str) -> Authority:
    return "official" if doc_type in OFFICIAL_DOC_TYPES else "community"


def in_users_voice(doc_type: str, authority: str) -> bool:
    """Written by customers: a review or a post, or a shop kind (FAQ, product, policy) marked
    community. Untyped text is community, i.e. untrusted (knowledge/injection.py, conflict rule
    4), but of unknown voice (a news page, an encyclopedia entry): it is ranked and quoted as it
    always was, neither preferred as the shop's (the reranker's calibration was fitted so) nor
    framed as a user's ("有用户分享")."""
    return doc_type in ("review", "post") or (authority == "community" and doc_type != "doc")


def check_doc_type(value: str) -> str:
    """The document type named, lower-cased; a ValueError listing the known ones otherwise."""
    name = value.lower()
    if name not in DOC_TYPES:
        raise ValueError(f"unknown doc_type {value!r}: use one of {', '.join(DOC_TYPES)}")
    return name


class SkuRow(BaseModel):
    product_id: str
    sku: str
    name: str
    brand: str = ""
    category: str = ""
    colour: str = ""
    size: str = ""
    price: float
    stock: int
    updated_at: str | None = None


_SIZE_ORDER = {s: i for i, s in enumerate(["XXS", "XS", "S", "M", "L", "XL", "XXL", "2XL", "XXXL", "3XL"])}


def size_key(size: str) -> tuple:
    """Numeric sizes by value, letter sizes S < M < L < XL, anything else after, by text."""
    size = size.strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", size):
        return (0, float(size), "")
    if size.upper() in _SIZE_ORDER:
        return (1, _SIZE_ORDER[size.upper()], "")
    return (2, 0, size)


class Section(BaseModel):
    """A titled part of a structured document; tables are kept as rows of {column: value}."""

    heading: str
    text: str = ""
    table: list[dict[str, str]] | None = None


class Document(BaseModel):
    doc_id: str
    title: str = ""
    text: str = ""
    doc_type: DocType = "doc"
    source: str = ""
    product_id: str | None = None
    brand: str | None = None
    category: str | None = None
    updated_at: str | None = None  # YYYY-MM-DD
    version: int = 1
    authority: Authority | None = None  # None: the record does not say; see resolved_authority
    tags: list[str] = Field(default_factory=list)
    sections: list[Section] | None = None
    skus: list[SkuRow] | None = None
    origin: str = ""  # path[:line] it was loaded from, for error messages

    @property
    def resolved_authority(self) -> Authority:
        """The authority the record states, else the one its type implies (authority_of_type)."""
        return self.authority or authority_of_type(self.doc_type)

    def content_hash(self) -> str:
        # the resolved authority: a change of doc_type that changes it rebuilds the chunks, and a
        # product page that says `authority: official` hashes as one that leaves it implied
        payload = self.model_dump(exclude={"origin"}) | {"authority": self.resolved_authority}
        raw = json.dumps(payload, ensure_ascii=False, sort_keys=True)
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()


class Chunk(BaseModel):
    chunk_id: str  # stable: doc id + section + position, never a list index of the corpus
    doc_id: str
    text: str  # what a user sees and what is cited
    title: str = ""
    section: str = ""
    position: int = 0
    source: str = ""
    doc_type: DocType = "doc"
    product_id: str | None = None
    brand: str | None = None
    category: str | None = None
    updated_at: str | None = None
    version: int = 1
    authority: Authority = "official"
    tags: list[str] = Field(default_factory=list)

    def metadata(self) -> dict:
        return self.model_dump(exclude={"text"})


class LoadIssue(BaseModel):
    """A malformed line or file: reported with where it was, then skipped."""

    where: str  # path or path:line
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"
