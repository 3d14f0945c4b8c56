"""Which of a KB's products, brands and categories a question names: the entity index.

Product detection matches name keys inside the question, in a compact form (lower case, no
spaces or hyphens, so "XZ 2000", "xz-2000" and "XZ2000" all meet "XZ-2000") with ASCII word
boundaries checked on the original text (XZ-2000 never matches inside XZ-20000, T20 never in
T200). A key names a product only when exactly one product has it; "strong" keys (id, SKU code,
model number, full name, the model segment right after the brand, and that segment's series name:
轻羽 of 轻羽3) decide alone, "weak" keys (descriptor words such as 手机壳) need the product's brand in
the question as well. A strong key several products share (轻羽: 轻羽3 and 轻羽Pro; Air Jordan 1; iPhone
15) is a name that fits them all: the product it names is left unresolved (product_id None), so
the session asks back which one, unless another word of the question fits only one of them.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from pydantic import BaseModel

from citescope.knowledge.lexicon import Lexicon
from citescope.knowledge.normalize import normalize
from citescope.knowledge.text import CJK_CHAR, MODEL_NUMBER, tokenize


class Entity(BaseModel):
    """A shop entity named in (or carried into) a question; product_id is None when the name is
    known (from the lexicon) but not resolved to one product."""

    name: str
    product_id: str | None = None
    brand: str | None = None
    category: str | None = None
    surface: str = ""  # the words of the (alias-canonical) question that named it


# A name segment that gives a spec (20000mAh, 65W, 20寸), no part of what the product is called.
_SPEC_SEGMENT = re.compile(r"^\d+(?:\.\d+)?[a-z]*$|^\d+(?:寸|升|片装)$", re.I)


def _is_ascii_alnum(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


def compact(text: str) -> tuple[str, list[int]]:
    """Lower case without spaces/hyphens, plus where each kept character sits in `text`."""
    chars, where = [], []
    for i, ch in enumerate(text):
        if ch.isspace() or ch in "-_·":
            continue
        low = ch.lower()
        chars.append(low if len(low) == 1 else ch)
        where.append(i)
    return "".join(chars), where


def _segments(name: str) -> list[str]:
    """Name pieces split at spaces and brackets; consecutive ASCII words stay one piece."""
    pieces = [p for p in re.split(r"[\s()（）\[\]【】]+", name) if p]
    merged: list[str] = []
    for piece in pieces:
        if piece.isascii() and merged and merged[-1].isascii():
            merged[-1] += " " + piece
        else:
            merged.append(piece)
    return merged


def _name_words(segment: str, lexicon: Lexicon) -> list[str]:
    """Words of a name segment: jieba tokens plus CJK character bigrams (jieba splits product
    descriptors unevenly: 磁吸防摔手机壳 -> 磁吸防 / 手机, while bigrams keep 机壳)."""
    words = {t for t in tokenize(segment, lexicon) if len(t) >= 2}
    words.update(a + b for a, b in zip(segment, segment[1:], strict=False) if CJK_CHAR.match(a) and CJK_CHAR.match(b))
    return sorted(words)


# The series name of a model segment: the Chinese stem before the model designator (轻羽 of 轻羽3
# and 轻羽Pro, 极光 of 极光700 and 极光Pro).
_SERIES_STEM = re.compile(r"^([\u4e00-\u9fff]{2,})[A-Za-z0-9]")
# A number right after a name, not a quantity (42码, 2双): the name of another model (轻羽5, Air Jordan 11).
_OTHER_MODEL_NUMBER = re.compile(
    r"[\s\-]*\d+(?:\.\d+)?(?!\s*(?:\.?\d|码|号|件|个|双|只|元|块|斤|岁|cm|mm|kg|g\b))", re.I
)
# A product name's series and number (火焰7, 攀越40, XZ-2000, XZ-C65, T20, Air Jordan 1, iPhone 15): a
# Chinese stem glued to its number, or Latin words (hyphen- or space-joined) before it; not a spec
# (10000mAh, 65W, 20寸). Another number after the same stem in a question is a model the shop may not have.
_NAME_SERIES = re.compile(
    r"(?<![A-Za-z0-9])([A-Za-z]+(?:[ \-][A-Za-z]+)*)[ \-]?(\d+)(?![\d.A-Za-z])"
    r"|([\u4e00-\u9fff]{2,})(\d+)(?![\d.A-Za-z])"
)
# What a number after a series name counts when it is no model number (火焰7 42码, T20 20寸, 轻羽3 2双).
_QUANTITY_AFTER = re.compile(
    r"\s*(?:[.\d%]|码|号|件|个|双|只|元|块|斤|岁|寸|天|年|月|日|点|小时|分钟|秒|折|期|万|千|百"
    r"|毫安|mah|升|克|公斤|千克|kg|g(?![a-z])|cm|mm|米|w(?![a-z])|l(?![a-z])|度|次|人|款|版"
    r"|台|套|条|张|包|盒|片|副|对|瓦|伏|分|级|层|倍|周)",
    re.I,
)


class _Span(NamedTuple):
    start: int  # in the alias-canonical text
    end: int
    target: str  # product id
    strong: bool = True


class EntityIndex:
    """Matchable keys of one KB's products, brands, categories and lexicon aliases."""

    def __init__(self, products: list[dict], lexicon: Lexicon | None = None):
        """products: dicts with product_id, name, brand, category and optional skus (codes)."""
        self.lexicon = lexicon or Lexicon()
        self.products = {p["product_id"]: p for p in products}
        self.keys: dict[str, dict[str, bool]] = {}  # compact key -> {product_id: strong}
        self.brand_keys: dict[str, str] = {}
        self.category_keys: dict[str, str] = {}
        self.alias_targets: dict[str, str] = {}  # compact canonical name -> canonical name
        self.products_of_brand: dict[str, list[str]] = {}
        self.series: dict[str, dict[str, set[str]]] = {}  # series stem (compact) -> number -> its product ids
        self._series_patterns: list[tuple[str, re.Pattern]] = []

    def warm_up(self) -> EntityIndex:
        named = {pid: self._name_parts(p) for pid, p in self.products.items()}
        token_owners: dict[str, set[str]] = {}
        for pid, (_, segments) in named.items():
            for _, tokens in segments:
                for token in tokens:
                    token_owners.setdefault(token, set()).add(pid)
        for pid, (name, segments) in named.items():
            self._add_product(self.products[pid], name, segments, token_owners)
        for brand in self.products_of_brand:
            self.brand_keys[compact(brand)[0]] = brand
        for category in {category for p in self.products.values() if (category := p.get("category"))}:
            self.category_keys[compact(category)[0]] = category
        for target in set(self.lexicon.aliases.values()):
            # Lexicon-only names: model-like canonical names (AJ1 -> Air Jordan 1, XZ2000 -> XZ-2000).
            if any(ch.isdigit() for ch in target):
                self.alias_targets[compact(target)[0]] = target
        self._lengths = sorted(
            {len(k) for k in (*self.keys, *self.brand_keys, *self.category_keys, *self.alias_targets)}, reverse=True
        )
        names = [*((name, pid) for pid, (name, _) in named.items()), *((t, None) for t in self.alias_targets.values())]
        for name, pid in names:
            for stem, number, _ in series_in(name):
                self.series.setdefault(stem, {}).setdefault(number, set()).update([pid] if pid else [])
        self._series_patterns = [
            (stem, re.compile(typed_loosely(stem) + r"[\s\-]?(\d+)(?![\d.])", re.I)) for stem in self.series
        ]
        return self

    def _name_parts(self, product: dict) -> tuple[str, list[tuple[str, list[str]]]]:
        """Alias-canonical name and its (segment, search tokens) pairs, brand and specs left out."""
        brand = (product.get("brand") or "").strip()
        name = self.lexicon.canonicalize(normalize(product.get("name") or ""))
        segments = [s for s in _segments(name) if s != brand and not _SPEC_SEGMENT.match(s)]
        return name, [(s, _name_words(s, self.lexicon)) for s in segments]

    def _add_key(self, text: str, product_id: str, strong: bool) -> None:
        key = compact(text)[0]
        if len(key) < 2 or key.isdigit():
            return
        owners = self.keys.setdefault(key, {})
        owners[product_id] = owners.get(product_id, False) or strong

    def _add_product(
        self, product: dict, name: str, segments: list[tuple[str, list[str]]], token_owners: dict[str, set[str]]
    ) -> None:
        pid, brand = product["product_id"], (product.get("brand") or "").strip()
        if brand:
            self.products_of_brand.setdefault(brand, []).append(pid)
        for exact in (pid, name, *(product.get("skus") or [])):
            self._add_key(exact, pid, True)
        for code in MODEL_NUMBER.findall(name):
            self._add_key(code, pid, True)
            for part in code.split("-"):  # XZ-C65 -> C65
                if re.search(r"[A-Za-z]", part) and re.search(r"\d", part):
                    self._add_key(part, pid, True)
        for position, (segment, tokens) in enumerate(segments):
            # The model segment (first after the brand) and segments sharing no word with another
            # product (芝加哥) are names; descriptors like 笔记本充电宝 (充电宝 is shared) are weak.
            strong = position == 0 or all(token_owners[t] == {pid} for t in tokens)
            if segment.isascii():
                words = segment.split()
                for n in range(1, len(words) + 1):  # Air / Air Jordan / Air Jordan 1 / ... Low
                    self._add_key(" ".join(words[:n]), pid, strong)
            else:
                self._add_key(segment, pid, strong)
                stem = _SERIES_STEM.match(segment) if position == 0 else None
                if stem:
                    self._add_key(stem.group(1), pid, True)
            for token in tokens:
                self._add_key(token, pid, False)

    # -- matching ---------------------------------------------------------------------------
    def _find(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, compact key) of every known key in text, ASCII word boundaries respected."""
        squeezed, where = compact(text)
        found = []
        for i in range(len(squeezed)):
            for size in self._lengths:
                key = squeezed[i : i + size]
                if len(key) < size or not (
                    key in self.keys or key in self.brand_keys or key in self.category_keys or key in self.alias_targets
                ):
                    continue
                start, end = where[i], where[i + size - 1] + 1
                if _is_ascii_alnum(key[0]) and start > 0 and _is_ascii_alnum(text[start - 1]):
                    continue
                if _is_ascii_alnum(key[-1]) and end < len(text) and _is_ascii_alnum(text[end]):
                    continue
                found.append((start, end, key))
        return found

    def match(self, text: str) -> tuple[list[Entity], list[str], list[str]]:
        """(products in order of mention, brands, categories) named in alias-canonical text."""
        hits = self._find(text)
        brands = list(dict.fromkeys(self.brand_keys[k] for _, _, k in hits if k in self.brand_keys))
        categories = list(dict.fromkeys(self.category_keys[k] for _, _, k in hits if k in self.category_keys))
        spans = [_Span(s, e, *next(iter(self.keys[k].items()))) for s, e, k in hits if len(self.keys.get(k, ())) == 1]
        strong = [s for s in spans if s.strong]
        # A key inside a longer key of another product is not a mention of its own.
        strong = [
            s
            for s in strong
            if not any(
                o.target != s.target and o.start <= s.start and s.end <= o.end and (o.end - o.start) > (s.end - s.start)
                for o in strong
            )
        ]
        chosen = self._ordered(strong)
        if not chosen:
            weak = [s for s in spans if self.products[s.target].get("brand") in brands]
            chosen = self._ordered(weak)
        if not chosen:  # a brand with a single product names it
            chosen = self._ordered(
                [
                    _Span(s, e, self.products_of_brand[self.brand_keys[k]][0])
                    for s, e, k in hits
                    if k in self.brand_keys and len(self.products_of_brand[self.brand_keys[k]]) == 1
                ]
            )
        shared = None
        if not chosen:  # a name several products share: one of them if another word fits only it
            shared = self._shared_name(text, hits)
            if shared is not None:
                start, end, key = shared
                fitting = {s.target for s in spans if s.target in self.keys[key] and (s.end <= start or s.start >= end)}
                if len(fitting) == 1:
                    chosen, shared = {fitting.pop(): (start, end)}, None
        products = [self._entity(pid, text[start:end]) for pid, (start, end) in chosen.items()]
        if shared is not None:
            start, end, key = shared
            products.append(Entity(name=self.alias_targets.get(key) or text[start:end], surface=text[start:end]))
        if not products:
            for start, end, key in hits:
                if key in self.alias_targets:
                    name = self.alias_targets[key]
                    products.append(Entity(name=name, surface=text[start:end]))
                    break
        return products, brands, categories

    def _shared_name(self, text: str, hits: list[tuple[int, int, str]]) -> tuple[int, int, str] | None:
        """The first (longest) hit of a strong key several products share, not a brand or category,
        nor followed by a model number of its own (Air Jordan 11 is another model; "AJ1 42码" is not)."""
        shared = [
            (s, e, k)
            for s, e, k in hits
            if len(self.keys.get(k, ())) > 1
            and all(self.keys[k].values())
            and k not in self.brand_keys
            and k not in self.category_keys
        ]
        longest: dict[int, tuple[int, int, str]] = {}
        for hit in shared:
            if hit[0] not in longest or hit[1] > longest[hit[0]][1]:
                longest[hit[0]] = hit
        # the longest name at a place decides: "Air Jordan" before 11 makes "Air" no mention either
        named = [hit for start, hit in sorted(longest.items()) if not _OTHER_MODEL_NUMBER.match(text, hit[1])]
        return named[0] if named else None

    def other_models(self, text: str) -> dict[str, set[str]]:
        """Models of the shop's series that its catalogue does not have, as alias-canonical text names
        them, each with the products of its series: another number after a series stem (火焰8 beside
        火焰7, XZ-4000 beside XZ-2000, Air Jordan 11 beside Air Jordan 1, iPhone 16 beside iPhone 15);
        a number counting something (火焰7 42码, T20 20寸) names no model."""
        found: dict[str, set[str]] = {}
        for stem, pattern in self._series_patterns:
            for match in pattern.finditer(text):
                number = match.group(1)
                if number in self.series[stem] or _QUANTITY_AFTER.match(text, match.end()):
                    continue
                surface = match.group(0).strip()
                if compact(surface)[0] not in self.keys and compact(surface)[0] not in self.alias_targets:
                    found.setdefault(surface, set()).update(*self.series[stem].values())
        return found

    def fitting(self, name: str) -> set[str]:
        """The products a name (a matched surface such as "轻羽" or "Air Jordan 1") is a key of."""
        return set(self.keys.get(compact(name)[0], ()))

    def names_anything(self, text: str) -> bool:
        """Whether alias-canonical text names a product (by a strong key, even one several products
        share), a brand or a category; descriptor words alone (防水, 跑鞋) name nothing."""
        return any(
            k in self.brand_keys
            or k in self.category_keys
            or k in self.alias_targets
            or any(self.keys.get(k, {}).values())
            for _, _, k in self._find(text)
        )

    @staticmethod
    def _ordered(spans: list[_Span]) -> dict[str, tuple[int, int]]:
        first: dict[str, tuple[int, int]] = {}
        for span in sorted(spans, key=lambda s: (s.start, -(s.end - s.start))):
            first.setdefault(span.target, (span.start, span.end))
        return first

    def _entity(self, product_id: str, surface: str) -> Entity:
        product = self.products[product_id]
        return Entity(
            name=product.get("name") or product_id,
            product_id=product_id,
            brand=product.get("brand") or None,
            category=product.get("category") or None,
            surface=surface,
        )


def series_in(name: str) -> list[tuple[str, str, str]]:
    """(stem, number, model as written) of each series name in a product name or a matched surface
    (火焰7 -> 火焰, 7, 火焰7; 北极驿极光700 -> 极光, 700, 极光700; Air Jordan 1 Low -> airjordan, 1, Air Jordan 1):
    the stem compact, a Chinese one its last two characters."""
    found = []
    for match in _NAME_SERIES.finditer(name):
        latin, latin_number, chinese, chinese_number = match.groups()
        if latin:
            found.append((compact(latin)[0], latin_number, match.group(0).strip()))
        else:
            found.append((chinese[-2:], chinese_number, chinese[-2:] + chinese_number))
    return found


def typed_loosely(stem: str) -> str:
    """A pattern for a compact name stem as text may type it: any case (compiled with re.I), its
    characters glued or apart (Air Jordan / AirJordan, XZ-C / xz c), a Latin one not inside a word."""
    return ("(?<![A-Za-z0-9])" if stem[0].isascii() else "") + r"[\s\-]?".join(map(re.escape, stem))
