"""What a customer's question asks, read from its wording: the kind of value (a price in 元), a
relation named in other words than the evidence uses, a definition, a time. The extractive
answerer uses these cues to tell a sentence that answers from one that only shares words."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import jieba
import jieba.posseg

from citescope.knowledge.text import CJK_CHAR, CJK_RUN, MODEL_NUMBER, chinese_int

# 多少钱, and how shoppers type it in a chat window (啥价, 多钱, 多少米, 咋卖)
PRICE_ASKED = r"多少钱|价格|售价|价钱|卖多少|几块|啥价|什么价|多钱|多少米|几个米|价位|[咋怎]么卖"
# How many are left (还有几双, 还有多少件, 剩多少): a stock question
STOCK_ASKED = r"库存|有货|现货|还有几|还有多少|还剩|剩多少|剩几|几件|几双"
# A size asked after as something to be had (有43码吗, 43码还有吗, 有没有M号的, 黑色还有吗, 有蓝色吗): a stock question.
SIZE_AVAILABLE = (
    r"有(?:没有)?\s*[0-9A-Za-z.]{1,4}\s*[码号](?:的)?(?:吗|么|嘛|没)|有没有\s*[0-9A-Za-z.]{1,4}\s*[码号]"
    r"|[0-9A-Za-z.]{1,4}\s*[码号](?:的)?(?:还|现在)?有(?:吗|么|嘛|没有?)|还有(?:吗|么|嘛|没有?)[？?]?$"
    r"|有(?:没有)?[^，。？?]{0,6}?[黑白红蓝绿灰黄紫粉橙棕金银青]色[^，。？?]{0,6}?(?:吗|么|嘛|没)|有没有[^，。？?]{0,6}?[黑白红蓝绿灰黄紫粉橙棕金银青]色"
)
# What a question asks for -> units and words a sentence that answers it carries.
ASKS = (
    (re.compile(PRICE_ASKED + r"|how much|price|cost", re.I), {"元"}, ("价格", "售价", "元")),
    # 有43码吗 / M码还有吗 / 有没有XL号: whether a size is to be had, i.e. its stock
    (re.compile(STOCK_ASKED + r"|in stock|stock|" + SIZE_AVAILABLE, re.I), {"件"}, ("库存",)),
    (re.compile(r"多重|重量|克重|几克|多少克|weigh", re.I), {"g", "kg"}, ("重量", "克重")),
    (
        re.compile(r"多久|几天|多长时间|时效|期限|有效期|几年|how long", re.I),
        {"天", "h", "min", "工作日", "月", "年"},
        (),
    ),
    (re.compile(r"容量|多大|几升|多少升", re.I), {"l", "mah"}, ("容量",)),
    (re.compile(r"多少瓦|功率|输出", re.I), {"w"}, ("功率", "输出")),
    (re.compile(r"长度|体长|全长|身长|多远|距离|多少米|多少公里"), {"m", "km", "cm", "mm"}, ()),
)
# Relations a question names in other words than its answer does (蟒鳗又被称为什么 - 又称血红拟蛇鱼,
# 康王路在哪里 - 广州市荔湾区): a sentence stating the relation this way answers it. Unlike ASKS they
# add a way to answer, never a requirement: "康王路在哪里" is still answered by any sentence about 康王路.
RELATIONS = (
    (
        re.compile(r"称为|称作|叫做|叫什么|叫啥|别名|别称|又名|外号|简称|全称|原名|本名|通称|俗称|译(?:为|成|作|名)"),
        re.compile(
            r"又称|又名|别名|别称|俗称|亦称|简称|通称|称为|称作|又叫|也叫|或称|旧称|原名|本名|全称|外号|学名|又译|译名|名为"
        ),
    ),
    (
        re.compile(r"在哪|位于哪|地址|地点|举办地|什么地方|产地|何处|哪个(?:省|市|县|区|国家|城市|地区)"),
        re.compile(r"位于|坐落|地处|地址|所在地|境内|[\u4e00-\u9fff](?:省|市|县|区|州|镇|乡|村)"),
    ),
    (
        re.compile(r"籍贯|哪里人|哪国人|国籍|出生地|出生在哪|出生于哪|(?:哪个|什么)地方(?:的)?人|哪里的人"),
        # "<place>人" closing a clause (沧州清池人。, 句章（今宁波市）人，), not 有人将 or 的人都
        re.compile(r"籍贯|国籍|祖籍|出生|生于|(?:[\u4e00-\u9fff]{2}|[）)])(?<![有的个些])人[士氏]?(?![\u4e00-\u9fff])"),
    ),
    (re.compile(r"为食|吃什么|食物|食性|以什么为"), re.compile(r"为食|为生|捕食|食物|食性|猎物|吃")),
    (re.compile(r"用途|有什么用|用来|作用是|用于什么"), re.compile(r"用于|用作|用来|可作|用途|作用")),
    # not 改名为什么 / 称为什么, which ask a name
    (
        re.compile(r"病因|原因|(?<![名称改译成])为什么|为何|怎么会"),
        re.compile(r"因为|由于|导致|引起|造成|所致|原因|因此|因而"),
    ),
    (
        re.compile(r"属于(?:什么|哪)|哪个(?:科|属|目|纲)|什么(?:科|属)"),
        re.compile(r"[\u4e00-\u9fff](?:科|属|目|纲)(?![学技研])"),
    ),
    (re.compile(r"作者|谁写|著作|写过|作品"), re.compile(r"作者|著有|著作|所著|所作|所写|编著|撰|作品|创作")),
    # who founded it (创始人是谁 - 创办人是…, 由谁创立 - 由…所创建)
    (re.compile(r"创始人|创办人|创立|创办|创建|谁(?:建立|成立)"), re.compile(r"创始|创办|创立|创建|建立|成立|始创")),
    # where a name comes from (为什么叫挂绿 - 故名挂绿, 名字如何得来 - 因…而得名, 名字的含义 - 意为…)
    (
        re.compile(
            r"得名|名字(?:的)?(?:由来|来历|来源|含义|意思)|名字(?:是)?(?:如何|怎么)|为什么(?:被)?(?:叫|称)|为何(?:被)?(?:叫|称)|命名"
            r"|谁命[名的]?"
        ),
        re.compile(r"得名|故名|命名|名称来源|名字来源|名称源自|意为|意指|意思是|含义是"),
    ),
    (re.compile(r"导演|执导"), re.compile(r"导演|执导")),
    # parents (邵伯温的父亲 - 邵雍之子, 生母是谁 - 某氏所生), teachers (师从 - 拜…为师), fiefs (封地 - 封国)
    # asked as X的母亲是谁 / X的父亲名字叫什么, not a question that mentions 父母 (父母两人都在…上班)
    (
        re.compile(r"(?:的|其)(?:父亲|母亲|生父|生母|父母|养父|养母)(?:是|叫|名|为)|(?:父亲|母亲|生父|生母)是谁"),
        re.compile(r"之子|之女|所生|其父|其母|父亲|母亲|生父|生母|[长次幼独嫡庶][子女]|[二三四五六七八九]子"),
    ),
    (
        re.compile(r"师从|(?:的|其)(?:老师|师父|师傅|恩师)(?:是|叫|名|为)|拜(?:谁|何人)为师|向谁学"),
        re.compile(r"师从|师事|拜[\u4e00-\u9fff·]{1,8}为师|受业于|从学于|门下|弟子|门生"),
    ),
    (re.compile(r"封地|封在|封于|封国|食邑"), re.compile(r"封地|封国|封于|受封|封为|食邑|就国")),
    # a courtesy name (曹文埴（），字近薇，号竹虚) and a posthumous one (谥文敏)
    (
        re.compile(r"表字|的字(?:是|叫)|字号|别号|的号(?:是|叫)"),
        re.compile(r"(?:^|[，,；;（(])\s*(?:表?字|别?号)\s*[\u4e00-\u9fff]"),
    ),
    (re.compile(r"谥号|谥什么"), re.compile(r"谥号?\s*[为曰“「\u4e00-\u9fff]")),
    # a new name (2010年改名为什么 - 2010年后改为…), a spouse (是谁的妻子 - 孙休之妻)
    (re.compile(r"改名|更名|改称|易名|改为什么"), re.compile(r"改名|更名|改称|易名|改为|改组为|更改为")),
    (
        re.compile(r"谁的(?:妻子|丈夫|夫人|配偶)|(?:妻子|丈夫|夫人|配偶)(?:是谁|叫什么|名叫)|嫁给(?:了)?谁|娶了谁"),
        re.compile(r"之妻|妻子|之夫|丈夫|配偶|嫁|娶"),
    ),
    # how an animal lives (生活习性 - 栖息于…，白天觅食), how a battle ended (战役的结果 - 以…获胜而告终),
    # how someone died (怎么死的 - 被…勒毙), what a work tells (内容是什么 - 讲述了…), how a game is played
    (
        re.compile(r"习性"),
        re.compile(r"栖息|觅食|活动|昼伏|夜行|夜间|白天|独居|群居|成群|成对|为食|捕食|睡眠|冬眠|迁徙|繁殖"),
    ),
    (
        re.compile(r"(?:战役|战争|战斗|会战|之战|比赛|决赛)的?结果"),
        re.compile(r"胜利|获胜|取胜|胜仗|告终|战败|失败|击败|击退|败北|投降|大胜|大败|惨败|夺冠"),
    ),
    (
        re.compile(r"怎么死|如何死|怎样死|死因|因何而死|怎么去世|如何去世|死于什么"),
        # how, not that: 被…勒毙, 暴病而亡 - not 六七个人被处死 (others put to death for it)
        re.compile(
            r"毙|遇害|被杀|被害|杀害|暗杀|刺杀|毒死|自尽|自杀|自缢|缢死|战死|阵亡|殉|溺|病逝|病故|病死|去世|逝世|身亡"
            r"|而亡|而死|死于|薨|驾崩"
        ),
    ),
    (
        re.compile(r"内容是什么|什么样的内容|(?:讲|讲述|描述|描写)(?:的是|了)?什么|剧情|情节"),
        re.compile(r"讲述|叙述|描述|描写|讲的是|主要讲|故事|剧情|情节|是指|[，,]指"),
    ),
    (re.compile(r"怎么玩|如何玩|怎样玩|玩法"), re.compile(r"玩家|玩法|操作|操控|扮演")),
    # how someone did in a tournament (张帅在辛辛那提赛的成绩 - 晋级女单八强, 战绩 - 6战全败)
    (
        re.compile(r"成绩|战绩|名次"),
        re.compile(
            r"晋级|[0-9一二三四六八十]+强|冠军|亚军|季军|第[0-9一二三四五六七八九十]+名|止步|无缘|出局|淘汰|夺冠|全败|全胜|[0-9一二三四五六七八九十]+胜|[0-9一二三四五六七八九十]+负"
        ),
    ),
    (
        re.compile(r"(?:是)?谁的(?:作品|专辑|歌曲?|小说|电影)"),
        re.compile(r"作品|专辑|发行|出版|演唱|创作|所作|所著|执导"),
    ),
    # what colour (呈什么颜色 - 体银白色), which posts (担任哪些职位 - 现为…主席), what lies around (四周有什么 -
    # 东望…，北邻…), what for (目的, 愿景 - 祈求…, 为了…), how it is worked out (怎么得来 - 等于…除以…)
    (re.compile(r"什么颜色|哪种颜色|颜色是|什么色"), re.compile(r"[\u4e00-\u9fff]色")),
    (
        re.compile(r"(?:哪些|什么)(?:职位|职务|官职)|(?:职位|职务|官职)是|现任什么|担任什么"),
        re.compile(r"现为|现任|担任|出任|任职|曾任|历任|主席|校长|院长|部长|总监|经理|董事|会长|主任"),
    ),
    (
        re.compile(r"四周|周边|周围|附近有"),
        re.compile(r"[东南西北]面|[东南西北](?:望|近|邻|接|至|有)|毗邻|相邻|邻近|接壤|附近|周边"),
    ),
    (re.compile(r"目的|愿景|用意|为了什么"), re.compile(r"为了|以便|旨在|目的|祈求|祈望|希望|以期|用以|回应")),
    (
        re.compile(r"怎么得来|如何得来|怎么算|如何计算|怎样计算|计算方法|如何得出|怎么得出"),
        re.compile(r"等于|除以|乘以|之比|比值|计算|得出|算出"),
    ),
)
# A question that only asks what X is ("X是谁", "什么是X", "X的定义是什么"): a sentence that opens with
# X defines it (猎骄靡（…），中亚古国乌孙昆莫; XZ-3000是一款…). Matched against the question with X removed.
DEFINITION_QUESTION = re.compile(
    r"^(?:请问)?(?:(?:能|可以|请)?(?:给我|帮我|跟我)?(?:介绍|说说|讲讲|解释)(?:一下)?)?"  # 能给我介绍一下什么是BCPL么
    r"(?:什么(?:是|叫)?|的?定义是什么|指的是什么|是指什么|指什么|是谁|是什么(?:人|意思|东西)?)[呀啊呢吗么]?[？?。.!！]*$"
)
# A question about what kind of thing X is or does (X有什么作用, X的重要性, X是什么级别的称呼, X擅长什么):
# like a definition, a sentence that opens with X says it (工作假期签证…是一种旅行许可，它允许…).
DESCRIPTION_QUESTION = re.compile(
    r"(?:作用|特点|特征|地位|意义|性质|级别|主旨|宗旨|目的|功能|优势|才能|贡献|重要性|构成|组成)"
    r"(?:是|有)?(?:什么|怎样|如何|哪些)|(?:有|是)(?:什么|怎样|哪些)(?:样)?的?(?:作用|特点|特征|地位|意义|性质|级别|功能|优势|才能|贡献)"
    r"|擅长什么|(?:如何|怎样|怎么)(?:构成|组成)|的重要性"
)
# Who or what X is, in the ways an encyclopedia's or a catalogue's first sentence says it (列卡度·华斯迪，
# 葡萄牙足球运动员; XZ-3000是一款…): nationality, occupation, era, people, kind. Like a definition, a
# sentence that opens with X answers it.
IDENTITY_QUESTION = re.compile(
    r"国籍|哪国人|哪个国家的人|职业|做什么的|干什么的|什么身份|哪个民族|什么民族|少数民族"
    r"|(?:什么|哪个)(?:时期|时代|朝代)的人|是(?:一|哪)(?:种|类|款)"
)
# A question about a product's variants as a whole (有哪些颜色, 几种配色, 哪个码没货了, 有货吗): its
# SKU overview, which lists every colour, size, price and what is out of stock, answers it at once;
# a single SKU row would answer for one variant as if it were the product.
VARIANTS_QUESTION = re.compile(
    # not 蓝牙编码
    r"(?:哪些|哪几|几种|几款|几个|多少种|可选)\S{0,3}(?:颜色|配色|色|尺码|(?<![编密代条])码|规格|款式|版本|型号)"
    r"|(?:什么|哪种)\S{0,2}(?:颜色|配色)"  # not 穿什么码, which asks for size advice
    r"|(?:颜色|配色|尺码|规格|款式)(?:有|都有|可选|分别|有哪些|是什么)"
    r"|(?:哪|什么)\S{0,8}(?:缺货|没货|断货|卖完|售罄|有货|有现货)|(?:缺货|没货|断货)的?(?:是|有)"
)
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
NUMERIC_QUESTION = re.compile(r"多少|几|多大|多重|多久|多高|多长|多宽|how (?:much|many|long|big)", re.I)
# A question about when (开幕时间, 什么时候发货) is only answered by a sentence that names a time: a
# date, a clock time, a weekday, a relative day or a duration counted from a moment (48小时内发货).
# Without one the best sentence merely mentions the event, and quoting it would pass off a guess as
# the answer. 时间是多久 / 时间有多长 ask how long, not when.
WHEN_QUESTION = re.compile(
    r"什么时候|何时|哪天|哪一天|哪年|哪一年|哪些年|哪几年|几月|几号|几点|日期|(?<![长多])时间(?!长|(?:是|有|为)?(?:多久|多长|几))|when\b"
    r"|(?:哪个|什么|哪一个?)(?:时期|朝代|年代|时代)(?!的人)|(?:时期|年代)(?:是|为)(?:什么|哪)",
    re.I,
)
# The era word of a question about when (哪个时期, 生活时期是什么) is the kind of answer asked, not a
# word the answer repeats (从1840年代到1870年代, 始于东汉, 生存于侏罗纪晚期).
ERA_WORDS = ("时期", "朝代", "年代", "时代")
_DYNASTY = r"(?:[东西]?[汉晋周]|[南北]?宋|[夏商秦隋唐元明清辽金])"
_COUNT = r"[0-9０-９一二三四五六七八九十两〇零][0-9０-９一二三四五六七八九十两〇零.\-~～至到]*\s*"
_DURATION = r"(?:个?(?:分钟|天|周|小时|工作日|星期|礼拜)|个月|h\b|min\b)"
TIME_EXPRESSION = re.compile(
    # not 一时 (同一时间, 第一时间, 一时兴起): no clock time; 十一时 still is
    r"(?!一时)[0-9０-９一二三四五六七八九十两〇零]+\s*(?:年|月|日|点|时)"
    # a day (16号, 六月十六号), not a name's number (神舟十六号, 长征五号) nor a line or a room (19号线)
    r"|(?:[0-9０-９]+|(?<![\u4e00-\u9fff])[一二三四五六七八九十]+|(?<=月)[一二三四五六七八九十]+)\s*号(?![线楼院门站馆机船])"
    # a duration dates something only from a moment (付款后 48 小时内, 发货后 1-2 天, 3天后), not alone
    # (硅谷银行的48小时)
    rf"|(?:后|之后|以后|起)\s*{_COUNT}{_DURATION}|{_COUNT}{_DURATION}\s*(?:内|之内|以内|后|之后|以后|前|之前|以前)"
    r"|[今明后昨前]天|次日|当[天日]|隔天|[周礼拜][一二三四五六日末天]|星期[一二三四五六日天]"
    r"|\d{1,2}[:：]\d{2}|\d{4}[-/.]\d{1,2}"
    r"|[\u4e00-\u9fff](?<![同有及暂准按平])时(?=[，,])"  # a clause of when (出征陈友谅时，以功进…)
    r"|世纪|(?<![个这那该此各同的])(?:年代|时代|时期)|年间|期间|[春夏秋冬]|[上中下]旬|[早中晚]期|新世"
    rf"|{_DYNASTY}(?:[、和与至到]{_DYNASTY})*[两三四]?[朝代](?![表替价码号])|[东西][汉晋周]|战国|三国|南北朝|五代",
    re.I,
)
# eras, seasons and dynasties (东汉, 明朝, 宋代); not 一个时期, 这个时代
# A question about how much or how many (多少人, 几年, 总产量, 票房, 出生率) is only answered by a
# sentence that states an amount: a number that is no year, date or clock time (3.71万人, 6.1%,
# 1年, IPX4), or a Chinese one (十五人, 三分之一, 两成, 上千); not a model number (XZ-3000). Without one
# the best sentence only says the
# figure exists ("河南正式公布2021年全年粮食总产量"). Counts of kinds (几种颜色, 多少款) are answered
# by naming them, so they do not ask for an amount; nor does 多久 (a time: 次日, 当天).
_QUANTITY_TAIL = r"(?:是|为|有|达到?|大概|约)*(?:多少)?"  # what may follow the quantity a question ends in
AMOUNT_QUESTION = re.compile(
    r"多少(?!\s*(?:种|款|类|样|个(?!月|小时|工作日|百分点)|项|门|家|所))"
    r"|几\s*(?:[天年岁次倍成名人位万千百十]|个(?:月|小时|工作日|百分点))|多[重高长远宽厚]"
    # a question ending in the quantity (…总产量, …出生率), unless it asks how (如何获得更高的分辨率)
    r"|^(?!.*(?:如何|怎么|怎样|为何|为什么)).*?(?:"
    r"(?:[产销流容存运]量|总量|发送量|规模|人数|票房|比例|比重|占比|份额|金额|总额|数量|增速|增幅|降幅"
    rf"|(?<![效频概税利汇])率){_QUANTITY_TAIL}[吗呢呀？?。]*"
    # or what a company or an event counts in money (总奖金, 总营收是多少), not whether a thing is it (算收入吗)
    rf"|(?:奖金|营收|收入|利润|市值|估值|投资额|销售额|营业额){_QUANTITY_TAIL}[呢呀？?。]*)$",
    re.I,
)
AMOUNT_EXPRESSION = re.compile(
    r"(?<![\d.])(?<![A-Za-z]-)(?!(?:1[89]|20)\d{2}\s*年)\d+(?:[.,]\d+)*(?![\d.])(?!\s*(?:月|日|号|时(?!长)|点|[:：]\d))"
    r"[A-Za-z%‰℃°]*[\u4e00-\u9fff]?"  # with what follows: 1500米 names a race, 700FP (of 极光700) a value
    r"|(?<!第)[零〇一二两三四五六七八九十百千万亿]+\s*(?:分之|成|倍|[个人名位件次天周岁元块吨斤只台张所项家场亿万年篇部本首集座条届辑卷册])"
    r"|(?<![\d.])(?:2[5-9]|[3-9]\d|\d{3,})\s*点"  # 100点 of a score or a game's points: no clock time
    r"|[数几上近]\s*[十百千万亿]|半数"
)


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


# An edition of a recurring event (第七届, 十三届五次会议, 首届, 第28届): a sentence naming editions of the same
# kind but not the asked one (十三届一次会议 for 五次会议, 新选制下首届 for 第七届) is about another edition.
# Not a count (连续两届, 获得过三届冠军).
_EDITION = re.compile(
    r"(?<![连续共曾历已过了获近这那每各])(首|第?[0-9零〇一二三四五六七八九十百]+)(届|次会议|次全会|次全体会议)"
)


def editions(text: str) -> set[tuple[str, int]]:
    """The editions a text names, as (kind, number): 十三届五次会议 -> {("届", 13), ("次会议", 5)}."""
    found = set()
    for number, kind in _EDITION.findall(text):
        number = number.removeprefix("第")
        value = 1 if number == "首" else int(number) if number.isdigit() else chinese_int(number)
        if value is not None:
            found.add(("届" if kind == "届" else "次会议", value))
    return found


def other_edition(asked: set[tuple[str, int]], said: set[tuple[str, int]]) -> bool:
    """Does a sentence naming `said` speak of another edition than the question's `asked`?"""
    kinds = {kind for kind, _ in asked} & {kind for kind, _ in said}
    return any(not {e for e in asked if e[0] == kind} & said for kind in kinds)


# A men's or a women's event (男单, 女篮, 男子500米, 女子单打): a sentence naming only the other's event of the
# same kind (2023年澳网女单冠军 for 男单冠军) is about that one. 男子 / 女子 count only before what names an
# event (a distance, 单打, 组, 赛), not as "a man" (一名男子).
_OTHER_SEX = {"男": "女", "女": "男"}
_GENDERED_EVENT = re.compile(r"([男女])(?:(单|双|团|篮|足|排)|子(?=\s*\d|单|双|组|赛|项目|[和与及、][男女]子))")


def gendered_events(text: str) -> set[tuple[str, str]]:
    """The men's and women's events a text names, as (男 / 女, kind): 男单 -> ("男", "单"), 女子500米 -> ("女", "")."""
    return {(gender, kind) for gender, kind in _GENDERED_EVENT.findall(text)}


def other_gender_event(asked: set[tuple[str, str]], said: set[tuple[str, str]]) -> bool:
    """Does a sentence naming `said` speak only of the other's event of a kind the question asks (and
    asks of one sex only: 男单和女单冠军 asks both)?"""
    return any(
        (gender, kind) not in said and (_OTHER_SEX[gender], kind) in said and (_OTHER_SEX[gender], kind) not in asked
        for gender, kind in asked
    )


# A question asking who someone is (X是谁, 谁是X, 主演有谁) wants a name. Not one asking who did
# something (由谁成立, 和谁一起, 为谁效忠), which a group or a role often answers (3名前奴隶, 总参谋部), nor
# which party bears a cost (运费是谁承担: 买家承担).
WHO_QUESTION = re.compile(r"(?:是谁|谁是|有谁)(?!(?:来)?(?:承担|负担|出|付|负责|买单|赔|担))")
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


# A prize a question asks who won (谁获得了金牌, 男单冠军是谁, 最佳影片奖): a sentence naming another
# (银牌, 半决赛, 最佳导演) is about someone else, however much else it shares with the question.
_PRIZE = re.compile(
    r"冠军|亚军|季军|[金银铜]牌|[金银铜]奖|最佳[\u4e00-\u9fff]{2,6}?(?=奖|是|为|的|和|与|及|[？?，,。]|$)"
)
PRIZE_STATED = {"冠军": re.compile(r"冠军|夺冠|夺魁|折桂")}  # how a sentence may say it was won


# A clause ending in one of these asks yes or no without 吗 (可以机洗不 / 还有货没)
NOT_ENDS = ("不", "没", "没有")
# A space between Chinese words ends a clause too: shoppers type "峰刃多少钱 可以机洗不" in a chat window,
# and part what they ask from what they add about themselves so ("能让快递周六再给我送吗 平时不在家")
_CHAT_BREAK = re.compile(r"(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])")
CLAUSE_END = re.compile(r"[，,？?；;]+|" + _CHAT_BREAK.pattern)


def asked_focus(question: str) -> str | None:
    """The prize a question asks about, else the last word of a question typed without a
    question word, else None."""
    prize = _PRIZE.search(question)
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
