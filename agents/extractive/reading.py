"""The extractive answerer's reading of a question: its words, the kind of value it asks for,
the relation, time or amount it asks about (agents/question_cues.py), with the shop's lexicon."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from citescope.agents.aspects import asked_aspects
from citescope.agents.inspector import Facts, facts_of
from citescope.agents.inspector import asked_units as asked_units_of  # profile's local is called asked_units
from citescope.agents.question_cues import (
    AMOUNT_QUESTION,
    ENGLISH_COUNTED,
    ERA_WORDS,
    NUMERIC_QUESTION,
    QUESTION_WORD,
    WHEN_QUESTION,
    asked_focus,
    editions,
    gendered_events,
)
from citescope.agents.question_rules import QuestionRules, question_rules
from citescope.knowledge.chinese_script import to_simplified
from citescope.knowledge.crosslingual import everyday_words
from citescope.knowledge.lexicon import Lexicon
from citescope.knowledge.normalize import normalize
from citescope.knowledge.shop_profile import ShopProfile
from citescope.knowledge.text import ASKED_YEAR, is_english, tokenize, unglued

# The pattern rules besides the asks and relation rules that the decision trace names when they match
# a question (QuestionProfile.rules_fired)
_TRACED_PATTERNS = (
    "open_question",
    "yes_no_question",
    "when_question",
    "amount_question",
    "who_question",
    "identity_question",
    "edition",
    "gendered_event",
    "prize",
)
_YES_NO_END = re.compile(r"[不没]有?\s*[？?]?\s*$")  # 可以机洗不 / 有货没: the 不 asks, it is no word to match


@dataclass
class QuestionProfile:
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
    # asks for something (什么时候, 多久, 哪里), not for a yes or no: an FAQ reply's bare 会。 does not answer it
    asks_open: bool = False
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
    rules_fired: list[str] = field(default_factory=list)  # ids of the rules that read it (agents/question_cues.yaml)
    # the KB's aspects it names (保修 of XZ-2000保修多久; agents/aspects.py): a sentence answers it only under
    # that heading or label, or saying the word
    aspects: set[str] = field(default_factory=set)
    # the analysis reads it as asking a shop rule about no product (intent policy, none named or carried): a
    # product page states its own product's terms, so none of its sentences is the answer (保修多久？)
    shop_rule: bool = False

    @property
    def focus_head(self) -> str:
        """What of the focus a sentence must say: of a when-question's event (开售) only its head
        character, since the time is what is asked and 发售 names the same event."""
        focus = self.focus or ""
        return focus[-1] if self.asks_when and focus and not focus.isascii() else focus


class QuestionReader:
    """How the extractive answerer reads text with the shop's lexicon: its tokens (cached: every
    evidence sentence is tokenized once per question), its canonical form, and questions."""

    def __init__(
        self,
        lexicon: Lexicon | None = None,
        shop: ShopProfile | None = None,
        rules: QuestionRules | None = None,
        aspects: Iterable[str] | Callable[[], frozenset[str]] = (),
    ):
        """shop: the KB's shop profile, whose delivery zones word the places a question names. rules: the
        question rules of the packs the KB turns on (default: the core pack alone, as for a shop).
        aspects: the KB's shared headings and field labels (agents/aspects.py `kb_aspects`), or what gives
        them as the KB is now (`KBAspects`)."""
        self.lexicon = lexicon
        self.shop = shop
        self.rules = rules or question_rules()
        self._token_cache: dict[str, list[str]] = {}
        fixed = frozenset(() if callable(aspects) else aspects)
        self._aspect_source: Callable[[], frozenset[str]] = aspects if callable(aspects) else lambda: fixed
        self._aspects_read: tuple[frozenset[str], frozenset[str]] | None = None  # (as given, canonical)
        # the shop's own names (brands, product lines, aliases' targets), lower-case
        self.named_things = frozenset(t.lower() for t in lexicon.all_terms()) if lexicon is not None else frozenset()

    @property
    def aspects(self) -> frozenset[str]:
        """The KB's aspects, canonical and lower-case (canonicalised again only when the KB's set changes)."""
        given = self._aspect_source()
        if self._aspects_read is None or self._aspects_read[0] is not given:
            self._aspects_read = (given, frozenset(self.canonical(a).lower() for a in given))
        return self._aspects_read[1]

    def tokens(self, text: str) -> list[str]:
        tokens = self._token_cache.get(text)
        if tokens is None:
            if len(self._token_cache) > 20000:
                self._token_cache.clear()
            tokens = self._token_cache[text] = tokenize(text, self.lexicon)
        return tokens

    def canonical(self, text: str) -> str:
        text = to_simplified(normalize(text))  # a page in traditional characters (震級) says what 震级 asks
        return self.lexicon.canonicalize(text) if self.lexicon is not None else text

    def profile(self, question: str) -> QuestionProfile:
        """What the question asks, as the sentence scorer matches it (QuestionProfile)."""
        canonical = self.canonical(question)
        terms: list[str] = []
        chars: list[str] = []
        run: list[str] = []
        for token in [*(unglued(t, self.lexicon) for t in self.tokens(question)), ""]:
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
        asked_units, asked_words = asked_units_of(canonical), list[str]()
        for rule in self.rules.asks:
            if rule.question.search(canonical):
                asked_units |= rule.units
                asked_words += rule.words
        relations = [rule.answer for rule in self.rules.relations if rule.question.search(canonical)]
        # the documents' words for a shopper's everyday ones (洗澡 -> 淋浴, 寄到上海 -> 江浙沪) say what is asked
        everyday = [w.lower() for w in everyday_words(canonical, shop=self.shop)]
        asked_words += everyday
        if self.lexicon is not None:
            for key, values in self.lexicon.synonyms.items():
                group = [key, *values]
                if any(word.lower() in canonical.lower() for word in group):
                    asked_words += group
        return QuestionProfile(
            years=set(ASKED_YEAR.findall(canonical)),
            tokens=set(self.tokens(canonical)),
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
            asks_who=bool(self.rules.pattern("who_question").search(canonical)),
            asks_open=bool(self.rules.pattern("open_question").search(canonical))
            and not self.rules.pattern("yes_no_question").search(canonical),
            everyday=everyday,
            name_numbers={value for t in terms if t in self.named_things for value, _ in facts_of(t).numbers},
            editions=editions(canonical, self.rules),
            events=gendered_events(canonical, self.rules),
            # a kind of value or a relation asked (多少钱, 在哪里) says what answers instead
            focus=None if asked_units or asked_words or relations else asked_focus(canonical, self.rules),
            rules_fired=self.rules.fired(canonical, _TRACED_PATTERNS),
            aspects=asked_aspects(terms, self.aspects, self.named_things),
        )


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
