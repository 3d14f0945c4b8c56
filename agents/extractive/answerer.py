"""The offline extractive answerer: quotes the best evidence sentences, each ending in 【chunk_id】
(the package docstring says how)."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING

from citescope.agents.citations import (
    TRAILING_MARKS,
    after_heading,
    part_not_found,
    quotable,
    split_sentences,
    strip_citations,
)
from citescope.agents.compound_questions import compound_parts
from citescope.agents.extractive.disclosure import compact, disclose
from citescope.agents.extractive.reading import QuestionProfile, QuestionReader
from citescope.agents.extractive.scoring import Candidate
from citescope.agents.extractive.selection import parts_not_named, same_question, select, select_parts
from citescope.agents.inspector import InspectionReport, Inspector, facts_of
from citescope.agents.product_answers import ProductAnswers, quoted_row_cells, row_sentence, sku_fields, sku_sentence
from citescope.agents.prompts import load_prompt
from citescope.agents.question_rules import question_rules
from citescope.knowledge.chunking import PIECE_ID
from citescope.knowledge.crosslingual import chinese_concepts, english_names, says_name, worded_for
from citescope.knowledge.lexicon import Lexicon
from citescope.knowledge.schema import in_users_voice
from citescope.knowledge.shop_profile import ShopProfile
from citescope.knowledge.text import (
    CJK_CHAR,
    is_english,
    is_faq,
    joined_after_label,
)
from citescope.tools.base import EvidenceHit

if TYPE_CHECKING:
    from citescope.agents.conflicts import Conflict
    from citescope.tools.products import SizeAdvice


_END_MARK = re.compile(r"[。！？!?]+$")


# An FAQ reply up to this long is quoted whole, sentence by sentence: it is the shop's own
# answer to the question, and cutting it to one sentence loses conditions and steps.
_MAX_FAQ_REPLY_CHARS = 400


_COMMON_OPENER = re.compile(
    r"(?:A|An|According|The|It|Its|This|That|These|Those|There|Our|Your|You|We|They"
    r"|Every|Each|All|Any|Some|Most|Many|No|If|When|For|In|On|At|With)\b"
)


_CAUTIOUS = "根据现有资料，"  # opens an answer whose best evidence matches under half of the question


def hedged(answer: str) -> bool:
    """Does the answer open with the hedge, the mark of a best guess (a Chinese answer whose best
    evidence matches under half of the question)? Self-calibration reads its probes' answers with it."""
    return answer.startswith(_CAUTIOUS)


class ExtractiveAnswerer:
    def __init__(
        self,
        lexicon: Lexicon | None = None,
        max_sentences: int = 3,
        inspector: Inspector | None = None,
        shop: ShopProfile | None = None,
        rule_packs: Iterable[str] = (),
        aspects: Iterable[str] | Callable[[], frozenset[str]] = (),
        sentence_reader: Callable[[str, list[str]], list[float]] | None = None,
    ):
        """shop: the KB's shop profile, whose delivery zones are the documents' words for the places
        a question names (knowledge/crosslingual.py). rule_packs: the opt-in packs of question rules
        the KB turns on (its config's `rule_packs`; agents/question_cues.yaml): none for a shop. aspects:
        the KB's shared headings and field labels (agents/aspects.py): a question naming one is answered
        only by what is said under it. sentence_reader: P(answers) of (question, sentences), the reader's pair
        scorer (`sentence_model`, opt-in): it chooses the first sentence (selection.select)."""
        self.lexicon = lexicon
        self.sentence_reader = sentence_reader
        self.max_sentences = max_sentences
        self.inspector = inspector or Inspector(lexicon=lexicon)
        self.reader = QuestionReader(lexicon, shop, question_rules(frozenset(rule_packs)), aspects)
        self.products = ProductAnswers(self.reader.tokens, self.reader.canonical)
        self._refusal = load_prompt("refusal").strip()  # read once: every answer is compared with it

    # -- entry point ----------------------------------------------------------------------
    def asked_aspects(self, question: str) -> set[str]:
        """The KB's aspects the question names (agents/aspects.py), as the sentence scorer reads them."""
        return self.reader.profile(question).aspects

    def canonical(self, text: str) -> str:
        """Text as the answerer matches it: simplified, the lexicon's names, lower-case."""
        return self.reader.canonical(text).lower()

    def rules_fired(self, question: str, evidence: Sequence[EvidenceHit]) -> list[str]:
        """The ids of the question rules that read the question as `run` reads it (the decision trace)."""
        return self._profile(question, evidence).rules_fired

    def _profile(self, question: str, evidence: Sequence[EvidenceHit]) -> QuestionProfile:
        english = self.asked_in_english(question, evidence)
        # an English question against a Chinese shop's evidence is matched by the shop's Chinese words for it
        profile = self.reader.profile(worded_for(question, [hit.text for hit in evidence]) if english else question)
        profile.english = english
        return profile

    def run(
        self,
        question: str,
        evidence: Sequence[EvidenceHit],
        conflicts: Sequence[Conflict] = (),
        feedback: InspectionReport | None = None,
        advice: SizeAdvice | None = None,
        overview: Sequence[str] = (),
        doubtful: bool = False,
        siblings: Collection[str] = (),
        shop_rule: bool = False,
    ) -> str:
        """An answer whose every factual sentence ends in 【chunk_id】, or the fixed refusal.

        With `feedback` (the inspector's report on an earlier answer), sentences it found
        unsupported or uncited are not used again. With `advice` (size_recommend's finding) whose
        rows are in the evidence, the answer is that size, why, and the stock of that size. With
        `overview` (page openings for a question about what a product is like), their first sentences.
        `doubtful` (the gate's best score is in the KB's hedging band): an answer that would open with
        "根据现有资料" is the refusal instead: such guesses were right 0 of 34 times on a records KB (#44).
        An English answer's hedge says the words could not be matched across languages, not that the
        evidence is doubtful, so it is given as before. `siblings`: the evidence about a sibling of the
        entity the question names (the rank stage's, agents/entity_scope.py), whose sentences answer
        nothing: 极岚 听澜X3's battery is no answer about 风行 逐光X3's (#44). `shop_rule`: the analysis reads
        the question as asking a shop rule about no product (QuestionProfile.shop_rule).
        """
        profile = self._profile(question, evidence)
        profile.shop_rule = shop_rule
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
            disclosure = disclose(conflict, by_id, profile.english)
            if disclosure and strip_citations(disclosure).strip() not in banned:
                pieces.append(disclosure)
                disclosed_chunks |= {v.chunk_id for v in conflict.values}
                first = conflict.values[0]
                # only a value the first one outranks (official over a review, another date) is
                # overruled; between two equal sources the disclosure settles nothing
                overruled += [
                    v.value
                    for v in conflict.values[1:]
                    if compact(v.value) != compact(first.value)
                    and (v.authority != first.authority or v.updated_at != first.updated_at)
                ]

        # a name an English question says that no glossary translates (Hong Kong, PayPal; Shengyu is 声屿 in pinyin):
        # a sentence that does not say it answers something else (江浙沪's delivery times for "ship to Hong Kong?")
        untranslated = english_names(question) if profile.english else []
        # what an English question asks in the glossary's words (cash on delivery: 货到付款; shipping: 运费, 配送 or
        # 发货): a Chinese sentence that states under half of them answers another question (付款 of "16:00 前付款
        # 的订单当天发货" is not 货到付款), as a Chinese question's sentence must say what it asks
        concepts = (
            [tuple(map(self.canonical, words)) for words in chinese_concepts(question)] if profile.english else []
        )

        def allowed(candidate: Candidate) -> bool:
            # After "…以最新政策为准" a sentence restating the older value would contradict it
            if any(self.inspector.mentions(candidate.body, value) for value in overruled):
                return False
            if not all(says_name(f"{candidate.hit.title} {candidate.body}", name) for name in untranslated):
                return False
            if concepts and CJK_CHAR.search(candidate.body):
                said = self.canonical(f"{candidate.hit.title} {candidate.body}")
                if 2 * sum(any(word in said for word in words) for words in concepts) < len(concepts):
                    return False
            return not banned or all(
                strip_citations(self._frame(candidate, profile.english, cautious)).strip() not in banned
                for cautious in (False, True)
            )

        # read off the product tables: a worked-out size, the rows of named sizes, all variants at once
        prices_other = self.products.prices_something_else(profile, evidence)
        from_tables = self.products.run(profile, evidence, banned, advice, overview, prices_other=prices_other)
        # chunks not quoted as sentences: disclosed already, about a sibling, or no answer
        skipped = set(disclosed_chunks) | set(siblings)
        if not from_tables and prices_other:
            # a price of something of the product's (补一只耳机, 保修期外维修): its SKU rows' price is not it
            skipped |= {hit.chunk_id for hit in evidence if hit.section == "SKU"}
        parts = compound_parts(question)
        if from_tables:  # the parts of a compound question the tables leave (多少钱，容量多大) from the text
            # the products' names in what the tables said answer no part (防晒 of 云栖轻风防晒皮肤衣, 防晒等级多少)
            names = {hit.title for hit in evidence if hit.product_id}
            left = parts_not_named(self.reader, parts, "".join(from_tables), names) if len(parts) > 1 else []
            more, not_answered = (
                select_parts(self.reader, left, profile.english, evidence, skipped, len(left), allowed)
                if left
                else ([], [])
            )
            framed = [text for text in (self._frame(c, profile.english) for c in more) if text not in from_tables]
            answer = self._checked(question, evidence, conflicts, [*pieces, *from_tables, *framed])
            return self.with_parts_not_found(answer, not_answered, profile.english)
        room = self.max_sentences - len(pieces)
        read = partial(self.sentence_reader, question) if self.sentence_reader is not None else None
        chosen = select(self.reader, profile, evidence, skipped, room, allowed, read=read)
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
                chosen[0].hit.doc_id == same_question(self.reader, profile, evidence)
                or not parts_not_named(self.reader, parts, f"{chosen[0].hit.title} {chosen[0].hit.text}")
            )
        ):
            by_part, unanswered = select_parts(self.reader, parts, profile.english, evidence, skipped, room, allowed)
            by_parts = bool(by_part)
            chosen, unanswered = (by_part, unanswered) if by_part else (chosen, [])
        cautious = bool(chosen) and not pieces and half_answered
        if cautious and doubtful and not profile.english:
            return self.refusal()  # a guess on evidence the KB's own probes say to doubt
        if chosen and not pieces and not profile.english and is_faq(chosen[0].hit) and not by_parts:
            reply = self._faq_reply(chosen[0].hit, evidence, banned, profile.asks_open, question)
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
        self.reader.tokens("预热")
        self.inspector.warm_up()
        return self

    def refusal(self) -> str:
        return self._refusal

    def asked_in_english(self, question: str, evidence: Sequence[EvidenceHit] = ()) -> bool:
        """Is the question English, beyond the names of what the evidence is about ("AJ1 Retro" is
        canonical "Air Jordan 1 Retro", a product name, not English)? The pipeline asks this too, so
        a refusal and an answer agree on the language."""
        return is_english(
            self.reader.canonical(question), names=" ".join(self.reader.canonical(hit.title) for hit in evidence)
        )

    # -- composing --------------------------------------------------------------------------
    def _faq_reply(
        self,
        hit: EvidenceHit,
        evidence: Sequence[EvidenceHit],
        banned: set[str],
        asks_open: bool = False,
        question: str = "",
    ) -> list[str]:
        """An FAQ entry's reply, every sentence as written and cited with its chunk; [] when too long.
        To a question that asks for something (asks_open: 我的积分什么时候会过期), not the entry's own yes-or-no
        question (积分会过期吗？), the reply's bare opening yes or no (会。 / 可以，) is left out: it answers
        a question nobody asked; to a narrower yes-or-no question than the entry's, see `_fitted`.

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
        if asks_open and sentences:
            sentences = self._without_opening_yes_no(sentences)
        elif sentences and question:
            sentences = self._fitted(sentences, hit.title, question)
        pieces = []
        for text, chunk_id in sentences:
            body = quotable(text)
            if not body or body in banned:
                continue
            end = _END_MARK.search(strip_citations(text).strip())
            pieces.append(f"{body}【{chunk_id}】{end.group(0)[0] if end else '。'}")
        return pieces

    def _fitted(self, sentences: list[tuple[str, str]], title: str, question: str) -> list[tuple[str, str]]:
        """The reply fitted to a yes-or-no question narrower than the entry's own: its bare opening yes or
        no answers the entry's question, and goes when
        - the question names something the entry's question does not and a later sentence of the reply
          does (直播间买的能保价吗 to 买完降价了可以保价吗？): that sentence says what holds for it
          (秒杀、直播间专享价不参与价保) and comes first;
        - the yes is limited to someone (claim_rules.yaml `limit_words`) and the question, narrower than
          the entry's, does not name them (可以，仅限企业申请 to 个人能开专票吗; to 能开专票吗 it stays)."""
        rules = self.inspector.rules
        if rules.opening_word(sentences[0][0]) is None:
            return sentences
        asked, entry = self.reader.canonical(question), self.reader.canonical(title)
        synonyms = self.lexicon.expansions if self.lexicon is not None else lambda _: []
        # what the question asks with (能开 of 个人能开专票吗) is no word of what it is about, and a word the
        # entry's question says in other words (专票 for its 发票) makes no narrower question
        terms = [rules.without_yes_word(t) for t in self.inspector.content_terms(asked)]
        named = [t for t in terms if len(t) > 1 and not any(w in entry for w in [t, *synonyms(t)])]
        leading = [s for s in sentences[1:] if any(t in self.reader.canonical(s[0]) for t in named)]
        limited = rules.limited_to(sentences[0][0])
        if not leading and (limited is None or limited in asked or not named):
            return sentences
        return leading + [s for s in self._without_opening_yes_no(sentences) if s not in leading]

    def _without_opening_yes_no(self, sentences: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The reply's sentences without its bare opening yes or no: a sentence that is only that word
        goes (会。), a first clause that is goes (可以，仅限企业申请 -> 仅限企业申请)."""
        first, chunk_id = sentences[0]
        word = self.inspector.rules.opening_word(first)
        if word is None:
            return sentences
        rest = re.sub(rf"^\s*{re.escape(word)}\s*[，,。！!；;：:]?\s*", "", first, count=1)
        if not strip_citations(rest).strip(" 。！!"):
            return sentences[1:]
        return [(rest, chunk_id), *sentences[1:]]

    def _frame(self, candidate: Candidate, english: bool, cautious: bool = False) -> str:
        """The quoted sentence with a short frame (whose product/policy, user voice), cited."""
        hit, title = candidate.hit, quotable(candidate.hit.title)
        body = joined_after_label(candidate.body)  # "功能特点：- 单口输出" reads "功能特点：单口输出"
        headed = bool(hit.section) and body.startswith(hit.section + "：")
        rest = after_heading(body, hit.section) or body
        # The shop's own SKU table only: a stranger's review laid out like one keeps its "有用户评价称".
        official_row = hit.section == "SKU" and hit.doc_type == "product" and hit.authority == "official"
        sku = sku_fields(candidate.body) if official_row else None
        user_voice = in_users_voice(hit.doc_type, hit.authority)
        row = None if sku or user_voice else quoted_row_cells(candidate.body, hit.chunk_id)
        if english:
            if sku:
                framed = sku_sentence(sku, title, english=True)
            elif row:
                framed = row_sentence(row, title, hit.section, policy=hit.doc_type == "policy", english=True)
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
        elif row:  # "…尺码表 — 尺码: 42；脚长(cm): 26.0" is how a chunk stores a row, not how a shop writes one
            framed = row_sentence(row, title, hit.section, policy=hit.doc_type == "policy")
        elif hit.doc_type == "review":
            framed = f"有用户评价称：{body}"
        elif user_voice:
            framed = f"有用户分享：{body}"
        elif hit.doc_type == "policy" and title and title not in body and headed:
            # the section says what a list item is (人为损坏 under 不在保修范围内的情况)
            framed = f"《{title}》的{hit.section}：{rest}"
        elif hit.doc_type == "policy" and title and title not in body:
            # after the hedge, not a second 根据 (根据现有资料，根据《…》，…)
            framed = f"《{title}》：{rest}" if cautious else f"根据《{title}》，{rest}"
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
        words = [w for w in self.reader.tokens(title) if len(w) >= 2 and not re.fullmatch(r"[\d.]+[a-z]*", w)]
        whole = [w for w in words if not any(w != other and w in other for other in words)]
        return any(w in body.lower() for w in whole)

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
    """The answer's sentences in order, each a space after one that ends as English ends (According to….):
    also a Chinese quote after it (an FAQ reply in an English answer), else the two read as one sentence."""
    text = ""
    for piece in pieces:
        text += (" " if text[-1:] in (".", "!", "?", ";") and piece[:1].isalnum() else "") + piece
    return text


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
