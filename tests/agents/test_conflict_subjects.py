"""Entity-aware conflicts (agents/conflicts/subjects.py, fields.py): two statements conflict only when
they are about the same entity and the same attribute; siblings of one series or one template are
answered side by side, never flagged (issue #44)."""

from __future__ import annotations

from citescope.agents.conflicts import detect_conflicts
from citescope.agents.conflicts.passages import Passage
from citescope.agents.conflicts.subjects import labelled_fields, template_siblings
from citescope.tools.base import EvidenceHit


def hit(chunk_id: str, text: str, **fields) -> EvidenceHit:
    fields.setdefault("doc_id", chunk_id.split("#")[0])
    return EvidenceHit(chunk_id=chunk_id, text=text, score=1.0, **fields)


def spec_sheet(doc_id: str, title: str, hours: int, grams: str, **fields) -> EvidenceHit:
    text = f"{title}是声悦逐光系列的一款无线耳机。\n续航：{hours}小时\n重量：{grams}克\n保修：12个月"
    return hit(f"{doc_id}#body-0", text, title=title, doc_type="product", **fields)


def record(doc_id: str, name: str, days: int, blood: str, title: str = "住院病历") -> EvidenceHit:
    text = f"患者{name}住院治疗。\n姓名：{name}\n科室：心内科\n血型：{blood}\n住院天数：{days}天\n主治医生：赵强"
    return hit(f"{doc_id}#body-0", text, title=title, doc_type="doc")


def test_sibling_product_pages_of_one_series_are_never_flagged():
    """Two products of one series, written alike: their 续航 differ because they are two products."""
    question = "声悦 逐光X3的续航是多少小时？"
    # with product ids (the shop's catalogue) and without (spec sheets imported as plain documents)
    with_ids = [
        spec_sheet("x3", "声悦 逐光X3 无线耳机", 30, "5.2", product_id="p-x3"),
        spec_sheet("x5", "声悦 逐光X5 无线耳机", 40, "5.8", product_id="p-x5"),
    ]
    without_ids = [
        spec_sheet("x3", "声悦 逐光X3 无线耳机", 30, "5.2"),
        spec_sheet("x5", "声悦 逐光X5 无线耳机", 40, "5.8"),
    ]
    assert detect_conflicts(question, with_ids) == []
    assert detect_conflicts(question, without_ids) == []


def test_the_same_product_stated_twice_with_another_value_is_flagged():
    """Same product, same attribute, another value in a second document: a real disagreement."""
    question = "声悦 逐光X3的续航是多少小时？"
    for extra in ({"product_id": "p-x3"}, {}):
        evidence = [
            spec_sheet("x3", "声悦 逐光X3 无线耳机", 30, "5.2", **extra),
            spec_sheet("x3-fix", "声悦 逐光X3 无线耳机（2026修订版）", 36, "5.2", **extra),
        ]
        conflicts = detect_conflicts(question, evidence)
        assert len(conflicts) == 1, extra
        assert sorted(v.value for v in conflicts[0].values) == ["30小时", "36小时"]
        assert "续航" in conflicts[0].attribute


def test_records_of_one_template_under_one_title_are_siblings():
    a = Passage.of(record("r1", "韩艳", 15, "A型"), None)
    b = Passage.of(record("r2", "姚美静", 12, "B型"), None)
    corrected = Passage.of(record("r1-v2", "韩艳", 18, "A型"), None)
    assert labelled_fields(a.hit.text)["姓名"] == "韩艳"
    assert template_siblings(a, b)  # another patient: name, blood type and days differ
    assert not template_siblings(a, corrected)  # one patient, one field changed
    question = "韩艳住院了多少天？"
    assert detect_conflicts(question, [a.hit, b.hit]) == []
    conflicts = detect_conflicts(question, [a.hit, corrected.hit])
    assert [sorted(v.value for v in c.values) for c in conflicts] == [["15天", "18天"]]


def test_records_titled_by_their_subject_are_never_flagged():
    """Patients' records titled by name (the issue's 23%: three patients' names as sources disagreeing)."""
    evidence = [
        record("r1", "韩艳", 15, "A型", title="韩艳"),
        record("r2", "姚美静", 12, "B型", title="姚美静"),
        record("r3", "彭浩鹏", 8, "O型", title="彭浩鹏（心内科）"),
    ]
    for question in ("韩艳住院了多少天？", "韩艳的血型是什么？", "住院天数是多少？"):
        assert detect_conflicts(question, evidence) == [], question


def test_a_disagreement_about_another_record_is_not_the_questions():
    """Asked about 苏敏, the two versions of 韩艳's record disagree about something not asked."""
    evidence = [
        record("r9", "苏敏", 9, "O型", title="苏敏的住院病历"),
        record("r1", "韩艳", 15, "A型", title="韩艳的住院病历"),
        record("r1-v2", "韩艳", 18, "A型", title="韩艳的住院病历（2026修订版）"),
    ]
    assert detect_conflicts("苏敏住院了多少天？", evidence) == []
    assert len(detect_conflicts("韩艳住院了多少天？", evidence)) == 1
