"""Evidence sentences as candidate answers, scored against the question: which of its words they
match (an entity named in the title counts less than what is asked), whether they state the kind
of value asked (a price in 元, a time, an amount), and whether they are about the thing asked at
all (not another year, edition, event, sibling or page of a series)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from citescope.agents.citations import (
    quotable,
    split_sentences,
)
from citescope.agents.evidence import RERANK_LEG
from citescope.agents.extractive.reading import QuestionProfile, QuestionReader
from citescope.agents.inspector import Facts, facts_of
from citescope.agents.question_cues import (
    DEFINITION_QUESTION,
    DESCRIPTION_QUESTION,
    PRIZE_STATED,
    TIME_EXPRESSION,
    editions,
    gendered_events,
    names_a_sibling,
    names_someone,
    other_edition,
    other_gender_event,
    states_amount,
)
from citescope.agents.question_rules import QuestionRules
from citescope.knowledge.chunking import SKU_OVERVIEW_SECTION, TABLE_ROW_ID, row_cells
from citescope.knowledge.filters import day_number
from citescope.knowledge.schema import Chunk, in_users_voice
from citescope.knowledge.text import (
    CJK_CHAR,
    YEAR,
    has_term,
    is_faq,
    model_numbers,
    series_names,
)
from citescope.tools.base import EvidenceHit

if TYPE_CHECKING:
    pass


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


_PARENTHESES = re.compile(r"（[^）]*）|\([^)]*\)")


_NOT_A_PREFIX = "并本绝决实既无莫是若而亦"  # 非 after these is a verb (并非完整), not a prefix (非网民)


_LIST_HEADING = re.compile(r"^[^：:，。]{1,12}[：:]\s*[-*•·]\s+")  # 配送时效：- of the list's first item


_LABEL = re.compile(r"([\u4e00-\u9fffA-Za-z]{1,8})[：:]")  # 防水： of "功能特点：- 防水：整鞋浸入…"


_DISAMBIGUATION = re.compile(r"\s*[（(][^（）()]*[）)]\s*$")  # 成都道 (香港): which 成都道 the page is


MAX_SENTENCE_CHARS = 220


# Term weights: entity words found in a hit's title, words naming what is asked, single characters.
_ENTITY_WEIGHT, _ASKED_WEIGHT, _CHAR_WEIGHT = 0.5, 1.5, 0.3


@dataclass
class Candidate:
    hit: EvidenceHit
    order: int  # position of the hit in the evidence list (best first)
    body: str  # the evidence sentence as written, citations and brackets removed
    tokens: set[str]
    score: float = 0.0
    term_share: float = 0.0  # weighted share of question terms the sentence matches
    answers: bool = False  # matches what is asked, not only the entity's name
    covered: set[str] = field(default_factory=set)  # question terms it covers (title included)
    entities: set[str] = field(default_factory=set)  # question terms in its title (the entity it is about)
    models: AbstractSet[str] = field(default_factory=frozenset)  # question model numbers it is about
    fact: float = 0.0  # bonus for the asked kind of value, the question's numbers and models
    on_topic: bool = True  # names (in its title or text) what the question is about
    row_named: bool | None = None  # a table row: does the question name its label (None: no row)


def scored_candidates(
    reader: QuestionReader, question: QuestionProfile, evidence: Sequence[EvidenceHit], skip_chunks: set[str]
) -> list[Candidate]:
    newest = max((day_number(h.updated_at) for h in evidence), default=0)
    # Question words in the title of the best-ranked evidence (张世昌 of 张世昌的职业是什么) name
    # what the question is about: a sentence whose title and text name none of them is about
    # something else, however well it matches the rest (布拉德利职业生涯…). Only the first
    # hit's: a lower one's title may merely share a word (广州番禺职业技术学院).
    lead = next((h for h in evidence if not is_faq(h)), None)
    lead_title = reader.canonical(lead.title).lower() if lead is not None else ""
    named = {t for t in question.terms if has_term(lead_title, t)}
    # 蟒鳗 of 蟒鳗又被称为什么 (jieba: 蟒鳗被); 成都道 of the page 成都道 (香港), whatever it disambiguates
    lead_name = _DISAMBIGUATION.sub("", lead_title)
    if len(lead_name) >= 2 and lead_name in question.text:
        named.add(lead_name)
    asks_definition = any(DEFINITION_QUESTION.match(question.text.replace(n, "", 1).strip()) for n in named)
    # built once per question, matched against every sentence
    identity_openers = (
        [_definition_opener(n) for n in named]
        if reader.rules.pattern("identity_question").search(question.text)
        else []
    )
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
        title = reader.canonical(hit.title).lower()
        label_tokens = set(reader.tokens(reader.canonical(f"{hit.title} {hit.section}")))
        title_facts = facts_of(reader.canonical(hit.title))
        title_models = title_facts.models
        # Question words in a product's or policy's title only name the entity; the other
        # words name what is asked and must be in the sentence. A FAQ title is a question,
        # so there a title match is as good as a sentence match.
        faq = is_faq(hit)
        shop_wide = is_shop_wide(hit)
        entity = set() if faq else {t for t in question.terms if has_term(title, t)}
        sibling = (
            not faq and reader.rules.checks("sibling_title") and names_a_sibling(question.text, title, hit.text.lower())
        )
        # the second thing of a comparison (T20和T24…, 峰刃和暖岩…): a title naming a model number or
        # a name of the shop's lexicon the question names is about that, whatever the lead is about
        names_another = bool(title_models & question.facts.models) or any(
            has_term(title, t) for t in question.terms if t in reader.named_things
        )
        # a page of the lead page's series about another name than the question's (2022年河北省…
        # beside 2022年辽宁省… for 辽宁省…的分数线): its rows are that other place's
        other = series_names(lead_title, title) if lead_title and not faq else None
        other_page = other is not None and other[0] in question.text and other[1] not in question.text
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
        # An aspect the question names (保修 of XZ-2000保修多久) that is not in the title is asked for: a
        # sentence under that heading or label, or saying it, answers; the page's other facts do not
        required = {a for a in question.aspects if not has_term(title, a)}
        # the question's words that hold an aspect (保修期) or are part of one (简介 of 商品简介), and the names
        # of what it is about (XZ-2000, a review's title lacks it): saying them is not saying what is asked
        aspect_terms = {
            t
            for t in question.terms
            if any(a in t or t in a for a in required) or t in reader.named_things or model_numbers(t)
        }
        heading = reader.canonical(hit.section).lower() if required else ""  # read only for an aspect asked
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
                body = asked_cells(body, question)
            if len(re.findall(r"\w", body)) < 4 or len(body) > MAX_SENTENCE_CHARS:
                continue
            canonical = reader.canonical(body)
            tokens = set(reader.tokens(canonical))
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
            score, answers = fact_score(question, facts, title_facts, models, said)
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
            row_named = None if label is None else has_term(question.text, reader.canonical(label).lower())
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
                # a product page the question names nothing of (保修多久？ and 木木 帆布托特包's 保修)
                or (question.shop_rule and bool(hit.product_id) and not shop_wide and not entity)
                or other_page
                or (not shop_wide and bool(named) and not any(has_term(about, n) for n in named) and not names_another)
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
            other_year = bool(question.years) and not question.asks_when and bool(dated) and not question.years & dated
            other_edition_only = bool(question.editions) and other_edition(
                question.editions, editions(canonical, reader.rules)
            )
            other_event = bool(question.events) and other_gender_event(
                question.events, gendered_events(canonical, reader.rules)
            )
            # the aspect asked is not said, nor another word the question asks (透湿 of 防水透湿量): the
            # sentence is about another fact of the page, off topic as another page is
            aspect_missing = (
                bool(required)
                and not asked - aspect_terms
                and not any(has_term(heading, a) or has_term(searched, a) for a in required)
            )
            # 网民 asked, only 非网民 said: the sentence is about the others
            negated = any(_only_negated(searched, t, question.text) for t in question.terms)
            # 谁获得了金牌 is not answered by 他获得了银牌, however much else matches
            unfocused = (
                question.focus is not None
                and not has_term(title, question.focus)
                and not _mentions(searched, question.focus_head, reader.rules)
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
                and not aspect_missing
                and not (unfocused and not defines)
                and (names_a_time or not question.asks_when)
                and (not question.asks_amount or states_amount(canonical, question.text))
                # an article must name who (a FAQ's or the shop's 谁 is a party: 受益人, 买家)
                and (not question.asks_who or faq or hit.doc_type != "doc" or names_someone(searched, question.text))
            )  # an article's: its text lower-cased
            candidates.append(
                Candidate(
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
                    not off_topic and not aspect_missing,
                    row_named,
                )
            )
    # the question names a row of the tables shown (法学): another row (金融学类) answers nothing
    if any(c.row_named for c in candidates):
        for candidate in candidates:
            candidate.answers = candidate.answers and candidate.row_named is not False
    candidates.sort(key=lambda c: (-c.score, c.order))
    return candidates


def asked_cells(body: str, question: QuestionProfile) -> str:
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


def fact_score(
    question: QuestionProfile, facts: Facts, title_facts: Facts, models: AbstractSet[str], searched: str
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


def _only_negated(text: str, term: str, question: str) -> bool:
    """Whether `text` names a CJK question term only with the prefix 非 (非网民 for 网民) that the
    question does not write itself (非都市区); 非 after 本/并/… is "is not" and negates no noun."""
    if term.isascii() or f"非{term}" in question or f"非{term}" not in text:
        return False
    prefixed = re.compile(rf"(?<![{_NOT_A_PREFIX}])非{re.escape(term)}")
    return prefixed.search(text) is not None and term not in prefixed.sub("", text)


_LETTERS_APART_FROM_DIGITS = re.compile(r"(?<=[A-Za-z]) (?=\d)")


def _glued(text: str) -> str:
    """The text with a name's letters and digits written apart joined (EMNLP 2022 -> EMNLP2022)."""
    return _LETTERS_APART_FROM_DIGITS.sub("", text)


def _mentions(text: str, word: str, rules: QuestionRules) -> bool:
    """The word, or for a longer one two of its characters in a row (出生 of 出生率, 听证 of 听证会);
    a prize also as a sentence says it was won (夺冠: rule `champion_stated`)."""
    if has_term(text, word) or (word in PRIZE_STATED and rules.pattern(PRIZE_STATED[word]).search(text)):
        return True
    if word.startswith("最佳"):  # 最佳影片 is not said by 最佳导演: no two characters will do
        return False
    return len(word) >= 3 and not word.isascii() and any(word[i : i + 2] in text for i in range(len(word) - 1))


def is_shop_wide(hit: EvidenceHit | Chunk) -> bool:
    """An FAQ entry or a policy of the shop's (a hit or a chunk): it holds for every product and names none."""
    return is_faq(hit) or (hit.doc_type == "policy" and not hit.product_id)
