"""Semantic rules of the inspector: does one sentence state the opposite of the chunks it cites?

The inspector's support check (agents/inspector.py) asks whether what a sentence states is *in* its
cited chunks: numbers with units, model numbers, dates, price words, content words. A sentence
that keeps all of them and inverts the fact passes it ("15 天内不支持无理由退换" beside "15天无理由退换";
"两种颜色都已缺货" beside "缺货: 无"). These rules read what the words say, each a function of
(sentence, cited chunks), their word lists data in claim_rules.yaml:

- polarity.negation: a predicate the evidence denies (不含内胆, 禁止托运) stated plainly, or one it
  states denied; where the evidence says both, the clause most like the sentence's decides;
- yes_no.opening: a bare yes or no opening (可以，… / 不会。…) against the chunk's own opening;
- stock.status: a stock word about the cited product's colours and sizes against its stock fields;
- entity.product: a product of the shop named by the sentence that its chunks are not about;
- entity.brand: a brand named by the sentence that none of its chunks' products carries and they never write.

They run until the reader (#46) checks claims; `check` is what the inspector calls per sentence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import yaml
from pydantic import BaseModel

from citescope.agents.entity_index import EntityIndex, compact
from citescope.knowledge.normalize import normalize
from citescope.knowledge.text import split_sentences
from citescope.tools.base import EvidenceHit

RULES_PATH = Path(__file__).with_name("claim_rules.yaml")

# Phrases inside a clause (a comma, a field's colon, a list's dash): the unit the polarity rule compares.
_PHRASE_CUT = re.compile(r"[，,：:、]|(?:^|\n)\s*-\s*")
# A title in title marks (根据《退换货说明》) states nothing: no predicate is read there. Quotes stay: a
# quoted button (点击“取消订单”) says what can be done.
_QUOTED = re.compile(r"《[^《》]*》")
_QUESTION_END = re.compile(r"[吗呢]?\s*[？?]\s*$")
_PREDICATE_CHAR = re.compile(r"[\u4e00-\u9fffA-Za-z0-9]")
_STOCK_FIELD = re.compile(r"(有货|缺货)\s*[:：]\s*([^；;\n]*)")
_ROW_STOCK = re.compile(r"库存\s*[:：]\s*(\d+)")
_ROW_FIELD = re.compile(r"(颜色|尺码)\s*[:：]\s*([^；;\n]*)")
_FIELD_COLON = re.compile(r"\s*[:：]")
_FIELD_NONE = re.compile(r"\s*[:：]\s*无\s*$")


class RuleHit(BaseModel):
    """One rule that fired on a sentence: its id, what the sentence says, what the evidence says."""

    rule: str
    claim: str
    evidence: str

    def describe(self) -> str:
        return f"{self.rule}：回答说“{self.claim}”，证据说“{self.evidence}”"


class _Statement(NamedTuple):
    text: str  # a phrase of a chunk (or of a chunk's title question read with its yes/no opening)
    source: str  # what to quote back


@dataclass(frozen=True)
class _Stock:
    """A chunk's stock fields: (colour, size) -> in stock; sizes None where a colour has one size."""

    variants: dict[tuple[str, str | None], bool]
    colours: tuple[str, ...]
    sizes: tuple[str, ...]
    quote: str


class ClaimRules:
    """The rules of claim_rules.yaml; `check(sentence, hits)` lists those that fire."""

    def __init__(self, data: dict, entities: Callable[[], EntityIndex | None] | None = None):
        """entities: the KB's current entity index (None: the entity rule is off)."""
        self._data = data
        negation, opening, stock = data["polarity.negation"], data["yes_no.opening"], data["stock.status"]
        self.cues = _longest_first(negation["cues"])
        self.not_negations = _longest_first(negation["not_negations"])
        self.fillers = _longest_first(negation["fillers"])
        self.predicate_chars = int(negation["predicate_chars"])
        self.yes, self.no = set(opening["yes_words"]), set(opening["no_words"])
        yes_words = "|".join(map(re.escape, _longest_first(sorted(self.yes))))
        self._yes_prefix = re.compile(f"^(?:{yes_words})")
        self._limited = re.compile(
            r"^\s*(?:"
            + yes_words
            + r")\s*[，,]\s*(?:"
            + "|".join(map(re.escape, _longest_first(opening["limit_words"])))
            + r")\s*([^，,。；;、\s]{1,6}?)"
            r"(?:申请|使用|购买|参与|办理|享受|开具|[，,。；;]|$)"
        )
        self.in_stock, self.out_of_stock = list(stock["in_stock"]), list(stock["out_of_stock"])
        self.all_words = _longest_first(stock["all_words"])
        self.entities = entities
        self._about: dict[tuple[int, str], set[str]] = {}
        self._cue = re.compile("|".join(map(re.escape, self.cues)))
        self._masked = re.compile("|".join(map(re.escape, self.not_negations)))
        self._stock_words = re.compile("|".join(map(re.escape, _longest_first(self.in_stock + self.out_of_stock))))
        self._filler_tail = re.compile("(?:" + "|".join(map(re.escape, self.fillers)) + r")\s*$")

    @classmethod
    def load(cls, path: Path = RULES_PATH, entities: Callable[[], EntityIndex | None] | None = None) -> ClaimRules:
        return cls(_read(path), entities)

    @property
    def limited_examples(self) -> list[dict]:
        """The yes/no rule's examples of a limited yes (`limited_to`), for generated tests."""
        return list(self._data["yes_no.opening"].get("limited_examples", []))

    @property
    def examples(self) -> dict[str, list[dict]]:
        """Each rule's examples from the data (tests generate cases from them)."""
        return {rule: list(body.get("examples", [])) for rule, body in self._data.items()}

    def check(self, sentence: str, hits: Sequence[EvidenceHit]) -> list[RuleHit]:
        """The rules that find the sentence contradicting its cited chunks (none: no contradiction seen)."""
        sentence = normalize(sentence)
        found = self._opening(sentence, hits)
        found += self._polarity(sentence, hits)
        found += self._stock(sentence, hits)
        found += self._entity(sentence, hits)
        return found

    # -- polarity ---------------------------------------------------------------------------
    def _denied_at(self, text: str, start: int) -> bool:
        """Whether the predicate starting at `start` is denied: a cue ends right before it, modal
        fillers (可以, 支持, 也 …) between them allowed."""
        before = text[:start].rstrip()
        while True:
            if self._cue_ends(before):
                return True
            tail = self._filler_tail.search(before)
            if tail is None or tail.start() == len(before):
                return False
            before = before[: tail.start()].rstrip()

    def _cue_ends(self, text: str) -> bool:
        masked = self._mask(text)
        return any(masked.endswith(cue) for cue in self.cues)

    def _mask(self, text: str) -> str:
        """Words that only look like negations (无理由, 不同, 不满) blanked, positions kept."""
        return self._masked.sub(lambda m: "　" * len(m.group(0)), text)

    def _predicates(self, text: str) -> list[str]:
        """What the text's cues deny: the first `predicate_chars` characters after each cue and its fillers."""
        masked, found = self._mask(text), []
        for match in self._cue.finditer(masked):
            rest = text[match.end() :]
            while (filler := next((f for f in self.fillers if rest.lstrip().startswith(f)), None)) is not None:
                rest = rest.lstrip()[len(filler) :]
            chars = []
            for ch in rest.lstrip():
                if not _PREDICATE_CHAR.match(ch) and ch != " ":
                    break
                if ch != " ":
                    chars.append(ch)
                if len(chars) == self.predicate_chars:
                    break
            if len(chars) >= 2:
                found.append("".join(chars))
        return list(dict.fromkeys(found))

    def _statements(self, hits: Sequence[EvidenceHit]) -> list[_Statement]:
        """The cited chunks' phrases; an FAQ's title question with its reply's yes/no opening too."""
        out = []
        for hit in hits:
            for clause in split_sentences(_QUOTED.sub("", normalize(hit.text)), at_clauses=True):
                out += [_Statement(p, p) for p in _phrases(clause)]
            opening = self._chunk_opening(hit)
            if opening is not None and _QUESTION_END.search(hit.title):
                question = _QUESTION_END.sub("", normalize(hit.title))
                word = next((w for w in sorted(self.yes, key=len, reverse=True) if w in question), None)
                if word is not None:  # the yes word nearest the predicate: 会员积分会过期 -> its second 会
                    at = question.rfind(word)
                    said = question[:at] + opening + question[at + len(word) :]
                    out += [_Statement(p, f"{hit.title} {opening}") for p in _phrases(said)]
        return out

    def _polarity(self, sentence: str, hits: Sequence[EvidenceHit]) -> list[RuleHit]:
        statements = self._statements(hits)
        sentence = _QUOTED.sub("", sentence)
        claims = [p for clause in split_sentences(sentence, at_clauses=True) for p in _phrases(clause)]
        predicates = dict.fromkeys(self._predicates(sentence))
        for statement in statements:
            predicates.update(dict.fromkeys(self._predicates(statement.text)))
        found: list[RuleHit] = []
        for predicate in predicates:
            for claim in claims:
                compact_claim = _compact(claim)
                where = compact_claim.find(predicate)
                if where < 0:
                    continue
                denied = self._denied_at(compact_claim, where)
                said = self._closest(predicate, compact_claim, statements)
                if said is not None and said[0] != denied:
                    found.append(RuleHit(rule="polarity.negation", claim=claim, evidence=said[1]))
                    return found  # one contradiction is enough to reject the sentence
        return found

    def _closest(self, predicate: str, claim: str, statements: Sequence[_Statement]) -> tuple[bool, str] | None:
        """(denied, quote) of the evidence phrase stating the predicate that is most like the claim's
        phrase; None when none states it, or the closest ones disagree among themselves."""
        scored = []
        for statement in statements:
            text = _compact(statement.text)
            where = text.find(predicate)
            if where >= 0:
                overlap = len(_bigrams(claim.replace(predicate, "")) & _bigrams(text.replace(predicate, "")))
                scored.append((overlap, self._denied_at(text, where), statement.source))
        if not scored:
            return None
        best = max(score for score, _, _ in scored)
        verdicts = {(denied, source) for score, denied, source in scored if score == best}
        if len({denied for denied, _ in verdicts}) > 1:
            return None
        return min(verdicts)

    # -- yes/no opening -----------------------------------------------------------------------
    def opening_word(self, text: str) -> str | None:
        """The bare yes or no a text opens with (会。… / 不可以，…), else None."""
        first = re.split(r"[，,。！!；;：:\n]", text.strip(), maxsplit=1)[0].strip()
        return first if first in self.yes or first in self.no else None

    def limited_to(self, text: str) -> str | None:
        """Who a reply's opening yes is limited to (可以，仅限企业申请 -> 企业), else None."""
        match = self._limited.match(normalize(text))
        return match.group(1) if match else None

    def without_yes_word(self, word: str) -> str:
        """A word without the yes word it opens with (能开 -> 开): what a question asks with, not about."""
        return self._yes_prefix.sub("", word, count=1)

    def _chunk_opening(self, hit: EvidenceHit) -> str | None:
        return self.opening_word(normalize(hit.text))

    def _opening(self, sentence: str, hits: Sequence[EvidenceHit]) -> list[RuleHit]:
        said = self.opening_word(sentence)
        if said is None:
            return []
        for hit in hits:
            theirs = self._chunk_opening(hit)
            if theirs is not None and (theirs in self.no) != (said in self.no):
                return [RuleHit(rule="yes_no.opening", claim=said, evidence=f"{hit.title} {theirs}".strip())]
        return []

    # -- stock ------------------------------------------------------------------------------
    def _stock_of(self, hit: EvidenceHit) -> _Stock | None:
        text = normalize(hit.text)
        fields = dict(_ROW_FIELD.findall(text))
        colours = tuple(c.strip() for c in re.split(r"[、,，]", fields.get("颜色", "")) if c.strip())
        sizes = tuple(s.strip() for s in re.split(r"[、,，]", fields.get("尺码", "")) if s.strip())
        variants: dict[tuple[str, str | None], bool] = {}
        for kind, value in _STOCK_FIELD.findall(text):
            for group in re.split(r"[，,]", value):
                group = group.strip()
                if not group or group == "无":
                    continue
                pieces = [p.strip() for p in group.split("、")]
                colour = next((c for c in sorted(colours, key=len, reverse=True) if group.startswith(c)), None)
                if colour is None or all(p in colours for p in pieces):  # 有货: 深空灰、月光银 — colours only
                    for name in pieces:
                        variants[(name, None)] = kind == "有货"
                    continue
                named = [s.strip() for s in re.split(r"、", group[len(colour) :]) if s.strip()]
                for size in named or [None]:
                    variants[(colour, size)] = kind == "有货"
        row = _ROW_STOCK.search(text)
        if row is not None and len(colours) == 1:
            variants[(colours[0], None)] = int(row.group(1)) > 0
        if not variants:
            return None
        return _Stock(variants, colours, sizes, text[:160])

    def _stock(self, sentence: str, hits: Sequence[EvidenceHit]) -> list[RuleHit]:
        stocks = [s for s in map(self._stock_of, hits) if s is not None]
        if not stocks:
            return []
        found: list[RuleHit] = []
        carried: list[str] = []
        for clause in re.split(r"[，,；;。！!]", sentence):
            for stock in stocks:
                colours = [c for c in stock.colours if c in clause] or carried
                sizes = _sizes_named(clause, stock.sizes)
                word = self._stock_words.search(clause)
                if word is not None and _FIELD_NONE.match(clause, word.end()):
                    continue  # 缺货: 无 — a field saying nothing is out
                if word is not None and _FIELD_COLON.match(clause, word.end()):
                    colours = [c for c in stock.colours if c in clause]  # a field names its own colours
                if word is not None:
                    says_in = word.group(0) in self.in_stock
                    every = any(w in clause for w in self.all_words)
                    if not _stock_holds(stock, colours, sizes, says_in, every):
                        found.append(RuleHit(rule="stock.status", claim=clause.strip(), evidence=stock.quote))
                        return found
                carried = colours or carried
        return found

    # -- entities ---------------------------------------------------------------------------
    def _named_in(self, index: EntityIndex, text: str) -> set[str]:
        """The products a chunk's title and text name, read once per chunk text and index."""
        key = (id(index), text)
        named = self._about.get(key)
        if named is None:
            if len(self._about) > 4096:  # the chunks of a few hundred questions; then start over
                self._about.clear()
            canonical = index.lexicon.canonicalize(normalize(text))
            named = self._about[key] = {e.product_id for e in index.match(canonical)[0] if e.product_id is not None}
        return named

    def _entity(self, sentence: str, hits: Sequence[EvidenceHit]) -> list[RuleHit]:
        index = self.entities() if self.entities is not None else None
        if index is None or not index.products:
            return []
        canonical = index.lexicon.canonicalize(sentence)
        matched, brands, _categories = index.match(canonical)
        named = [e for e in matched if e.product_id is not None]
        if not named and not brands:
            return []
        about = {h.product_id for h in hits if h.product_id}
        for hit in hits:
            about |= self._named_in(index, f"{hit.title} {hit.text}")
        if not about:
            return []  # a policy or FAQ about no product holds for each of them
        mentioned = compact(normalize(" ".join(f"{h.title} {h.text}" for h in hits)))[0]
        # a product the chunks are not about, by a name they never write (Nike Air in a page on AJ1 Low
        # that compares it with the high OG is no stray name)
        stray = [e for e in named if e.product_id not in about and compact(e.surface)[0] not in mentioned]
        titles = "、".join(sorted({h.title for h in hits if h.title}))
        if stray:
            return [RuleHit(rule="entity.product", claim=stray[0].surface or stray[0].name, evidence=titles)]
        # a brand that none of the chunks' products carries and their text never writes (乐映 XZ-2000 in a
        # page on 星择 XZ-2000): the product is right, whose it is is not
        carried = {index.products[pid].get("brand") for pid in about if pid in index.products}
        stray_brands = [b for b in brands if b not in carried and compact(b)[0] not in mentioned]
        if stray_brands:
            return [RuleHit(rule="entity.brand", claim=stray_brands[0], evidence=titles)]
        return []


@lru_cache(maxsize=4)
def _read(path: Path) -> dict:
    """The rules file, parsed once (every Inspector loads it)."""
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _longest_first(words: Sequence[str]) -> list[str]:
    return sorted(dict.fromkeys(words), key=len, reverse=True)


def _compact(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _phrases(clause: str) -> list[str]:
    return [p.strip() for p in _PHRASE_CUT.split(clause) if p and p.strip()]


def _bigrams(text: str) -> set[str]:
    return {text[i : i + 2] for i in range(len(text) - 1)}


def _sizes_named(clause: str, sizes: Sequence[str]) -> list[str]:
    """The sizes a clause names, each as a whole token (42 not in 142, L not in XL or GTX), longest
    first and then blanked (iPhone 15 Pro Max names no iPhone 15)."""
    named = []
    for size in sorted(sizes, key=len, reverse=True):
        pattern = re.compile(rf"(?<![A-Za-z0-9.]){re.escape(size)}(?![A-Za-z0-9.])")
        if pattern.search(clause):
            named.append(size)
            clause = pattern.sub(lambda m: " " * len(m.group(0)), clause)
    return named


def _stock_holds(stock: _Stock, colours: list[str], sizes: list[str], says_in: bool, every: bool) -> bool:
    """Whether the stock fields allow the claim (True where they do not tell)."""
    chosen = [
        (key, in_stock)
        for key, in_stock in stock.variants.items()
        if (not colours or key[0] in colours) and (not sizes or key[1] is None or key[1] in sizes)
    ]
    if not chosen:
        return True
    if says_in:
        if not (colours or sizes):  # the product (with 都: each of its colours) has some in stock
            if not every:
                return any(s for _, s in chosen)
            if not stock.colours:
                return all(s for _, s in chosen)
        # each named colour (with 都 and none named: each colour) and each named size has some in stock
        groups = [[s for k, s in chosen if k[0] == c] for c in (colours or (stock.colours if every else ()))]
        groups += [[s for k, s in chosen if k[1] in (z, None)] for z in sizes]
        return all(any(group) for group in groups if group)
    return not any(s for _, s in chosen)  # out of stock: none of what it names is in stock
