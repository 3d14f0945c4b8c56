"""Personal-data redaction: the Chinese formats first (mobiles with +86, spaces or dashes, 18-char
IDs with their check digit, Luhn-valid bank cards, order numbers), and nothing else touched."""

from __future__ import annotations

import pytest

from citescope.workflows.personal_data import (
    PATTERNS_FILE,
    PersonalDataRedactor,
    PersonalDataSettings,
    id_card_valid,
    luhn_valid,
)

REDACTOR = PersonalDataRedactor.load(PATTERNS_FILE)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("我的手机 13812345678 收不到货", "我的手机 [手机号] 收不到货"),
        ("电话+86 138-1234-5678", "电话[手机号]"),
        ("0086 138 1234 5678", "[手机号]"),
        ("手机号8613812345678", "手机号[手机号]"),
        ("身份证11010519491231002X", "身份证[身份证号]"),
        ("身份证11010519491231002x呢", "身份证[身份证号]呢"),
        ("卡 4111 1111 1111 1111 扣款了", "卡 [银行卡号] 扣款了"),
        ("卡号6222021234567890128", "卡号[银行卡号]"),  # 19 digits, Luhn-valid
        ("订单号：DD20240501123456 还没发货", "订单号：[订单号] 还没发货"),
        ("订单 1234567890 呢", "订单 [订单号] 呢"),
        ("退货物流单号 SF1234567890123", "退货物流单号 [订单号]"),
        ("order #A1234567 missing", "order #[订单号] missing"),
        ("淘宝 4012345678901234567 这单", "淘宝 [订单号] 这单"),  # 19 digits, no card (Luhn fails)
        ("发到 li.ming@example.com.cn 吧", "发到 [邮箱] 吧"),
    ],
)
def test_each_format_is_redacted(text, expected):
    assert REDACTOR.redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "XZ-3000 充电宝多少钱？",
        "价格299元，2026-06-01起",
        "身高175 体重72公斤",
        "12345678901",  # no mobile prefix
        "trace 3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c",
        "【faq-021#0】只需提供订单号",
        "AJ1 Retro 42码",
        "11010519491231002Y",  # not an ID: the check character is wrong
    ],
)
def test_shop_text_and_ids_are_left_alone(text):
    assert REDACTOR.redact(text) == text


def test_the_checks():
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")
    assert id_card_valid("11010519491231002X") and not id_card_valid("110105194912310021")


def test_off_and_extra_patterns(tmp_path):
    extra = tmp_path / "more.yaml"
    extra.write_text('patterns:\n  - {name: member, label: "[会员号]", regex: "VIP\\\\d{6}"}\n', encoding="utf-8")
    redactor = PersonalDataRedactor.from_settings(PersonalDataSettings(personal_data_file=extra))
    assert redactor.redact("会员 VIP123456，电话13812345678") == "会员 [会员号]，电话[手机号]"
    off = PersonalDataRedactor.from_settings(PersonalDataSettings(redact_personal_data=False))
    assert off.redact("电话13812345678") == "电话13812345678"


def test_a_bad_pattern_file_names_the_file_and_the_entry(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text('patterns:\n  - {name: x, label: "[x]", regex: "(unclosed"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.yaml: patterns\[0\]\.regex: .*not a valid regular expression"):
        PersonalDataRedactor.load(bad)
    bad.write_text("patterns:\n  - {name: x, regex: 'a'}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.yaml: patterns\[0\]\.label: field required"):
        PersonalDataRedactor.load(bad)


@pytest.mark.parametrize(
    "text",
    [
        "订单" + " " * 20000 + "x",
        "order" + " \t" * 10000 + "#",
        "a" * 20000 + "@",
        "a." * 10000 + "@b",
        "1" * 20000,
        "1 " * 10000,
        "+86 " * 5000,
        "x@" + "b." * 10000 + "1",
    ],
)
def test_adversarial_text_is_scanned_in_one_pass(text):
    """Every stored string passes through the patterns: one that backtracks over a long run (three
    adjacent \\s* did: cubic in the run) would hang on this text instead of returning it."""
    assert REDACTOR.redact(text).endswith(text[-1])
