"""Query analysis: intent, entities, numbers with units and follow-up detection, in one pass.

Rules and dictionaries only (no embeddings): the result feeds the strategy policy, whose rules
read the typed fields and whose bandit reads `QueryFeatures.vector()`. Its parts: which products
a question names (agents/entity_index.py), the numbers it gives (agents/query_numbers.py) and what
is read (agents/query_features.py). Words only one shop uses (its membership tiers, programme
names, delivery zones) come from the KB's shop profile (knowledge/shop_profile.py), never from here.
"""

from __future__ import annotations

import re
import threading
import weakref

from citescope.agents.compound_questions import compound_parts
from citescope.agents.entity_index import Entity, EntityIndex, compact, series_in, typed_loosely
from citescope.agents.query_features import FEATURE_NAMES, INTENTS, QUESTION_WORDS, Intent, QueryFeatures
from citescope.agents.query_numbers import (
    describe_body_facts,
    parse_body_reply,
    parse_foot_length_cm,
    parse_height_cm,
    parse_price_limit,
    parse_sizes,
    parse_weight_kg,
)
from citescope.agents.question_cues import (
    COMPARISON_WORDS,
    PRICE_ASKED,
    SIZE_AVAILABLE,
    STOCK_ASKED,
    asks_overview,
)
from citescope.agents.retrieval_question import retrieval_question
from citescope.knowledge.chinese_script import to_simplified
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.normalize import normalize
from citescope.knowledge.shop_profile import ShopProfile
from citescope.knowledge.text import MODEL_NUMBER
from citescope.tools.products import ProductIndex, product_index

__all__ = [  # the names callers import from here, wherever they are defined
    "FEATURE_NAMES",
    "INTENTS",
    "QUESTION_WORDS",
    "Entity",
    "EntityIndex",
    "Intent",
    "QueryAnalyzer",
    "QueryFeatures",
    "analyze",
    "describe_body_facts",
    "parse_body_reply",
    "parse_sizes",
    "series_in",
    "without_product_asks",
]

# --------------------------------------------------------------------------- vocabulary
# Each pattern: a regex over the normalized question.
_COMPARE_WORDS = re.compile(COMPARISON_WORDS, re.I)
_MULTI_PRODUCT_LINK = re.compile(r"和|与|跟|及|还是|哪|分别|各|一样|相同|不同|\bvs\b", re.I)
# Strong policy words make a question a policy question even when it names a product; so do the
# shop's own membership tiers and programme names (its profile's, _asks_policy).
_POLICY_STRONG = re.compile(
    r"退货|退换|退款|换货|无理由|退回|能退|可以退|怎么退|退吗|运费|邮费|包邮|顺丰|发票|开票|会员|积分|"
    r"优惠券|价保|保价|降价|分期|花呗|免息|货到付款|以旧换新|收货地址|修改地址|"
    r"国际运|寄到|客服|签收|拒收|运费险|极速退款|专票|普票|"
    # shipping is the shop's, whatever it ships (轻羽3下单后几天能发货 asks the shipping policy)
    r"发货|快递|物流|配送|几天到|多久到|"
    r"收到货|收货后|包裹|压坏|压扁|少发|漏发|发错"
)  # a parcel's mishaps: the after-sales policy, not a product
# a product's own page may answer these (its warranty section)
_POLICY_WEAK = re.compile(r"保修|质保|维修|寄修|售后|门店")
_PRICE_STOCK = re.compile(
    PRICE_ASKED + r"|多少元|贵不贵|便宜|" + STOCK_ASKED + r"|缺货|几个货|"
    r"有没有货|断码|补货|到货|" + SIZE_AVAILABLE + r"|\b(?:how much|price|cost|in stock|stock|sold out)\b",
    re.I,
)
_SIZE_WORDS = re.compile(
    r"尺码|码数|尺寸表|尺码表|几码|什么码|哪个码|哪码|多大码|多大号|什么号|大小合适|偏大|偏小|"
    r"脚长|胸围|衣长|肩宽|袖长|腰围|适合多高|适合多重"
)
_SIZE_ADVICE = re.compile(
    r"(选|穿|买|拿|要|推荐|适合|合适)(哪个|什么|几|多大)(码|号|尺码)|尺码推荐|推荐尺码|选码|"
    r"穿多大|哪个码|什么码|多大码|码数推荐|怎么选码|选哪个|穿哪个"
)
_OPEN_WORDS = re.compile(r"总结|评价|怎么样|好不好|值不值|值得买|体验|推荐|口碑|测评|买家秀|优缺点|好用吗|感受|建议")
_GREETING = re.compile(
    r"^(你好|您好|嗨|哈喽|hello|hi|hey|在吗|在不在|有人吗|谢谢|谢啦|多谢|感谢|好的|好滴|ok|嗯|哦|拜拜|再见|"
    r"早上好|晚上好|下午好|晚安|辛苦了|你是谁|你叫什么|你是机器人吗|讲个笑话|陪我聊聊天?)"
    r"([啊呀呢哈啦吧~～!！。.,，?？\s]|你好|您好|谢谢)*$",
    re.I,
)
_UNRELATED = re.compile(
    r"天气|股票|股市|基金|彩票|星座|算命|占卜|新闻|菜谱|做饭|电影|电视剧|游戏攻略|考试|作业|"
    r"翻译|写诗|写一首|讲个|笑话|聊天|你是谁|你叫什么|机器人"
)
_FOLLOWUP = re.compile(
    r"它|这款|那款|这个|那个|这件|那件|这双|那双|这只|那只|这台|这条|这种|那种|该款|该商品|"
    r"此款|上面那|刚才那|刚刚那|同款"
)
_CONTINUATION = re.compile(r"^(那|那么|还有|另外|再问|然后)|呢[?？]?$")
# A question this short in a conversation about no product names nothing of its own to search
# for (保研率是多少, 学院有多少位教师？): the conversation's topic is searched with it.
_TOPIC_FOLLOWUP_CHARS = 12
_COLLOQUIAL = re.compile(r"我|想|请问|能不能|是不是|怎么办|咋|啥|呢|吧|啊|呀|嘛|哈|老是|总是|一直|有点|感觉|好像")
# A number not glued after a letter, digit or point (the 3000 of XZ3000 belongs to its code).
_NUMBER = re.compile(r"(?<![A-Za-z0-9.])\d+(?:\.\d+)?")

# --------------------------------------------------------------------------- analyzer


class QueryAnalyzer:
    """Analyse questions against one KB (or none); rebuilds its index when the KB changes."""

    def __init__(self, kb: KnowledgeBase | None = None, max_chars: int | None = None):
        """max_chars: a longer question is read as its asking sentences within that many characters
        (agents/retrieval_question.py); None reads every question whole."""
        self.kb = kb
        self.max_chars = max_chars
        self._index: EntityIndex | None = None
        self._source: ProductIndex | None = None  # the product index the entity index was built from
        self._lock = threading.Lock()

    def warm_up(self) -> QueryAnalyzer:
        self._entity_index()
        return self

    @property
    def index(self) -> EntityIndex:
        """The entity index of the KB as it is now."""
        return self._entity_index()

    def _entity_index(self) -> EntityIndex:
        if self.kb is None:
            if self._index is None:
                self._index = EntityIndex([]).warm_up()
            return self._index
        source = product_index(self.kb)  # the shared product table, cached per KB generation
        with self._lock:
            if self._index is None or source is not self._source:
                products = [
                    {
                        "product_id": p.product_id,
                        "name": p.name,
                        "brand": p.brand,
                        "category": p.category,
                        "skus": [r["sku"] for r in p.skus],
                    }
                    for p in source.products.values()
                ]
                self._index = EntityIndex(products, source.lexicon).warm_up()
                self._source = source
            return self._index

    def _mentioned(self, name: str) -> bool:
        """Whether a document of the KB mentions the name (an FAQ on a model not sold yet, a review
        comparing with it): then the KB has something to say about it."""
        if self.kb is None:
            return False
        numbered = re.fullmatch(r"(.*?)(\d+)", compact(name)[0])  # iPhone14 and iPhone 14 alike
        if numbered is None:  # other_models names end in their number; anything else is no model
            return False
        stem, number = numbered.groups()
        return self.kb.mentions(re.compile(typed_loosely(stem) + r"[\s\-]?" + number + r"(?!\d)", re.I), number)

    def run(
        self, question: str, session_entity: Entity | None = None, session_topic: str | None = None
    ) -> QueryFeatures:
        """session_entity: the product the conversation is about; session_topic: its opening
        question, carried into a follow-up when there is no product to carry."""
        index = self._entity_index()
        question = to_simplified(question or "")  # read as the shop writes (knowledge/chinese_script.py)
        if self.max_chars is not None:  # a 2,000-character story is read by what it asks
            question = retrieval_question(question, self.max_chars)
        text = normalize(question)
        canonical = index.lexicon.canonicalize(text)
        # 火焰8 is no mention of 火焰7: a model the catalogue lacks is read as no product at all
        others = {name: series for name, series in index.other_models(canonical).items() if not self._mentioned(name)}
        unknown = list(others)
        products, brands, categories = index.match(_without(canonical, unknown))
        # 攀越50登山包 is not the 攀越40 (登山包 names it too): a product of an unknown model's series counts
        # only when the question names it with its own number (火焰7和火焰8)
        siblings = set().union(*others.values())
        products = [p for p in products if p.product_id not in siblings or series_in(p.surface)]
        if (
            products
            and products[0].product_id is None
            and session_entity is not None
            and session_entity.product_id in index.fitting(products[0].surface)
        ):
            # "AJ1多少钱" in a conversation about the AJ1 Low: the name fits the product talked about
            products[0] = session_entity.model_copy(update={"surface": products[0].surface})
        model_codes = list(dict.fromkeys(m.upper() for m in MODEL_NUMBER.findall(canonical)))
        sizes = parse_sizes(canonical)
        features = QueryFeatures(
            shop=self.kb.shop if self.kb is not None else None,
            question=question,
            canonical=canonical,
            length=len(re.sub(r"\s+", "", text)),
            question_words=[name for name, pattern in QUESTION_WORDS.items() if pattern.search(text)],
            products=products,
            brands=brands,
            categories=categories,
            model_codes=model_codes,
            unknown_models=unknown,
            sizes=sizes,
            size_label=sizes[0] if sizes else None,
            numbers=_free_numbers(canonical, [p.surface for p in products]),
            height_cm=parse_height_cm(text),
            weight_kg=parse_weight_kg(text),
            foot_length_cm=parse_foot_length_cm(text),
            price_limit=parse_price_limit(text),
            asks_price_stock=bool(_PRICE_STOCK.search(text)),
            asks_size=bool(sizes) or bool(_SIZE_WORDS.search(text)),
            colloquial=len(_COLLOQUIAL.findall(text)) >= 2,
        )
        parts = compound_parts(question or "")
        features.parts = parts if len(parts) > 1 else []
        features.asks_size_advice = bool(_SIZE_ADVICE.search(text)) or (
            features.height_cm is not None or features.weight_kg is not None or features.foot_length_cm is not None
        )
        if features.asks_size_advice and features.height_cm is None and features.weight_kg is not None:
            # "我172 68公斤选哪个码": beside a weight, a bare number a height could be is the height
            # (parse_body_reply's reading of a reply; the product's own numbers are no bare numbers)
            bare = parse_body_reply(_without(text, [p.surface for p in products]), ("height_cm",))
            features.height_cm = bare.get("height_cm")
        greeting = bool(_GREETING.match(text))
        if not greeting and not products and not model_codes and not unknown:  # a new model named is no follow-up
            marker = bool(_FOLLOWUP.search(text) or _CONTINUATION.search(text))
            elliptic = (
                session_entity is not None
                and not brands
                and features.length <= 12
                and not _asks_policy(text, features.shop)
                and not _UNRELATED.search(text)
            )
            features.is_followup = marker or elliptic
            if features.is_followup and session_entity is not None:
                features.carried_entity = session_entity
            elif (
                session_topic
                and session_entity is None
                and not index.products
                and not brands
                and (marker or features.length <= _TOPIC_FOLLOWUP_CHARS)
            ):  # a shop carries products instead
                features.is_followup, features.carried_topic = True, session_topic
        has_catalogue = bool(index.products) if self.kb is not None else None
        features.intent = _intent(features, text, greeting, has_catalogue)
        focus = features.focus_products
        features.asks_overview = bool(focus) and asks_overview(
            canonical, [p.name for p in focus] + [p.surface for p in focus]
        )
        return features


def without_product_asks(text: str) -> str:
    """The question without its price, stock and size words ("多少钱？有货吗？" -> "？吗？"): what is
    left says what it is about, if anything."""
    return _SIZE_WORDS.sub(" ", _PRICE_STOCK.sub(" ", text))


def _free_numbers(text: str, product_surfaces: list[str]) -> list[float]:
    """Numbers of the question that are not part of a product name or a model number."""
    text = MODEL_NUMBER.sub(" ", _without(text, product_surfaces))
    return [float(n) for n in _NUMBER.findall(text)]


def _asks_policy(text: str, shop: ShopProfile | None) -> bool:
    """Whether the question says a strong policy word: a generic one or one of the shop's own."""
    own = shop.policy_pattern if shop is not None else None
    return bool(_POLICY_STRONG.search(text) or (own is not None and own.search(text)))


def _intent(f: QueryFeatures, text: str, greeting: bool, has_catalogue: bool | None) -> Intent:
    """has_catalogue: the KB has a product table (None: no KB given). Only a shop KB makes an unrelated
    topic (天气, 股票) out of scope, and only a KB without one (news, encyclopedia, insurance
    FAQ) turns 会员/退款 words into plain facts: such a KB has no shop policy documents."""
    focus = f.focus_products
    strong_policy = _asks_policy(text, f.shop)
    shop_words = strong_policy or _POLICY_WEAK.search(text) or f.asks_price_stock or f.asks_size
    if greeting or (
        has_catalogue
        and not focus
        and not f.brands
        and not f.categories
        and not f.model_codes
        and not shop_words
        and _UNRELATED.search(text)
    ):
        return "out_of_scope"
    if _COMPARE_WORDS.search(text) or (len(focus) > 1 and _MULTI_PRODUCT_LINK.search(text)):
        return "comparison"
    if has_catalogue is not False and (strong_policy or (_POLICY_WEAK.search(text) and not focus)):
        return "policy"
    if f.asks_price_stock or f.asks_size or f.asks_size_advice or f.price_limit is not None:
        return "numeric"
    if _OPEN_WORDS.search(text):
        return "open"
    return "fact"


_analyzers: weakref.WeakKeyDictionary[KnowledgeBase, QueryAnalyzer] = weakref.WeakKeyDictionary()
_no_kb_analyzer = QueryAnalyzer(None)
_analyzers_lock = threading.Lock()


def analyze(question: str, kb: KnowledgeBase | None = None, session_entity: Entity | None = None) -> QueryFeatures:
    """Features of one question; the KB's entity index is built on first use and cached."""
    if kb is None:
        return _no_kb_analyzer.run(question, session_entity)
    with _analyzers_lock:
        analyzer = _analyzers.get(kb)
        if analyzer is None:
            analyzer = _analyzers[kb] = QueryAnalyzer(kb)
    return analyzer.run(question, session_entity)


def _without(text: str, surfaces: list[str]) -> str:
    """The text with the product names it names blanked out (their digits are no measures)."""
    for surface in surfaces:
        if surface:
            text = text.replace(surface, " ")
    return text
