"""The question rules as data (agents/question_cues.yaml): every example of the file is a test of its
rule, a pack that is off leaves its rules unread, and a broken file is refused naming the rule and
the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from citescope.agents.extractive import ExtractiveAnswerer
from citescope.agents.extractive.reading import QuestionReader
from citescope.agents.question_cues import names_a_sibling
from citescope.agents.question_rules import (
    CORE_PACK,
    QuestionRule,
    QuestionRulesError,
    RuleExample,
    known_packs,
    load_rules_file,
    question_rules,
)
from tests.conftest import find_datasets

RULES = load_rules_file().rules
EXAMPLES = [(rule, example) for rule in RULES for example in rule.examples]


def _with_packs(rule: QuestionRule):
    return question_rules(frozenset(rule.packs) - {CORE_PACK})


@pytest.mark.parametrize(("rule", "example"), EXAMPLES, ids=[f"{rule.id}-{n}" for n, (rule, _) in enumerate(EXAMPLES)])
def test_each_rule_reads_its_examples_as_the_data_file_says(rule: QuestionRule, example: RuleExample):
    rules = _with_packs(rule)
    if rule.kind == "pattern":
        assert bool(rules.pattern(rule.id).search(example.text)) is example.fires
    elif rule.kind == "check":  # sibling_title, the one check: a document's title and text against the question
        assert rules.checks(rule.id)
        assert names_a_sibling(example.text, example.title or "", example.answer or "") is example.fires
    else:
        # as the extractive answerer reads a question: the fired ids its decision trace names
        profile = QuestionReader(rules=rules).profile(example.text)
        assert (rule.id in profile.rules_fired) is example.fires
        if example.fires and rule.kind == "asks":
            assert set(rule.units) <= profile.asked_units
        if example.answer is not None:
            assert rule.compiled("answer").search(example.answer)


@pytest.mark.parametrize("rule", [r for r in RULES if CORE_PACK not in r.packs], ids=lambda r: r.id)
def test_a_rule_of_a_pack_that_is_off_never_fires(rule: QuestionRule):
    shop = question_rules()  # a shop KB: the core pack alone
    for example in rule.examples:
        if rule.kind == "pattern":
            assert not shop.pattern(rule.id).search(example.text)
        elif rule.kind == "check":
            assert not shop.checks(rule.id)
        else:
            assert rule.id not in QuestionReader(rules=shop).profile(example.text).rules_fired


def test_every_rule_has_an_id_a_declared_pack_and_an_example_that_fires():
    assert len({rule.id for rule in RULES}) == len(RULES)
    assert {pack for rule in RULES for pack in rule.packs} == {CORE_PACK, *known_packs()}
    assert all(any(example.fires for example in rule.examples) for rule in RULES)


def test_no_example_is_a_question_of_an_evaluation_set():
    """Rules are never written for an evaluation question, nor shown one as their example."""
    files = list((Path(__file__).parents[2] / "knowledge").glob("*/questions*.jsonl"))
    datasets = find_datasets()
    files += list(datasets.glob("*/questions*.jsonl")) if datasets is not None else []
    asked = {
        json.loads(line)["question"].strip() for path in files for line in path.open(encoding="utf-8") if line.strip()
    }
    assert files and asked
    assert not {example.text for _, example in EXAMPLES} & asked


def test_the_trace_names_the_rules_that_read_a_question_and_only_those_of_the_packs_on():
    question = "2023年澳网男单冠军是谁？"
    assert ExtractiveAnswerer().rules_fired(question, []) == ["open_question"]  # core: it asks for something
    assert set(ExtractiveAnswerer(rule_packs=["news"]).rules_fired(question, [])) == {
        "open_question",
        "who_question",
        "gendered_event",
        "prize",
    }
    assert ExtractiveAnswerer().rules_fired("这把伞啥价？", []) == ["price", "open_question"]
    assert ExtractiveAnswerer().rules_fired("这把伞防风吗？", []) == ["yes_no_question"]


def _rules_file(tmp_path: Path, rule: str) -> Path:
    path = tmp_path / "rules.yaml"
    path.write_text(f"packs: {{core: every KB, news: news}}\nrules:\n{rule}", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("rule", "named"),
    [
        (
            "  - {id: price, kind: asks, packs: [core], why: w, question: '多少(钱', units: [元],"
            " examples: [{text: 价}]}",
            ["rule price", "question", "not a regular expression"],
        ),
        (
            "  - {id: price, kind: asks, packs: [shop], why: w, question: '钱', units: [元], examples: [{text: 价}]}",
            ["rule price", "unknown pack", "shop"],
        ),
        ("  - {id: price, kind: asks, packs: [core], why: w, question: '钱', examples: [{text: 价}]}", ["units"]),
        (
            "  - {id: place, kind: relation, packs: [core], why: w, question: '在哪', examples: [{text: 哪}]}",
            ["answer"],
        ),
        (
            "  - {id: place, kind: pattern, packs: [news], why: w, pattern: '届', examples: []}",
            ["rule place: examples"],
        ),
    ],
)
def test_a_broken_rules_file_is_refused_naming_the_file_the_rule_and_the_field(tmp_path, rule, named):
    path = _rules_file(tmp_path, rule)
    with pytest.raises(QuestionRulesError) as raised:
        load_rules_file(path)
    assert str(path) in str(raised.value)
    for words in named:
        assert words in str(raised.value)


def test_a_second_rule_with_one_id_and_an_unknown_pack_asked_for_are_refused(tmp_path):
    twice = "  - {id: a, kind: pattern, packs: [core], why: w, pattern: x, examples: [{text: x}]}\n"
    with pytest.raises(QuestionRulesError, match="rule a: a second rule"):
        load_rules_file(_rules_file(tmp_path, twice * 2))
    with pytest.raises(QuestionRulesError, match="unknown rule pack"):
        question_rules(frozenset({"sports"}))
