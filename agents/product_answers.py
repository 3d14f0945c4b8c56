"""Answers read straight off a product's tables: its SKU overview for questions about all its
variants, the size size_recommend worked out, and the size-table rows of sizes a question names;
and, for a question about what a product is like, its page's opening.
The extractive answerer tries these first; each returns the answer's sentences, every one
ending in the 【chunk_id】 of the row it quotes, or [] to leave the question to the sentence scorer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from citescope.agents.citations import after_heading, quotable, split_sentences, strip_citations
from citescope.agents.query_analysis import parse_sizes
from citescope.agents.question_cues import CLAUSE_END, PRICE_ASKED, VARIANTS_QUESTION
from citescope.agents.table_claims import variant_values
from citescope.knowledge.chinese_script import matching_form
from citescope.knowledge.chunking import SKU_OVERVIEW_SECTION, WHOLE_TABLE_ID, row_cells
from citescope.knowledge.text import CJK_CHAR, has_term
from citescope.tools.base import EvidenceHit

if TYPE_CHECKING:
    from citescope.agents.inspector import Facts
    from citescope.tools.products import SizeAdvice


MAX_OPENING_CHARS = 220  # an opening sentence longer than this is not one sentence (a list, a table)


class AskedQuestion(Protocol):
    """The extractive answerer's reading of a question, as far as these answers need it."""

    text: str  # canonical, lower-case
    english: bool
    asked_units: set[str]
    facts: Facts


class ProductAnswers:
    def __init__(self, tokens: Callable[[str], list[str]], canonical: Callable[[str], str]):
        """tokens, canonical: the answerer's own tokenizer and text canonicalisation (lexicon)."""
        self._tokens = tokens
        self._canonical = canonical

    def run(
        self,
        question: AskedQuestion,
        evidence: Sequence[EvidenceHit],
        banned: set[str],
        advice: SizeAdvice | None = None,
        overview: Sequence[str] = (),
        *,
        prices_other: bool,
    ) -> list[str]:
        """The first of: the size advice, the named sizes' rows, the variants overview, the page
        openings (overview: their chunk ids); [] for none. prices_other: the question asks the price of
        something of a product's (prices_something_else), which no SKU overview states."""
        by_id = {hit.chunk_id: hit for hit in evidence}
        return (
            self.size_advice(advice, by_id, banned)
            or self.named_sizes(question, evidence, banned)
            or self.named_variant(question, evidence, banned)
            or self.variants_overview(question, evidence, banned, prices_other)
            or self.page_opening(overview, by_id, banned)
        )

    @staticmethod
    def page_opening(overview: Sequence[str], by_id: dict[str, EvidenceHit], banned: set[str]) -> list[str]:
        """The first sentence of each product page opening (its 商品简介) in the evidence, which says
        what the product is and what it is for, without the heading the chunk opens with; [] when
        none is in the evidence."""
        pieces = []
        for chunk_id in (i for i in overview if i in by_id):
            hit = by_id[chunk_id]
            first = next((text for s in split_sentences(hit.text) if (text := quotable(s.text))), "")
            first = after_heading(first, hit.section)
            if not first or len(first) > MAX_OPENING_CHARS or first in banned:
                return []
            pieces.append(f"{first}【{chunk_id}】。")
        return pieces

    @staticmethod
    def size_advice(advice: SizeAdvice | None, by_id: dict[str, EvidenceHit], banned: set[str]) -> list[str]:
        """ "X 建议选 L 码：身高 175cm 在 L 码的适合身高 175-180cm 内…【row】。" and the SKU rows of that
        size; [] without advice or when a row it read is not in the evidence."""
        if advice is None or not all(i in by_id for i in advice.rows_used):
            return []
        rows = "".join(f"【{i}】" for i in advice.rows_used)
        if advice.size is None:
            pieces = [f"{advice.product}：{advice.reason}，建议联系客服确认{rows}。"]
        else:
            pieces = [f"{advice.product}建议选 {advice.size} 码：{advice.reason}{rows}。"]
            for chunk_id in advice.sku_rows:
                fields = sku_fields(by_id[chunk_id].text) if chunk_id in by_id else None
                if fields:
                    pieces.append(f"{sku_sentence(fields, quotable(by_id[chunk_id].title))}【{chunk_id}】。")
        return [p for p in pieces if strip_citations(p).strip() not in banned]

    def named_sizes(self, question: AskedQuestion, evidence: Sequence[EvidenceHit], banned: set[str]) -> list[str]:
        """Two or more sizes the question names, each answered by its product's size-table row
        ("山野 峰刃 GTX 冲锋衣 M 码：适合身高(cm) 168-174，…【row】"), then, when it asks about stock,
        the product's SKU overview (else the SKU rows of those sizes); [] unless every named size
        has its row in the evidence."""
        sizes = parse_sizes(question.text.upper())
        if len(sizes) < 2 or question.english:
            return []
        lead = next((h.product_id for h in evidence if h.product_id), None)
        if lead is None:  # size tables belong to products
            return []
        rows: dict[str, tuple[EvidenceHit, dict[str, str]]] = {}
        for hit in evidence:
            _, dash, body = hit.text.partition(" — ")  # a table row chunk: "<title> <heading> — 尺码: M；…"
            cells = row_cells(body) if dash and "尺码" in hit.section and hit.product_id == lead else {}
            size = cells.get("尺码", "").upper()
            if size in sizes:
                rows.setdefault(size, (hit, cells))
        if set(rows) != set(sizes):
            return []
        pieces = []
        for size in sizes:
            hit, cells = rows[size]
            columns = cells_written({k: v for k, v in cells.items() if k != "尺码"})
            pieces.append(f"{quotable(hit.title)} {size} 码：{columns}【{hit.chunk_id}】。")
        if question.asked_units & {"件"}:  # the overview has every size's stock; else those sizes' rows
            overview = next((h for h in evidence if h.section == SKU_OVERVIEW_SECTION and h.product_id == lead), None)
            stock = (
                [overview]
                if overview is not None
                else [
                    h
                    for h in evidence
                    if h.section == "SKU"
                    and h.product_id == lead
                    and (sku_fields(h.text) or {}).get("尺码", "").upper() in sizes
                ]
            )
            for hit in stock:
                fields = sku_fields(hit.text)
                if fields is None:  # an overview chunk that is no table
                    continue
                sentence = (
                    overview_sentence(fields, quotable(hit.title))
                    if hit is overview
                    else sku_sentence(fields, quotable(hit.title))
                )
                pieces.append(f"{sentence}【{hit.chunk_id}】。")
        return [p for p in pieces if strip_citations(p).strip() not in banned]

    def named_variant(self, question: AskedQuestion, evidence: Sequence[EvidenceHit], banned: set[str]) -> list[str]:
        """The price and stock of the one variant a question names, in every colour or size it
        comes in ("峰刃冲锋衣有没有XL码": the XL row of each colour; "iPhone15 Pro Max黑色还有吗": the
        磨砂黑 iPhone 15 Pro Max row): the SKU rows of the asked product whose size and colour are the
        ones named; [] when the question asks neither price nor stock, names two sizes
        (named_sizes) or no variant, or names two products."""
        if question.english or not question.asked_units & {"元", "件"}:
            return []
        asked = self._asked_products(question, evidence)
        if len(asked) != 1:
            return []
        rows = [
            (hit, fields)
            for hit in evidence
            if hit.product_id == asked[0] and hit.section == "SKU"
            for fields in [sku_fields(hit.text)]
            if fields
        ]
        parsed = set(parse_sizes(question.text.upper()))
        sizes = _named_values(
            question.text, {f.get("尺码", "") for _, f in rows if not _is_plain_size(f.get("尺码", ""))}
        )
        sizes |= {f["尺码"] for _, f in rows if f.get("尺码", "").upper() in parsed}
        colours = _named_values(question.text, {f.get("颜色", "") for _, f in rows})
        if not colours:  # 黑色 for 磨砂黑, 蓝色 for 冰川蓝 / 雾霾蓝
            said = {m.group(1) for m in _COLOUR_WORD.finditer(question.text)}
            colours = {f["颜色"] for _, f in rows if f.get("颜色") and any(c in f["颜色"] for c in said)}
        if len(parsed) > 1 or len(sizes) > 1 or not (sizes or colours):
            return []
        matching = [
            (hit, fields)
            for hit, fields in rows
            if (not sizes or fields.get("尺码") in sizes) and (not colours or fields.get("颜色") in colours)
        ]
        pieces = [f"{sku_sentence(fields, quotable(hit.title))}【{hit.chunk_id}】。" for hit, fields in matching]
        return [p for p in pieces if strip_citations(p).strip() not in banned]

    def variants_overview(
        self, question: AskedQuestion, evidence: Sequence[EvidenceHit], banned: set[str], prices_other: bool
    ) -> list[str]:
        """The SKU overview sentence of each product asked about, when the question asks about its
        variants as a whole (有哪些颜色, 哪个码没货了) or for its price or stock without naming a
        colour or size; [] otherwise (a named variant is answered by its own row), and [] when a
        product asked about has no overview in the evidence (its rows answer, as before)."""
        if question.english:
            return []
        overviews = {
            h.product_id: h
            for h in evidence
            if h.section == SKU_OVERVIEW_SECTION and h.product_id and sku_fields(h.text)
        }
        asked = self._asked_products(question, evidence)
        if not overviews or not asked or any(p not in overviews for p in asked):
            return []
        asks_list = bool(VARIANTS_QUESTION.search(question.text))
        asks_price_stock = bool(question.asked_units & {"元", "件"})
        pieces = []
        for product_id in asked:
            hit = overviews[product_id]
            fields = sku_fields(hit.text) or {}  # overviews holds only chunks with fields
            if not (asks_list or (asks_price_stock and not prices_other and not self._names_variant(question, fields))):
                return []
            sentence = f"{overview_sentence(fields, quotable(hit.title))}【{hit.chunk_id}】。"
            if strip_citations(sentence).strip() in banned:
                return []
            pieces.append(sentence)
        return pieces

    def _asked_products(self, question: AskedQuestion, evidence: Sequence[EvidenceHit]) -> list[str]:
        """Products of the evidence's SKU chunks that the question names by a word of the title no
        other of them has (芝加哥, Low); else the product of the best-ranked evidence."""
        titles: dict[str, set[str]] = {}
        for hit in evidence:
            if hit.product_id and hit.section in ("SKU", SKU_OVERVIEW_SECTION):
                titles.setdefault(
                    hit.product_id,
                    {
                        w
                        for w in self._tokens(self._canonical(hit.title).lower())
                        if len(w) >= 2 or w.isascii() and w.isalpha()
                    },
                )
        named = [
            p
            for p, words in titles.items()
            if any(has_term(question.text, w) for w in words - set().union(*(v for q, v in titles.items() if q != p)))
        ]
        lead = next((h.product_id for h in evidence if h.product_id), None)
        return named or ([lead] if lead else [])

    def prices_something_else(self, question: AskedQuestion, evidence: Sequence[EvidenceHit]) -> bool:
        """Does the question ask the price of something of a product's rather than of the product
        (耳机丢了一只补一只多少钱, 数据线单买一根多少钱, 保修期外维修要多少钱)? A clause that asks a price
        and names anything beyond the products of the evidence, their variants and the ways of asking
        a price (现在卖多少钱一双, 各自多少钱, A跟B差多少钱) prices that: not the product's SKU table but its
        page, if anything, says it. A word sharing half its characters with a name is that name mistyped (冲峰衣)."""
        asked = [
            w
            for clause in CLAUSE_END.split(question.text)
            if re.search(PRICE_ASKED, clause)
            for w in self._tokens(_PRICE_ASKING.sub(" ", clause))
            if CJK_CHAR.search(w)
        ]
        if not asked:
            return False
        named = {w for hit in evidence if hit.product_id for w in self._tokens(self._canonical(hit.title).lower())}
        named |= {
            matching_form(v).lower()
            for hit in evidence
            if hit.section in ("SKU", SKU_OVERVIEW_SECTION)
            for v in variant_values(sku_fields(hit.text) or {})
        }
        return any(not any(w in n or 2 * len(set(w) & set(n)) >= len(w) for n in named) for w in asked)

    @staticmethod
    def _names_variant(question: AskedQuestion, fields: dict[str, str]) -> bool:
        """Does the question name one of the overview's colours or sizes (雾霾蓝, 42码, 2米)?"""
        values = variant_values(fields)
        numbers = {n for n, _ in question.facts.numbers}
        leading = (re.match(r"\d+(?:\.\d+)?", v) for v in values)
        return any(matching_form(v).lower() in question.text for v in values) or any(
            m is not None and f"{float(m.group(0)):g}" in numbers for m in leading
        )


def sku_sentence(sku: dict[str, str], title: str, english: bool = False) -> str:
    """A SKU table row as a sentence a shopper reads ("星择 XZ-3000 …（月光银）：价格 299.00元，库存
    13件"; in English "星择 XZ-3000 … (月光银): price 299.00元, in stock 13件"), every name and number
    taken from the row itself."""
    name = sku.get("商品") or title
    variant = [sku[k] for k in ("颜色", "尺码") if sku.get(k) and sku[k] not in name]
    if english:
        facts = [f"{label} {sku[k]}" for k, label in (("价格", "price"), ("库存", "in stock")) if sku.get(k)]
        return name + (f" ({', '.join(variant)})" if variant else "") + ": " + ", ".join(facts)
    facts = [f"{k} {sku[k]}" for k in ("价格", "库存") if sku.get(k)]
    return name + (f"（{'，'.join(variant)}）" if variant else "") + "：" + "，".join(facts)


def row_sentence(cells: dict[str, str], title: str, section: str, policy: bool, english: bool = False) -> str:
    """Another table's row (not a SKU's) as a sentence a shopper reads, every name and value copied from
    it: "风驰 轻羽3 缓震跑鞋的尺码表：尺码 42，脚长(cm) 26.0" for the chunk's "风驰 轻羽3 缓震跑鞋 尺码表 — 尺码: 42；
    脚长(cm): 26.0" (a policy's title in 《》, as its prose is framed); in English "风驰 轻羽3 缓震跑鞋 (尺码表):
    尺码 42, 脚长(cm) 26.0"."""
    facts = cells_written(cells, english)
    if english:
        where = f"{title} ({section})" if title and section else title or section
        return f"{where}: {facts}" if where else facts
    subject = f"《{title}》" if policy and title else title
    where = f"{subject}的{section}" if subject and section else subject or section
    return f"{where}：{facts}" if where else facts


def cells_written(cells: dict[str, str], english: bool = False) -> str:
    """A row's cells as an answer writes them: `尺码 42，脚长(cm) 26.0` (`, ` in English), not `尺码: 42；…`."""
    return (", " if english else "，").join(f"{column} {value}" for column, value in cells.items())


def quoted_row_cells(body: str, chunk_id: str) -> dict[str, str] | None:
    """The cells of a quoted table row, None for anything else: a row chunk's "<title> <heading> — 列: 值；
    列: 值" (whole or cut to the cells asked), or a line of a whole table's chunk (…#尺码表-table-0), which
    has no prefix."""
    _, dash, cells = body.rpartition(" — ")
    parts = cells.strip().rstrip("。").split("；")
    row = bool(dash) or WHOLE_TABLE_ID.search(chunk_id) is not None
    return row_cells(cells) if row and all(": " in part for part in parts) else None


def sku_fields(body: str) -> dict[str, str] | None:
    """The "键: 值；键: 值" fields of a SKU table row; None when it is not one (no price or stock)."""
    fields = row_cells(body)
    return fields if ("价格" in fields or "库存" in fields) and "商品" in fields else None


def overview_sentence(fields: dict[str, str], title: str) -> str:
    """A product's SKU overview as one sentence a shopper reads, every value copied from it:
    "风驰 轻羽3 缓震跑鞋 共 8 个规格：颜色有星空黑、雾霾蓝；尺码有40、41；价格 599.00元；缺货：雾霾蓝 41"."""
    name = fields.get("商品") or title

    def listed(key: str) -> str:
        values = [v for v in fields.get(key, "").split("、") if v]
        if not values or (len(values) == 1 and values[0] in name):  # 20000mAh of "XZ-3000 … 20000mAh"
            return ""
        return f"{key}有{fields[key]}" if len(values) > 1 else f"{key}为{values[0]}"

    parts = [listed("颜色"), listed("尺码")]
    parts += [f"价格 {fields['价格']}" if fields.get("价格") else ""]
    parts += [f"{key}：{fields[key]}" for key in ("有货", "有货规格数", "缺货") if fields.get(key)]
    count = f" 共 {fields['规格数']} 个规格" if fields.get("规格数") else ""
    return f"{name}{count}：" + "；".join(p for p in parts if p)


# How a price is asked, beyond the price words themselves: 现在卖多少钱一双, 各自多少钱, 差价多少, 这款啥价
_PRICE_ASKING = re.compile(
    PRICE_ASKED + r"|多少|钱|价|差价|相差|差|各自|各|分别|两款|两个|现在|目前|一共|总共|大概|大约|请问"
    r"|跟|和|与|比|\d+(?:\.\d+)?\s*(?:厘米|毫米|毫升|[米码寸号升克])?"  # a size asked as 2米, 42码
    r"|[这那一每][双件个只条根支张套台副对顶把款块瓶盒包]|款|卖|买|要|啥|什么"
)
# A colour the customer names by its plain word (黑色, 蓝的): the shop's colour names that hold it.
_COLOUR_WORD = re.compile(r"([黑白红蓝绿灰黄紫粉橙棕金银青])(?:色|的)")


def _compact(text: str) -> str:
    return re.sub(r"\s+", "", text).lower()


def _is_plain_size(value: str) -> bool:
    """A size parse_sizes reads from a question (42, 42.5, XL), as opposed to a size named like a
    model (iPhone 15 Pro Max, 20寸)."""
    return bool(re.fullmatch(r"\d{2}(?:\.5)?|[2-4]?X{0,3}[SML]|XXXL|XXL|XL|XS", value.strip().upper()))


def _named_values(text: str, values: set[str]) -> set[str]:
    """The values the question names, written with or without spaces (iPhone15 Pro Max), the most
    specific only: iPhone 15 Pro Max, not also iPhone 15 that it contains."""
    compact_text = _compact(text)
    # a traditional shop's values (藍色) are named in the question's matching form (蓝色)
    found = {v: _compact(matching_form(v)) for v in values if v and _compact(matching_form(v)) in compact_text}
    return {
        v for v, key in found.items() if not any(v != other and key in other_key for other, other_key in found.items())
    }
