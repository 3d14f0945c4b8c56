"""Which scored sentences the answer quotes: the best one (the reranker's first document when it
scores nearly as well), then only sentences that add a question word or model; for a compound
question, the best for each part, and the parts nothing answers."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from citescope.agents.extractive.reading import QuestionProfile, QuestionReader
from citescope.agents.extractive.scoring import Candidate, is_shop_wide, scored_candidates
from citescope.agents.inspector import facts_of
from citescope.agents.question_cues import (
    WHEN_QUESTION,
)
from citescope.agents.question_rules import QuestionRules
from citescope.knowledge.chunking import row_cells
from citescope.knowledge.text import (
    CJK_CHAR,
    bigram_dice,
    has_term,
    is_faq,
)
from citescope.tools.base import EvidenceHit

if TYPE_CHECKING:
    pass


# An FAQ entry whose title question is this alike to the customer's (character-bigram Dice) asks
# the same thing, and its reply is the answer, from that entry alone. baoxianzhidao dev: the
# evidence entry alike at >= 0.6 was the gold one for 2087 of 2088 questions (31 of them user
# paraphrases); the sentence scorer, picking by cue words and values, had quoted another entry
# for 77 of them and refused 50.
_SAME_QUESTION = 0.6


_MIN_SCORE_SHARE = 0.7  # a further sentence must score this share of the best one


# The reranker's first document is right far more often than the sentence scorer's pick from
# another document (cmrc2018 dev: 98.6% vs 90% gold), so its best sentence wins when it scores
# at least this share of the overall best and matches every question word, model and asked kind
# of value (a price in 元) it matches.
_ANCHOR_SHARE = 0.75


# With a sentence reader (a trained pair scorer, `sentence_model`), the first sentence is the one it reads as
# answering best among the on-topic sentences of the scorer's document it ranks this high (one engine pass each)
READ_TOP = 8


def select(
    reader: QuestionReader,
    question: QuestionProfile,
    evidence: Sequence[EvidenceHit],
    skip_chunks: set[str],
    room: int,
    allowed: Callable[[Candidate], bool],
    scored: list[Candidate] | None = None,
    read: Callable[[list[str]], list[float]] | None = None,
) -> list[Candidate]:
    """The best sentence, then up to room-1 more that each add a question word or model.
    scored: the question's candidates when the caller has them already. read: P(answers) of sentences
    (the reader's pair scorer): whether anything answers is still the scorer's call; which sentence comes
    first is the reader's, among the READ_TOP best on-topic ones of the scorer's document
    (workflows/training/sentence_choice.py)."""
    if room <= 0 or not evidence:
        return []
    if scored is None:
        scored = scored_candidates(reader, question, evidence, skip_chunks)
    candidates = [c for c in scored if allowed(c)]
    same = same_question(reader, question, evidence)
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
                if c.answers and c.on_topic and c.hit.doc_id == anchor_doc and c.score >= _MIN_SCORE_SHARE * best.score
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
    if read is not None:
        # within the chosen document: which document answers stays the scorer's (the reader, trained on
        # one passage at a time, chose worse across the documents of real evidence; docs/models.md)
        mine = (c for c in candidates if c.on_topic and c.hit.doc_id == best.hit.doc_id)
        pool = sorted(mine, key=lambda c: -c.score)[:READ_TOP]
        if len(pool) > 1:
            answering = read([c.body for c in pool])
            best = pool[max(range(len(pool)), key=lambda i: (answering[i], -i))]  # a tie: the scorer's order
    chosen = [best]
    # after a shop-wide answer, which holds for every product, a product's page adds none
    entities_add = not is_shop_wide(best.hit)
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


def select_parts(
    reader: QuestionReader,
    parts: list[str],
    english: bool,
    evidence: Sequence[EvidenceHit],
    skip_chunks: set[str],
    room: int,
    allowed: Callable[[Candidate], bool],
) -> tuple[list[Candidate], list[str]]:
    """The best sentences for each part of a compound question (2022年和2023年…, 主演和导演),
    in the order asked: one sentence per part at least, the same sentence only once; and the
    parts no sentence answers (not even one an earlier part quoted: 时间和地点 in one sentence).
    A part is answered only by a sentence (or its title) with a word of that part alone: 考研
    of 2022年考研和高考报名人数, which a sentence about 高考 lacks however much else it shares."""
    profiles = [reader.profile(part) for part in parts]
    chosen: list[Candidate] = []
    unanswered: list[tuple[str, list[str]]] = []

    def names_any(candidate: Candidate, terms: list[str], heads: bool = False) -> bool:
        text = reader.canonical(f"{candidate.hit.title} {candidate.body}").lower()
        # heads: a word's last character, which names what the word is (棉 of 纯棉 in 100% 棉华达呢)
        return any(
            has_term(text, term) or heads and CJK_CHAR.fullmatch(term[-1]) and term[-1] in text for term in terms
        )

    for part, profile in zip(parts, profiles, strict=False):
        profile.english = english
        own = _own_terms(profile, [p for p in profiles if p is not profile], reader.rules)

        def about(candidate: Candidate, own: list[str] = own) -> bool:
            return allowed(candidate) and (not own or names_any(candidate, own))

        # what an earlier part quoted answers that part (`chosen` grows in place, part by part)
        def new(
            candidate: Candidate, about: Callable[[Candidate], bool] = about, chosen: list[Candidate] = chosen
        ) -> bool:
            return about(candidate) and all(candidate.body != c.body for c in chosen)

        scored = scored_candidates(reader, profile, evidence, skip_chunks)  # scored once, selected from twice
        picked = select(reader, profile, evidence, skip_chunks, max(1, room // len(parts)), new, scored)
        if not picked and own and not select(reader, profile, evidence, skip_chunks, 1, about, scored):
            unanswered.append((part, own))
        chosen += picked
    # a part is said to be unanswered only when no quoted sentence names it, or the head of one of its
    # words, either (它能给笔记本充电吗 is answered by the 可以给…笔记本电脑供电 another part quoted, though
    # it answers that part by the rules; 纯棉的吗 by 100% 棉华达呢): a wrong "not found" misleads
    return _one_per_row(chosen), [
        part for part, own in unanswered if not any(names_any(c, own, heads=True) for c in chosen)
    ]


def parts_not_named(reader: QuestionReader, parts: list[str], text: str, names: Collection[str] = ()) -> list[str]:
    """The parts of a compound question the text does not speak to: it names no word of the part
    that no other part has (退款 of 退款几天到账 in a reply about 退货运费), or, for a part whose
    words are all shared or ask a kind of value (容量多大), it states no value of that kind.
    names: what the text names its subject by (a product's name, read off its tables): a word of
    those says nothing a part asks, so a part asking a kind of value is spoken to by that kind
    (峰刃冲峰衣多少钱 by 1599.00元) and another by a word of its own beyond them (防晒等级 by 等级)."""
    profiles = [reader.profile(part) for part in parts]
    text = reader.canonical(text).lower()
    names = [reader.canonical(name).lower() for name in names]
    for name in sorted(names, key=len, reverse=True):  # 20000mAh of its name states no 容量
        text = text.replace(name, " ")
    units = {unit for _, unit in facts_of(text).numbers}
    left = []
    for part, profile in zip(parts, profiles, strict=False):
        own = _own_terms(profile, [p for p in profiles if p is not profile], reader.rules)
        if names:
            beyond = [term for term in own if not any(has_term(name, term) for name in names)]
            missing = (
                not profile.asked_units & units
                if profile.asked_units
                else bool(beyond) and not any(has_term(text, term) for term in beyond)
            )
        else:
            missing = bool(
                own
                and not any(has_term(text, term) for term in own)
                or (not own and profile.asked_units and not profile.asked_units & units)
            )
        if missing:
            left.append(part)
    return left


def same_question(reader: QuestionReader, question: QuestionProfile, evidence: Sequence[EvidenceHit]) -> str | None:
    """The doc id of the evidence FAQ entry whose title asks what the customer asks (the
    most alike, the better ranked on a tie), or None."""
    best, best_match = None, _SAME_QUESTION
    for hit in evidence:
        if is_faq(hit):
            match = bigram_dice(question.text, reader.canonical(hit.title).lower())
            if match >= best_match + (1e-9 if best is not None else 0.0):
                best, best_match = hit.doc_id, match
    return best


def _own_terms(part: QuestionProfile, others: Sequence[QuestionProfile], rules: QuestionRules) -> list[str]:
    """The words of one part of a compound question no other part has (考研 / 高考, 主演 / 导演),
    except the words of what kind of value is asked (时间, 地点, 价格): a sentence answers those
    with a time, a place, a price, not with the word. The documents' words for its everyday ones count
    (江浙沪, 送达 of 我在上海几天能到)."""
    shared = set().union(*(other.terms for other in others), *(other.everyday for other in others))
    return [term for term in [*part.terms, *part.everyday] if term not in shared and not _asks_a_kind(term, rules)]


def _asks_a_kind(term: str, rules: QuestionRules) -> bool:
    return bool(WHEN_QUESTION.search(term) or any(rule.question.search(term) for rule in rules.reading_rules()))


def _one_per_row(chosen: list[Candidate]) -> list[Candidate]:
    """One quote per table row: two parts of a question about one row (容量多大，多重) each cut it to
    their own cells, and the row cut to more cells, or whole, stands for both, where the first was."""
    kept: list[Candidate] = []
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


def _redundant(a: Candidate, b: Candidate) -> bool:
    """Same fact twice: no number or model that b lacks, and most words shared (or, from the
    same document, the same numbers). Two SKU rows share most words but not their prices."""
    a_facts, b_facts = facts_of(a.body), facts_of(b.body)
    if not (a_facts.numbers <= b_facts.numbers and a_facts.models <= b_facts.models):
        return False
    union = a.tokens | b.tokens
    if union and len(a.tokens & b.tokens) / len(union) >= 0.5:
        return True
    return bool(a_facts.numbers) and a_facts.numbers == b_facts.numbers and a.hit.doc_id == b.hit.doc_id
