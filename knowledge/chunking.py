"""Documents -> citable Chunks with stable ids.

Prose is split recursively at the strongest boundary that makes a piece fit (blank line >
newline > sentence > clause > space > hard cut); tables and SKU rows become one chunk per row
so a single price or size can be retrieved and cited on its own.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from dataclasses import dataclass

from citescope.knowledge.flat_tables import flat_table_sections
from citescope.knowledge.schema import Chunk, Document, Section, SkuRow, size_key

# Boundary strength: lower is a better place to end a chunk. Each separator keeps the
# whitespace after it, so a piece always ends with the separator that closes it.
_SEPARATORS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\n[^\S\n]*\n\s*"),  # 0 blank line (paragraph)
    re.compile(r"\n\s*"),  # 1 newline
    # 2 sentence end; "." only before whitespace/end so 26.5 and example.com stay whole
    re.compile(r"(?:[。！？!?]+|…+|\.+(?=\s|$))[”’」』）)\"']*[^\S\n]*"),
    re.compile(r"(?:[；，]|(?<!\d)[;,]|[;,](?!\d))[^\S\n]*"),  # 3 clause; not the comma in 1,000
    re.compile(r"[^\S\n]+"),  # 4 space (English or pre-tokenised text), before a hard cut
)
_HARD_CUT = len(_SEPARATORS)
_END_OF_TEXT = 0
_SENTENCE_OR_STRONGER = 2
# A chunk may end early on a stronger boundary, but not before this share of its budget,
# so preferring paragraphs never produces a stream of tiny chunks.
_MIN_FILL = 0.3

_UNSAFE_ID_CHARS = re.compile(r"[\s【】\[\]#\"'`\\|<>{}\x00-\x1f\x7f]")
_MAX_DOC_ID_PART = 120
_MAX_SLUG = 32
_MAX_SKU_PART = 48
_PREFIX_MAX = 60  # title + heading in front of every piece/row; the full values are fields
_RESERVED_SLUGS = frozenset({"body", "sku", "skus"})
# Part of every document's version hash: a change in how documents become chunks re-chunks
# them on the next ingest (2: a product's SKU overview chunk; 3: tables written one cell per line).
CHUNK_FORMAT = 3
SKU_OVERVIEW_SECTION = "规格汇总"  # one chunk over all of a product's SKU rows
TABLE_ROW_ID = re.compile(r"-r(\d+)-\d+$")  # chunk id of one table row: {doc}#{slug}-r{row}-{piece}
WHOLE_TABLE_ID = re.compile(r"-table-\d+$")  # chunk id of a whole table: {doc}#{slug}-table-0
PIECE_ID = re.compile(r"-(\d+)$")  # chunk id of one piece of a text: {doc}#body-{n}, {doc}#{slug}-{n}
SKU_OVERVIEW_SLUG = "skus-0"  # its id: "<doc part>#skus-0", beside the rows' "<doc part>#sku-<sku>"
# How long the overview may list every colour x size in stock; past it only what is out of stock.
_OVERVIEW_MAX_CHARS = 320


@dataclass(frozen=True)
class _Piece:
    start: int
    end: int
    strength: int  # of the boundary at `end`


# ----------------------------------------------------------------------------- prose splitting


def split_recursive(text: str, chunk_size: int, overlap: int) -> list[str]:
    """Split text into chunks of at most chunk_size characters that overlap by about `overlap`.

    Pieces come from recursive splitting: a span that is too long is cut at its strongest kind
    of separator, and only pieces still too long go down to the next kind. Pieces are then packed
    greedily; among the places a chunk could end, it ends at the strongest boundary once it is at
    least 30% full. The next chunk starts with whole trailing sentences or clauses (about
    `overlap` characters, within ±1/3) of the previous one, or a hard cut when none fit.
    Every chunk is a stripped substring of `text`.
    """
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    if not 0 <= overlap < chunk_size / 2:
        raise ValueError(f"overlap must be in [0, chunk_size/2), got {overlap} for chunk_size {chunk_size}")
    start = len(text) - len(text.lstrip())
    end = len(text.rstrip())
    if start >= end:
        return []
    if end - start <= chunk_size:
        return [text[start:end]]

    overlap_min, overlap_max = (overlap * 2 + 2) // 3, overlap * 4 // 3
    boundaries = [[m.end() for m in pattern.finditer(text, 0, end)] for pattern in _SEPARATORS]
    pieces: list[_Piece] = []
    # Leave room for the overlap, so any piece fits after any overlap prefix.
    _split_span(start, end, _END_OF_TEXT, 0, chunk_size - overlap_max, boundaries, pieces)

    chunks: list[str] = []
    chunk_start = start
    index = 0
    while index < len(pieces):
        last = _choose_chunk_end(pieces, index, chunk_start, chunk_size)
        chunk_end = pieces[last].end
        chunk = text[chunk_start:chunk_end].strip()
        if chunk:
            chunks.append(chunk)
        index = last + 1
        if index < len(pieces):
            chunk_start = _overlap_start(text, boundaries, chunk_start, chunk_end, overlap, overlap_min, overlap_max)
    return chunks


def _split_span(
    start: int,
    end: int,
    end_strength: int,
    level: int,
    limit: int,
    boundaries: list[list[int]],
    out: list[_Piece],
) -> None:
    """Append pieces of text[start:end] no longer than limit, cutting at `level` or weaker."""
    if end - start <= limit:
        out.append(_Piece(start, end, end_strength))
        return
    if level == _HARD_CUT:
        for cut_start in range(start, end, limit):
            cut_end = min(cut_start + limit, end)
            out.append(_Piece(cut_start, cut_end, end_strength if cut_end == end else _HARD_CUT))
        return
    level_boundaries = boundaries[level]
    lo = bisect.bisect_right(level_boundaries, start)
    hi = bisect.bisect_left(level_boundaries, end)
    cuts = [start, *level_boundaries[lo:hi], end]
    for piece_start, piece_end in zip(cuts, cuts[1:], strict=False):
        strength = end_strength if piece_end == end else level
        _split_span(piece_start, piece_end, strength, level + 1, limit, boundaries, out)


def _choose_chunk_end(pieces: list[_Piece], first: int, chunk_start: int, chunk_size: int) -> int:
    """Index of the last piece of the chunk: the strongest boundary among well-filled options."""
    best = first
    best_rank: tuple[int, int] | None = None
    min_fill = chunk_size * _MIN_FILL
    index = first
    while index < len(pieces) and pieces[index].end - chunk_start <= chunk_size:
        piece = pieces[index]
        if piece.end - chunk_start >= min_fill or index == len(pieces) - 1:
            rank = (piece.strength, -index)
            if best_rank is None or rank < best_rank:
                best, best_rank = index, rank
        elif best_rank is None:
            best = index  # nothing well-filled yet: at least take what fits
        index += 1
    return best


def _overlap_start(
    text: str,
    boundaries: list[list[int]],
    prev_start: int,
    prev_end: int,
    target: int,
    shortest: int,
    longest: int,
) -> int:
    """Where the next chunk starts: inside the previous chunk, at a sentence/clause start if possible.

    The overlap is measured up to the previous chunk's last visible character, but never spans
    more than `longest` raw characters, so that the next piece still fits after it.
    """
    if target == 0:
        return prev_end
    visible_end = prev_end
    while visible_end > prev_start and text[visible_end - 1].isspace():
        visible_end -= 1
    earliest = max(prev_start + 1, prev_end - longest)
    latest = visible_end - shortest
    best: int | None = None
    best_rank: tuple[int, int] | None = None
    for level, level_boundaries in enumerate(boundaries):
        lo = bisect.bisect_left(level_boundaries, earliest)
        hi = bisect.bisect_right(level_boundaries, latest)
        kind = 0 if level <= _SENTENCE_OR_STRONGER else level - _SENTENCE_OR_STRONGER
        for position in level_boundaries[lo:hi]:
            rank = (kind, abs(visible_end - position - target))
            if best_rank is None or rank < best_rank:
                best, best_rank = position, rank
    if best is None:  # no whole sentence or clause fits: hard cut
        best = max(earliest, visible_end - target)
    return best


# ----------------------------------------------------------------------------- documents


def chunk_document(doc: Document, chunk_size: int = 320, overlap: int = 48) -> list[Chunk]:
    """All chunks of one document, in reading order, with ids stable across runs.

    chunk_id = f"{doc}#{section_slug}-{piece}" (`#sku-{sku}` for SKU rows, `-r{row}-{piece}` for
    table rows, `-table-0` for a whole table). Chunk.position orders chunks within a section.
    A whole-table chunk may be up to 2 x chunk_size: it is parent context for its row chunks.
    """
    doc_part = _doc_id_part(doc.doc_id)
    chunks: list[Chunk] = []
    if doc.skus:
        chunks.extend(_sku_chunks(doc, doc_part))
    # a table the page lost its markup from (one cell per line) is read back as one
    sections = doc.sections or (flat_table_sections(_without_leading_title(doc.text, doc.title)) if doc.text else None)
    if sections:
        used_slugs: set[str] = set()
        for index, section in enumerate(sections):
            slug = _section_slug(section.heading, index, used_slugs)
            chunks.extend(_section_chunks(doc, doc_part, section, slug, chunk_size, overlap))
    elif doc.text:
        text = _without_leading_title(doc.text, doc.title)
        for position, piece in enumerate(split_recursive(text, chunk_size, overlap)):
            chunks.append(_chunk(doc, f"{doc_part}#body-{position}", piece, "", position))
    return chunks


def _sku_chunks(doc: Document, doc_part: str) -> list[Chunk]:
    rows = doc.skus or []
    chunks = [
        _chunk(doc, f"{doc_part}#sku-{_sku_part(row.sku)}", render_sku_row(row), "SKU", position)
        for position, row in enumerate(rows)
    ]
    if len(rows) > 1:  # "有哪些颜色" is answered by all rows at once, which no single row holds
        chunks.append(
            _chunk(doc, f"{doc_part}#{SKU_OVERVIEW_SLUG}", render_sku_overview(rows), SKU_OVERVIEW_SECTION, 0)
        )
    return chunks


def render_sku_row(row: SkuRow) -> str:
    """`商品: …；SKU: …；颜色: …；尺码: …；价格: 899.00元；库存: 12件`; empty columns left out."""
    fields = [
        ("商品", row.name),
        ("品牌", row.brand),
        ("类目", row.category),
        ("SKU", row.sku),
        ("颜色", row.colour),
        ("尺码", row.size),
        ("价格", f"{row.price:.2f}元"),
        ("库存", f"{row.stock}件"),
        ("更新日期", row.updated_at or ""),
    ]
    return "；".join(f"{name}: {value}" for name, value in fields if value)


def render_sku_overview(rows: list[SkuRow]) -> str:
    """All SKU rows of one product in one line, every value copied from the rows:
    `商品: …；规格数: 8；颜色: 星空黑、雾霾蓝；尺码: 40、41；价格: 599.00元；有货: 星空黑 40、41，雾霾蓝 40；
    缺货: 雾霾蓝 41`. A long table keeps the counts and what is out of stock, a very long one the
    counts alone."""
    colours = _distinct(r.colour for r in rows)
    sizes = sorted(_distinct(r.size for r in rows), key=size_key)
    one_size = len(sizes) <= 1
    in_stock = [r for r in rows if r.stock > 0]
    out = [r for r in rows if r.stock <= 0]
    fields = [
        ("商品", rows[0].name),
        ("规格数", str(len(rows))),
        ("颜色", "、".join(colours)),
        ("尺码", "、".join(sizes)),
        ("价格", _prices(rows)),
    ]
    listed = fields + [("有货", _by_colour(in_stock, one_size) or "无"), ("缺货", _by_colour(out, one_size) or "无")]
    text = "；".join(f"{name}: {value}" for name, value in listed if value)
    for stock in (
        [("有货规格数", str(len(in_stock))), ("缺货", _by_colour(out, one_size) or "无")],
        [("有货规格数", str(len(in_stock))), ("缺货规格数", str(len(out)))],
    ):
        if len(text) <= _OVERVIEW_MAX_CHARS:
            break
        text = "；".join(f"{name}: {value}" for name, value in fields + stock if value)
    return text


def _distinct(values) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))


def _prices(rows: list[SkuRow]) -> str:
    """One price, or the price of each colour or size when that alone sets it, else of each variant."""
    if len({r.price for r in rows}) == 1:
        return f"{rows[0].price:.2f}元"
    for label in (lambda r: r.colour, lambda r: r.size):
        by_label: dict[str, set[float]] = {}
        for row in rows:
            by_label.setdefault(label(row), set()).add(row.price)
        if "" not in by_label and all(len(p) == 1 for p in by_label.values()):
            return "、".join(f"{name} {price:.2f}元" for name, (price,) in by_label.items())
    return "、".join(_distinct(f"{' '.join(filter(None, (r.colour, r.size))) or r.sku} {r.price:.2f}元" for r in rows))


def _by_colour(rows: list[SkuRow], one_size: bool) -> str:
    """`星空黑 40、41，雾霾蓝 40` (sizes grouped under their colour, table order); colours alone
    when the product comes in one size."""
    groups: dict[str, list[str]] = {}
    for row in rows:
        groups.setdefault(row.colour, [])
        if row.size and not one_size:
            groups[row.colour].append(row.size)
    separator = "、" if one_size else "，"
    return separator.join(
        " ".join(filter(None, (colour, "、".join(sorted(sizes, key=size_key))))) for colour, sizes in groups.items()
    )


def _section_chunks(
    doc: Document, doc_part: str, section: Section, slug: str, chunk_size: int, overlap: int
) -> list[Chunk]:
    chunks: list[Chunk] = []
    heading = section.heading
    # Every piece starts with its heading so it reads correctly when retrieved alone.
    prefix = f"{_clip(heading, chunk_size)}：" if heading else ""
    if section.text:
        for piece_index, piece in enumerate(_split_with_prefix(section.text, prefix, chunk_size, overlap)):
            chunks.append(_chunk(doc, f"{doc_part}#{slug}-{piece_index}", piece, heading, len(chunks)))
    if section.table:
        label = " ".join(part for part in (doc.title, heading) if part)
        rows = [render_table_row(row) for row in section.table]
        whole_table = "\n".join([label, *rows]) if label else "\n".join(rows)
        if len(whole_table) <= 2 * chunk_size:  # WHOLE_TABLE_ID matches its id
            chunks.append(_chunk(doc, f"{doc_part}#{slug}-table-0", whole_table, heading, len(chunks)))
        row_prefix = f"{_clip(label, chunk_size)} — " if label else ""
        for row_index, row_text in enumerate(rows):
            for piece_index, piece in enumerate(_split_with_prefix(row_text, row_prefix, chunk_size, overlap)):
                chunk_id = f"{doc_part}#{slug}-r{row_index}-{piece_index}"
                chunks.append(_chunk(doc, chunk_id, piece, heading, len(chunks)))
    return chunks


def render_table_row(row: dict[str, str]) -> str:
    """`列名: 值；列名: 值`, empty cells left out."""
    return "；".join(f"{column}: {value}" for column, value in row.items() if value)


def row_cells(cells: str) -> dict[str, str]:
    """A rendered row read back (render_table_row, render_sku_row, render_sku_overview):
    `列名: 值；列名: 值` -> {列名: 值}; pieces without `: ` are skipped."""
    pairs = (part.partition(": ") for part in cells.split("；"))
    return {name.strip(): value.strip() for name, colon, value in pairs if colon}


def is_rendered_row(text: str) -> bool:
    """Is the text a rendered table row (render_table_row, render_sku_row, render_sku_overview): at
    least three `列名: 值` cells joined by "；" and nothing else?"""
    parts = text.strip().rstrip("。").split("；")
    return len(parts) >= 3 and all(": " in part for part in parts)


def _clip(label: str, chunk_size: int) -> str:
    """A heading/title prefix short enough to leave most of the chunk for content."""
    limit = min(_PREFIX_MAX, chunk_size // 4)
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _split_with_prefix(text: str, prefix: str, chunk_size: int, overlap: int) -> list[str]:
    budget = chunk_size - len(prefix)
    scaled_overlap = min(overlap * budget // chunk_size, (budget - 1) // 2)
    return [prefix + piece for piece in split_recursive(text, budget, scaled_overlap)]


def _without_leading_title(text: str, title: str) -> str:
    """Drop a first line that only repeats the title: the title is its own field."""
    if not title:
        return text
    first_line, _, rest = text.partition("\n")
    if first_line.strip().lstrip("#").strip() == title.strip() and rest.strip():
        return rest
    return text


def _chunk(doc: Document, chunk_id: str, text: str, section: str, position: int) -> Chunk:
    return Chunk(
        chunk_id=chunk_id,
        doc_id=doc.doc_id,
        text=text,
        title=doc.title,
        section=section,
        position=position,
        source=doc.source,
        doc_type=doc.doc_type,
        product_id=doc.product_id,
        brand=doc.brand,
        category=doc.category,
        updated_at=doc.updated_at,
        version=doc.version,
        authority=doc.resolved_authority,
        tags=list(doc.tags),
    )


# ----------------------------------------------------------------------------- ids


def _sha1(text: str, length: int) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:length]


def _doc_id_part(doc_id: str) -> str:
    """The doc id itself when short and safe, else a readable prefix plus a hash of the whole."""
    if len(doc_id) <= _MAX_DOC_ID_PART and not _UNSAFE_ID_CHARS.search(doc_id):
        return doc_id
    return f"{_UNSAFE_ID_CHARS.sub('_', doc_id)[:40]}~{_sha1(doc_id, 12)}"


def _sku_part(sku: str) -> str:
    if len(sku) <= _MAX_SKU_PART and not _UNSAFE_ID_CHARS.search(sku):
        return sku
    return _sha1(sku, 12)


def _section_slug(heading: str, index: int, used: set[str]) -> str:
    """Short stable slug: the heading if short and safe, else sha1[:8]; "body" for no heading.

    "-" is not allowed in a heading slug, so `{slug}-{n}` and `{slug}-r{row}-{n}` can never
    collide across sections; a repeated heading gets a hash that includes its section index.
    """
    if not heading:
        slug = "body"
    elif len(heading) <= _MAX_SLUG and not _UNSAFE_ID_CHARS.search(heading) and "-" not in heading:
        slug = heading
    else:
        slug = _sha1(heading, 8)
    if slug in used or (heading and slug in _RESERVED_SLUGS):
        slug = _sha1(f"{heading}\x00{index}", 8)
    used.add(slug)
    return slug
