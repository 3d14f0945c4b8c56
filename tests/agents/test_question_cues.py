from __future__ import annotations

import re

import pytest

from citescope.agents.compound_questions import compound_parts
from citescope.agents.question_cues import (
    AMOUNT_QUESTION,
    DEFINITION_QUESTION,
    DESCRIPTION_QUESTION,
    TIME_EXPRESSION,
    WHEN_QUESTION,
    asked_focus,
    asking_clauses,
    asks_overview,
    editions,
    gendered_events,
    names_a_sibling,
    names_someone,
    other_edition,
    other_gender_event,
    states_amount,
    without_name_words,
)
from citescope.agents.question_rules import known_packs, question_rules

ALL = question_rules(frozenset(known_packs()))  # every pack on: the rules as a KB of articles reads them
RELATIONS = [(rule.question, rule.answer) for rule in ALL.relations]
WHO_QUESTION = ALL.pattern("who_question")


@pytest.mark.parametrize(
    "text, names_a_time",
    [
        ("于2022年12月9日在利雅得召开", True),
        ("48小时内发货", True),
        ("12世纪发动了十字军东征", True),
        ("唐朝时期的制度", True),
        ("20世纪80年代", True),
        ("每周一上新", True),
        ("出征陈友谅时，以功进骠骑卫指挥使", True),
        ("与此同时，公司宣布", False),
        ("有时，牠们会发出叫声", False),
        ("作为当前和今后一个时期的首要任务", False),
        ("这个时代的人", False),
        ("大家热烈讨论了报告", False),
        ("切实扛起为党育人、为国育才的时代重任", False),  # 的时代: a mission of the times, no time
        ("金华县县制始于东汉", True),
        ("明朝初年设卫", True),
        ("在宋、元两代，澉浦设立市舶司", True),
        ("明清两代", True),
        ("牠们生存于侏㑩纪晚期", True),
        ("宋代的瓷器", True),
        ("元代表大会", False),  # 元 of 单元代表大会, no dynasty
        ("几乎在同一时间，标志银行关闭", False),
        ("请第一时间联系客服", False),
        ("一时兴起下单", False),  # 一时 is no clock time
        ("上午十一时开幕", True),
        # a duration dates something only counted from a moment
        ("发货后 1-2 天送达", True),
        ("3天后开幕", True),
        ("预计5个工作日内寄出", True),
        ("从爆雷到破产，硅谷银行的48小时", False),
        ("经过6天全力搜救", False),
        ("6月16号发货", True),
        ("一起期待神舟十六号发射", False),
        ("19号线一期", False),  # a name's or a line's number
    ],
)
def test_a_time_expression_dates_something(text, names_a_time):
    assert bool(TIME_EXPRESSION.search(text)) is names_a_time


@pytest.mark.parametrize(
    "question, asks_when",
    [
        ("二十大开幕时间", True),
        ("什么时候发货？", True),
        ("莱索托哪一年独立？", True),
        ("退货要多长时间", False),
        ("续航时间长吗", False),
        ("这双鞋防滑吗", False),
        ("上知令出现于哪个时期？", True),
        ("金华县开始在什么时期？", True),
        ("巨龙形类的生活时期是什么？", True),
        ("李白是什么朝代的人？", False),  # who someone is: "唐朝诗人" answers it
        ("这个时期的特点是什么？", False),
    ],
)
def test_when_questions(question, asks_when):
    assert bool(WHEN_QUESTION.search(question)) is asks_when


@pytest.mark.parametrize(
    "question, asks_amount",
    [
        ("河南2021年的粮食总产量是多少？", True),
        ("北京冬奥会高校志愿者有多少人", True),
        ("我国2021年人口出生率", True),
        ("2023春运首日旅客发送量", True),
        ("这件衣服多重", True),
        ("保修几年？", True),
        ("XZ-3000多少钱", True),
        ("XZ-3000有几种颜色？", False),
        ("有多少个校区", False),
        ("保修多久？", False),
        ("几月几号开学", False),
        ("频率是什么意思", False),
        ("改选的参议院席位", False),
        ("如何获得更高的分辨率？", False),
        ("怎么提高出生率", False),  # they ask how, not how much
        ("2023年女足世界杯总奖金", True),
        ("B站2021财年总营收是多少？", True),
        ("公司的主要收入来源是什么", False),
        ("保险理赔金算个人收入吗", False),  # whether a thing is income, not how much
    ],
)
def test_amount_questions(question, asks_amount):
    assert bool(AMOUNT_QUESTION.search(question)) is asks_amount


@pytest.mark.parametrize(
    "sentence, amount",
    [
        ("截至2022年6月，我国非网民规模为3.62亿", True),
        ("比2020年下降1.11个千分点", True),
        ("占三分之一", True),
        ("上千人参加", True),
        ("保修1年", True),
        ("十五天内", True),
        ("河南正式公布2021年全年粮食总产量", False),
        ("12月10日，记者获悉", False),
        ("10点开始", False),
        ("旅客发送量预计会有较大幅度增长", False),
        ("XZ-3000充电宝正在热卖", False),
        ("他一生只发表了三篇学术论文", True),
        ("第三届", False),
        ("先后出版三辑", True),
        ("基数为100点", True),  # 25点 and above is no clock time
        ("男子1500米比赛结束", False),  # the question's own 1500米 says which race
        ("登录专题网站（http://bm.scs.gov.cn/kl2023）查询招考人数", False),  # a web address states no amount
        ("共招录1200人，详见www.scs.gov.cn/kl2023", True),
        ("防水等级IPX4", True),
        # a listing's code names the company
        ("哔哩哔哩（NASDAQ: BILI，HK:09626）公布了财报", False),
        ("腾讯控股（00700.HK）公布业绩", False),
        ("股票代码：600519，营收1275亿元", True),
    ],
)
def test_an_amount_is_a_number_that_is_no_year_date_clock_or_the_questions_own(sentence, amount):
    assert states_amount(sentence, "男子1500米速度滑冰的成绩是多少") is amount


@pytest.mark.parametrize(
    "rest, only_what_it_is",
    [
        ("是谁？", True),
        ("什么是", True),
        ("的定义是什么？", True),
        ("是什么意思", True),
        ("指的是什么", True),
        ("能给我介绍一下什么是么？", True),  # 能给我介绍一下什么是BCPL么
        ("的职业是什么？", False),
        ("的价格是什么", False),
        ("是什么颜色", False),
        ("介绍一下的价格", False),
    ],
)
def test_a_definition_question_asks_nothing_but_what_its_subject_is(rest, only_what_it_is):
    # matched against the question with its subject removed (猎骄靡是谁 -> 是谁)
    assert bool(DEFINITION_QUESTION.match(rest)) is only_what_it_is


def test_a_question_mentioning_parents_does_not_ask_for_them():
    assert not any(asks.search("非本地户口新生儿如何参保，父母两人都在重庆上班？") for asks, _ in RELATIONS)
    assert not any(asks.search("送给妻子的生日礼物推荐") for asks, _ in RELATIONS)  # no spouse asked
    # 改名为什么 asks the new name, not a cause
    assert not any(asks.search("这条线路在2015年改名为什么？") and cue.search("因为") for asks, cue in RELATIONS)


@pytest.mark.parametrize(
    "question, sentence, states_it",
    [
        ("蟒鳗又被称为什么？", "蟒鳗，又称血红拟蛇鱼", True),
        ("康王路在哪里？", "康王路是广州市荔湾区一条主干道", True),
        ("2022年G20峰会的地点", "于11月15日至16日在印度尼西亚巴厘省举行", True),
        ("吴少阳的籍贯是哪里？", "吴少阳，沧州清池人", True),
        ("吴少阳的籍贯是哪里？", "吴少阳深得人民爱戴", False),
        ("潘淑是哪里人？", "潘皇后，名淑，会稽句章（今浙江省宁波市）人，吴大帝孙权的皇后", True),
        ("潘淑是哪里人？", "据说她怀着孙亮时，曾梦到有人将龙头交付给自己", False),
        ("潘淑是哪里人？", "当时的人都认为潘夫人有预知能力", False),
        ("环氧氯丙烷有什么用途？", "被用于制造甘油", True),
        ("松鸦属于什么科？", "是一种鸦科动物", True),
        ("松鸦属于什么科？", "研究松鸦的科学家", False),
        ("剑客生涯的作者是谁？", "是池波正太郎所作的时代小说", True),
        ("天津犹太会堂的创始人是谁？", "创办人是犹太人吉利舍维奇", True),
        ("上海有线02足球俱乐部是由谁所创立？", "由名帅徐根宝所创建的", True),
        ("增城挂绿为什么叫挂绿？", "每个果实都环绕有一圈绿线，故名挂绿", True),
        ("伯尔尼条约的名字如何得来？", "因在瑞士城市伯尔尼签署而得名", True),
        ("隆柯龙类名字的含义是什么？", "意为「巨大的蜥蜴」", True),
        ("梁诚是哪个地方的人？", "号震东，广东番禺黄埔村人", True),
        ("黄鞍鹦嘴鱼的食物是什么？", "啃食珊瑚，以珊瑚共生藻为生", True),
        ("增城挂绿为什么叫挂绿？", "挂绿是增城的特产", False),
        ("邵伯温的父亲名字叫什么？", "邵伯温，字子文，邵雍之子", True),
        ("孙和的生母是谁？", "孙和是孙权与王夫人所生", True),
        ("邵伯温的父亲名字叫什么？", "邵伯温曾任知州", False),
        ("他的老师是谁？", "年少时拜王羲之为师", True),
        ("他的老师是谁？", "他的学生遍布各地", False),
        ("刘武的封地在哪里？", "后改封国于梁", True),
        ("这种鹿的生活习性是怎样的？", "它们多在清晨和黄昏觅食", True),
        ("这种鹿的生活习性是怎样的？", "它们的角可长达一米", False),
        ("滑铁卢战役的结果是什么？", "战役以反法同盟获胜而告终", True),
        ("滑铁卢战役的结果是什么？", "战役发生在比利时", False),
        ("这位皇后是怎么死的？", "她在一场宫变中遇害", True),
        ("这位皇后是怎么死的？", "她生于江南", False),
        ("这位皇后是怎么死的？", "事后，参与的宫人都被处死", False),  # others put to death: not how she died
        ("这条线路在2015年改名为什么？", "2015年起改称5号线", True),
        ("这条线路在2015年改名为什么？", "线路全长20公里", False),
        ("王氏是谁的妻子？", "王氏，齐王之妻", True),
        ("王氏是谁的妻子？", "王氏善于书法", False),
        ("王氏是谁的妻子？", "后被贬为庶人皇后", False),
        ("这部小说的内容是什么？", "小说讲述了一个渔夫出海的故事", True),
        ("这部小说的内容是什么？", "小说于1952年出版", False),
        ("这款游戏怎么玩？", "玩家要驾驶飞机击落敌机", True),
        ("这款游戏怎么玩？", "游戏于1990年上市", False),
        ("《晨曦》是谁的作品？", "是某乐队发行的第三张专辑", True),
        ("这个物种是谁命名的？", "由一位英国学者于1900年命名", True),
        ("这种鱼呈什么颜色？", "鱼体淡黄色，背部较暗", True),
        ("这种鱼呈什么颜色？", "鱼体侧扁", False),
        ("他现在担任哪些职位？", "现为本市足球协会会长", True),
        ("他现在担任哪些职位？", "他生于1950年", False),
        ("这座公园四周有什么？", "东邻火车站，北面是一所大学", True),
        ("这座公园四周有什么？", "公园建于1990年", False),
        ("修建这座桥的目的是什么？", "为了方便两岸居民往来", True),
        ("修建这座桥的目的是什么？", "桥长300米", False),
        ("焦比是怎么得来的？", "焦比等于焦距除以口径", True),
        ("焦比是怎么得来的？", "焦比常用于摄影", False),
    ],
)
def test_a_relation_is_stated_in_the_evidence_own_words(question, sentence, states_it):
    cues = [cue for asks, cue in RELATIONS if asks.search(question)]
    assert cues, "the question names a relation"
    assert any(cue.search(sentence) for cue in cues) is states_it


@pytest.mark.parametrize(
    "question, names, overview",
    [
        ("山野峰刃冲锋衣怎么样？", ["山野 峰刃 GTX 冲锋衣"], True),
        ("介绍一下星择xz-3000充电宝", ["星择 XZ-3000 笔记本充电宝 20000mAh"], True),
        ("果壳磁吸手机壳咋样", ["果壳 iPhone 15 系列磁吸防摔手机壳"], True),  # the name's words in another order
        ("它好不好？", [], True),  # a follow-up: the product is carried
        ("山野峰刃冲锋衣防水怎么样？", ["山野 峰刃 GTX 冲锋衣"], False),  # asks about one property
        ("山野峰刃冲锋衣", ["山野 峰刃 GTX 冲锋衣"], False),  # a name alone asks nothing
        ("XZ-3000多少钱", ["星择 XZ-3000"], False),
    ],
)
def test_a_question_about_a_product_as_a_whole(question, names, overview):
    assert asks_overview(question, names) is overview


def test_name_words_are_taken_out_however_the_name_is_cut():
    assert without_name_words("果壳磁吸手机壳咋样", ["果壳 iPhone 15 系列磁吸防摔手机壳"]) == "咋样"
    assert without_name_words("AJ1 Low 怎么样", ["Air Jordan 1 Low 低帮板鞋"]) == "aj怎么样"  # AJ is no run of the name
    assert without_name_words("怎么样" * 700, ["山野"]) == "怎么样" * 700  # a long question stays cheap


@pytest.mark.parametrize(
    "question, parts",
    [
        ("2022年和2023年春节档首日票房冠军", ["2022年春节档首日票房冠军", "2023年春节档首日票房冠军"]),
        ("2021年中国和美国经济分别增长了多少？", ["2021年中国经济增长了多少？", "2021年美国经济增长了多少？"]),
        ("安倍晋三的国葬时间和地点？", ["安倍晋三的国葬时间？", "安倍晋三的国葬地点？"]),
        (
            "2022年金鹰奖最佳电视剧和最佳电视动画分别是什么？",
            ["2022年金鹰奖最佳电视剧是什么？", "2022年金鹰奖最佳电视动画是什么？"],
        ),
        (
            "2023年全国跳水冠军赛女子双人10米跳台和男子双人10米跳台冠军分别是谁？",
            ["2023年全国跳水冠军赛女子双人10米跳台冠军是谁？", "2023年全国跳水冠军赛男子双人10米跳台冠军是谁？"],
        ),
        (
            "《李茂扮太子》是什么类型的电影？它的导演是谁？",
            ["《李茂扮太子》是什么类型的电影", "《李茂扮太子》的导演是谁"],
        ),
        # jieba cut 透湿量 into 透湿 + 量: the character stays with its word, not glued onto the other part
        (
            "山野峰刃冲锋衣的防水指数和透湿量分别是多少？",
            ["山野峰刃冲锋衣的防水指数是多少？", "山野峰刃冲锋衣的防水透湿量是多少？"],
        ),
        ("苹果和香蕉等水果的价格分别是多少", ["苹果等水果的价格是多少", "香蕉等水果的价格是多少"]),
        # a name of Latin words a space apart is one conjunct
        ("XZ-3000和AJ1 Retro分别多少钱？", ["XZ-3000多少钱？", "AJ1 Retro多少钱？"]),
        ("Air Jordan 1和XZ-3000的价格分别是多少", ["Air Jordan 1的价格是多少", "XZ-3000的价格是多少"]),
        # one thing asked of both (a comparison, a relation), or "和" naming a companion: not split
        ("M码和L码差多少？", ["M码和L码差多少？"]),
        ("苏格兰和英格兰是什么关系", ["苏格兰和英格兰是什么关系"]),
        (
            "计划端午节和男朋友自驾去九寨沟，买保险三天要多少钱？",
            ["计划端午节和男朋友自驾去九寨沟，买保险三天要多少钱？"],
        ),
        ("这双鞋雨天防滑吗？", ["这双鞋雨天防滑吗？"]),
        ("波兰及立陶宛是什么时候在行政上合并为一个国家？", ["波兰及立陶宛是什么时候在行政上合并为一个国家？"]),
        # typed in a chat window: a space ends a clause, 不 / 没 ask as 吗 does; a space inside a name does not
        ("峰刃冲峰衣多少钱 可以机洗不", ["峰刃冲峰衣多少钱", "可以机洗不"]),
        ("XZ3000多重啊 充满电要多久", ["XZ3000多重啊", "充满电要多久"]),
        ("aj1 low白红43码还有吗 多少钱", ["aj1 low白红43码还有吗", "多少钱"]),
        ("我想买个 防水的鞋", ["我想买个 防水的鞋"]),
    ],
)
def test_a_compound_question_is_split_into_the_questions_it_asks(question, parts):
    assert compound_parts(question) == parts


@pytest.mark.parametrize(
    "question, focus",
    [
        ("北京冬奥会男子1500米速度滑冰比赛中谁获得了金牌？", "金牌"),
        ("2023年全英羽毛球公开赛男单冠军？", "冠军"),
        ("2022年百花奖最佳影片奖", "最佳影片"),
        ("2022年金鹰奖最佳电视剧是什么？", "最佳电视剧"),  # prizes
        ("二十大开幕时间", "开幕"),
        ("我国2021年人口出生率", "出生率"),
        ("众议院TikTok听证会的时间", "听证会"),
        ("2022中关村论坛的主题是什么？", None),
        ("泸定地震造成多少人遇难？", None),
        ("大莱龙铁路有什么重要作用？", None),
        ("FV 603撒拉森由哪个公司所制造？", None),
        ("这双鞋雨天防滑吗？", None),
        ("？", None),
        ("哲学院的国际交流情况", "国际交流"),
        ("简述黄埔港的重要性？", None),  # 情况 only says "about it"; 简述 asks
        ("峰刃冲锋衣可以机洗不", None),
        ("暖岩还有货没", None),  # a yes-no question without 吗: 不 / 没 ask
        ("S1耳机能戴着去游泳不 暑假想天天泡泳池", None),  # also before what the shopper adds about themselves
        ("拿出来会不会皱巴巴的", None),
        ("轻风防晒衣占不占地方", None),  # asked as X-not-X
        # a word that only says how many is asked by the amount (1193万人报名, 44名运动员), not repeated
        ("2022年高考报名人数", "报名"),
        ("北京冬奥会澳大利亚运动员数量", "运动员"),
    ],
)
def test_the_word_naming_what_is_asked(question, focus):
    assert asked_focus(question, ALL) == focus


@pytest.mark.parametrize(
    "question, title, text, sibling",
    [
        ("钝头鹦嘴鱼的俗名叫什么？", "截尾鹦嘴鱼", "截尾鹦嘴鱼，又名杂纹鹦哥鱼", True),
        ("单斑笛鲷的俗名是什么？", "火斑笛鲷", "火斑笛鲷，又称金焰笛鲷", True),
        ("黑额鸣冠雉的体长是多少？", "普通鸣冠雉", "肉垂冠雉较为接近黑额鸣冠雉", False),  # named in the text
        ("钝头鹦嘴鱼的俗名叫什么？", "鹦嘴鱼", "鹦嘴鱼是一类鱼", False),  # the kind, not a sibling
        ("xz-2000和xz-3000两款充电宝各卖多少钱？", "星择 xz-3000 笔记本充电宝 20000mah", "", False),  # no bare name
        ("为什么海蛇能将身体多余的盐分排除？", "扁尾海蛇", "", False),  # 什么 modifies nothing
    ],
)
def test_a_document_titled_with_a_sibling_of_the_named_entity(question, title, text, sibling):
    assert names_a_sibling(question, title, text) is sibling


@pytest.mark.parametrize(
    "question, describes",
    [
        ("工作假期签证有什么作用？", True),
        ("简述黄埔港的重要性？", True),
        ("首席部长是什么级别的称呼？", True),
        ("索靖擅长什么？", True),
        ("磷酸丙糖异构酶是如何构成的？", True),
        ("突破机构的主旨是什么？", True),
        ("XZ-3000的保修期是多久？", False),
        ("烈驹火焰7篮球鞋是哪位球星的签名鞋？", False),
        ("这双鞋雨天防滑吗？", False),
    ],
)
def test_a_question_about_what_kind_of_thing_something_is(question, describes):
    assert bool(DESCRIPTION_QUESTION.search(question)) is describes


@pytest.mark.parametrize(
    "question, asked",
    [
        ("岩途打算配厚的徒步袜穿 正常码会不会紧", "正常码会不会紧"),
        ("能让快递周六再给我送吗 平时不在家", "能让快递周六再给我送吗"),
        ("不喜欢能退吗 几天内 我记得是7天", "不喜欢能退吗，几天内"),  # 几天内 asks too
        ("24寸那个托运箱能扩容不 回来想多装点特产", "24寸那个托运箱能扩容不"),
        ("峰刃多少钱 可以机洗不", None),  # every part asks: a compound question, not a told situation
        ("默认发什么快递？", None),  # one part
        ("HUTS中有没有适合帆船比赛的保险，我男朋友这周就要开始了", None),  # a comma is a writer's, not a chat break
        ("《火影忍者疾风传 激斗忍者大战！EX2》主要有哪三种模式？", None),  # a space inside a title
        ("我脚背高 芝加哥高帮要不要买大点", "芝加哥高帮要不要买大点"),
    ],
)
def test_a_chat_message_is_read_by_what_it_asks_without_what_the_shopper_adds(question, asked):
    assert asking_clauses(question) == asked


def test_the_editions_a_text_names_and_a_sentence_about_another_one():
    assert editions("全国政协十三届五次会议闭幕时间", ALL) == {("届", 13), ("次会议", 5)}
    assert editions("新选制下首届立法会", ALL) == {("届", 1)} and editions("第28届白玉兰奖", ALL) == {("届", 28)}
    assert editions("连续两届获得冠军，获得过三届金奖", ALL) == set()  # counts, not editions
    asked = editions("全国政协十三届五次会议闭幕时间", ALL)
    assert other_edition(asked, editions("全国政协十三届一次会议3月15日闭幕", ALL))
    assert not other_edition(asked, editions("十三届五次会议将于3月10日闭幕", ALL))
    assert not other_edition(asked, editions("全国政协会议3月10日闭幕", ALL))  # names no edition: may be about it
    assert other_edition(editions("第七届香港立法会议员宣誓", ALL), editions("新选制下首届立法会议员宣誓就职", ALL))


def test_a_sentence_about_the_other_sexs_event_of_the_kind_asked():
    assert gendered_events("2023年澳网男单冠军是谁", ALL) == {("男", "单")}
    assert gendered_events("北京冬奥会男子500米速度滑冰金牌", ALL) == {("男", "")}
    assert gendered_events("一名男子在街头被捕，混双冠军", ALL) == set()  # a man, and a mixed event
    asked = gendered_events("2023年澳网男单冠军是谁", ALL)
    assert other_gender_event(asked, gendered_events("2023年澳网女单冠军是萨巴伦卡", ALL))
    assert not other_gender_event(asked, gendered_events("德约科维奇夺得2023年澳网男单冠军", ALL))
    assert not other_gender_event(asked, gendered_events("2023年澳网冠军揭晓", ALL))  # names no event: may be it
    both = gendered_events("男子赛事将于9月在尼斯举行；女子赛事将于10月在夏威夷举办", ALL)
    assert not other_gender_event(gendered_events("IRONMAN世界锦标赛男子赛事在哪举行", ALL), both)
    assert not other_gender_event(
        gendered_events("澳网男单和女单冠军分别是谁", ALL), gendered_events("澳网女单冠军是萨巴伦卡", ALL)
    )
    assert gendered_events("花样滑冰女子和男子单人滑金牌得主", ALL) == {("女", ""), ("男", "")}  # both asked


@pytest.mark.parametrize(
    "question, asks_who",
    [
        ("2022年冬奥会开幕式总导演是谁", True),
        ("谁是北京冬奥会第一棒火炬手", True),
        ("陈凯歌少年时代的主演有谁", True),
        ("底特律第二浸信会是由谁成立的？", False),
        ("泰国皇家军队为谁效忠？", False),
        ("保修期内寄修的运费谁来出？", False),
        ("无理由退货的运费是谁承担？", False),
        ("XZ-3000多少钱", False),
    ],
)
def test_a_question_asking_who(question, asks_who):
    assert bool(WHO_QUESTION.search(question)) is asks_who


@pytest.mark.parametrize(
    "sentence, question, named",
    [
        ("北京2022年冬奥会开幕式总导演张艺谋在接受记者采访时表示", "2022年冬奥会开幕式总导演是谁", True),
        ("如今，作为2022年冬奥会和冬残奥会开闭幕式总导演", "2022年冬奥会开幕式总导演是谁", False),
        (
            "俄罗斯联邦安全局拘留一名《华尔街日报》记者",
            "俄罗斯拘留的《华尔街日报》记者是谁",
            True,
        ),  # an agency is a name
        ("我们强烈谴责今天发生的针对前首相安倍晋三的令人发指的枪击事件", "谁枪击了安倍晋三？", False),
        ("吴京主演的全部电影总票房达到300亿元", "谁是中国影史首个票房达到300亿元的演员？", True),
        ("对于这样的高难度动作，隋文静补充说", "北京冬奥会双人滑金牌得主是谁？", True),
        ("《流浪地球2》成为今年春节档新片上映首日票房冠军", "2023年春节档首日票房冠军是谁", True),  # a work
        ("《少年时代》是由陈凯歌执导", "陈凯歌少年时代的主演有谁", False),  # only the question's own names
        ("the film was directed by bryan singer", "波西米亚狂想曲的导演是谁", True),
    ],
)
def test_a_sentence_naming_someone_the_question_does_not(sentence, question, named):
    assert names_someone(sentence.lower(), question.lower()) is named


def test_one_list_of_asking_words_serves_the_question_word_and_the_asking_clause():
    from citescope.agents.question_cues import QUESTION_WORD, is_asking

    for word in ("谁", "什么", "多少", "怎么", "是否", "吗"):
        assert QUESTION_WORD.match(word) and is_asking(f"这个{word}")
    assert QUESTION_WORD.match("咋") and not is_asking("里面东西也坏了 咋办")  # see QUESTION_WORD
    assert not is_asking("我买了一件冲锋衣")


def test_the_comparison_words_keep_a_comparison_whole():
    from citescope.agents.compound_questions import compound_parts
    from citescope.agents.question_cues import COMPARISON_WORDS

    assert re.search(COMPARISON_WORDS, "峰刃和暖岩哪个更保暖")
    assert compound_parts("峰刃和暖岩的区别是什么") == ["峰刃和暖岩的区别是什么"]
