"""The product index the product skills read: products from the SKU table and detail pages,
resolved from a name, alias, model number, product id or SKU code (never guessed between
equally likely ones), and the evidence hits of its rows.
"""

import re
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

from citescope.knowledge.chunking import TABLE_ROW_ID
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.normalize import normalize
from citescope.knowledge.schema import Chunk, size_key
from citescope.tools.base import EvidenceHit, LegScore, SkillResult

MIN_COVERAGE = 0.6  # share of the asked name that must be found in a product name
TIE_MARGIN = 0.05  # scores this close count as "equally good": list candidates, never guess
_SKU_LIKE = re.compile(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+|[A-Za-z0-9]{4,}")
# A unit is one CJK character, one letter run or one digit run: "XZ-2000", "XZ 2000" and
# "xz2000" all become [xz, 2000], so model numbers compare whole and spelling-independent.
_UNIT = re.compile(r"[a-z]+|\d+(?:\.\d+)?|[^\sa-z\d\W]", re.UNICODE)
_QUANTITY_WORDS = frozenset("码 号 件 个 双 只 元 块 斤 岁 cm mm kg g".split())  # "42码" is not a model


@dataclass
class Product:
    product_id: str
    name: str
    brand: str = ""
    category: str = ""
    skus: list[dict] = field(default_factory=list)  # SKU table rows
    size_rows: list[Chunk] = field(default_factory=list)  # size-table row chunks of its page
    units: list[str] = field(default_factory=list)  # of the alias-canonical name
    keys: set = field(default_factory=set)  # its multi-character units and unit pairs


@dataclass
class Match:
    product: Product | None = None
    candidates: list[Product] = field(default_factory=list)  # several equally good: ask
    sku: dict | None = None  # the SKU row when the text named a SKU code
    score: float = 0.0


def _units(text: str) -> list[str]:
    return _UNIT.findall(normalize(text).lower())


def _match_keys(units: list[str]) -> set:
    """What two unit lists must share for any run of 2+ characters to be common to both."""
    return {u for u in units if len(u) > 1} | set(zip(units, units[1:], strict=False))


def _longest_common_run(query: Sequence[str | None], name: Sequence[str | None]) -> tuple[int, int, int]:
    """(query start, name start, length) of the longest common run of units; None units never match."""
    best = (0, 0, 0)
    previous = [0] * (len(name) + 1)
    for i, unit in enumerate(query):
        current = [0] * (len(name) + 1)
        for j, other in enumerate(name):
            if unit is not None and unit == other:
                current[j + 1] = previous[j] + 1
                if current[j + 1] > best[2]:
                    best = (i - current[j + 1] + 1, j - current[j + 1] + 1, current[j + 1])
        previous = current
    return best


def _coverage(query: list[str], name: list[str]) -> float:
    """Share of the query's characters found in the name, as common runs of 2+ characters in any
    order (longest first), so "低帮 AJ1" and "AJ1 低帮" match alike.

    Returns 0 when the query has a number the name lacks (XZ-2500 vs XZ-2000, 轻羽5 vs 轻羽Pro),
    unless it is a quantity such as "42码", or when a matched run sits next to a different number
    on both sides: a model number decides, it is never "close enough".
    """
    total = sum(len(u) for u in query)
    if not total:
        return 0.0
    for i, unit in enumerate(query):
        follower = query[i + 1] if i + 1 < len(query) else ""
        if unit[0].isdigit() and follower not in _QUANTITY_WORDS and unit not in name:
            return 0.0  # the query names a number this product does not have
    # a matched run is blanked out (None) so that no unit counts twice
    left: list[str | None] = list(query)
    right: list[str | None] = list(name)
    matched = 0
    while True:
        qi, ni, size = _longest_common_run(left, right)
        chars = sum(len(u) for u in query[qi : qi + size])
        if not size or chars < 2:
            return matched / total
        for qn, nn in ((qi - 1, ni - 1), (qi + size, ni + size)):
            if 0 <= qn < len(query) and 0 <= nn < len(name):
                if query[qn][0].isdigit() and name[nn][0].isdigit() and query[qn] != name[nn]:
                    return 0.0
        matched += chars
        left[qi : qi + size] = [None] * size
        right[ni : ni + size] = [None] * size


class ProductIndex:
    """Every product of one KB generation: SKU rows, size rows and matchable names."""

    def __init__(self, kb: KnowledgeBase):
        self.generation = kb.version
        self.lexicon = kb.lexicon
        self.products: dict[str, Product] = {}
        self.by_sku: dict[str, dict] = {}
        for row in kb.skus():
            product = self.products.setdefault(
                row["product_id"],
                Product(
                    row["product_id"],
                    row.get("name") or row["product_id"],
                    row.get("brand") or "",
                    row.get("category") or "",
                ),
            )
            product.skus.append(row)
            self.by_sku[row["sku"].upper()] = row
        for chunk in kb.all_chunks():
            if chunk.doc_type != "product" or not chunk.product_id:
                continue
            if chunk.product_id not in self.products:  # a detail page without SKU rows is still a product
                self.products[chunk.product_id] = Product(
                    chunk.product_id, chunk.title or chunk.product_id, chunk.brand or "", chunk.category or ""
                )
            product = self.products[chunk.product_id]
            fragment = chunk.chunk_id.partition("#")[2]
            if "尺码" in chunk.section and TABLE_ROW_ID.search(fragment):
                product.size_rows.append(chunk)
        for product in self.products.values():
            product.units = _units(self.lexicon.canonicalize(product.name))
            product.keys = _match_keys(product.units)
            product.skus.sort(key=lambda r: (r.get("colour") or "", size_key(r.get("size") or "")))

    def resolve(self, text: str) -> Match:
        """Product by SKU code, product id, or (alias-canonical) name; ambiguous -> candidates."""
        text = normalize(text or "").strip()
        if not text:
            return Match()
        by_id = next((p for pid, p in self.products.items() if pid.lower() == text.lower()), None)
        if by_id is not None:
            return Match(by_id, score=1.0)
        named = {m.group(0).upper() for m in _SKU_LIKE.finditer(text)} & set(self.by_sku)
        if named:
            rows = [self.by_sku[code] for code in sorted(named)]
            owners = {row["product_id"] for row in rows}
            if len(owners) > 1:
                return Match(candidates=[self.products[pid] for pid in sorted(owners)])
            return Match(self.products[rows[0]["product_id"]], sku=rows[0], score=1.0)
        query = _units(self.lexicon.canonicalize(text))
        exact = [p for p in self.products.values() if p.units == query]
        if len(exact) == 1:
            return Match(exact[0], score=1.0)
        keys = _match_keys(query)
        scored = sorted(
            ((_coverage(query, p.units), p.product_id) for p in self.products.values() if keys & p.keys), reverse=True
        )
        best = scored[0][0] if scored else 0.0
        if best < MIN_COVERAGE:
            return Match()
        tied = [self.products[pid] for score, pid in scored if score >= best - TIE_MARGIN]
        if len(tied) > 1:
            return Match(candidates=sorted(tied, key=lambda p: p.product_id), score=best)
        return Match(tied[0], score=best)


_indexes: "weakref.WeakKeyDictionary[KnowledgeBase, ProductIndex]" = weakref.WeakKeyDictionary()
_indexes_lock = threading.Lock()


def product_index(kb: KnowledgeBase) -> ProductIndex:
    """The KB's product index, rebuilt only when the KB's generation has moved on."""
    with _indexes_lock:
        index = _indexes.get(kb)
        if index is None or index.generation != kb.version:
            index = _indexes[kb] = ProductIndex(kb)
        return index


# ----------------------------------------------------------------------------- hits on its rows


def chunk_hit(kb: KnowledgeBase, chunk_id: str, leg: str, rank: int) -> EvidenceHit | None:
    chunk = kb.get(chunk_id)
    if chunk is None:
        return None
    return EvidenceHit.from_chunk(chunk, 1.0, {leg: LegScore(score=1.0, rank=rank)})


def sku_row_hits(kb: KnowledgeBase, rows: list[dict], start_rank: int = 1) -> list[EvidenceHit]:
    hits: list[EvidenceHit] = []
    for row in rows:
        chunk_id = row.get("chunk_id") or f"sku-{row['product_id']}#sku-{row['sku']}"
        hit = chunk_hit(kb, chunk_id, "sku_table", start_rank + len(hits))
        if hit is not None:
            hits.append(hit)
    return hits


def unresolved(skill: str, asked: str, match: Match) -> SkillResult:
    """Not found, or several products equally likely: say so and ask, never pick one."""
    if match.candidates:
        listed = "；".join(f"{p.name}（{p.product_id}）" for p in match.candidates)
        return SkillResult(
            skill=skill,
            note=f"“{asked}”可能指以下多款商品，请确认是哪一款：{listed}。",
            data={"candidates": [{"product_id": p.product_id, "name": p.name} for p in match.candidates]},
        )
    return SkillResult(skill=skill, note=f"商品表中没有找到“{asked}”，请提供更准确的商品名称、型号或 SKU 编码。")
