"""What retrieval reads of a long message: its last sentence and its asking sentences within
retrieval_max_chars, in the message's order; a usual question whole."""

from __future__ import annotations

from citescope.agents.query_analysis import QueryAnalyzer
from citescope.agents.retrieval_question import retrieval_question
from citescope.workflows.evaluation.bench.cost import long_question

STORY = (
    "你好，我上个月买了一件山野暖岩摇粒绒夹克，颜色是深灰色。"
    "快递很快，包装也很好，这一点要表扬。"
    * 6
    + "另外我想问一下积分会不会退回来？"
    + "我老公平时穿L码，身高178厘米。" * 4
    + "这件夹克按身高178体重76公斤穿L码还是XL码？"
)


def test_a_question_within_the_limit_is_read_whole():
    question = "暖岩摇粒绒夹克可以机洗吗？"
    assert retrieval_question(question, 160) is question
    assert retrieval_question("x" * 160, 160) == "x" * 160


def test_a_long_message_keeps_its_last_sentence_and_what_it_asks_in_order():
    read = retrieval_question(STORY, 160)
    assert len(STORY) > 300 and len(read) <= 160
    assert read.endswith("这件夹克按身高178体重76公斤穿L码还是XL码？")  # the tail: what is asked
    assert "积分会不会退回来？" in read  # an earlier question, kept, before the last one
    assert read.index("积分") < read.index("这件夹克")
    assert "表扬" not in read  # the story around the questions is not searched


def test_without_other_asking_sentences_the_sentences_before_the_last_fill_the_room():
    message = "我上周买了一件外套。" * 30 + "谢谢。"
    read = retrieval_question(message, 100)
    assert read.endswith("我上周买了一件外套。 谢谢。") and len(read) <= 100


def test_an_over_long_last_sentence_keeps_its_end_from_a_clause_boundary():
    sentence = "，".join(f"第{i}件事情说得很长很长" for i in range(40)) + "，到底能不能退货？"
    read = retrieval_question(sentence, 80)
    assert len(read) <= 80 and read.endswith("到底能不能退货？")
    assert read.startswith("第")  # cut after a comma, not inside a clause


def test_the_analyzer_reads_the_capped_question_and_the_benchmark_message_is_long():
    message = long_question(10)
    assert 1800 <= len(message) <= 2000  # a legal question (max_question_chars 2000)
    features = QueryAnalyzer(None, max_chars=160).run(message)
    assert len(features.question) <= 160
    assert features.question.endswith("换货的运费是谁来承担？")
    assert QueryAnalyzer(None).run(message).question == message  # no limit given: read whole
