"""What a customer's question asks, read from its wording: the kind of value (a price in 元), a
relation named in other words than the evidence uses, a definition, a time. The extractive
answerer uses these cues to tell a sentence that answers from one that only shares words.

The rules' patterns, word lists, packs and examples are data (agents/question_cues.yaml, loaded by
agents/question_rules.py); this module holds the functions that apply them. A rule of an opt-in
pack (encyclopedia, news) is read through the KB's QuestionRules, so it is off for a shop."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import jieba
import jieba.posseg

from citescope.agents.question_rules import QuestionRules, question_rules
from citescope.knowledge.text import CJK_CHAR, CJK_RUN, MODEL_NUMBER, chinese_int

# The rules read from agents/question_cues.yaml (ids, packs, patterns, examples). The core pack's
# patterns are the same for every KB and are named here for the modules that read them; a rule of an
# opt-in pack is read through the KB's QuestionRules (agents/question_rules.py).
CORE = question_rules()
PRICE_ASKED = CORE.pattern("price_words").pattern  # 多少钱, 啥价, 咋卖: a price question
STOCK_ASKED = CORE.pattern("stock_words").pattern  # 还有几双, 剩多少: a stock question
SIZE_AVAILABLE = CORE.pattern("size_available").pattern  # 有43码吗, 黑色还有吗: a stock question
DEFINITION_QUESTION = CORE.pattern("definition_question")
DESCRIPTION_QUESTION = CORE.pattern("description_question")
VARIANTS_QUESTION = CORE.pattern("variants_question")
# The words that ask (谁, 什么, 多少, 怎么, 是否, 吗 …): the one list QUESTION_WORD (a word of a question
# that is no term of it) and is_asking (a clause that asks) are built from.
ASKING_WORDS = r"谁|什么|啥|哪|几|多[少久重大高长远宽厚]|怎么|怎样|如何|是否|能否|可否|有没有|是不是|吗"
# 咋 (怎么 as shoppers type it) is no term of a question, but a clause is not read as asking for it:
# measured (2026-12-06), reading "…咋办" alone for retrieval (asking_clauses) lost the story before
# it (快递到了盒子都压扁了 里面东西也坏了 咋办 was answered from the lost-parcel FAQ instead of refused)
# and lowered the best evidence score of four more demo questions.
QUESTION_WORD = re.compile(rf"^(?:{ASKING_WORDS}|咋|请问|(?:many|much)$)")
# The counted word of "how many days" is the kind of value asked, as the 天 of 几天 is.
ENGLISH_COUNTED = re.compile(r"\bhow many\s+([a-z]+)")
NUMERIC_QUESTION = CORE.pattern("numeric_question")
WHEN_QUESTION = CORE.pattern("when_question")  # 开幕时间, 什么时候发货: only a sentence naming a time answers
# The era word of a question about when (哪个时期, 生活时期是什么) is the kind of answer asked, not a
# word the answer repeats (从1840年代到1870年代, 始于东汉, 生存于侏罗纪晚期).
ERA_WORDS = ("时期", "朝代", "年代", "时代")
TIME_EXPRESSION = CORE.pattern("time_expression")
AMOUNT_QUESTION = CORE.pattern("amount_question")  # 多少人, 总产量: only a sentence stating an amount answers
AMOUNT_EXPRESSION = CORE.pattern("amount_expression")


_URL = re.compile(r"(?:https?://|www\.)[^\s\u4e00-\u9fff（）()「」“”\"'<>]+", re.I)
# a listing's code names a company, it counts nothing (NASDAQ: BILI，HK:09626; 00700.HK; 股票代码：600519)
_STOCK_CODE = re.compile(
    r"(?<![A-Za-z])(?:NASDAQ|NYSE|HKEX|HK|SH|SZ)\s*[:：]\s*[A-Z0-9]+|(?:股票|证券)代码\s*[:：为是]?\s*\d+"
    r"|(?<![\d.])\d{4,6}\.(?:HK|SH|SZ|SS)(?![A-Za-z])"
)


def states_amount(sentence: str, question: str) -> bool:
    """Does the sentence state an amount the question does not already name (1500米 of
    男子1500米…谁夺冠 says which race, not how much)? A web address states none (…/kl2023), nor a
    listing's code (HK:09626)."""
    named = _amounts_named(question)
    plain = _STOCK_CODE.sub(" ", _URL.sub(" ", sentence))
    return any(match.group() not in named for match in AMOUNT_EXPRESSION.finditer(plain))


@lru_cache(maxsize=256)
def _amounts_named(question: str) -> frozenset[str]:
    """Read once per question, not once per evidence sentence."""
    return frozenset(match.group() for match in AMOUNT_EXPRESSION.finditer(question))


# What a question typed as keywords asks for is its last word (冠军 of 2023年全英羽毛球公开赛男单冠军？,
# 开幕 of 二十大开幕时间, 出生率 of 我国2021年人口出生率): a sentence without it is about the event,
# not what is asked of it (全英公开赛结束了半决赛的争夺). Time words (开幕时间), measure words and
# particles are skipped. None for a question with a question word: there the words around it name
# a kind (X有什么作用 - 德班港) or an act the answer states in its own words (由哪个公司制造 - 阿尔维斯
# 公司生产; 在什么电视台播放 - 关西电视台播出), and requiring them refused 1.5-13% more of cmrc2018
# dev's answerable questions (2026-12-02, session 13).
_FOCUS_FILLER = frozenset(
    "是 的 了 为 有 在 叫 被 由 呢 啊 呀 吧 都 又 还 也 会 要 能 可以 分别 各自 请问 一下 "
    "和 与 及 到底 究竟 具体 主要 大概 一共 总共 啦 过 "
    # words that only say "about it" (国际交流情况): the word before them is asked
    "情况 内容 方面 信息 详情 相关 概况".split()
)
# time words (开幕时间: the when-requirement asks the time) and words that only say how many (报名人数, 运动员
# 数量: the amount-requirement asks the number, 1193万人报名 says it) name nothing a sentence must repeat
_FOCUS_SKIPPED = re.compile(
    r"^(?:时间|日期|时候|年份|年|月|日|号|点|人数|数量|金额|总额|[人个次名位条件天元岁种]|\d+)$"
)
# 简述/介绍 X asks for a description, whatever word ends it (简述黄埔港的重要性)
_ASKING = re.compile(
    rf"{ASKING_WORDS}|何|怎|么"
    r"|简述|简介|介绍|说明|概述|描述"
    r"|([\u4e00-\u9fff])[不没]\1"
)  # 会不会, 行不行, 占不占: asked as X-not-X


# An edition of a recurring event (rule `edition`, news pack: 第七届, 十三届五次会议): a sentence naming
# editions of the same kind but not the asked one (十三届一次会议 for 五次会议) is about another edition.
def editions(text: str, rules: QuestionRules) -> set[tuple[str, int]]:
    """The editions a text names, as (kind, number): 十三届五次会议 -> {("届", 13), ("次会议", 5)}."""
    found = set()
    for number, kind in rules.pattern("edition").findall(text):
        number = number.removeprefix("第")
        value = 1 if number == "首" else int(number) if number.isdigit() else chinese_int(number)
        if value is not None:
            found.add(("届" if kind == "届" else "次会议", value))
    return found


def other_edition(asked: set[tuple[str, int]], said: set[tuple[str, int]]) -> bool:
    """Does a sentence naming `said` speak of another edition than the question's `asked`?"""
    kinds = {kind for kind, _ in asked} & {kind for kind, _ in said}
    return any(not {e for e in asked if e[0] == kind} & said for kind in kinds)


# A men's or a women's event (rule `gendered_event`, news pack: 男单, 女子500米): a sentence naming only the
# other's event of the same kind (女单冠军 for 男单冠军) is about that one.
_OTHER_SEX = {"男": "女", "女": "男"}


def gendered_events(text: str, rules: QuestionRules) -> set[tuple[str, str]]:
    """The men's and women's events a text names, as (男 / 女, kind): 男单 -> ("男", "单"), 女子500米 -> ("女", "")."""
    return {(gender, kind) for gender, kind in rules.pattern("gendered_event").findall(text)}


def other_gender_event(asked: set[tuple[str, str]], said: set[tuple[str, str]]) -> bool:
    """Does a sentence naming `said` speak only of the other's event of a kind the question asks (and
    asks of one sex only: 男单和女单冠军 asks both)?"""
    return any(
        (gender, kind) not in said and (_OTHER_SEX[gender], kind) in said and (_OTHER_SEX[gender], kind) not in asked
        for gender, kind in asked
    )


# A question asking who someone is (rule `who_question`: X是谁, 主演有谁) wants a name. Not one asking who did
# something (由谁成立, 和谁一起), which a group or a role often answers (3名前奴隶, 总参谋部).
# jieba's tags for a person, a place, an organisation or another proper name
_NAME_TAGS = frozenset({"nr", "nrfg", "nrt", "ns", "nt", "nz"})
_WORK_TITLE = re.compile(r"《[^》]+》")
_LATIN_NAME = re.compile(r"[a-z][a-z.\-]+")


def names_someone(sentence: str, question: str) -> bool:
    """Does an article's sentence name someone or something the question does not - a person,
    a team, a country, a work in 《》, a Latin-script name - as a who-question's answer must?
    "作为开闭幕式总导演" and "拘留一名记者" name nobody. Both texts in lower case."""
    if any(title.strip("《》") not in question for title in _WORK_TITLE.findall(sentence)):
        return True
    for word, tag in jieba.posseg.lcut(sentence):
        if word in question:
            continue
        if tag in _NAME_TAGS or "·" in word or "•" in word or (_LATIN_NAME.fullmatch(word) and len(word) > 1):
            return True
    return False


# A clause ending in one of these asks yes or no without 吗 (可以机洗不 / 还有货没)
NOT_ENDS = ("不", "没", "没有")
# A space between Chinese words ends a clause too: shoppers type "峰刃多少钱 可以机洗不" in a chat window,
# and part what they ask from what they add about themselves so ("能让快递周六再给我送吗 平时不在家")
_CHAT_BREAK = re.compile(r"(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])")
CLAUSE_END = re.compile(r"[，,？?；;]+|" + _CHAT_BREAK.pattern)


PRIZE_STATED = {"冠军": "champion_stated"}  # a prize -> the rule saying how a sentence states it was won


def asked_focus(question: str, rules: QuestionRules) -> str | None:
    """The prize a question asks about (rule `prize`: 金牌, not 银牌), else the last word of a question
    typed without a question word, else None."""
    prize = rules.pattern("prize").search(question)
    if prize:
        return prize.group(0)
    words = [w.lower() for w in words_of(question.strip()) if re.search(r"\w", w)]
    # a clause ending in 不 / 没 asks yes or no (可以机洗不 / 有货没), also before what a shopper adds
    # about themselves (能戴着去游泳不 暑假想天天泡泳池)
    yes_no = any(clause and words_of(clause)[-1] in NOT_ENDS for clause in CLAUSE_END.split(question.strip()))
    if not words or yes_no or _ASKING.search(question):
        return None  # a question word, or a yes-no question
    return next((w for w in reversed(words) if w not in _FOCUS_FILLER and not _FOCUS_SKIPPED.match(w)), None)


# A document titled with a sibling of what the question names (截尾鹦嘴鱼 for 钝头鹦嘴鱼的俗名是什么,
# 火斑笛鲷 for 单斑笛鲷): the question and the title share a name (鹦嘴鱼) that each modifies
# differently, and the question's whole name is nowhere in the document. Its sentences are about
# the sibling ("又名杂纹鹦哥鱼"), and quoting one would answer for the wrong entity.
MODIFIER_STOP = frozenset("的是在和与及了从为对把被由年月日中之其该这那什么哪谁几怎款个件双种类只台")
_NAME_END = frozenset("的是在有和与及为能会可以属分生喜主")  # 钝头鹦嘴鱼的, 疣鹦嘴鱼喜欢, 溪银汉鱼分布


def names_a_sibling(question: str, title: str, text: str) -> bool:
    """Only a title that is a name and nothing else (<modifier><name>) is compared, and only with a
    name that ends in the question where the shared part does (钝头鹦嘴鱼的…, 单斑笛鲷体长…)."""
    title = title.strip()
    shared = _longest_shared_run(question, title)
    if len(shared) < 2 or not title.endswith(shared):
        return False
    at = question.find(shared)
    after = question[at + len(shared) : at + len(shared) + 1]
    if after and CJK_CHAR.match(after) and after not in _NAME_END:
        return False
    asked = _modifier_before(question, at)
    titled = title[: -len(shared)]
    return (
        bool(asked)
        and 0 < len(titled) <= 3
        and bool(CJK_RUN.fullmatch(titled))
        and asked != titled
        and asked + shared not in f"{title} {text}"
    )


def _modifier_before(text: str, at: int) -> str:
    """Up to two Chinese characters right before `at`, none of them a function character."""
    start = at
    while start > 0 and at - start < 2 and CJK_CHAR.match(text[start - 1]) and text[start - 1] not in MODIFIER_STOP:
        start -= 1
    return text[start:at]


def _longest_shared_run(a: str, b: str) -> str:
    """The longest run of Chinese characters that both texts contain."""
    best = ""
    for i in range(len(b)):
        j = i + len(best) + 1
        while j <= len(b) and CJK_RUN.fullmatch(b[i:j]) and b[i:j] in a:
            best = b[i:j]
            j += 1
    return best


# A question about a product as a whole once its name is taken out (怎么样, 好不好, 值得买吗, 介绍一下):
# its page's opening section answers it. SKU rows and size-table rows repeat the name, so they
# outrank the page's prose for such a question, and say nothing about what the product is like.
OVERVIEW_QUESTION = re.compile(
    r"^(?:请问|请|麻烦)?(?:帮我|给我)?(?P<intro>介绍一下|介绍下|介绍|说说|讲讲|聊聊)?(?:你们家?的|这款|这个|这件|这双|那款|它|的)*"
    r"(?P<ask>怎么样|咋样|怎样|如何|好不好|好吗|好用吗|好穿吗|值得买吗|值不值得买|值得入手吗|靠谱吗|介绍一下|介绍下)?"
    r"[呀啊呢吗吧]?[？?。.!！~～\s]*$"
)


def asks_overview(question: str, names: Sequence[str]) -> bool:
    """Does the question, with the words of these product names taken out, only ask what the
    product is like? ("山野峰刃冲锋衣怎么样" with 山野 峰刃 GTX 冲锋衣; not "…防水怎么样")."""
    match = OVERVIEW_QUESTION.match(without_name_words(question, names))
    return match is not None and bool(match.group("intro") or match.group("ask"))


def without_name_words(text: str, names: Sequence[str]) -> str:
    """The text without every run of two or more characters that some name contains (spaces and
    case ignored): 果壳磁吸手机壳咋样 with 果壳 iPhone 15 系列磁吸防摔手机壳 -> 咋样."""
    squashed = [re.sub(r"\s+", "", n.lower()) for n in names if n]
    text = re.sub(r"\s+", "", text.lower())
    longest = max(map(len, squashed), default=0)
    out, i = [], 0
    while i < len(text):
        length = next(
            (n for n in range(min(len(text) - i, longest), 1, -1) if any(text[i : i + n] in s for s in squashed)), 0
        )
        if length:
            i += length
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


# -- comparisons -------------------------------------------------------------------------------
# Words that compare two things (对比, 区别, 哪个更, vs): the one list of them, which the intent analyser
# (agents/query_analysis.py) and the compound-question splitter below extend.
COMPARISON_WORDS = r"对比|区别|比较|差别|差异|差价|\bvs\b|哪个好|哪款好|哪个更|哪款更|哪双更|哪件更"


def _inside_brackets(text: str, at: int) -> bool:
    before = text[:at]
    return any(before.count(open_) > before.count(close) for open_, close in ("《》", "「」", "“”", "（）", "()"))


def asking_clauses(question: str) -> str | None:
    """What a chat message asks, when it also tells something in a part of its own (岩途打算配厚的徒步袜穿
    正常码会不会紧 -> 正常码会不会紧; 能让快递周六再给我送吗 平时不在家 -> 能让快递周六再给我送吗); else None."""
    text = question.strip()
    clauses, start = [], 0
    for gap in _CHAT_BREAK.finditer(text):
        if not _inside_brackets(text, gap.start()):  # not a space inside a title (《火影忍者疾风传 激斗忍者大战！EX2》)
            clauses.append(text[start : gap.start()])
            start = gap.end()
    clauses = [c.strip() for c in [*clauses, text[start:]] if c.strip()]
    asking = [c for c in clauses if is_asking(c)]
    return "，".join(asking) if 0 < len(asking) < len(clauses) else None


def is_asking(clause: str) -> bool:
    """Whether a clause asks something: a question word (什么, 多少, 吗, 会不会…) or a yes-no ending (…不)."""
    return bool(_ASKING.search(clause)) or clause.rstrip().endswith(NOT_ENDS)


def words_of(text: str) -> list[str]:
    """jieba's words, a model number (XZ-2000, T20) kept whole."""
    words, start = [], 0
    for match in MODEL_NUMBER.finditer(text):
        words += jieba.lcut(text[start : match.start()]) + [match.group(0)]
        start = match.end()
    return words + jieba.lcut(text[start:])
