"""Query analysis: intent, entities, numbers with units and follow-up detection, in one pass.

Rules and dictionaries only (no embeddings): the result feeds the strategy policy, whose rules
read the typed fields and whose bandit reads `QueryFeatures.vector()`.

Product detection matches name keys inside the question, in a compact form (lower case, no
spaces or hyphens, so "XZ 2000", "xz-2000" and "XZ2000" all meet "XZ-2000") with ASCII word
boundaries checked on the original text (XZ-2000 never matches inside XZ-20000, T20 never in
T200). A key names a product only when exactly one product has it; "strong" keys (id, SKU code,
model number, full name, the model segment right after the brand, and that segment's series name:
轻羽 of 轻羽3) decide alone, "weak" keys (descriptor words such as 手机壳) need the product's brand in
the question as well. A strong key several products share (轻羽: 轻羽3 and 轻羽Pro; Air Jordan 1; iPhone
15) is a name that fits them all: the product it names is left unresolved (product_id None), so
the session asks back which one, unless another word of the question fits only one of them.
"""

from __future__ import annotations

import re
import threading
import weakref
from typing import Literal, NamedTuple, get_args

import numpy as np
from pydantic import BaseModel, Field

from citescope.agents.question_cues import PRICE_ASKED, SIZE_AVAILABLE, STOCK_ASKED, asks_overview, compound_parts
from citescope.agents.retrieval_question import retrieval_question
from citescope.knowledge.chinese_script import to_simplified
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.lexicon import Lexicon
from citescope.knowledge.text import CJK_CHAR, MODEL_NUMBER, normalize, tokenize
from citescope.tools.products import product_index

Intent = Literal["fact", "numeric", "comparison", "policy", "open", "out_of_scope"]
INTENTS: tuple[str, ...] = get_args(Intent)


class Entity(BaseModel):
    """A shop entity named in (or carried into) a question; product_id is None when the name is
    known (from the lexicon) but not resolved to one product."""

    name: str
    product_id: str | None = None
    brand: str | None = None
    category: str | None = None
    surface: str = ""  # the words of the (alias-canonical) question that named it


# --------------------------------------------------------------------------- vocabulary
# Each flag: a regex over the normalized question. Order in QUESTION_WORDS is the vector order.
QUESTION_WORDS: dict[str, re.Pattern] = {
    "what": re.compile(r"什么|啥"),
    "how": re.compile(r"怎么|如何|怎样|咋"),
    "how_much": re.compile(r"多少|几|多大|多重|多久|多长|多高|多宽|多厚"),
    "which": re.compile(r"哪"),
    "whether": re.compile(r"是否|吗|能不能|可不可以|有没有|是不是|会不会|支不支持|行不行"),
    "why": re.compile(r"为什么|为啥|怎么会"),
    "compare": re.compile(
        r"对比|区别|比较|差别|差异|不同|差价|哪个好|哪款好|哪个更|哪款更|哪双更|哪件更|\bvs\b|还是", re.I
    ),
}
_COMPARE_WORDS = re.compile(r"对比|区别|比较|差别|差异|差价|\bvs\b|哪个好|哪款好|哪个更|哪款更|哪双更|哪件更", re.I)
_MULTI_PRODUCT_LINK = re.compile(r"和|与|跟|及|还是|哪|分别|各|一样|相同|不同|\bvs\b", re.I)
# Strong policy words make a question a policy question even when it names a product.
_POLICY_STRONG = re.compile(
    r"退货|退换|退款|换货|无理由|退回|能退|可以退|怎么退|退吗|运费|邮费|包邮|顺丰|发票|开票|会员|积分|"
    r"金卡|银卡|黑钻|优惠券|价保|保价|降价|分期|花呗|免息|货到付款|以旧换新|收货地址|修改地址|"
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

# --------------------------------------------------------------------------- numbers and units
_NUM = r"(\d+(?:\.\d+)?)"
_CN_DIGIT = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_HEIGHT = [
    re.compile(r"身高\s*(?:是|有|为|:)?\s*" + _NUM + r"\s*(cm|厘米|公分|m|米)?", re.I),
    re.compile(r"(?<![\d.])(1\d{2}(?:\.\d)?)\s*(cm|厘米|公分)", re.I),
    re.compile(r"(?<![\d.])(1\.\d{1,2})\s*(m|米)(?![a-z])", re.I),
]
_HEIGHT_METRE_CM = re.compile(r"(?<![\d.])1\s*米\s*(\d{1,2})")  # 1米75
_HEIGHT_CN = re.compile(r"一米([一二三四五六七八九])([零一二三四五六七八九])?")  # 一米七五
_WEIGHT = [
    re.compile(r"体重\s*(?:是|有|为|:)?\s*" + _NUM + r"\s*(kg|公斤|千克|斤)?", re.I),
    re.compile(r"(?<![\d.])" + _NUM + r"\s*(kg|公斤|千克|斤)", re.I),
]
_FOOT = re.compile(r"脚长?\s*(?:是|有|为|:)?\s*" + _NUM + r"\s*(cm|厘米|公分|mm|毫米)?", re.I)
# Shoe sizes: any two-digit "码"; "号" only for 30-49 (12号 is a date).
_NUMERIC_SIZE = re.compile(r"(?<![\d.])(\d{2}(?:\.5)?)\s*码|(?<![\d.月])([34]\d(?:\.5)?)\s*号")
_LETTER_SIZE = re.compile(
    r"(?<![A-Za-z0-9])([2-4]XL|XXXL|XXL|XL|XS|S|M|L)(?=\s*(?:码|号|的|还是|呢|吗|和|或|$|[,.?!，。？！、\s]))"
)
_PRICE_LIMIT = [
    re.compile(_NUM + r"\s*(?:元|块|rmb)?\s*(?:以内|以下|之内|内|之下|不到)", re.I),
    re.compile(r"(?:不超过|不高于|低于|少于|预算|最多)\s*" + _NUM, re.I),
]
_NUMBER = re.compile(r"(?<![A-Za-z0-9.])\d+(?:\.\d+)?")
_SPEC_SEGMENT = re.compile(r"^\d+(?:\.\d+)?[a-z]*$|^\d+(?:寸|升|片装)$", re.I)


def _first(patterns: list[re.Pattern], text: str) -> re.Match | None:
    for pattern in patterns:
        found = pattern.search(text)
        if found:
            return found
    return None


def parse_height_cm(text: str) -> float | None:
    found = _HEIGHT_CN.search(text)
    if found:
        return 100 + _CN_DIGIT[found.group(1)] * 10 + (_CN_DIGIT[found.group(2)] if found.group(2) else 0)
    found = _HEIGHT_METRE_CM.search(text)
    if found:
        tail = found.group(1)
        return 100 + (int(tail) * 10 if len(tail) == 1 else int(tail))
    found = _first(_HEIGHT, text)
    if not found:
        return None
    value, unit = float(found.group(1)), (found.group(2) or "").lower()
    if unit in ("m", "米") or value < 3:
        value *= 100
    return value if 50 <= value <= 250 else None


def parse_weight_kg(text: str) -> float | None:
    found = _first(_WEIGHT, text)
    if not found:
        return None
    value, unit = float(found.group(1)), (found.group(2) or "").lower()
    if unit == "斤":
        value /= 2
    return value if 10 <= value <= 300 else None


def parse_foot_length_cm(text: str) -> float | None:
    found = _FOOT.search(text)
    if not found:
        return None
    value, unit = float(found.group(1)), (found.group(2) or "").lower()
    if unit in ("mm", "毫米") or value > 100:
        value /= 10
    return value if 10 <= value <= 40 else None


# What a reply to "请告诉我您的身高（cm）和体重（kg）" may say without units ("175，72公斤", "175/72", "26").
# A bare number is one no unit, label, size or model number claims.
_BARE_NUMBER = re.compile(
    r"(?<![\d.A-Za-z])(\d+(?:\.\d+)?)(?![\d.])(?!\s*(?:[A-Za-z%]|[岁元块码号寸年月日天个件双次分秒斤克米]))"
)
_LENGTH = re.compile(r"(?<![\d.])" + _NUM + r"\s*(cm|厘米|公分|mm|毫米)", re.I)
_CLAIMED = [
    *_HEIGHT,
    _HEIGHT_METRE_CM,
    _HEIGHT_CN,
    *_WEIGHT,
    _FOOT,
    _LENGTH,
    _NUMERIC_SIZE,
    MODEL_NUMBER,
    re.compile(r"(?<![\d.])\d+(?:\.\d+)?\s*(?:m|米)(?![a-z])", re.I),
]
BARE_HEIGHT_CM = (140, 220)  # a bare number in this range, or 1.40-2.20 (metres), is a height
BARE_WEIGHT_KG = (35, 150)  # read as kg (the unit asked for) once the height is known
BARE_FOOT_CM = (20, 35)  # 200-350 is the same length in mm (a bare 175 is no foot: it is a height)


def parse_body_reply(text: str, need: list[str] | tuple[str, ...] = ()) -> dict[str, float]:
    """The body measures a reply to a clarifying question gives (height_cm, weight_kg,
    foot_length_cm): what the parse_* functions read, plus, for the facts `need` lists, bare
    numbers in their plausible range: "175，72公斤" is 175 cm and 72 kg, "175/72" too (a bare
    weight only once the height is given or no longer asked for), "26" or "255" a foot length,
    "26cm" a foot length when that is what was asked. "140斤" stays 70 kg: a number with a unit
    is read by its unit, never again as a bare number."""
    facts = {
        name: value
        for name, value in (
            ("height_cm", parse_height_cm(text)),
            ("weight_kg", parse_weight_kg(text)),
            ("foot_length_cm", parse_foot_length_cm(text)),
        )
        if value is not None
    }
    masked = text
    for pattern in _CLAIMED:
        masked = pattern.sub(lambda m: " " * len(m.group(0)), masked)
    bare = [float(m.group(1)) for m in _BARE_NUMBER.finditer(masked)]

    def take(convert) -> float | None:
        for i, value in enumerate(bare):
            converted = convert(value)
            if converted is not None:
                del bare[i]
                return converted
        return None

    def in_range(value: float, bounds: tuple[float, float]) -> bool:
        return bounds[0] <= value <= bounds[1]

    if "height_cm" in need and "height_cm" not in facts:
        height = take(
            lambda v: (
                v if in_range(v, BARE_HEIGHT_CM) else v * 100 if in_range(v * 100, BARE_HEIGHT_CM) and v < 3 else None
            )
        )
        if height is not None:
            facts["height_cm"] = height
    if "weight_kg" in need and "weight_kg" not in facts and ("height_cm" in facts or "height_cm" not in need):
        weight = take(lambda v: v if in_range(v, BARE_WEIGHT_KG) else None)
        if weight is not None:
            facts["weight_kg"] = weight
    if "foot_length_cm" in need and "foot_length_cm" not in facts:
        for found in _LENGTH.finditer(text):
            value = float(found.group(1)) / (10 if found.group(2).lower() in ("mm", "毫米") else 1)
            if 10 <= value <= 40:  # the range parse_foot_length_cm reads
                facts["foot_length_cm"] = value
                break
        else:
            foot = take(
                lambda v: (
                    v if in_range(v, BARE_FOOT_CM) else v / 10 if in_range(v / 10, BARE_FOOT_CM) and v >= 100 else None
                )
            )
            if foot is not None:
                facts["foot_length_cm"] = foot
    return facts


def describe_body_facts(facts: dict[str, float]) -> str:
    """ "身高175cm，体重72kg": the facts as the parse_* functions read them back."""
    labels = {"height_cm": "身高{}cm", "weight_kg": "体重{}kg", "foot_length_cm": "脚长{}cm"}
    return "，".join(labels[name].format(f"{facts[name]:g}") for name in labels if name in facts)


def parse_sizes(text: str) -> list[str]:
    found = [(m.start(), m.group(1) or m.group(2)) for m in _NUMERIC_SIZE.finditer(text)]
    found += [(m.start(), m.group(1).upper()) for m in _LETTER_SIZE.finditer(text)]
    return list(dict.fromkeys(size for _, size in sorted(found)))


def parse_price_limit(text: str) -> float | None:
    found = _first(_PRICE_LIMIT, text)
    return float(found.group(1)) if found else None


# --------------------------------------------------------------------------- features


class QueryFeatures(BaseModel):
    question: str
    canonical: str  # normalized, aliases replaced by canonical names
    length: int  # characters without whitespace
    question_words: list[str] = Field(default_factory=list)  # keys of QUESTION_WORDS present
    intent: Intent = "fact"
    products: list[Entity] = Field(default_factory=list)  # named in this question, in order
    brands: list[str] = Field(default_factory=list)
    categories: list[str] = Field(default_factory=list)
    model_codes: list[str] = Field(default_factory=list)
    # models of the shop's series its catalogue lacks (火焰8 beside 火焰7), which no document mentions
    unknown_models: list[str] = Field(default_factory=list)
    sizes: list[str] = Field(default_factory=list)
    size_label: str | None = None
    numbers: list[float] = Field(default_factory=list)  # outside product names and model codes
    height_cm: float | None = None
    weight_kg: float | None = None
    foot_length_cm: float | None = None
    price_limit: float | None = None
    asks_price_stock: bool = False
    asks_size: bool = False  # size table or size words (尺码, 脚长, 42码…)
    asks_size_advice: bool = False  # which size to pick, or body measures given
    asks_overview: bool = False  # what the product is like, as a whole (怎么样, 介绍一下)
    colloquial: bool = False
    is_followup: bool = False
    carried_entity: Entity | None = None
    # A follow-up in a conversation about no product ("保研率是多少" after "国学院有哪些下设系别"):
    # the conversation's opening question, which names the topic the follow-up leaves out.
    carried_topic: str | None = None
    # The questions a compound question is made of (北京冬奥会和冬残奥会的开幕日期分别是什么时候),
    # each searched alone by an arm step `for_each: part`; [] when it asks one thing.
    parts: list[str] = Field(default_factory=list)

    @property
    def focus_products(self) -> list[Entity]:
        """The products the question is about: named ones, else the one carried from the session."""
        if self.products:
            return self.products
        return [self.carried_entity] if self.carried_entity else []

    @property
    def product(self) -> Entity | None:
        focus = self.focus_products
        return focus[0] if focus else None

    @staticmethod
    def feature_names() -> list[str]:
        return list(FEATURE_NAMES)

    def vector(self) -> np.ndarray:
        focus = self.focus_products
        flags = {
            "bias": True,
            **{f"intent_{name}": self.intent == name for name in INTENTS},
            "has_product": any(e.product_id for e in focus),
            "has_named_entity": bool(focus),
            "multi_product": len(focus) > 1,
            "has_brand": bool(self.brands),
            "has_category": bool(self.categories),
            "has_model_code": bool(self.model_codes),
            "has_number": bool(self.numbers),
            "has_size": bool(self.sizes) or self.asks_size,
            "has_body_measure": any(v is not None for v in (self.height_cm, self.weight_kg, self.foot_length_cm)),
            "has_price_limit": self.price_limit is not None,
            "asks_price_stock": self.asks_price_stock,
            "asks_size_advice": self.asks_size_advice,
            "is_followup": self.is_followup,
            "has_carried_entity": self.carried_entity is not None,
            "colloquial": self.colloquial,
            **{f"qw_{name}": name in self.question_words for name in QUESTION_WORDS},
            "len_short": self.length <= 10,
            "len_medium": 10 < self.length <= 25,
            "len_long": self.length > 25,
        }
        return np.array([float(flags[name]) for name in FEATURE_NAMES], dtype=np.float64)


FEATURE_NAMES: tuple[str, ...] = (
    "bias",
    *(f"intent_{name}" for name in INTENTS),
    "has_product",
    "has_named_entity",
    "multi_product",
    "has_brand",
    "has_category",
    "has_model_code",
    "has_number",
    "has_size",
    "has_body_measure",
    "has_price_limit",
    "asks_price_stock",
    "asks_size_advice",
    "is_followup",
    "has_carried_entity",
    "colloquial",
    *(f"qw_{name}" for name in QUESTION_WORDS),
    "len_short",
    "len_medium",
    "len_long",
)


# --------------------------------------------------------------------------- entity index


def _is_ascii_alnum(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


def _compact(text: str) -> tuple[str, list[int]]:
    """Lower case without spaces/hyphens, plus where each kept character sits in `text`."""
    chars, where = [], []
    for i, ch in enumerate(text):
        if ch.isspace() or ch in "-_·":
            continue
        low = ch.lower()
        chars.append(low if len(low) == 1 else ch)
        where.append(i)
    return "".join(chars), where


def _segments(name: str) -> list[str]:
    """Name pieces split at spaces and brackets; consecutive ASCII words stay one piece."""
    pieces = [p for p in re.split(r"[\s()（）\[\]【】]+", name) if p]
    merged: list[str] = []
    for piece in pieces:
        if piece.isascii() and merged and merged[-1].isascii():
            merged[-1] += " " + piece
        else:
            merged.append(piece)
    return merged


def _name_words(segment: str, lexicon: Lexicon) -> list[str]:
    """Words of a name segment: jieba tokens plus CJK character bigrams (jieba splits product
    descriptors unevenly: 磁吸防摔手机壳 -> 磁吸防 / 手机, while bigrams keep 机壳)."""
    words = {t for t in tokenize(segment, lexicon) if len(t) >= 2}
    words.update(a + b for a, b in zip(segment, segment[1:], strict=False) if CJK_CHAR.match(a) and CJK_CHAR.match(b))
    return sorted(words)


# The series name of a model segment: the Chinese stem before the model designator (轻羽 of 轻羽3
# and 轻羽Pro, 极光 of 极光700 and 极光Pro).
_SERIES_STEM = re.compile(r"^([\u4e00-\u9fff]{2,})[A-Za-z0-9]")
# A number right after a name, not a quantity (42码, 2双): the name of another model (轻羽5, Air Jordan 11).
_OTHER_MODEL_NUMBER = re.compile(
    r"[\s\-]*\d+(?:\.\d+)?(?!\s*(?:\.?\d|码|号|件|个|双|只|元|块|斤|岁|cm|mm|kg|g\b))", re.I
)
# A product name's series and number (火焰7, 攀越40, XZ-2000, XZ-C65, T20, Air Jordan 1, iPhone 15): a
# Chinese stem glued to its number, or Latin words (hyphen- or space-joined) before it; not a spec
# (10000mAh, 65W, 20寸). Another number after the same stem in a question is a model the shop may not have.
_NAME_SERIES = re.compile(
    r"(?<![A-Za-z0-9])([A-Za-z]+(?:[ \-][A-Za-z]+)*)[ \-]?(\d+)(?![\d.A-Za-z])"
    r"|([\u4e00-\u9fff]{2,})(\d+)(?![\d.A-Za-z])"
)
# What a number after a series name counts when it is no model number (火焰7 42码, T20 20寸, 轻羽3 2双).
_QUANTITY_AFTER = re.compile(
    r"\s*(?:[.\d%]|码|号|件|个|双|只|元|块|斤|岁|寸|天|年|月|日|点|小时|分钟|秒|折|期|万|千|百"
    r"|毫安|mah|升|克|公斤|千克|kg|g(?![a-z])|cm|mm|米|w(?![a-z])|l(?![a-z])|度|次|人|款|版"
    r"|台|套|条|张|包|盒|片|副|对|瓦|伏|分|级|层|倍|周)",
    re.I,
)


class _Span(NamedTuple):
    start: int  # in the alias-canonical text
    end: int
    target: str  # product id
    strong: bool = True


class EntityIndex:
    """Matchable keys of one KB's products, brands, categories and lexicon aliases."""

    def __init__(self, products: list[dict], lexicon: Lexicon | None = None):
        """products: dicts with product_id, name, brand, category and optional skus (codes)."""
        self.lexicon = lexicon or Lexicon()
        self.products = {p["product_id"]: p for p in products}
        self.keys: dict[str, dict[str, bool]] = {}  # compact key -> {product_id: strong}
        self.brand_keys: dict[str, str] = {}
        self.category_keys: dict[str, str] = {}
        self.alias_targets: dict[str, str] = {}  # compact canonical name -> canonical name
        self.products_of_brand: dict[str, list[str]] = {}
        self.series: dict[str, dict[str, set[str]]] = {}  # series stem (compact) -> number -> its product ids
        self._series_patterns: list[tuple[str, re.Pattern]] = []

    def warm_up(self) -> EntityIndex:
        named = {pid: self._name_parts(p) for pid, p in self.products.items()}
        token_owners: dict[str, set[str]] = {}
        for pid, (_, segments) in named.items():
            for _, tokens in segments:
                for token in tokens:
                    token_owners.setdefault(token, set()).add(pid)
        for pid, (name, segments) in named.items():
            self._add_product(self.products[pid], name, segments, token_owners)
        for brand in self.products_of_brand:
            self.brand_keys[_compact(brand)[0]] = brand
        for category in {p.get("category") for p in self.products.values()} - {None, ""}:
            self.category_keys[_compact(category)[0]] = category
        for target in set(self.lexicon.aliases.values()):
            # Lexicon-only names: model-like canonical names (AJ1 -> Air Jordan 1, XZ2000 -> XZ-2000).
            if any(ch.isdigit() for ch in target):
                self.alias_targets[_compact(target)[0]] = target
        self._lengths = sorted(
            {len(k) for k in (*self.keys, *self.brand_keys, *self.category_keys, *self.alias_targets)}, reverse=True
        )
        names = [*((name, pid) for pid, (name, _) in named.items()), *((t, None) for t in self.alias_targets.values())]
        for name, pid in names:
            for stem, number, _ in series_in(name):
                self.series.setdefault(stem, {}).setdefault(number, set()).update([pid] if pid else [])
        self._series_patterns = [
            (stem, re.compile(_typed_loosely(stem) + r"[\s\-]?(\d+)(?![\d.])", re.I)) for stem in self.series
        ]
        return self

    def _name_parts(self, product: dict) -> tuple[str, list[tuple[str, list[str]]]]:
        """Alias-canonical name and its (segment, search tokens) pairs, brand and specs left out."""
        brand = (product.get("brand") or "").strip()
        name = self.lexicon.canonicalize(normalize(product.get("name") or ""))
        segments = [s for s in _segments(name) if s != brand and not _SPEC_SEGMENT.match(s)]
        return name, [(s, _name_words(s, self.lexicon)) for s in segments]

    def _add_key(self, text: str, product_id: str, strong: bool) -> None:
        key = _compact(text)[0]
        if len(key) < 2 or key.isdigit():
            return
        owners = self.keys.setdefault(key, {})
        owners[product_id] = owners.get(product_id, False) or strong

    def _add_product(
        self, product: dict, name: str, segments: list[tuple[str, list[str]]], token_owners: dict[str, set[str]]
    ) -> None:
        pid, brand = product["product_id"], (product.get("brand") or "").strip()
        if brand:
            self.products_of_brand.setdefault(brand, []).append(pid)
        for exact in (pid, name, *(product.get("skus") or [])):
            self._add_key(exact, pid, True)
        for code in MODEL_NUMBER.findall(name):
            self._add_key(code, pid, True)
            for part in code.split("-"):  # XZ-C65 -> C65
                if re.search(r"[A-Za-z]", part) and re.search(r"\d", part):
                    self._add_key(part, pid, True)
        for position, (segment, tokens) in enumerate(segments):
            # The model segment (first after the brand) and segments sharing no word with another
            # product (芝加哥) are names; descriptors like 笔记本充电宝 (充电宝 is shared) are weak.
            strong = position == 0 or all(token_owners[t] == {pid} for t in tokens)
            if segment.isascii():
                words = segment.split()
                for n in range(1, len(words) + 1):  # Air / Air Jordan / Air Jordan 1 / ... Low
                    self._add_key(" ".join(words[:n]), pid, strong)
            else:
                self._add_key(segment, pid, strong)
                stem = _SERIES_STEM.match(segment) if position == 0 else None
                if stem:
                    self._add_key(stem.group(1), pid, True)
            for token in tokens:
                self._add_key(token, pid, False)

    # -- matching ---------------------------------------------------------------------------
    def _find(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, compact key) of every known key in text, ASCII word boundaries respected."""
        compact, where = _compact(text)
        found = []
        for i in range(len(compact)):
            for size in self._lengths:
                key = compact[i : i + size]
                if len(key) < size or not (
                    key in self.keys or key in self.brand_keys or key in self.category_keys or key in self.alias_targets
                ):
                    continue
                start, end = where[i], where[i + size - 1] + 1
                if _is_ascii_alnum(key[0]) and start > 0 and _is_ascii_alnum(text[start - 1]):
                    continue
                if _is_ascii_alnum(key[-1]) and end < len(text) and _is_ascii_alnum(text[end]):
                    continue
                found.append((start, end, key))
        return found

    def match(self, text: str) -> tuple[list[Entity], list[str], list[str]]:
        """(products in order of mention, brands, categories) named in alias-canonical text."""
        hits = self._find(text)
        brands = list(dict.fromkeys(self.brand_keys[k] for _, _, k in hits if k in self.brand_keys))
        categories = list(dict.fromkeys(self.category_keys[k] for _, _, k in hits if k in self.category_keys))
        spans = [_Span(s, e, *next(iter(self.keys[k].items()))) for s, e, k in hits if len(self.keys.get(k, ())) == 1]
        strong = [s for s in spans if s.strong]
        # A key inside a longer key of another product is not a mention of its own.
        strong = [
            s
            for s in strong
            if not any(
                o.target != s.target and o.start <= s.start and s.end <= o.end and (o.end - o.start) > (s.end - s.start)
                for o in strong
            )
        ]
        chosen = self._ordered(strong)
        if not chosen:
            weak = [s for s in spans if self.products[s.target].get("brand") in brands]
            chosen = self._ordered(weak)
        if not chosen:  # a brand with a single product names it
            chosen = self._ordered(
                [
                    _Span(s, e, self.products_of_brand[self.brand_keys[k]][0])
                    for s, e, k in hits
                    if k in self.brand_keys and len(self.products_of_brand[self.brand_keys[k]]) == 1
                ]
            )
        shared = None
        if not chosen:  # a name several products share: one of them if another word fits only it
            shared = self._shared_name(text, hits)
            if shared is not None:
                start, end, key = shared
                fitting = {s.target for s in spans if s.target in self.keys[key] and (s.end <= start or s.start >= end)}
                if len(fitting) == 1:
                    chosen, shared = {fitting.pop(): (start, end)}, None
        products = [self._entity(pid, text[start:end]) for pid, (start, end) in chosen.items()]
        if shared is not None:
            start, end, key = shared
            products.append(Entity(name=self.alias_targets.get(key) or text[start:end], surface=text[start:end]))
        if not products:
            for start, end, key in hits:
                if key in self.alias_targets:
                    name = self.alias_targets[key]
                    products.append(Entity(name=name, surface=text[start:end]))
                    break
        return products, brands, categories

    def _shared_name(self, text: str, hits: list[tuple[int, int, str]]) -> tuple[int, int, str] | None:
        """The first (longest) hit of a strong key several products share, not a brand or category,
        nor followed by a model number of its own (Air Jordan 11 is another model; "AJ1 42码" is not)."""
        shared = [
            (s, e, k)
            for s, e, k in hits
            if len(self.keys.get(k, ())) > 1
            and all(self.keys[k].values())
            and k not in self.brand_keys
            and k not in self.category_keys
        ]
        longest: dict[int, tuple[int, int, str]] = {}
        for hit in shared:
            if hit[0] not in longest or hit[1] > longest[hit[0]][1]:
                longest[hit[0]] = hit
        # the longest name at a place decides: "Air Jordan" before 11 makes "Air" no mention either
        named = [hit for start, hit in sorted(longest.items()) if not _OTHER_MODEL_NUMBER.match(text, hit[1])]
        return named[0] if named else None

    def other_models(self, text: str) -> dict[str, set[str]]:
        """Models of the shop's series that its catalogue does not have, as alias-canonical text names
        them, each with the products of its series: another number after a series stem (火焰8 beside
        火焰7, XZ-4000 beside XZ-2000, Air Jordan 11 beside Air Jordan 1, iPhone 16 beside iPhone 15);
        a number counting something (火焰7 42码, T20 20寸) names no model."""
        found: dict[str, set[str]] = {}
        for stem, pattern in self._series_patterns:
            for match in pattern.finditer(text):
                number = match.group(1)
                if number in self.series[stem] or _QUANTITY_AFTER.match(text, match.end()):
                    continue
                surface = match.group(0).strip()
                if _compact(surface)[0] not in self.keys and _compact(surface)[0] not in self.alias_targets:
                    found.setdefault(surface, set()).update(*self.series[stem].values())
        return found

    def fitting(self, name: str) -> set[str]:
        """The products a name (a matched surface such as "轻羽" or "Air Jordan 1") is a key of."""
        return set(self.keys.get(_compact(name)[0], ()))

    def names_anything(self, text: str) -> bool:
        """Whether alias-canonical text names a product (by a strong key, even one several products
        share), a brand or a category; descriptor words alone (防水, 跑鞋) name nothing."""
        return any(
            k in self.brand_keys
            or k in self.category_keys
            or k in self.alias_targets
            or any(self.keys.get(k, {}).values())
            for _, _, k in self._find(text)
        )

    @staticmethod
    def _ordered(spans: list[_Span]) -> dict[str, tuple[int, int]]:
        first: dict[str, tuple[int, int]] = {}
        for span in sorted(spans, key=lambda s: (s.start, -(s.end - s.start))):
            first.setdefault(span.target, (span.start, span.end))
        return first

    def _entity(self, product_id: str, surface: str) -> Entity:
        product = self.products[product_id]
        return Entity(
            name=product.get("name") or product_id,
            product_id=product_id,
            brand=product.get("brand") or None,
            category=product.get("category") or None,
            surface=surface,
        )


# --------------------------------------------------------------------------- analyzer


class QueryAnalyzer:
    """Analyse questions against one KB (or none); rebuilds its index when the KB changes."""

    def __init__(self, kb: KnowledgeBase | None = None, max_chars: int | None = None):
        """max_chars: a longer question is read as its asking sentences within that many characters
        (agents/retrieval_question.py); None reads every question whole."""
        self.kb = kb
        self.max_chars = max_chars
        self._index: EntityIndex | None = None
        self._source = None  # the product index the entity index was built from
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
        stem, number = re.fullmatch(r"(.*?)(\d+)", _compact(name)[0]).groups()  # iPhone14 and iPhone 14 alike
        return self.kb.mentions(re.compile(_typed_loosely(stem) + r"[\s\-]?" + number + r"(?!\d)", re.I), number)

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
                and not _POLICY_STRONG.search(text)
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
        shop = bool(index.products) if self.kb is not None else None
        features.intent = _intent(features, text, greeting, shop)
        focus = features.focus_products
        features.asks_overview = bool(focus) and asks_overview(
            canonical, [p.name for p in focus] + [p.surface for p in focus]
        )
        return features


def series_in(name: str) -> list[tuple[str, str, str]]:
    """(stem, number, model as written) of each series name in a product name or a matched surface
    (火焰7 -> 火焰, 7, 火焰7; 北极驿极光700 -> 极光, 700, 极光700; Air Jordan 1 Low -> airjordan, 1, Air Jordan 1):
    the stem compact, a Chinese one its last two characters."""
    found = []
    for match in _NAME_SERIES.finditer(name):
        latin, latin_number, chinese, chinese_number = match.groups()
        if latin:
            found.append((_compact(latin)[0], latin_number, match.group(0).strip()))
        else:
            found.append((chinese[-2:], chinese_number, chinese[-2:] + chinese_number))
    return found


def _typed_loosely(stem: str) -> str:
    """A pattern for a compact name stem as text may type it: any case (compiled with re.I), its
    characters glued or apart (Air Jordan / AirJordan, XZ-C / xz c), a Latin one not inside a word."""
    return ("(?<![A-Za-z0-9])" if stem[0].isascii() else "") + r"[\s\-]?".join(map(re.escape, stem))


def without_product_asks(text: str) -> str:
    """The question without its price, stock and size words ("多少钱？有货吗？" -> "？吗？"): what is
    left says what it is about, if anything."""
    return _SIZE_WORDS.sub(" ", _PRICE_STOCK.sub(" ", text))


def _free_numbers(text: str, product_surfaces: list[str]) -> list[float]:
    """Numbers of the question that are not part of a product name or a model number."""
    text = MODEL_NUMBER.sub(" ", _without(text, product_surfaces))
    return [float(n) for n in _NUMBER.findall(text)]


def _intent(f: QueryFeatures, text: str, greeting: bool, shop: bool | None) -> str:
    """shop: the KB has a product table (None: no KB given). Only a shop KB makes an unrelated
    topic (天气, 股票) out of scope, and only a KB without one (news, encyclopedia, insurance
    FAQ) turns 会员/退款 words into plain facts: such a KB has no shop policy documents."""
    focus = f.focus_products
    shop_words = _POLICY_STRONG.search(text) or _POLICY_WEAK.search(text) or f.asks_price_stock or f.asks_size
    if greeting or (
        shop
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
    if shop is not False and (_POLICY_STRONG.search(text) or (_POLICY_WEAK.search(text) and not focus)):
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
