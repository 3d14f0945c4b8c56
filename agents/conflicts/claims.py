"""Rules 2-4: versions of one document, material and yes/no claims about one product, and a price
or stock count that untrusted text states against the product's own table."""

from __future__ import annotations

import re

from citescope.agents import table_claims
from citescope.agents.conflicts.passages import Candidate, Passage, Side, terms_near, title_stem
from citescope.agents.conflicts.question import Question
from citescope.agents.conflicts.values import NOT_WORD, ascii_lower, canonical_text, fmt
from citescope.agents.question_cues import PRICE_ASKED, STOCK_ASKED
from citescope.knowledge.injection import is_untrusted
from citescope.knowledge.text import (
    model_numbers,
)
from citescope.tools.base import EvidenceHit

# Versions: the clause that differs must hold at least this many of the question's terms.
MIN_VERSION_CLAUSE_TERMS = 2


# Claims: a material mention counts when a question term (鞋面) is this close.
CLAIM_WINDOW = 30


_CLAUSE_END = re.compile(r"[，,、：:]")


_NEGATION = ("不是", "并非", "不像", "没有", "不", "没", "非", "无", "未", "假")


_QUOTED = ("宣传", "号称", "说是", "标称", "写着", "所谓", "介绍")


# -- rule 2: versions of one document --------------------------------------------------------
def is_version_pair(a: EvidenceHit, b: EvidenceHit) -> bool:
    stem = title_stem(a.title)
    return bool(
        stem
        and stem == title_stem(b.title)
        and a.title != b.title
        and a.section
        and a.section == b.section
        and a.doc_type == b.doc_type
    )


def _clauses(passage: Passage) -> list[tuple[int, int]]:
    spans = []
    for start, end in passage.sentences:
        piece_start = start
        for match in _CLAUSE_END.finditer(passage.text, start, end):
            spans.append((piece_start, match.start()))
            piece_start = match.end()
        spans.append((piece_start, end))
    return [(s, e) for s, e in spans if e - s > 1]


def version_candidate(a: Passage, b: Passage, entity: str, question: Question) -> Candidate | None:
    """The clause each version says about the question that the other version does not say."""
    sides = []
    for mine, other in ((a, b), (b, a)):
        best, best_score = None, 0.0
        for start, end in _clauses(mine):
            clause = mine.text[start:end].strip(" -\n")
            if not clause or clause in other.text:
                continue
            score = question.coverage(clause) * len(question.key_terms)
            if score < MIN_VERSION_CLAUSE_TERMS:
                continue
            if score > best_score:
                best, best_score = (start, end), score
        if best is None:
            return None
        shown = mine.show(best).strip(" -")
        sides.append(Side(shown, ascii_lower(NOT_WORD.sub("", shown)), mine, best[0]))
    return Candidate(entity, a.hit.section, "版本", sides)


# -- rule 3: claims about one product --------------------------------------------------------
# Material lexicon: surface form -> (family, class). Classes of one family exclude each other.
MATERIALS: dict[str, tuple[str, str]] = {
    **{
        w: ("皮料", "真皮")
        for w in ("头层牛皮", "头层皮", "二层牛皮", "全粒面", "真皮", "牛皮", "羊皮", "猪皮", "麂皮")
    },
    **{
        w: ("皮料", "人造革")
        for w in ("人造革", "人造皮", "合成革", "pu皮", "pu革", "超纤皮", "超纤革", "仿皮", "塑料皮")
    },
    **{w: ("填充", "鹅绒") for w in ("鹅绒", "白鹅绒", "灰鹅绒")},
    **{w: ("填充", "鸭绒") for w in ("鸭绒", "白鸭绒", "灰鸭绒")},
    **{w: ("填充", "化纤棉") for w in ("丝棉", "喷胶棉", "人造棉", "化纤棉")},
    **{w: ("纤维", "棉") for w in ("纯棉", "全棉", "精梳棉", "新疆棉")},
    **{w: ("纤维", "化纤") for w in ("涤纶", "聚酯纤维", "化纤", "腈纶")},
    **{w: ("纤维", "羊毛") for w in ("羊毛", "美利奴羊毛", "羊绒")},
    **{w: ("纤维", "真丝") for w in ("真丝", "桑蚕丝")},
    **{w: ("外壳", "金属") for w in ("铝合金", "不锈钢", "金属外壳", "锌合金")},
    **{w: ("外壳", "塑料") for w in ("塑料外壳", "abs塑料", "塑料壳")},
}


# Words that make a question about a material family even when it names no material.
_MATERIAL_QUESTION_WORDS = {
    "皮料": ("皮", "材质"),
    "填充": ("绒", "填充"),
    "纤维": ("面料", "材质", "成分"),
    "外壳": ("外壳", "材质"),
}


# Yes/no properties: attribute -> (words that assert it, words that deny it).
PROPERTIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "防水": (("防水", "不渗水", "不漏水", "不进水"), ("渗水", "漏水", "进水", "不防水", "湿透")),
    "透气": (("透气", "不闷"), ("不透气", "闷脚", "闷热", "捂汗")),
    "防滑": (("防滑", "抓地", "不打滑"), ("打滑", "不防滑")),
    "保暖": (("保暖", "暖和", "不冷"), ("不保暖", "漏风")),
    "掉色": (("掉色", "褪色", "染色"), ("不掉色", "不褪色")),
    "起球": (("起球",), ("不起球",)),
}


_CLAIM_PATTERN = re.compile(
    "|".join(
        re.escape(w)
        for w in sorted(
            {*MATERIALS, *(w for pos, neg in PROPERTIES.values() for w in (*pos, *neg))}, key=len, reverse=True
        )
    )
)


def _claims(passage: Passage, terms: list[str]) -> dict[str, dict[str, tuple[str, int]]]:
    """{family or property: {class or yes/no: (word, position)}} for asserted, unquoted mentions."""
    found: dict[str, dict[str, tuple[str, int]]] = {}
    for match in _CLAIM_PATTERN.finditer(passage.text):
        word, start = match.group(0), match.start()
        before = passage.text[max(0, start - 6) : start]
        if any(marker in before for marker in _QUOTED) or any(n in before[-3:] for n in _NEGATION):
            continue  # "不像宣传的真皮": quoted or denied, not asserted
        # A material belongs to a part (鞋面, 内里): only one near what is asked counts. A
        # property (防水) belongs to the product, whichever of its words the question used.
        if (
            word in MATERIALS
            and word not in terms
            and not terms_near(passage.text, start, match.end(), terms, CLAIM_WINDOW)
        ):
            continue
        if word in MATERIALS:
            family, kind = MATERIALS[word]
        else:
            family = next(p for p, (pos, neg) in PROPERTIES.items() if word in pos or word in neg)
            kind = "是" if word in PROPERTIES[family][0] else "否"
        found.setdefault(family, {}).setdefault(kind, (word, start))
    return found


def _asked_families(question: str) -> set[str]:
    text = ascii_lower(canonical_text(question))
    asked = {MATERIALS[w][0] for w in MATERIALS if w in text}
    asked |= {family for family, words in _MATERIAL_QUESTION_WORDS.items() if any(w in text for w in words)}
    asked |= {p for p, (pos, neg) in PROPERTIES.items() if p in text or any(w in text for w in (*pos, *neg))}
    return asked


def claim_candidates(a: Passage, b: Passage, question: Question) -> list[Candidate]:
    if "official" not in (a.hit.authority, b.hit.authority):
        return []  # two customers disagreeing is opinion, not conflicting evidence
    claims_a, claims_b = _claims(a, question.terms), _claims(b, question.terms)
    found = []
    for family in sorted(_asked_families(question.text)):
        kinds_a, kinds_b = claims_a.get(family, {}), claims_b.get(family, {})
        if len(kinds_a) != 1 or len(kinds_b) != 1 or kinds_a.keys() == kinds_b.keys():
            continue  # silent, mixed, or agreeing
        ((kind_a, (word_a, pos_a)),) = kinds_a.items()
        ((kind_b, (word_b, pos_b)),) = kinds_b.items()
        dimension = "材质" if family in _MATERIAL_QUESTION_WORDS else family
        found.append(
            Candidate(
                a.hit.product_id or "",
                family,
                dimension,
                [
                    Side(a.show((pos_a, pos_a + len(word_a))), kind_a, a, pos_a),
                    Side(b.show((pos_b, pos_b + len(word_b))), kind_b, b, pos_b),
                ],
            )
        )
    return found


def table_candidates(passages: list[Passage], question: Question) -> list[Candidate]:
    """Rule 4: a price or stock count that an untrusted passage states about a product, when the
    question asks about prices or stock and no SKU row of the product in the evidence holds it:
    a conflict with the rows' values, table first. A stock count is held to the rows of the
    variant its sentence names (雾霾蓝), or to the only row shown; a count naming no variant of
    a product with several rows shown is not compared (the table has no total to hold it to)."""
    prices: dict[str, dict[str, Side]] = {}  # product -> price key -> the first row saying it
    stocks: dict[str, list[tuple[set[str], Side]]] = {}  # product -> (variant names, stock) per row
    for passage in passages:
        if not (table_claims.is_table(passage.hit) and passage.hit.product_id):
            continue
        numbers = table_claims.table_numbers(passage.hit)
        for kind, number, written in [(kind, n, w) for kind, found in numbers.items() for n, w in found]:
            shown = canonical_text(written)
            side = Side(shown, _table_key(kind, number), passage, max(passage.shown.find(shown), 0))
            if kind == table_claims.PRICE:
                prices.setdefault(passage.hit.product_id, {}).setdefault(side.key, side)
            else:
                stocks.setdefault(passage.hit.product_id, []).append((table_claims.variants(passage.hit), side))
    found = []
    for passage in passages:
        if not is_untrusted(passage.hit.doc_type, passage.hit.authority):
            continue
        product = _product_of(passage, {*prices, *stocks}, passages)
        if product is None:
            continue
        for claim in table_claims.claimed_numbers(passage.shown):
            if not _ASKS_TABLE[claim.kind].search(question.raw):
                continue
            if claim.kind == table_claims.PRICE:
                rows = list(prices.get(product, {}).values())
            else:
                sentence = passage.sentence_text(claim.start)
                stock_rows = stocks.get(product, [])
                named = [side for names, side in stock_rows if any(name in sentence for name in names)]
                rows = named or ([stock_rows[0][1]] if len(stock_rows) == 1 else [])
            key = _table_key(claim.kind, claim.number)
            if not rows or key in {side.key for side in rows}:
                continue  # nothing to hold it to, or the table agrees
            claimed = Side(claim.value, key, passage, claim.start)
            found.append(Candidate(product, claim.kind, f"table:{claim.kind}", [*rows, claimed]))
    return found


def _table_key(kind: str, number: float) -> str:
    return f"{fmt(number)}{'元' if kind == table_claims.PRICE else '件'}"


# A question about prices or stock (agents/question_cues.py: PRICE_ASKED, STOCK_ASKED), or about what is
# free or on offer: only then is a stranger's number for them worth disclosing.
_ASKS_TABLE = {
    table_claims.PRICE: re.compile(
        rf"{PRICE_ASKED}|价|钱|免费|送|优惠|活动|\b(?:price|cost|free|how much)", re.IGNORECASE
    ),
    table_claims.STOCK: re.compile(rf"{STOCK_ASKED}|库存|缺货|没货|还有|\b(?:stock|available)", re.IGNORECASE),
}


def _product_of(passage: Passage, products: set[str], passages: list[Passage]) -> str | None:
    """The product with a table in the evidence this passage is about: its own product_id, or for a
    text that names none, the one product whose table titles share a model number with it."""
    if passage.hit.product_id:
        return passage.hit.product_id if passage.hit.product_id in products else None
    named = model_numbers(passage.shown)
    matches = {
        p.hit.product_id for p in passages if p.hit.product_id in products and named & model_numbers(p.hit.title)
    }
    return matches.pop() if len(matches) == 1 else None
