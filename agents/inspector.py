"""QA inspector: are the answer's citations real, complete, supporting, and are conflicts disclosed?

The deterministic checks always run and decide failures on their own; a model judge
(agents/inspector_judge.py, when the pipeline configures one) can only add a failure on top.
Each sentence is checked against the chunks it cites (`check_sentence`, the per-sentence unit a
stream sends by): support on what a citation can prove cheaply and exactly — numbers with units,
model numbers, dates, price and gift words (免费, 全场, free: DECISIVE_WORDS), and at least half of
the sentence's content words in the cited chunks (title and date included) — and contradiction by
the semantic rules of agents/claim_rules.py (negation, yes/no opening, stock status, product named).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from decimal import Decimal
from functools import lru_cache
from typing import NamedTuple

from pydantic import BaseModel, Field

from citescope.agents.citations import AnswerSentence, quotable, split_sentences
from citescope.agents.claim_reader import (
    ClaimReader,
    evidence_window,
    shared_pairs,
    stated_word_for_word,
    unframed,
    without_closing,
)
from citescope.agents.claim_rules import ClaimRules, RuleHit
from citescope.agents.conflicts import Conflict, canonical_text
from citescope.agents.entity_index import EntityIndex
from citescope.agents.entity_scope import TITLE_SEPARATORS
from citescope.knowledge.chunking import is_rendered_row
from citescope.knowledge.lexicon import Lexicon
from citescope.knowledge.normalize import normalize
from citescope.knowledge.text import MODEL_NUMBER, MULTIPLIERS, model_numbers, tokenize, unit_alternatives
from citescope.knowledge.units import BY_NAME, COUNT, UNITS, Unit, same_amount
from citescope.tools.base import EvidenceHit

READER_RULE = "reader.contradicted"  # the claim reader's rejections, beside claim_rules.yaml's ids
# a sentence citing only evidence about a sibling of the entity asked, without saying whose fact it is
SIBLING_RULE = "entity.sibling"

# Words the answer's own framing adds ("根据现有资料", "有用户评价称", "以最新政策为准"): they
# are never evidence, so they neither count for nor against support.
FRAMING_PHRASES = (
    "根据现有资料显示",
    "官方详情页显示",
    "有用户评价称",
    "有用户分享",
    "不同来源说法不一致",
    "新版旧版为准",
    "以最新政策为准",
    "以最新信息为准",
    "以最接近所问时间的信息为准",
    "有来源称",
    "另有来源称",
    "资料无法判断以哪一说法为准建议转人工客服确认",
    "另外其中此外同时但是而且",
    "分别",
    "according to the available information the official page says however a user review says "
    "sources disagree newer older policy prevails latest nearest the time asked about "
    "one source another source says they do not show which holds please check with customer service",
)

# Words that make a price or gift claim: whatever numbers or model numbers the cited text
# confirms, it must also say one of these words (a SKU row confirms "XZ-3000" and "299元", not
# "XZ-3000 全场免费"). A denied mention ("并不免费", "not free") claims nothing.
DECISIVE_WORDS: dict[str, tuple[str, ...]] = {
    "免费": ("免费",),
    "免单": ("免单", "免费"),
    "白送": ("白送", "免费"),
    "不要钱": ("不要钱", "免费"),
    "零元": ("零元", "0元"),
    "全场": ("全场",),
    "清仓": ("清仓",),
    "赠送": ("赠送", "赠"),
    "包邮": ("包邮",),
    "free": ("free", "免费", "包邮", "赠送", "赠"),
    "giveaway": ("giveaway", "免费", "赠送"),
}
_DECISIVE = re.compile(
    "|".join(rf"(?<![A-Za-z]){re.escape(w)}(?![A-Za-z])" if w.isascii() else re.escape(w) for w in DECISIVE_WORDS),
    re.IGNORECASE,
)
_DENIED = re.compile(r"(?:不是|不算|不|非|没有|没|无|未|\b(?:not|never|no)|n't)\s*$", re.IGNORECASE)

_DATE = re.compile(r"(?<!\d)(\d{4})\s*[-/.年]\s*(\d{1,2})\s*[-/.月]\s*(\d{1,2})(?!\d)\s*日?")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_CURRENCY = re.compile(r"(?:[¥￥]|RMB|CNY)\s*(\d+(?:\.\d+)?)")
# The units of knowledge/units.py, in the case they are written (M码 is a size, not metres).
_UNIT_PATTERN = unit_alternatives(UNITS)
# a number, its large unit (1.5万: knowledge/text.py reads it as the conflict check does), its unit
_NUMBER = re.compile(rf"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)(?:\s*({'|'.join(MULTIPLIERS)}))?(?:\s*({_UNIT_PATTERN}))?")
# A unit the question names after 多少/几 (多少Wh, 几克) is the kind of value it asks for.
_ASKED_UNIT = re.compile(rf"(?:多少|几)\s*({_UNIT_PATTERN})")
# a range (1-3 个工作日) or a size's dimensions (55×38×20cm): the unit written last applies to each
_RANGE_JOIN = re.compile(r"^\s*(?:-|~|～|—|–|至|到|×|\*)\s*-?\s*$")


class Facts(NamedTuple):
    numbers: frozenset[tuple[str, str | None]]  # (value, canonical unit or None)
    models: frozenset[str]  # upper case, no hyphen
    dates: frozenset[str]  # YYYY-MM-DD


def _number_value(raw: str, multiplier: str = "") -> str:
    if multiplier:  # 1.5万 -> 15000, in decimal digits (no float rounding, no exponent)
        raw = format(Decimal(raw) * MULTIPLIERS[multiplier], "f")
    if "." in raw:
        raw = raw.rstrip("0").rstrip(".")
    return raw.lstrip("0") or "0"


@lru_cache(maxsize=16384)
def facts_of(text: str) -> Facts:
    """Numbers with units (15天 = 15 天, 1,299 = 1299, ¥899 = 899元, 899.00 = 899, 1.5万 = 15000), model
    numbers and dates found in a text; a range's unit applies to both ends (1-3 个工作日, 1-3万人)."""
    text = _CURRENCY.sub(r"\1元", _THOUSANDS.sub("", normalize(text)))
    models = model_numbers(text)
    text = MODEL_NUMBER.sub(" ", text)
    dates = {f"{int(y):04d}-{int(m):02d}-{int(d):02d}" for y, m, d in _DATE.findall(text)}
    text = _DATE.sub(" ", text)
    found = list(_NUMBER.finditer(text))
    numbers: set[tuple[str, str | None]] = set()
    carried: tuple[str | None, str | None] = (None, None)  # (multiplier, unit) of the joined number after
    for index in range(len(found) - 1, -1, -1):  # from the end, so 55×38×20cm gives 55 its cm too
        match = found[index]
        multiplier, unit = match.group(2), match.group(3)
        if unit is None and index + 1 < len(found):
            if _RANGE_JOIN.match(text[match.end() : found[index + 1].start()]):
                multiplier, unit = multiplier or carried[0], carried[1]
        carried = (multiplier, unit)
        numbers.add((_number_value(match.group(1), multiplier or ""), UNITS[unit].name if unit else None))
    return Facts(frozenset(numbers), frozenset(models), frozenset(dates))


def claims_as_read(claim: str, hits: Sequence[EvidenceHit]) -> list[tuple[str, str]]:
    """The (claim, evidence) pairs the claim reader is given for a sentence citing `hits`; none when it
    reads nothing. The sentence is contradicted when one of them is. What the reader judges is what
    the evidence says, not how the answer words it, so:
    - table rows are not read: the checker learned on prose, and a row's fields (prices, stock, sizes,
      model numbers) are what the rules check; on the demo's own probe answers a checker read rows
      written out as sentences ("X（黑色，42）：价格 699.00元，库存 15件") as contradicted;
    - statements laid side by side ("；" between them) in a sentence citing several chunks (sources
      that disagree, disclosed) are read one by one, each against the cited chunk it names, else the
      one that says it most nearly: two sources' values together match neither source;
    - the answer's frame comes off ("有用户评价称：", the product's name: claim_reader.unframed);
    - an amount the rules find the same as one of the evidence's is written as the evidence writes it
      (299元 for 299.00元, 12个月 for 1年: `as_evidence_writes`), so the reader judges no unit table;
    - what a cited chunk then states word for word, whole clauses (`claim_reader.stated_word_for_word`),
      is not read: a quote cannot contradict its own source (the extractive answer quotes; a reader
      rejected quotes beside a negated sentence)."""
    prose = [hit for hit in hits if not is_rendered_row(hit.text)]
    if not prose:
        return []
    titles = {t for hit in prose for t in (hit.title, quotable(hit.title))}
    # side by side: "；" between the sources' parts, "; " in an English answer
    parts = [p for p in re.split(r"；|;\s", without_closing(claim)) if p.strip()] if len(prose) > 1 else [claim]
    if len(parts) == 1:
        evidence = "\n".join(hit.text for hit in prose)
        pairs = [(as_evidence_writes(unframed(claim, titles), evidence), evidence)]
    else:
        pairs = []
        for part in parts:
            read = unframed(part, titles)
            named = [hit for hit in prose if any(t and t in part for t in (hit.title, quotable(hit.title)))]
            # the source the part names (《退换货政策（2024版）》为：…), else the one sharing most of its wording
            nearest = named[0] if len(named) == 1 else max(prose, key=lambda hit: shared_pairs(read, hit.text))
            pairs.append((as_evidence_writes(read, nearest.text), nearest.text))
    return [(read, evidence) for read, evidence in pairs if not any(stated_word_for_word(read, h.text) for h in prose)]


def _amounts(text: str) -> list[tuple[re.Match, tuple[str, str | None]]]:
    """Each number of a text with its (value, canonical unit), as facts_of reads it, but on the raw
    text (spans kept): not a date's parts, not within a model number."""
    taken = [m.span() for m in _DATE.finditer(text)] + [m.span() for m in MODEL_NUMBER.finditer(text)]
    out = []
    for match in _NUMBER.finditer(text):
        if any(start <= match.start() < end for start, end in taken):
            continue
        multiplier, unit = match.group(2), match.group(3)
        out.append((match, (_number_value(match.group(1), multiplier or ""), UNITS[unit].name if unit else None)))
    return out


def as_evidence_writes(claim: str, evidence: str) -> str:
    """The claim with each amount the evidence does not write as it does, but states as the same
    amount (knowledge/units.py, as the rules compare), written the evidence's way: 保修12个月 against
    保修期1年 reads 保修1年. An amount the evidence writes as the claim does, or does not state, stays."""
    stated = _amounts(evidence)
    written = {m.group(0).replace(" ", "") for m, _ in stated}
    out, last = [], 0
    for match, number in _amounts(claim):
        if match.group(0).replace(" ", "") in written:
            continue
        # both with a unit or both without: 299元 is not rewritten as a bare 299
        same = [
            m for m, other in stated if (number[1] is None) == (other[1] is None) and _number_supported(number, [other])
        ]
        if same:
            out += [claim[last : match.start()], same[0].group(0)]
            last = match.end()
    return "".join(out) + claim[last:]


def asked_units(question: str) -> set[str]:
    """Canonical units a question asks a value in: 多少Wh -> {"wh"}, 重几克 -> {"g"}. Not a counting
    word (几个颜色 is answered by the colours, not by a stock of 28件) nor 几月 (a date)."""
    found = {(m.group(1), UNITS[m.group(1)]) for m in _ASKED_UNIT.finditer(normalize(question))}
    return {unit.name for word, unit in found if _asks_a_value_in(unit) and word != "月"}


def _asks_a_value_in(unit: Unit) -> bool:
    """几次 asks a number of times, which only a count of times answers (3次); a count of things or
    people (几个颜色, 几位) is answered by naming them, not by a stock of 28件."""
    return unit.dimension != COUNT or unit.name == "次"


def _number_supported(number: tuple[str, str | None], available: Iterable[tuple[str, str | None]]) -> bool:
    """A number with a unit is supported by the same amount in any unit of its kind (1年 by 12个月,
    1斤 by 500克: knowledge/units.py, as the conflict check compares them); a number without one by
    the same number."""
    value, unit = number
    for other_value, other_unit in available:
        if unit is None or other_unit is None:
            if other_value == value:
                return True
        elif same_amount((float(value), BY_NAME[unit]), (float(other_value), BY_NAME[other_unit])):
            return True
    return False


def number_text(number: tuple[str, str | None]) -> str:
    return number[0] + (number[1] or "")


class UnsupportedClaim(BaseModel):
    sentence: str
    cited_ids: list[str]
    missing: list[str]  # numbers, model numbers, dates or content words the cited text lacks
    contradicted: list[RuleHit] = Field(default_factory=list)  # semantic rules (or the judge) that fired


class SentenceVerdict(NamedTuple):
    """One sentence's checks (Inspector.check_sentence)."""

    sentence: AnswerSentence
    valid_ids: list[str]  # cited ids among the evidence
    invalid_ids: list[str]  # cited ids that were never shown
    uncited: bool  # a factual sentence citing no shown chunk
    missing: list[str]  # what it states that its cited chunks do not
    contradicted: list[RuleHit]  # the semantic rules that find it contradicting them (agents/claim_rules.py)

    @property
    def passed(self) -> bool:
        return not self.invalid_ids and not self.uncited and not self.missing and not self.contradicted


class InspectionReport(BaseModel):
    passed: bool
    coverage: float  # cited factual sentences / factual sentences (1.0 when there are none)
    sentences: int
    factual_sentences: int = 0
    cited_ids: list[str] = Field(default_factory=list)  # valid ids, in order of citation
    invalid_ids: list[str] = Field(default_factory=list)
    uncited: list[str] = Field(default_factory=list)  # factual sentences without any citation
    unsupported: list[UnsupportedClaim] = Field(default_factory=list)
    missing_conflicts: list[str] = Field(default_factory=list)  # conflict attributes not disclosed
    judge: dict | None = None  # the model judge's verdicts, or why it was skipped (agents/inspector_judge.py)

    @property
    def rules_fired(self) -> list[str]:
        """The ids of the semantic rules that rejected a sentence, in order (the decision trace's)."""
        return list(dict.fromkeys(hit.rule for claim in self.unsupported for hit in claim.contradicted))

    def findings(self) -> str:
        """The problems in Chinese, one per line, for the answerer's retry prompt."""
        lines = []
        if self.invalid_ids:
            lines.append("以下引用ID不在证据列表中，不能使用：" + "、".join(self.invalid_ids))
        lines += [f"这句事实陈述没有引用：{s}" for s in self.uncited]
        lines += [
            f"这句与所引证据不符（证据中没有：{'、'.join(u.missing)}）：{u.sentence}"
            for u in self.unsupported
            if u.missing
        ]
        lines += [
            f"这句与所引证据矛盾（{hit.describe()}）：{u.sentence}" for u in self.unsupported for hit in u.contradicted
        ]
        if self.missing_conflicts:
            lines.append("来源之间存在冲突但回答没有同时说明各方说法：" + "、".join(self.missing_conflicts))
        return "\n".join(f"- {line}" for line in lines) or "- 无"


def cited_doc_ids(ids: Iterable[str], evidence: Sequence[EvidenceHit]) -> list[str]:
    """Cited chunk ids -> their doc ids, deduplicated in order (for doc-level scoring).

    A cited doc id that was shown stays as is; an unknown id maps to its part before '#'.
    """
    doc_of = {hit.chunk_id: hit.doc_id for hit in evidence}
    doc_of.update({hit.doc_id: hit.doc_id for hit in evidence})
    out: list[str] = []
    for cited in ids:
        doc_id = doc_of.get(cited) or cited.partition("#")[0]
        if doc_id not in out:
            out.append(doc_id)
    return out


class Inspector:
    """Checks one answer against the evidence it was given; `run` is pure and fast (no models)."""

    def __init__(
        self,
        min_coverage: float = 1.0,
        min_term_share: float = 0.5,
        lexicon: Lexicon | None = None,
        entities: Callable[[], EntityIndex | None] | None = None,
        rules: ClaimRules | None = None,
        claim_reader: ClaimReader | None = None,
        claim_reject_above: float | None = None,
    ):
        """entities: the KB's current entity index, for the rule that a sentence names only the
        products its chunks are about (None: that rule is off). rules: claim_rules.yaml's, by default.
        claim_reader: the reader's trained claim checker (agents/claim_reader.py, opt-in): a factual
        sentence it reads as contradicted by its cited chunks with P > claim_reject_above (None: the
        threshold its card chose on training valid rows) is rejected as the rules reject one (rule id
        `reader.contradicted`)."""
        self.min_coverage = min_coverage
        self.min_term_share = min_term_share
        self.lexicon = lexicon
        self.rules = rules or ClaimRules.load(entities=entities)
        self.claim_reader = claim_reader
        self.claim_reject_above = claim_reject_above
        self._ignored_terms = frozenset(t for phrase in FRAMING_PHRASES for t in tokenize(phrase))

    def warm_up(self) -> Inspector:
        """Load jieba's dictionary (and the lexicon's words) now rather than on the first check."""
        tokenize("预热", self.lexicon)
        tokenize("预热")
        return self

    def run(
        self,
        answer: str,
        evidence: Sequence[EvidenceHit],
        conflicts: Sequence[Conflict] = (),
        question: str = "",
        siblings: Collection[str] = (),
    ) -> InspectionReport:
        """siblings: the evidence about a sibling of the entity the question names (the rank stage's,
        agents/entity_scope.py): a sentence citing only those must say whose fact it states."""
        return self.report(self.verdicts(answer, evidence, question, siblings), conflicts)

    def cited_claims(
        self, answer: str, evidence: Sequence[EvidenceHit]
    ) -> list[tuple[AnswerSentence, list[EvidenceHit]]]:
        """The answer's factual sentences that cite shown chunks, each with those chunks (what a
        judge is asked about)."""
        by_id = {hit.chunk_id: hit for hit in evidence}
        sentences = split_sentences(answer, known_ids=by_id.keys())
        cited = [(s, [by_id[i] for i in s.cited_ids if i in by_id]) for s in sentences if s.is_factual]
        return [(sentence, hits) for sentence, hits in cited if hits]

    def verdicts(
        self, text: str, evidence: Sequence[EvidenceHit], question: str = "", siblings: Collection[str] = ()
    ) -> list[SentenceVerdict]:
        """Each sentence of a text (a whole answer, or one sentence a stream has completed), checked."""
        by_id = {hit.chunk_id: hit for hit in evidence}
        question_facts = facts_of(question)
        verdicts = [
            self.check_sentence(s, by_id, question_facts) for s in split_sentences(text, known_ids=by_id.keys())
        ]
        if siblings:
            for verdict in verdicts:
                verdict.contradicted.extend(self.about_a_sibling(verdict, by_id, question, siblings))
        return verdicts

    @staticmethod
    def about_a_sibling(
        verdict: SentenceVerdict, by_id: Mapping[str, EvidenceHit], question: str, siblings: Collection[str]
    ) -> list[RuleHit]:
        """A factual sentence whose cited chunks are all about a sibling of the entity asked (极岚 听澜X3's
        sheet for 风行 逐光X3的电池容量) states the sibling's fact as the answer, unless it names the sibling by
        a word of its title the question does not use (side by side: 极岚 听澜X3 的电池容量为 320mAh)."""
        cited = verdict.valid_ids
        if not verdict.sentence.is_factual or not cited or not all(i in siblings for i in cited):
            return []
        asked, claim = question.lower(), verdict.sentence.text.lower()
        titles = {by_id[i].title for i in cited}
        parts = {p for t in titles for p in TITLE_SEPARATORS.split(t.lower()) if len(p) >= 2 and p not in asked}
        if any(p in claim for p in parts):
            return []
        return [RuleHit(rule=SIBLING_RULE, claim=verdict.sentence.text, evidence="；".join(sorted(titles)))]

    def check_sentence(
        self, sentence: AnswerSentence, by_id: Mapping[str, EvidenceHit], question_facts: Facts | None = None
    ) -> SentenceVerdict:
        """The checks one sentence passes or fails on its own: every id it cites was shown; a
        factual sentence cites at least one, its cited chunks support what it states, and no
        semantic rule finds it contradicting them. The streamed answer sends a sentence only when
        this passes (workflows/stages/stream.py), so a check added here holds for streamed and whole
        answers alike."""
        valid = [i for i in sentence.cited_ids if i in by_id]
        invalid = [i for i in sentence.cited_ids if i not in by_id]
        missing: list[str] = []
        contradicted: list[RuleHit] = []
        if sentence.is_factual and valid:
            hits = [by_id[i] for i in valid]
            missing = self.missing_support(sentence.text, hits, question_facts)
            contradicted = self.rules.check(sentence.text, hits)
            if not contradicted and self.claim_reader is not None:
                contradicted = self._read_claim(sentence.text, hits)
        return SentenceVerdict(sentence, valid, invalid, sentence.is_factual and not valid, missing, contradicted)

    def _read_claim(self, claim: str, hits: Sequence[EvidenceHit]) -> list[RuleHit]:
        """The claim reader's verdict on what it is given of the sentence (claims_as_read; one engine call)."""
        assert self.claim_reader is not None
        pairs = claims_as_read(claim, hits)
        if not pairs:
            return []
        verdicts = self.claim_reader.check(pairs)
        worst = max(range(len(pairs)), key=lambda i: verdicts[i].contradicted)
        verdict = verdicts[worst]
        threshold = self.claim_reader.reject_above if self.claim_reject_above is None else self.claim_reject_above
        if verdict.contradicted <= threshold:
            return []
        window = evidence_window(*pairs[worst])
        return [RuleHit(rule=READER_RULE, claim=claim, evidence=f"{window}（P={verdict.contradicted:.2f}）")]

    def report(self, verdicts: Sequence[SentenceVerdict], conflicts: Sequence[Conflict] = ()) -> InspectionReport:
        """The deterministic verdict on an answer from its sentences' verdicts: it passes when every
        sentence passes (coverage at least min_coverage) and every conflict is disclosed."""
        factual = [v for v in verdicts if v.sentence.is_factual]
        uncited = [v.sentence.text for v in factual if v.uncited]
        coverage = 1.0 if not factual else (len(factual) - len(uncited)) / len(factual)
        invalid = list(dict.fromkeys(i for v in verdicts for i in v.invalid_ids))
        unsupported = [
            UnsupportedClaim(
                sentence=v.sentence.text, cited_ids=v.sentence.cited_ids, missing=v.missing, contradicted=v.contradicted
            )
            for v in factual
            if v.missing or v.contradicted
        ]
        sentences = [v.sentence for v in verdicts]
        missing_conflicts = [c.attribute for c in conflicts if not self.conflict_disclosed(c, sentences)]
        return InspectionReport(
            passed=not invalid and coverage >= self.min_coverage and not unsupported and not missing_conflicts,
            coverage=round(coverage, 4),
            sentences=len(verdicts),
            factual_sentences=len(factual),
            cited_ids=list(dict.fromkeys(i for v in verdicts for i in v.valid_ids)),
            invalid_ids=invalid,
            uncited=uncited,
            unsupported=unsupported,
            missing_conflicts=missing_conflicts,
        )

    # -- support ------------------------------------------------------------------------
    def support_text(self, hits: Iterable[EvidenceHit]) -> str:
        parts = [" ".join(filter(None, (h.title, h.section, h.source, h.updated_at or "", h.text))) for h in hits]
        return self._canonical("\n".join(parts))

    def _canonical(self, text: str) -> str:
        """Width-normalised, aliases canonical; case kept (ASCII units are case-sensitive)."""
        text = normalize(text)
        return self.lexicon.canonicalize(text) if self.lexicon is not None else text

    def content_terms(self, claim: str) -> list[str]:
        """Words that carry the claim: no stopwords, framing words, numbers or single characters."""
        terms = []
        for token in tokenize(claim, self.lexicon):
            if token in self._ignored_terms or len(token) < 2 or re.fullmatch(r"[\d.\-]+[a-z%]*", token):
                continue
            if token not in terms:
                terms.append(token)
        return terms

    def missing_support(
        self, claim: str, hits: Sequence[EvidenceHit], question_facts: Facts | None = None
    ) -> list[str]:
        """What the claim states that its cited chunks do not; empty when supported.

        Numbers, model numbers and dates must all appear (the user's own numbers from the
        question count as given); content words only matter when the claim has no number or
        model number that the evidence confirmed: then at least `min_term_share` must appear.
        """
        support = self.support_text(hits)
        claim_facts = facts_of(self._canonical(claim))
        support_facts = facts_of(support)
        given = question_facts or Facts(frozenset(), frozenset(), frozenset())
        available_numbers = support_facts.numbers | given.numbers
        if any(not _number_supported(n, available_numbers) for n in claim_facts.numbers):
            # 两年 supports 2年 (a conflict disclosure quotes canonical values); read only when needed
            available_numbers |= facts_of(canonical_text(support)).numbers
        missing = [
            number_text(n) for n in sorted(claim_facts.numbers, key=str) if not _number_supported(n, available_numbers)
        ]
        missing += sorted(claim_facts.models - support_facts.models - given.models)
        missing += sorted(claim_facts.dates - support_facts.dates - given.dates)
        missing += self._missing_decisive(claim, support)
        if missing:
            return missing
        if claim_facts.numbers or claim_facts.models:
            return []
        terms = self.content_terms(claim)
        lowered = support.lower()
        absent = [t for t in terms if not self._term_in(t, lowered)]
        if terms and (len(terms) - len(absent)) / len(terms) < self.min_term_share:
            return absent
        return []

    def _missing_decisive(self, claim: str, support: str) -> list[str]:
        """DECISIVE_WORDS the claim asserts and the cited text never says."""
        claim, lowered = self._canonical(claim), support.lower()
        missing = []
        for match in _DECISIVE.finditer(claim):
            word = match.group(0).lower()
            if _DENIED.search(claim[max(0, match.start() - 8) : match.start()]):
                continue
            if not any(w.lower() in lowered for w in DECISIVE_WORDS[word]) and word not in missing:
                missing.append(word)
        return missing

    def _term_in(self, term: str, support: str) -> bool:
        if term in support:
            return True
        return self.lexicon is not None and any(e.lower() in support for e in self.lexicon.expansions(term))

    # -- conflicts ------------------------------------------------------------------------
    def conflict_disclosed(self, conflict: Conflict, sentences: Sequence[AnswerSentence]) -> bool:
        """At least two of the conflict's values are stated, each in a sentence citing its chunk."""
        stated = 0
        for value in conflict.values:
            if any(value.chunk_id in s.cited_ids and self.mentions(s.text, value.value) for s in sentences):
                stated += 1
        return stated >= min(2, len(conflict.values))

    def mentions(self, text: str, value: str) -> bool:
        """The text states this value: word for word once width-normalised with lexicon aliases
        applied (１５天 = 15天), its numbers whole, or the same numbers with units, model numbers
        and dates."""
        compact_text = re.sub(r"\s+", "", self._canonical(text))
        compact_value = re.sub(r"\s+", "", self._canonical(value))
        if compact_value and _whole_value(compact_value.lower()).search(compact_text.lower()):
            return True
        value_facts = facts_of(compact_value)
        if not (value_facts.numbers or value_facts.models or value_facts.dates):
            return False
        text_facts = facts_of(compact_text)
        return (
            all(_number_supported(n, text_facts.numbers) for n in value_facts.numbers)
            and value_facts.models <= text_facts.models
            and value_facts.dates <= text_facts.dates
        )


def _whole_value(value: str) -> re.Pattern:
    """The value as written, its numbers whole: "7天" is not in "17天", "1299" not in "12990"."""
    before = r"(?<![\d.])" if value[0].isdigit() else ""
    after = r"(?![\d])" if value[-1].isdigit() else ""
    return re.compile(before + re.escape(value) + after)
