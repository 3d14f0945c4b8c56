"""A shop's own words (knowledge/shop_profile.py): read from the shop.yaml its folder ships, refused
with the file and the field named, stored with the KB at ingest and kept by a later ingest of
sources that ship none."""

from __future__ import annotations

import json
import shutil

import pytest

from citescope.knowledge.ingest import Ingestor
from citescope.knowledge.kb import KnowledgeBase
from citescope.knowledge.settings import get_settings
from citescope.knowledge.shop_profile import SHOP_PROFILE_FILENAME, ShopProfile, ShopProfileError
from tests.conftest import DEMO_DIR, ingested_kb

FAQ = {"doc_id": "faq-1", "title": "多久发货？", "text": "下单后 48 小时内发货。", "doc_type": "faq"}


def test_the_demo_shop_ships_its_name_tiers_and_zones():
    shop = ShopProfile.load(DEMO_DIR / SHOP_PROFILE_FILENAME)
    assert shop.name == "云栈优选" and shop.prompt_name == "“云栈优选”电商店铺"
    assert sorted(shop.membership_tiers) == sorted(["金卡", "银卡", "黑钻"])
    zones = dict(shop.zone_table)
    assert zones["上海"] == ("江浙沪",) and zones["广州"] == ("其他地区",) and zones["新疆"] == ("偏远地区",)
    assert shop.policy_pattern is not None and shop.policy_pattern.search("黑钻有什么权益")


def test_the_traditional_demo_shop_ships_a_profile_too():
    shop = ShopProfile.load(DEMO_DIR.parent / "demo_tw" / SHOP_PROFILE_FILENAME)
    assert shop.name and shop.name != "云栈优选" and not shop.zone_table and shop.policy_pattern is None


def test_without_a_profile_a_shop_is_neutral():
    shop = ShopProfile()
    assert shop.name is None and shop.prompt_name == "本店"
    assert shop.policy_pattern is None and shop.zone_table == ()


def test_a_traditional_profile_is_read_as_questions_are():
    shop = ShopProfile(membership_tiers=["黃金會員"], delivery_zones={"離島": ["澎湖"], "本島": ["臺北"]})
    assert shop.policy_pattern is not None and shop.policy_pattern.search("黄金会员有什么优惠")
    assert dict(shop.zone_table) == {"澎湖": ("离岛",), "台北": ("本岛",)}


@pytest.mark.parametrize(
    "text, named",
    [
        ("name: 花漾\nmembership_tier: [粉钻]\n", "membership_tier"),  # a misspelt field is no silent default
        ("membership_tiers: 粉钻\n", "membership_tiers"),
        ("membership_tiers: [粉钻, '']\n", "membership_tiers"),
        ("name: '  '\n", "name"),
        ("delivery_zones:\n  华南: [广州]\n  华北: [北京, 广州]\n", "广州 is in both 华南 and 华北"),
        ("delivery_zones:\n  华南: 广州\n", "delivery_zones.华南"),
        ("- 粉钻\n", "a mapping of fields"),
        ("name: [unclosed\n", "not a readable shop profile"),
    ],
)
def test_a_bad_profile_names_its_file_and_field(tmp_path, text, named):
    path = tmp_path / SHOP_PROFILE_FILENAME
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ShopProfileError) as caught:
        ShopProfile.load(path)
    assert str(caught.value).startswith(f"{path}: ") and named in str(caught.value), caught.value


def _shop_folder(folder, profile: str | None):
    folder.mkdir(parents=True)
    (folder / "faq.jsonl").write_text(json.dumps(FAQ, ensure_ascii=False) + "\n", encoding="utf-8")
    if profile is not None:
        (folder / SHOP_PROFILE_FILENAME).write_text(profile, encoding="utf-8")
    return folder


def test_ingest_stores_the_profile_and_an_ingest_without_one_keeps_it(tmp_path):
    shop = _shop_folder(tmp_path / "shop", "name: 花漾美妆\nmembership_tiers: [粉钻]\n")
    kb, summary = ingested_kb(tmp_path / "kb", [shop])  # no issue: shop.yaml is no document of an unknown type
    try:
        assert summary.documents == 1 and kb.shop == ShopProfile(name="花漾美妆", membership_tiers=["粉钻"])
        more = _shop_folder(tmp_path / "more", None)
        (more / "faq.jsonl").write_text(json.dumps({**FAQ, "doc_id": "faq-2"}) + "\n", encoding="utf-8")
        assert not Ingestor(kb, show_progress=False).run([more]).issues
        assert kb.shop.name == "花漾美妆"  # sources that ship no profile leave the shop's as it was
        (shop / SHOP_PROFILE_FILENAME).write_text("name: 花漾旗舰店\n", encoding="utf-8")
        Ingestor(kb, show_progress=False).run([shop])
        assert kb.shop == ShopProfile(name="花漾旗舰店")  # the one shipped now, whole
    finally:
        kb.close()
    reopened = KnowledgeBase(tmp_path / "kb", get_settings(kb_dir=tmp_path / "kb"))
    try:
        assert reopened.shop.name == "花漾旗舰店"  # stored with the built KB
    finally:
        reopened.close()


def test_a_bad_or_second_profile_stops_the_ingest_before_any_write(tmp_path):
    shop = _shop_folder(tmp_path / "shop", "name: 花漾美妆\n")
    other = _shop_folder(tmp_path / "other", "name: 云栈优选\n")
    kb = KnowledgeBase(tmp_path / "kb", get_settings(kb_dir=tmp_path / "kb"), create=True)
    try:
        with pytest.raises(ShopProfileError, match="a second, different shop profile"):
            Ingestor(kb, show_progress=False).run([shop, other])
        shutil.copy(shop / SHOP_PROFILE_FILENAME, other / SHOP_PROFILE_FILENAME)  # the same shop twice is one
        (shop / SHOP_PROFILE_FILENAME).write_text("name: 花漾美妆\nzones: {}\n", encoding="utf-8")
        with pytest.raises(ShopProfileError, match=r"shop\.yaml: invalid shop profile: zones"):
            Ingestor(kb, show_progress=False).run([shop, other])
        assert not kb.catalog.content_hashes() and kb.shop == ShopProfile()  # nothing written
        (shop / SHOP_PROFILE_FILENAME).write_text("name: 花漾美妆\n", encoding="utf-8")
        assert Ingestor(kb, show_progress=False).run([shop, other]).documents == 1  # faq-1 twice: one document
        assert kb.shop.name == "花漾美妆"
    finally:
        kb.close()


def test_a_kb_without_a_profile_has_the_neutral_one(tmp_path):
    kb, _ = ingested_kb(tmp_path / "kb", [_shop_folder(tmp_path / "shop", None)])
    try:
        assert kb.shop == ShopProfile()
    finally:
        kb.close()
