"""Offline extractive answerer: quotes the best evidence sentences, each ending in 【chunk_id】.

Deterministic and fast (no model, no per-sentence embedding): candidate sentences from the
evidence are scored by question-term overlap, matching numbers/units and model numbers, the
chunk's retrieval score, authority and recency; 1-3 non-redundant sentences that each add
something the question asked about are framed in the user's language. Conflicts are disclosed
first, newest/official first. The composed answer is checked with the Inspector on its own
evidence and anything it would reject is dropped, so the answer always passes (or becomes the
fixed refusal).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from citescope.agents.citations import (
    TRAILING_MARKS,
    after_heading,
    part_not_found,
    quotable,
    split_sentences,
    strip_citations,
)
from citescope.agents.conflicts import Conflict, ConflictValue, canonical_text
from citescope.agents.evidence import RERANK_LEG
from citescope.agents.inspector import Facts, InspectionReport, Inspector, facts_of
from citescope.agents.inspector import asked_units as asked_units_of  # _profile's local is called asked_units
from citescope.agents.product_answers import ProductAnswers, sku_fields, sku_sentence
from citescope.agents.prompts import load_prompt
from citescope.agents.question_cues import (
    AMOUNT_QUESTION,
    ASKS,
    DEFINITION_QUESTION,
    DESCRIPTION_QUESTION,
    ENGLISH_COUNTED,
    ERA_WORDS,
    IDENTITY_QUESTION,
    NUMERIC_QUESTION,
    PRIZE_STATED,
    QUESTION_WORD,
    RELATIONS,
    TIME_EXPRESSION,
    WHEN_QUESTION,
    WHO_QUESTION,
    asked_focus,
    compound_parts,
    editions,
    gendered_events,
    names_a_sibling,
    names_someone,
    other_edition,
    other_gender_event,
    states_amount,
)
from citescope.knowledge.chinese_script import to_simplified
from citescope.knowledge.chunking import PIECE_ID, SKU_OVERVIEW_SECTION, TABLE_ROW_ID, row_cells
from citescope.knowledge.crosslingual import everyday_words, worded_for
from citescope.knowledge.filters import day_number
from citescope.knowledge.lexicon import Lexicon
from citescope.knowledge.schema import in_users_voice
from citescope.knowledge.text import (
    ASKED_YEAR,
    CJK_CHAR,
    YEAR,
    bigram_dice,
    has_term,
    is_english,
    is_faq,
    model_numbers,
    normalize,
    series_names,
    tokenize,
    unglued,
)
from citescope.tools.base import EvidenceHit

if TYPE_CHECKING:
    from citescope.tools.products import SizeAdvice

# A year a value is compared with (比2021年下降0.75个千分点, 超过2022清明档): the sentence's value is
# another year's.
_COMPARED_YEAR = re.compile(
    r"(?:[比较]|超过|超出|高于|低于|多于|少于|不及|相比于?)\s*((?:19|20)\d{2})(?=\s*年|[\u4e00-\u9fff])"
    r"|((?:19|20)\d{2})\s*年?\s*同期"
)  # 是2022年同期的近90%
_QUESTION_END = re.compile(r"[？?]$")
# a sentence that announces what follows (总产量分别如下, 主要有以下几点：) states none of it
_LEAD_IN = re.compile(r"(?:如下|以下几点|以下几个方面|以下[为是][^，。,]{0,12})(?:所示)?[：:。.\s]*$")
# a web page's furniture around the article (特别声明：以上内容…, 感谢你花时间阅读这篇文章…, 热门搜索：) says nothing
_BOILERPLATE = re.compile(
    r"特别声明|免责声明|本平台仅提供|本站仅提供|版权归|转载请注明|欢迎.{0,8}光临|感谢.{0,6}阅读|帮您找到更多"
    r"|热门搜索|阅读原文|责任编辑|微信公号|阅读手机版"
)
_YES_NO_END = re.compile(r"[不没]有?\s*[？?]?\s*$")  # 可以机洗不 / 有货没: the 不 asks, it is no word to match
_PARENTHESES = re.compile(r"（[^）]*）|\([^)]*\)")
_NOT_A_PREFIX = "并本绝决实既无莫是若而亦"  # 非 after these is a verb (并非完整), not a prefix (非网民)
_END_MARK = re.compile(r"[。！？!?]+$")
_LIST_AFTER_LABEL = re.compile(r"：\s*[-*•·]\s+")
_LIST_HEADING = re.compile(r"^[^：:，。]{1,12}[：:]\s*[-*•·]\s+")  # 配送时效：- of the list's first item
_LABEL = re.compile(r"([\u4e00-\u9fffA-Za-z]{1,8})[：:]")  # 防水： of "功能特点：- 防水：整鞋浸入…"
# An FAQ reply up to this long is quoted whole, sentence by sentence: it is the shop's own
# answer to the question, and cutting it to one sentence loses conditions and steps.
_MAX_FAQ_REPLY_CHARS = 400
# An FAQ entry whose title question is this alike to the customer's (character-bigram Dice) asks
# the same thing, and its reply is the answer, from that entry alone. baoxianzhidao dev: the
# evidence entry alike at >= 0.6 was the gold one for 2087 of 2088 questions (31 of them user
# paraphrases); the sentence scorer, picking by cue words and values, had quoted another entry
# for 77 of them and refused 50.
_SAME_QUESTION = 0.6
_DISAMBIGUATION = re.compile(r"\s*[（(][^（）()]*[）)]\s*$")  # 成都道 (香港): which 成都道 the page is
_COMMON_OPENER = re.compile(
    r"(?:A|An|According|The|It|Its|This|That|These|Those|There|Our|Your|You|We|They"
    r"|Every|Each|All|Any|Some|Most|Many|No|If|When|For|In|On|At|With)\b"
)
_CAUTIOUS = "根据现有资料，"  # opens an answer whose best evidence matches under half of the question
_UNDECIDED = "资料无法判断以哪一说法为准，建议转人工客服确认"  # closes a disclosure no source outranks
_MAX_SENTENCE_CHARS = 220
_MIN_SCORE_SHARE = 0.7  # a further sentence must score this share of the best one
# The reranker's first document is right far more often than the sentence scorer's pick from
# another document (cmrc2018 dev: 98.6% vs 90% gold), so its best sentence wins when it scores
# at least this share of the overall best and matches every question word, model and asked kind
# of value (a price in 元) it matches.
_ANCHOR_SHARE = 0.75
# Term weights: entity words found in a hit's title, words naming what is asked, single characters.
_ENTITY_WEIGHT, _ASKED_WEIGHT, _CHAR_WEIGHT = 0.5, 1.5, 0.3


@dataclass
class _Question:
    years: set[str]  # years the question names (2022年): a constraint, not a topic
    tokens: set[str]  # every word of the question (a sentence made only of these restates it)
    terms: list[str]  # words worth matching (no question words), CJK runs of single characters joined
    chars: list[str]  # lone single CJK characters: weak evidence of a match
    facts: Facts
    asked_units: set[str]
    asked_words: list[str]
    relations: list[re.Pattern]  # how a sentence may state the relation asked about
    numeric: bool
    english: bool
    asks_when: bool = False
    asks_amount: bool = False
    asks_who: bool = False  # X是谁, 谁是X, 主演有谁: an article's sentence answers only with a name
    text: str = ""  # the question, canonical and lower-case
    focus: str | None = (
        None  # what a keyword question asks (冠军 of 男单冠军？) or the prize asked, when no cue says it
    )
    everyday: list[str] = field(
        default_factory=list
    )  # the documents' words for its everyday words (knowledge/crosslingual.py)
    name_numbers: set[str] = field(default_factory=set)  # numbers of the shop's names it names (the 3 of 轻羽3)
    editions: set[tuple[str, int]] = field(default_factory=set)  # editions it names (十三届五次会议)
    events: set[tuple[str, str]] = field(default_factory=set)  # men's / women's events it names (男单)

    @property
    def focus_head(self) -> str:
        """What of the focus a sentence must say: of a when-question's event (开售) only its head
        character, since the time is what is asked and 发售 names the same event."""
        focus = self.focus or ""
        return focus[-1] if self.asks_when and focus and not focus.isascii() else focus


@dataclass
class _Candidate:
    hit: EvidenceHit
    order: int  # position of the hit in the evidence list (best first)
    body: str  # the evidence sentence as written, citations and brackets removed
    tokens: set[str]
    score: float = 0.0
    term_share: float = 0.0  # weighted share of question terms the sentence matches
    answers: bool = False  # matches what is asked, not only the entity's name
    covered: set[str] = field(default_factory=set)  # question terms it covers (title included)
    entities: set[str] = field(default_factory=set)  # question terms in its title (the entity it is about)
    models: set[str] = field(default_factory=set)  # question model numbers it is about
    fact: float = 0.0  # bonus for the asked kind of value, the question's numbers and models
    on_topic: bool = True  # names (in its title or text) what the question is about
    row_named: bool | None = None  # a table row: does the question name its label (None: no row)


class ExtractiveAnswerer:
    def __init__(self, lexicon: Lexicon | None = None, max_sentences: int = 3, inspector: Inspector | None = None):
        self.lexicon = lexicon
        self.max_sentences = max_sentences
        self.inspector = inspector or Inspector(lexicon=lexicon)
        self._token_cache: dict[str, list[str]] = {}
        self.products = ProductAnswers(self._tokens, self._canonical)
        self._refusal = load_prompt("refusal").strip()  # read once: every answer is compared with it
        # the shop's own names (brands, product lines, aliases' targets), lower-case
        self._named_things = frozenset(t.lower() for t in lexicon.all_terms()) if lexicon is not None else frozenset()

    # -- entry point ----------------------------------------------------------------------
    def run(
        self,
        question: str,
        evidence: Sequence[EvidenceHit],
        conflicts: Sequence[Conflict] = (),
        feedback: InspectionReport | None = None,
        advice: SizeAdvice | None = None,
        overview: Sequence[str] = (),
    ) -> str:
        """An answer whose every factual sentence ends in 【chunk_id】, or the fixed refusal.

        With `feedback` (the inspector's report on an earlier answer), sentences it found
        unsupported or uncited are not used again. With `advice` (size_recommend's finding) whose
        rows are in the evidence, the answer is that size, why, and the stock of that size. With
        `overview` (page openings for a question about what a product is like), their first sentences.
        """
        english = self.asked_in_english(question, evidence)
        # an English question against a Chinese shop's evidence is matched by the shop's Chinese words for it
        profile = self._profile(worded_for(question, [hit.text for hit in evidence]) if english else question)
        profile.english = english
        banned: set[str] = set()
        if feedback is not None:
            banned = {u.sentence for u in feedback.unsupported} | set(feedback.uncited)
        by_id = {hit.chunk_id: hit for hit in evidence}
        pieces: list[str] = []
        disclosed_chunks: set[str] = set()
        overruled: list[str] = []  # values a disclosure said do not prevail
        for conflict in conflicts:
            if self.inspector.conflict_disclosed(conflict, split_sentences(_joined(pieces))):
                continue  # an earlier disclosure already states these values
            disclosure = self._disclose(conflict, by_id, profile.english)
            if disclosure and strip_citations(disclosure).strip() not in banned:
                pieces.append(disclosure)
                disclosed_chunks |= {v.chunk_id for v in conflict.values}
                first = conflict.values[0]
                # only a value the first one outranks (official over a review, another date) is
                # overruled; between two equal sources the disclosure settles nothing
                overruled += [
                    v.value
                    for v in conflict.values[1:]
                    if _compact(v.value) != _compact(first.value)
                    and (v.authority != first.authority or v.updated_at != first.updated_at)
                ]

        def allowed(candidate: _Candidate) -> bool:
            # After "…以最新政策为准" a sentence restating the older value would contradict it
            if any(self.inspector.mentions(candidate.body, value) for value in overruled):
                return False
            return not banned or all(
                strip_citations(self._frame(candidate, profile.english, cautious)).strip() not in banned
                for cautious in (False, True)
            )

        # read off the product tables: a worked-out size, the rows of named sizes, all variants at once
        prices_other = self.products.prices_something_else(profile, evidence)
        from_tables = self.products.run(profile, evidence, banned, advice, overview, prices_other=prices_other)
        skipped = set(disclosed_chunks)  # chunks not quoted as sentences: disclosed already, or no answer
        if not from_tables and prices_other:
            # a price of something of the product's (补一只耳机, 保修期外维修): its SKU rows' price is not it
            skipped |= {hit.chunk_id for hit in evidence if hit.section == "SKU"}
        parts = compound_parts(question)
        if from_tables:  # the parts of a compound question the tables leave (多少钱，容量多大) from the text
            # the products' names in what the tables said answer no part (防晒 of 云栖轻风防晒皮肤衣, 防晒等级多少)
            names = {hit.title for hit in evidence if hit.product_id}
            left = self._parts_not_named(parts, "".join(from_tables), names) if len(parts) > 1 else []
            more, unanswered = (
                self._select_parts(left, profile.english, evidence, skipped, len(left), allowed) if left else ([], [])
            )
            framed = [text for text in (self._frame(c, profile.english) for c in more) if text not in from_tables]
            answer = self._checked(question, evidence, conflicts, [*pieces, *from_tables, *framed])
            return self.with_parts_not_found(answer, unanswered, profile.english)
        room = self.max_sentences - len(pieces)
        chosen = self._select(profile, evidence, skipped, room, allowed)
        # Hedge when the best sentence for the whole question matches under half of it (also when
        # the parts of a compound question are answered one by one: each part's best may match
        # its part fully and still leave the question half answered); an English question cannot
        # be matched word for word against Chinese evidence, so its answer always hedges.
        half_answered = profile.english or not chosen or chosen[0].term_share < 0.5
        unanswered: list[str] = []  # parts of a compound question nothing answers, said so at the end
        # An FAQ reply answers a compound question whole when the entry asks this very question or
        # names every part (a customer's several clauses about one thing); two questions of which it
        # answers one are answered part by part.
        by_parts = False
        if len(parts) > 1 and not (
            chosen
            and is_faq(chosen[0].hit)
            and (
                chosen[0].hit.doc_id == self._same_question(profile, evidence)
                or not self._parts_not_named(parts, f"{chosen[0].hit.title} {chosen[0].hit.text}")
            )
        ):
            by_part, unanswered = self._select_parts(parts, profile.english, evidence, skipped, room, allowed)
            by_parts = bool(by_part)
            chosen, unanswered = (by_part, unanswered) if by_part else (chosen, [])
        cautious = bool(chosen) and not pieces and half_answered
        if chosen and not pieces and not profile.english and is_faq(chosen[0].hit) and not by_parts:
            reply = self._faq_reply(chosen[0].hit, evidence, banned)
            if reply:
                if cautious:
                    reply[0] = _CAUTIOUS + reply[0]
                return self._checked(question, evidence, conflicts, reply)
        for index, candidate in enumerate(chosen):
            pieces.append(self._frame(candidate, profile.english, cautious=cautious and index == 0))
        return self.with_parts_not_found(
            self._checked(question, evidence, conflicts, pieces), unanswered, profile.english
        )

    def with_parts_not_found(self, answer: str, parts: list[str], english: bool) -> str:
        """The answer, then one sentence for each part of the question nothing answers (not after a refusal)."""
        if not parts or answer == self.refusal():
            return answer
        return _joined([answer, *(part_not_found(part, english) for part in parts)])

    def warm_up(self) -> ExtractiveAnswerer:
        """Load jieba's dictionary (and the lexicon's words) now rather than on the first answer."""
        self._tokens("预热")
        self.inspector.warm_up()
        return self

    def refusal(self) -> str:
        return self._refusal

    # -- question -------------------------------------------------------------------------
    def _tokens(self, text: str) -> list[str]:
        tokens = self._token_cache.get(text)
        if tokens is None:
            if len(self._token_cache) > 20000:
                self._token_cache.clear()
            tokens = self._token_cache[text] = tokenize(text, self.lexicon)
        return tokens

    def _canonical(self, text: str) -> str:
        text = to_simplified(normalize(text))  # a page in traditional characters (震級) says what 震级 asks
        return self.lexicon.canonicalize(text) if self.lexicon is not None else text

    def _profile(self, question: str) -> _Question:
        canonical = self._canonical(question)
        terms, chars, run = [], [], []
        for token in [*(unglued(t, self.lexicon) for t in self._tokens(question)), ""]:
            single = len(token) == 1 and not token.isascii()
            if single and not QUESTION_WORD.match(token) and not (token in "不没" and _YES_NO_END.search(canonical)):
                run.append(token)
                continue
            for piece in _adjacent_runs(run, canonical):  # jieba split an unknown word (跟差) into characters
                (terms if len(piece) > 1 else chars).append(piece)
            run = []
            if token and not single and not QUESTION_WORD.match(token):
                terms.append(token)
        asks_when = bool(WHEN_QUESTION.search(canonical))
        counted = set(ENGLISH_COUNTED.findall(canonical.lower())) | (set(ERA_WORDS) if asks_when else set())
        terms = [t for t in terms if t not in counted]
        asked_units, asked_words = asked_units_of(canonical), []
        for pattern, units, words in ASKS:
            if pattern.search(canonical):
                asked_units |= units
                asked_words += words
        relations = [cue for pattern, cue in RELATIONS if pattern.search(canonical)]
        # the documents' words for a shopper's everyday ones (洗澡 -> 淋浴, 寄到上海 -> 江浙沪) say what is asked
        everyday = [w.lower() for w in everyday_words(canonical)]
        asked_words += everyday
        if self.lexicon is not None:
            for key, values in self.lexicon.synonyms.items():
                group = [key, *values]
                if any(word.lower() in canonical.lower() for word in group):
                    asked_words += group
        return _Question(
            years=set(ASKED_YEAR.findall(canonical)),
            tokens=set(self._tokens(canonical)),
            terms=list(dict.fromkeys(terms)),
            chars=list(dict.fromkeys(chars)),
            facts=facts_of(canonical),
            asked_units=asked_units,
            asked_words=[w.lower() for w in asked_words],
            relations=relations,
            numeric=bool(NUMERIC_QUESTION.search(canonical)),
            english=is_english(canonical),
            asks_when=asks_when,
            text=canonical.lower(),
            asks_amount=bool(AMOUNT_QUESTION.search(canonical)),
            asks_who=bool(WHO_QUESTION.search(canonical)),
            everyday=everyday,
            name_numbers={value for t in terms if t in self._named_things for value, _ in facts_of(t).numbers},
            editions=editions(canonical),
            events=gendered_events(canonical),
            # a kind of value or a relation asked (多少钱, 在哪里) says what answers instead
            focus=None if asked_units or asked_words or relations else asked_focus(canonical),
        )

    # -- candidates -------------------------------------------------------------------------
    def _candidates(
        self, question: _Question, evidence: Sequence[EvidenceHit], skip_chunks: set[str]
    ) -> list[_Candidate]:
        newest = max((day_number(h.updated_at) for h in evidence), default=0)
        # Question words in the title of the best-ranked evidence (张世昌 of 张世昌的职业是什么) name
        # what the question is about: a sentence whose title and text name none of them is about
        # something else, however well it matches the rest (布拉德利职业生涯…). Only the first
        # hit's: a lower one's title may merely share a word (广州番禺职业技术学院).
        lead = next((h for h in evidence if not is_faq(h)), None)
        lead_title = self._canonical(lead.title).lower() if lead is not None else ""
        named = {t for t in question.terms if has_term(lead_title, t)}
        # 蟒鳗 of 蟒鳗又被称为什么 (jieba: 蟒鳗被); 成都道 of the page 成都道 (香港), whatever it disambiguates
        lead_name = _DISAMBIGUATION.sub("", lead_title)
        if len(lead_name) >= 2 and lead_name in question.text:
            named.add(lead_name)
        asks_definition = any(DEFINITION_QUESTION.match(question.text.replace(n, "", 1).strip()) for n in named)
        # built once per question, matched against every sentence
        identity_openers = [_definition_opener(n) for n in named] if IDENTITY_QUESTION.search(question.text) else []
        # what kind of thing X is or does (X有什么作用): said by a sentence opening "X（…）是…" / "X，…" -
        # not "X得知此事，…", which only tells of it
        if DESCRIPTION_QUESTION.search(question.text):
            identity_openers += [_definition_opener(n, strict=True) for n in named]
        candidates = []
        for order, hit in enumerate(evidence):
            # A SKU overview answers for all variants at once (ProductAnswers); as one more
            # sentence it would outscore the row of the variant a question names (雪山白L码还有吗).
            if hit.chunk_id in skip_chunks or hit.section == SKU_OVERVIEW_SECTION:
                continue
            title = self._canonical(hit.title).lower()
            label_tokens = set(self._tokens(self._canonical(f"{hit.title} {hit.section}")))
            title_facts = facts_of(self._canonical(hit.title))
            title_models = title_facts.models
            # Question words in a product's or policy's title only name the entity; the other
            # words name what is asked and must be in the sentence. A FAQ title is a question,
            # so there a title match is as good as a sentence match.
            faq = is_faq(hit)
            shop_wide = _shop_wide(hit)
            entity = set() if faq else {t for t in question.terms if has_term(title, t)}
            sibling = not faq and names_a_sibling(question.text, title, hit.text.lower())
            # the second thing of a comparison (T20和T24…, 峰刃和暖岩…): a title naming a model number or
            # a name of the shop's lexicon the question names is about that, whatever the lead is about
            names_another = bool(title_models & question.facts.models) or any(
                has_term(title, t) for t in question.terms if t in self._named_things
            )
            # a page of the lead page's series about another name than the question's (2022年河北省…
            # beside 2022年辽宁省… for 辽宁省…的分数线): its rows are that other place's
            other = series_names(lead_title, title) if lead_title and not faq else None
            other_page = bool(other) and other[0] in question.text and other[1] not in question.text
            total = (
                _ENTITY_WEIGHT * len(entity)
                + _ASKED_WEIGHT * (len(question.terms) - len(entity))
                + _CHAR_WEIGHT * len(question.chars)
            )
            prior = hit.legs[RERANK_LEG].score if RERANK_LEG in hit.legs else 1.0 - order / max(len(evidence), 1)
            context = (
                0.4 * prior
                + 0.05 * (not in_users_voice(hit.doc_type, hit.authority))
                + 0.05 * (day_number(hit.updated_at) == newest)
            )
            # Evidence that never names the year asked about is about another year.
            wrong_year = bool(question.years) and not question.years & set(YEAR.findall(f"{hit.title} {hit.text}"))
            for sentence in split_sentences(hit.text):
                # a question in the evidence answers nothing, nor a lead-in to what follows or a page's furniture
                if (
                    _QUESTION_END.search(sentence.text.strip())
                    or _LEAD_IN.search(sentence.text)
                    or _BOILERPLATE.search(sentence.text)
                ):
                    continue
                body = quotable(sentence.text)
                if hit.section != "SKU":  # a SKU row is framed from all its fields (sku_sentence)
                    body = self._asked_cells(body, question)
                if len(re.findall(r"\w", body)) < 4 or len(body) > _MAX_SENTENCE_CHARS:
                    continue
                canonical = self._canonical(body)
                tokens = set(self._tokens(canonical))
                if tokens <= label_tokens:  # a bare heading or table label says nothing
                    continue
                searched = f"{title} {canonical.lower()}" if faq else canonical.lower()
                facts = facts_of(canonical)
                asked = {t for t in question.terms if t not in entity and has_term(searched, t)}
                chars = {c for c in question.chars if c in searched}
                share = (
                    (_ENTITY_WEIGHT * len(entity) + _ASKED_WEIGHT * len(asked) + _CHAR_WEIGHT * len(chars)) / total
                    if total
                    else 0.0
                )
                # A product chunk that mentions another model (请选择 XZ-3000) is still about its own;
                # a name typed glued (EMNLP2022) is the one written apart (EMNLP 2022会议).
                models = question.facts.models & (title_models or facts.models | model_numbers(_glued(canonical)))
                # a product's table row repeats its page's title (…防水徒步鞋 尺码表 — 尺码: 41): a cue word in
                # the title names the product, so the row says nothing of it
                said = (
                    searched.replace(title, " ")
                    if hit.product_id and title and TABLE_ROW_ID.search(hit.chunk_id)
                    else searched
                )
                score, answers = self._fact_score(question, facts, title_facts, models, said)
                names_a_time = question.asks_when and bool(TIME_EXPRESSION.search(canonical))
                score += 0.4 * names_a_time
                # each of the documents' words for the question's everyday ones it says (江浙沪 and 送达, not only 送达);
                # not in the heading its list opens with (配送时效：- 江浙沪地区：…), which every item of the list shares
                item = _LIST_HEADING.sub("", searched, count=1)
                score += 0.2 * sum(has_term(item, w) for w in question.everyday)
                # a line labelled with a word of the question (防水：整鞋浸入… for 防水吗) states it, more than a
                # line that mentions it in passing (可定期喷涂防水喷雾); not a synonym's label (重量： for 多重的人)
                score += 0.3 * bool({label.lower() for label in _LABEL.findall(body[:24])} & set(question.terms))
                # a table row whose label the question names whole (金融学类, not 金融学(中外合作办学))
                label = _row_label(body) if hit.section != "SKU" else None  # a SKU row is a variant, no table row
                row_named = None if label is None else has_term(question.text, self._canonical(label).lower())
                score += 0.5 * bool(row_named)
                # It answers when it has a word of what is asked, or when nothing is asked beyond
                # the entity itself ("XZ-3000 怎么样").
                nothing_asked = not (
                    set(question.terms) - entity or question.chars or question.asked_words or question.asked_units
                )
                # A sentence made only of the question's (and its title's) words restates it.
                restates = tokens <= question.tokens | label_tokens
                # An FAQ entry is about its title question, which retrieval matched to this one.
                about = f"{title} {canonical.lower()}"
                # a shop's policy holds for every product, naming none (运费 to 新疆 for 暖岩寄到新疆要运费吗)
                off_topic = (
                    sibling
                    or other_page
                    or (
                        not shop_wide
                        and bool(named)
                        and not any(has_term(about, n) for n in named)
                        and not names_another
                    )
                )
                defines = (asks_definition and any(canonical.lower().startswith(n) for n in named)) or any(
                    opener.match(canonical.lower()) for opener in identity_openers
                )
                # a sentence naming the asked year only as what it is compared with is about another year
                compared_only = bool(question.years & set(YEAR.findall(canonical))) and not (
                    question.years & set(YEAR.findall(_COMPARED_YEAR.sub(" ", canonical)))
                )
                # a sentence dating its fact to other years only (2021年年度词汇 for 2022年) is about
                # those years; a question about when may be answered by a date of the year before
                dated = set(YEAR.findall(_PARENTHESES.sub(" ", canonical)))  # not 梁雅琳（1987-）
                other_year = (
                    bool(question.years) and not question.asks_when and bool(dated) and not question.years & dated
                )
                other_edition_only = bool(question.editions) and other_edition(question.editions, editions(canonical))
                other_event = bool(question.events) and other_gender_event(question.events, gendered_events(canonical))
                # 网民 asked, only 非网民 said: the sentence is about the others
                negated = any(_only_negated(searched, t, question.text) for t in question.terms)
                # 谁获得了金牌 is not answered by 他获得了银牌, however much else matches
                unfocused = (
                    question.focus is not None
                    and not has_term(title, question.focus)
                    and not _mentions(searched, question.focus_head)
                )
                # how many of something named by single characters only, beside the entity (C65有几个口: 口): a
                # sentence with them all and an amount answers (a relation's 叫 of 又叫什么 needs its cue instead)
                by_chars = (
                    question.numeric
                    and bool(question.chars)
                    and not set(question.terms) - entity
                    and chars == set(question.chars)
                    and states_amount(canonical, question.text)
                )
                answers = (
                    (answers or bool(asked) or by_chars or nothing_asked or names_a_time or defines)
                    and not restates
                    and not wrong_year
                    and not compared_only
                    and not other_year
                    and not negated
                    and not other_edition_only
                    and not other_event
                    and not off_topic
                    and not (unfocused and not defines)
                    and (names_a_time or not question.asks_when)
                    and (not question.asks_amount or states_amount(canonical, question.text))
                    # an article must name who (a FAQ's or the shop's 谁 is a party: 受益人, 买家)
                    and (
                        not question.asks_who or faq or hit.doc_type != "doc" or names_someone(searched, question.text)
                    )
                )  # an article's: its text lower-cased
                candidates.append(
                    _Candidate(
                        hit,
                        order,
                        body,
                        tokens,
                        1.6 * share + score + context,
                        share,
                        answers,
                        asked | entity,
                        entity,
                        models,
                        score,
                        not off_topic,
                        row_named,
                    )
                )
        # the question names a row of the tables shown (法学): another row (金融学类) answers nothing
        if any(c.row_named for c in candidates):
            for candidate in candidates:
                candidate.answers = candidate.answers and candidate.row_named is not False
        candidates.sort(key=lambda c: (-c.score, c.order))
        return candidates

    @staticmethod
    def _asked_cells(body: str, question: _Question) -> str:
        """A table row (列: 值；列: 值…) cut to its first cell and the cells whose column names most
        of the question's words (专业名称: 金融学类；理工/物理类最低: 673 for 理工…最低是多少): one value
        was asked, not the row. A row none of whose columns the question names is kept whole."""
        prefix, dash, cells = body.rpartition(" — ")
        row = row_cells(cells)
        if len(row) < 4 or len(row) != cells.count("；") + 1:  # not a row of cells, or a short one
            return body
        # a column named by the question's words, or by the unit it asks in (几天: 建议出行天数)
        words = [*question.terms, *question.chars, *(u for u in question.asked_units if CJK_CHAR.search(u))]
        named = {column: sum(has_term(column.lower(), word) for word in words) for column in list(row)[1:]}
        best = max(named.values())
        kept = [column for column, count in named.items() if count == best]
        if best == 0 or len(kept) == len(named):
            return body
        return prefix + dash + "；".join(f"{column}: {row[column]}" for column in [next(iter(row)), *kept])

    @staticmethod
    def _fact_score(
        question: _Question, facts: Facts, title_facts: Facts, models: set[str], searched: str
    ) -> tuple[float, bool]:
        """Bonus for the asked kind of value (unit, cue word), the question's numbers and its model
        numbers (`models`: those the sentence or its title names).

        A question number that is part of the hit's title (the 1 of Air Jordan 1) names the
        entity, so finding it in the sentence answers nothing.
        """
        score = 0.0
        cue = any(word in searched for word in question.asked_words) or any(
            relation.search(searched) for relation in question.relations
        )
        score += 0.3 * cue
        # A value in the unit asked for (74Wh for 多少Wh) states what is asked.
        in_unit = bool(question.asked_units) and any(unit in question.asked_units for _, unit in facts.numbers)
        if in_unit:
            score += 0.4
        elif question.numeric and facts.numbers:
            score += 0.1
        title_numbers = {v for v, _ in title_facts.numbers}
        # nor does the number of another name the question names (the 3 of 轻羽3 in 库存: 3件)
        shared = {v for v, _ in question.facts.numbers} & {
            v for v, _ in facts.numbers
        } - title_numbers - question.name_numbers
        if question.facts.numbers:
            score += 0.3 * len(shared) / len(question.facts.numbers)
        if question.facts.models:
            score += 0.6 * len(models) / len(question.facts.models) - (0.0 if models else 0.6)
        return score, cue or bool(shared) or in_unit

    def _select(
        self,
        question: _Question,
        evidence: Sequence[EvidenceHit],
        skip_chunks: set[str],
        room: int,
        allowed: Callable[[_Candidate], bool],
        scored: list[_Candidate] | None = None,
    ) -> list[_Candidate]:
        """The best sentence, then up to room-1 more that each add a question word or model.
        scored: the question's candidates when the caller has them already."""
        if room <= 0 or not evidence:
            return []
        if scored is None:
            scored = self._candidates(question, evidence, skip_chunks)
        candidates = [c for c in scored if allowed(c)]
        same = self._same_question(question, evidence)
        if same is not None and any(c.hit.doc_id == same for c in candidates):
            # the shop already answered this very question: quote that entry, nothing else
            candidates = [c for c in candidates if c.hit.doc_id == same]
            candidates[0].answers = True
        if not candidates:
            return []
        # Sentences about something else may outscore the best one that is on topic: never it.
        best = next((c for c in candidates if c.on_topic), candidates[0])
        anchor_doc = evidence[0].doc_id
        if not best.answers:  # a close second of the first document that says what is asked beats a refusal
            best = next(
                (
                    c
                    for c in candidates
                    if c.answers
                    and c.on_topic
                    and c.hit.doc_id == anchor_doc
                    and c.score >= _MIN_SCORE_SHARE * best.score
                ),
                best,
            )
        if best.hit.doc_id != anchor_doc:
            anchored = next((c for c in candidates if c.hit.doc_id == anchor_doc and c.answers), None)
            if (
                anchored is not None
                and anchored.score >= _ANCHOR_SHARE * best.score
                and best.covered <= anchored.covered
                and best.models <= anchored.models
                and anchored.fact >= best.fact
            ):
                best = anchored
        # only the entity matched: nothing answers (an English question cannot be matched word for
        # word against Chinese evidence; against English evidence it can)
        if not (best.answers or question.english and CJK_CHAR.search(best.hit.text)):
            return []
        chosen = [best]
        # after a shop-wide answer, which holds for every product, a product's page adds none
        entities_add = not _shop_wide(best.hit)
        while len(chosen) < room:
            covered = set().union(*(c.covered for c in chosen))
            entities = set().union(*(c.entities for c in chosen))
            models = set().union(*(c.models for c in chosen))
            chosen_chunks = {c.hit.chunk_id for c in chosen}
            chosen_docs = {c.hit.doc_id for c in chosen}
            pick, pick_gain = None, 0.0
            for candidate in candidates:
                if not candidate.on_topic or any(candidate is c or _redundant(candidate, c) for c in chosen):
                    continue
                new_models = len(candidate.models - models) / max(len(question.facts.models), 1)
                new_terms = len(candidate.covered - covered) / max(len(question.terms), 1)
                # Another chunk must add a question word or model; the same chunk a question word;
                # another document a model or an entity the question names (the second product
                # of a comparison) - every further document cited is one more chance to cite a
                # source that does not hold the answer.
                if not (new_models or new_terms) or (candidate.hit.chunk_id in chosen_chunks and not new_terms):
                    continue
                if candidate.hit.doc_id not in chosen_docs and not (
                    new_models or entities_add and candidate.entities - entities
                ):
                    continue
                gain = candidate.score + 0.8 * new_models + 0.4 * new_terms
                if gain >= _MIN_SCORE_SHARE * best.score and gain > pick_gain:
                    pick, pick_gain = candidate, gain
            if pick is None:
                break
            chosen.append(pick)
        return chosen

    def _select_parts(
        self,
        parts: list[str],
        english: bool,
        evidence: Sequence[EvidenceHit],
        skip_chunks: set[str],
        room: int,
        allowed: Callable[[_Candidate], bool],
    ) -> tuple[list[_Candidate], list[str]]:
        """The best sentences for each part of a compound question (2022年和2023年…, 主演和导演),
        in the order asked: one sentence per part at least, the same sentence only once; and the
        parts no sentence answers (not even one an earlier part quoted: 时间和地点 in one sentence).
        A part is answered only by a sentence (or its title) with a word of that part alone: 考研
        of 2022年考研和高考报名人数, which a sentence about 高考 lacks however much else it shares."""
        profiles = [self._profile(part) for part in parts]
        chosen: list[_Candidate] = []
        unanswered: list[tuple[str, list[str]]] = []

        def names_any(candidate: _Candidate, terms: list[str], heads: bool = False) -> bool:
            text = self._canonical(f"{candidate.hit.title} {candidate.body}").lower()
            # heads: a word's last character, which names what the word is (棉 of 纯棉 in 100% 棉华达呢)
            return any(
                has_term(text, term) or heads and CJK_CHAR.fullmatch(term[-1]) and term[-1] in text for term in terms
            )

        for part, profile in zip(parts, profiles, strict=False):
            profile.english = english
            own = _own_terms(profile, [p for p in profiles if p is not profile])

            def about(candidate: _Candidate) -> bool:
                return allowed(candidate) and (not own or names_any(candidate, own))

            def new(candidate: _Candidate) -> bool:  # what an earlier part quoted answers that part
                return about(candidate) and all(candidate.body != c.body for c in chosen)

            scored = self._candidates(profile, evidence, skip_chunks)  # scored once, selected from twice
            picked = self._select(profile, evidence, skip_chunks, max(1, room // len(parts)), new, scored)
            if not picked and own and not self._select(profile, evidence, skip_chunks, 1, about, scored):
                unanswered.append((part, own))
            chosen += picked
        # a part is said to be unanswered only when no quoted sentence names it, or the head of one of its
        # words, either (它能给笔记本充电吗 is answered by the 可以给…笔记本电脑供电 another part quoted, though
        # it answers that part by the rules; 纯棉的吗 by 100% 棉华达呢): a wrong "not found" misleads
        return _one_per_row(chosen), [
            part for part, own in unanswered if not any(names_any(c, own, heads=True) for c in chosen)
        ]

    def _parts_not_named(self, parts: list[str], text: str, names: Collection[str] = ()) -> list[str]:
        """The parts of a compound question the text does not speak to: it names no word of the part
        that no other part has (退款 of 退款几天到账 in a reply about 退货运费), or, for a part whose
        words are all shared or ask a kind of value (容量多大), it states no value of that kind.
        names: what the text names its subject by (a product's name, read off its tables): a word of
        those says nothing a part asks, so a part asking a kind of value is spoken to by that kind
        (峰刃冲峰衣多少钱 by 1599.00元) and another by a word of its own beyond them (防晒等级 by 等级)."""
        profiles = [self._profile(part) for part in parts]
        text = self._canonical(text).lower()
        names = [self._canonical(name).lower() for name in names]
        for name in sorted(names, key=len, reverse=True):  # 20000mAh of its name states no 容量
            text = text.replace(name, " ")
        units = {unit for _, unit in facts_of(text).numbers}
        left = []
        for part, profile in zip(parts, profiles, strict=False):
            own = _own_terms(profile, [p for p in profiles if p is not profile])
            if names:
                beyond = [term for term in own if not any(has_term(name, term) for name in names)]
                missing = (
                    not profile.asked_units & units
                    if profile.asked_units
                    else bool(beyond) and not any(has_term(text, term) for term in beyond)
                )
            else:
                missing = (
                    own
                    and not any(has_term(text, term) for term in own)
                    or (not own and profile.asked_units and not profile.asked_units & units)
                )
            if missing:
                left.append(part)
        return left

    def asked_in_english(self, question: str, evidence: Sequence[EvidenceHit] = ()) -> bool:
        """Is the question English, beyond the names of what the evidence is about ("AJ1 Retro" is
        canonical "Air Jordan 1 Retro", a product name, not English)? The pipeline asks this too, so
        a refusal and an answer agree on the language."""
        return is_english(self._canonical(question), names=" ".join(self._canonical(hit.title) for hit in evidence))

    def _same_question(self, question: _Question, evidence: Sequence[EvidenceHit]) -> str | None:
        """The doc id of the evidence FAQ entry whose title asks what the customer asks (the
        most alike, the better ranked on a tie), or None."""
        best, best_match = None, _SAME_QUESTION
        for hit in evidence:
            if is_faq(hit):
                match = bigram_dice(question.text, self._canonical(hit.title).lower())
                if match >= best_match + (1e-9 if best is not None else 0.0):
                    best, best_match = hit.doc_id, match
        return best

    # -- composing --------------------------------------------------------------------------
    def _faq_reply(self, hit: EvidenceHit, evidence: Sequence[EvidenceHit], banned: set[str]) -> list[str]:
        """An FAQ entry's reply, every sentence as written and cited with its chunk; [] when too long.

        A reply longer than a chunk is cut into overlapping chunks: with the next ones of the entry
        shown too (one run of them), it is quoted across them, what a chunk repeats of the one
        before said once; if that runs over _MAX_FAQ_REPLY_CHARS, from `hit` alone."""
        for chunks in (_consecutive_pieces(hit, evidence), [hit]):
            sentences: list[tuple[str, str]] = []
            said = ""
            for chunk in chunks:
                for sentence in split_sentences(chunk.text):
                    if sentence.text.strip() and sentence.text.strip() in said:
                        continue  # the overlap with the chunk before
                    said += sentence.text
                    sentences.append((sentence.text, chunk.chunk_id))
            if sentences and len(said) <= _MAX_FAQ_REPLY_CHARS:
                break
        else:
            return []
        pieces = []
        for text, chunk_id in sentences:
            body = quotable(text)
            if not body or body in banned:
                continue
            end = _END_MARK.search(strip_citations(text).strip())
            pieces.append(f"{body}【{chunk_id}】{end.group(0)[0] if end else '。'}")
        return pieces

    def _frame(self, candidate: _Candidate, english: bool, cautious: bool = False) -> str:
        """The quoted sentence with a short frame (whose product/policy, user voice), cited."""
        hit, title = candidate.hit, quotable(candidate.hit.title)
        body = _LIST_AFTER_LABEL.sub("：", candidate.body)  # "功能特点：- 单口输出" reads "功能特点：单口输出"
        headed = bool(hit.section) and body.startswith(hit.section + "：")
        rest = after_heading(body, hit.section) or body
        # The shop's own SKU table only: a stranger's review laid out like one keeps its "有用户评价称".
        official_row = hit.section == "SKU" and hit.doc_type == "product" and hit.authority == "official"
        sku = sku_fields(candidate.body) if official_row else None
        user_voice = in_users_voice(hit.doc_type, hit.authority)
        if english:
            if sku:
                framed = sku_sentence(sku, title, english=True)
            elif user_voice:
                framed = f"A user {'review' if hit.doc_type == 'review' else 'post'} says: {body}"
            elif hit.doc_type in ("product", "policy") and title and not self._names_title(body, title):
                framed = f"According to “{title}”: {body}"
            else:
                framed = body
            if cautious:  # "The charger…" reads "…, the charger…"; a name keeps its capital
                framed = "Based on the available information, " + (
                    framed[:1].lower() + framed[1:] if _COMMON_OPENER.match(framed) else framed
                )
            return f"{TRAILING_MARKS.sub('', framed)}【{hit.chunk_id}】."
        if sku:
            framed = sku_sentence(sku, title)
        elif hit.doc_type == "review":
            framed = f"有用户评价称：{body}"
        elif user_voice:
            framed = f"有用户分享：{body}"
        elif hit.doc_type == "policy" and title and title not in body:
            framed = f"根据《{title}》，{rest}"
        elif hit.doc_type == "product" and title and not self._names_title(body, title):
            framed = f"{title}的{hit.section}：{rest}" if headed else f"{title}：{body}"
        elif hit.doc_type == "product" and headed:  # the page's own words name it: no "商品简介：" before them
            framed = rest
        else:
            framed = body
        framed = (_CAUTIOUS + framed) if cautious else framed
        return f"{TRAILING_MARKS.sub('', framed)}【{hit.chunk_id}】。"

    def _names_title(self, body: str, title: str) -> bool:
        """Does the sentence already name its product (its model number, else a title word)?"""
        title_models = facts_of(title).models
        if title_models:
            return bool(title_models & facts_of(body).models)
        # whole title words only (星择, 氮化镓充电器), not their pieces (充电 would match anything)
        words = [w for w in self._tokens(title) if len(w) >= 2 and not re.fullmatch(r"[\d.]+[a-z]*", w)]
        whole = [w for w in words if not any(w != other and w in other for other in words)]
        return any(w in body.lower() for w in whole)

    def _disclose(self, conflict: Conflict, by_id: dict[str, EvidenceHit], english: bool) -> str:
        """One sentence stating the conflicting values, each cited: official before user reports,
        else newest first, or nearest the asked time first (the detector's order)."""
        values, seen = [], set()
        for value in conflict.values:
            if value.chunk_id in by_id and value.chunk_id not in seen:
                seen.add(value.chunk_id)
                values.append(value)
        if len(values) < 2:
            return ""
        statements = [(v, by_id[v.chunk_id], _statement(v, by_id[v.chunk_id])) for v in values[:3]]
        parts = []
        if len({v.authority for v, _, _ in statements}) > 1:
            statements.sort(key=lambda s: s[0].authority != "official")
            for value, hit, text in statements:
                if value.authority == "official":
                    source = quotable(hit.source) or ("product page" if english else "详情页")
                    parts.append(
                        f"the official {source} says: {text}【{hit.chunk_id}】"
                        if english
                        else f"官方{source}显示：{text}【{hit.chunk_id}】"
                    )
                elif english:
                    kind = "review" if hit.doc_type == "review" else "post"
                    parts.append(f"however a user {kind} says: {text}【{hit.chunk_id}】")
                else:
                    kind = "评价" if hit.doc_type == "review" else "分享"
                    parts.append(f"但有用户{kind}称：{text}【{hit.chunk_id}】")
            if english:
                sentence = "; ".join(parts)
                return sentence[0].upper() + sentence[1:] + "."
            return "；".join(parts) + "。"
        dates = set()
        for index, (value, hit, text) in enumerate(statements):
            date = value.updated_at or hit.updated_at
            dates.add(date)
            title = quotable(hit.title)
            if english:
                label = f"“{title}”" if title else ("one source" if index == 0 else "another source")
                parts.append(label + (f" ({date})" if date else "") + f" says: {text}【{hit.chunk_id}】")
            elif title:
                parts.append((f"{date} 的" if date else "") + f"《{title}》为：{text}【{hit.chunk_id}】")
            else:  # untitled passages (search snippets): told apart by order, not by a name they lack
                parts.append(
                    ("有" if index == 0 else "另有")
                    + (f" {date} 的" if date else "")
                    + f"来源称：{text}【{hit.chunk_id}】"
                )
        # Sources of one authority and no dates give no ground to prefer one: say so, never pick.
        undecided = not conflict.as_of and len(dates) == 1
        if english:
            prevails = "the one nearest the time asked about" if conflict.as_of else "the newest one"
            close = (
                "they do not show which holds, please check with customer service"
                if undecided
                else f"{prevails} prevails"
            )
            return "Sources disagree: " + "; ".join(parts) + f"; {close}."
        kind = "政策" if all(h.doc_type == "policy" for _, h, _ in statements) else "信息"
        prevails = f"以最接近所问时间的{kind}为准" if conflict.as_of else f"以最新{kind}为准"
        return "不同来源说法不一致：" + "；".join(parts) + f"，{_UNDECIDED if undecided else prevails}。"

    def _checked(
        self, question: str, evidence: Sequence[EvidenceHit], conflicts: Sequence[Conflict], pieces: list[str]
    ) -> str:
        """Drop pieces the inspector rejects (unsupported, uncited); none left -> the refusal.

        A failure that dropping whole pieces cannot repair also ends in the refusal, except an
        undisclosed conflict (whose values were not in the evidence): that is left for the
        pipeline to see in its own inspection.
        """
        while pieces:
            report = self.inspector.run(_joined(pieces), evidence, conflicts, question)
            if report.passed:
                break
            bad = {u.sentence for u in report.unsupported} | set(report.uncited)
            kept = [p for p in pieces if strip_citations(p).strip() not in bad]
            if len(kept) == len(pieces):
                if bad or report.invalid_ids:
                    pieces = []
                break
            pieces = kept
        return _joined(pieces) if pieces else self.refusal()


def _joined(pieces: list[str]) -> str:
    """The answer's sentences in order, an English one (According to…) a space after the one before."""
    text = ""
    for piece in pieces:
        text += (" " if text[-1:] in (".", "!", "?", ";") and "A" <= piece[:1] <= "Z" else "") + piece
    return text


def _row_label(body: str) -> str | None:
    """The first cell's value of a table row (… — 专业名称: 金融学类；…: …), or None for a sentence."""
    cells = row_cells(body.rpartition(" — ")[2])
    return next(iter(cells.values()), None) if len(cells) >= 2 else None


def _definition_opener(name: str, strict: bool = False) -> re.Pattern:
    """Matches a sentence that opens by saying what `name` is: 列卡度·华斯迪（…），葡萄牙足球运动员 /
    X是一款…, not 张世昌在天津火车头效力时…; strict: nothing between the name (and its
    parentheses) and 是/为/the comma (黄埔港是一个…, not 小灰头稚冠雉栖息在热带森林，…)."""
    between = "" if strict else "[^，,。；;（(]{0,8}?"
    # the name's other names come first in either form: 首席部长或首席厅长，… / 社会惰化也叫社会干扰、…，是…
    aliases = r"(?:(?:或(?![许者])|或称|又称|又名|也叫|也称|亦称|简称|俗称)[^，,。；;（(]{1,20}?)?"
    return re.compile(rf"{re.escape(name)}{between}(?:[（(][^）)]*[）)])?{aliases}\s*(?:[，,]|是|为)")


def _adjacent_runs(run: list[str], text: str) -> list[str]:
    """Single characters joined only where they stand together in the text: 曹文埴的字 drops 的 as
    a stop word, and 埴 + 字 is no word of the question."""
    pieces: list[str] = []
    for char in run:
        if pieces and pieces[-1] + char in text:
            pieces[-1] += char
        else:
            pieces.append(char)
    return pieces


def _only_negated(text: str, term: str, question: str) -> bool:
    """Whether `text` names a CJK question term only with the prefix 非 (非网民 for 网民) that the
    question does not write itself (非都市区); 非 after 本/并/… is "is not" and negates no noun."""
    if term.isascii() or f"非{term}" in question or f"非{term}" not in text:
        return False
    prefixed = re.compile(rf"(?<![{_NOT_A_PREFIX}])非{re.escape(term)}")
    return prefixed.search(text) is not None and term not in prefixed.sub("", text)


def _own_terms(part: _Question, others: Sequence[_Question]) -> list[str]:
    """The words of one part of a compound question no other part has (考研 / 高考, 主演 / 导演),
    except the words of what kind of value is asked (时间, 地点, 价格): a sentence answers those
    with a time, a place, a price, not with the word. The documents' words for its everyday ones count
    (江浙沪, 送达 of 我在上海几天能到)."""
    shared = set().union(*(other.terms for other in others), *(other.everyday for other in others))
    return [term for term in [*part.terms, *part.everyday] if term not in shared and not _asks_a_kind(term)]


def _asks_a_kind(term: str) -> bool:
    return bool(WHEN_QUESTION.search(term) or any(pattern.search(term) for pattern, *_ in (*ASKS, *RELATIONS)))


_LETTERS_APART_FROM_DIGITS = re.compile(r"(?<=[A-Za-z]) (?=\d)")


def _glued(text: str) -> str:
    """The text with a name's letters and digits written apart joined (EMNLP 2022 -> EMNLP2022)."""
    return _LETTERS_APART_FROM_DIGITS.sub("", text)


def _mentions(text: str, word: str) -> bool:
    """The word, or for a longer one two of its characters in a row (出生 of 出生率, 听证 of 听证会);
    a prize also as a sentence says it was won (夺冠)."""
    if has_term(text, word) or (word in PRIZE_STATED and PRIZE_STATED[word].search(text)):
        return True
    if word.startswith("最佳"):  # 最佳影片 is not said by 最佳导演: no two characters will do
        return False
    return len(word) >= 3 and not word.isascii() and any(word[i : i + 2] in text for i in range(len(word) - 1))


def _compact(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _statement(value: ConflictValue, hit: EvidenceHit) -> str:
    """The sentence that carries a conflicting value: as the evidence writes it when that is the
    detector's whole sentence and the value reads the same there (在队两年多, not the canonical
    在队2年多), else the detector's; failing both, the value itself."""
    sentence = quotable(value.sentence or "")
    wanted = _compact(sentence)
    for candidate in split_sentences(hit.text):
        raw = quotable(candidate.text)
        if wanted and wanted == _compact(canonical_text(raw)) and _compact(value.value) in _compact(raw):
            sentence = raw
            break
    sentence = after_heading(sentence, hit.section)
    if sentence and _compact(value.value) in _compact(sentence) and len(sentence) <= _MAX_SENTENCE_CHARS:
        return sentence
    return quotable(value.value)


def _consecutive_pieces(hit: EvidenceHit, evidence: Sequence[EvidenceHit]) -> list[EvidenceHit]:
    """The evidence chunks of hit's section cut from one text (…#body-0, …#body-1), in order: the run
    of consecutive pieces that holds hit."""
    own = PIECE_ID.search(hit.chunk_id)
    if own is None:
        return [hit]
    prefix = hit.chunk_id[: own.start()]
    numbered = {
        int(number.group(1)): chunk
        for chunk in evidence
        if (number := PIECE_ID.search(chunk.chunk_id)) and chunk.chunk_id[: number.start()] == prefix
    }
    first = last = int(own.group(1))
    while first - 1 in numbered:
        first -= 1
    while last + 1 in numbered:
        last += 1
    return [numbered.get(number, hit) for number in range(first, last + 1)]


def _one_per_row(chosen: list[_Candidate]) -> list[_Candidate]:
    """One quote per table row: two parts of a question about one row (容量多大，多重) each cut it to
    their own cells, and the row cut to more cells, or whole, stands for both, where the first was."""
    kept: list[_Candidate] = []
    for candidate in chosen:
        cells = _quoted_cells(candidate.body)
        same = next(
            (
                k
                for k in kept
                if k.hit.chunk_id == candidate.hit.chunk_id
                and cells
                and (cells <= _quoted_cells(k.body) or _quoted_cells(k.body) <= cells)
            ),
            None,
        )
        if same is None:
            kept.append(candidate)
        elif len(cells) > len(_quoted_cells(same.body)):
            kept[kept.index(same)] = candidate
    return kept


def _quoted_cells(body: str) -> set[tuple[str, str]]:
    """The (column, value) cells of a quoted table row ("<title> <heading> — 列: 值；列: 值")."""
    _, dash, cells = body.rpartition(" — ")
    return set(row_cells(cells).items()) if dash else set()


def _redundant(a: _Candidate, b: _Candidate) -> bool:
    """Same fact twice: no number or model that b lacks, and most words shared (or, from the
    same document, the same numbers). Two SKU rows share most words but not their prices."""
    a_facts, b_facts = facts_of(a.body), facts_of(b.body)
    if not (a_facts.numbers <= b_facts.numbers and a_facts.models <= b_facts.models):
        return False
    union = a.tokens | b.tokens
    if union and len(a.tokens & b.tokens) / len(union) >= 0.5:
        return True
    return bool(a_facts.numbers) and a_facts.numbers == b_facts.numbers and a.hit.doc_id == b.hit.doc_id


def _shop_wide(hit: EvidenceHit) -> bool:
    """An FAQ entry or a policy of the shop's: it holds for every product and names none."""
    return is_faq(hit) or (hit.doc_type == "policy" and not hit.product_id)
