"""The claim-checking items (workflows/evaluation/perturbations.py) and `run.py bench reader`: each
family changes (or keeps) what a hand-written sentence says, the generator is deterministic, the
held-out split and families stay out of training, and the bench's report adds up when the real
inspector judges a slice of the demo KB."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from citescope.workflows.cli import app
from citescope.workflows.cli.common import DEMO_DIR
from citescope.workflows.evaluation.bench.reader import DEMO_SOURCE, kb_source, mrc_source, run_reader_bench
from citescope.workflows.evaluation.perturbations import (
    FAMILIES,
    HELD_OUT_FAMILIES,
    PARAPHRASES,
    PERTURBATIONS,
    TRAINING_FAMILIES,
    FamilyContext,
    Passage,
    generate,
)
from citescope.workflows.evaluation.reader_holdout import is_reader_bench_title, title_bucket

MRC_TRAIN = Path(__file__).resolve().parents[4] / "shared" / "training" / "mrc_train.jsonl"


def change(family: str, sentence: str, seed: int = 0, names: dict | None = None) -> str | None:
    return FAMILIES[family][1](sentence, FamilyContext(random.Random(seed), sentence, names or {}))


# ----------------------------------------------------------------------------- perturbations


def test_negation_adds_or_removes_a_negation_and_leaves_words_that_only_contain_one():
    assert change("negation", "本店支持7天无理由退货。") == "本店不支持7天无理由退货。"
    assert change("negation", "该商品不可以退换。") == "该商品可以退换。"
    assert change("negation", "会员享有专属客服。") is None  # 会员 is no 会, 享有 no 有
    assert change("negation", "所有订单当天发出。") is None
    assert change("negation", "适用范围：全部商品。") is None  # a field's label says nothing


def test_antonym_swaps_a_word_for_its_opposite_but_not_after_a_negation():
    assert change("antonym", "满99元免费配送。") == "满99元收费配送。"
    assert change("antonym", "运费由店铺承担。") == "运费由买家承担。"
    assert change("antonym", "金额不超过实付金额。") is None


def test_number_change_moves_a_number_to_one_the_passage_never_states_and_leaves_dates_alone():
    for seed in range(5):
        changed = change("number_change", "2026-03-12 起，保修期为 12 个月。", seed)
        assert changed is not None and "2026-03-12" in changed
        number = re.search(r"为 (\d+) 个月", changed)
        assert number is not None and number.group(1) not in {"12", "2026", "3"}
    assert change("number_change", "价格 1299.00元。", 1) in {f"价格 {v}.00元。" for v in (1399, 1499, 1599, 1799)}
    assert change("number_change", "型号 XZ-3000 的详情。") is None  # a model number is entity_swap's


def test_unit_change_keeps_the_number_in_another_unit_but_never_a_year_or_zero():
    assert change("unit_change", "自签收之日起 7 天内可退货。") == "自签收之日起 7 周内可退货。"
    assert change("unit_change", "价格 299.00元。") == "价格 299.00美元。"
    assert change("unit_change", "他 1985年出生。") is None
    assert change("unit_change", "民国16年迁往南京。") is None
    assert change("unit_change", "运费 0元。") is None
    assert change("unit_change", "保修 2 年内免费维修。") == "保修 2 个月内免费维修。"


def test_entity_swap_puts_another_name_of_the_same_kind():
    names = {"brand": ["星择", "山野"], "product": ["星择 XZ-3000 充电宝", "星择 XZ-2000 充电宝"]}
    assert change("entity_swap", "星择充电宝支持快充。", names=names) == "山野充电宝支持快充。"
    assert change("entity_swap", "XZ-3000 的容量为 20000mAh。", names=names) == "XZ-2000 的容量为 20000mAh。"
    assert change("entity_swap", "本店支持快充。", names=names) is None


def test_stock_flip_turns_in_stock_into_out_of_stock_and_back():
    assert change("stock_flip", "SKU: A-1；库存: 3件") == "SKU: A-1；库存: 0件"
    assert change("stock_flip", "目前有货。") == "目前缺货。"
    assert change("stock_flip", "该颜色已售罄。") == "该颜色已有货。"
    zero = change("stock_flip", "库存: 0件")
    assert zero is not None and zero != "库存: 0件" and re.fullmatch(r"库存: [1-9]\d*件", zero)


def test_date_change_moves_a_date_and_keeps_its_format():
    moved = change("date_change", "更新日期: 2026-03-12")
    assert moved is not None and moved != "更新日期: 2026-03-12"
    assert re.fullmatch(r"更新日期: \d{4}-\d{2}-\d{2}", moved)
    year = change("date_change", "该馆建于1985年。")
    assert year is not None and year != "该馆建于1985年。" and re.fullmatch(r"该馆建于\d{4}年。", year)
    assert change("date_change", "保修 2 年。") is None


# ----------------------------------------------------------------------------- paraphrases


def test_clause_reorder_keeps_every_clause_and_only_reorders_parallel_ones():
    sentence = "颜色: 黑色；尺码: M；价格: 399.00元"
    changed = change("clause_reorder", sentence)
    assert changed is not None and changed != sentence
    assert sorted(changed.split("；")) == sorted(sentence.split("；"))
    assert change("clause_reorder", "填写原因；审核通过后寄回商品。") is None  # steps in order
    assert change("clause_reorder", "马力 320 hp (238.6 kW；324.4 PS)。") is None  # a ； inside brackets


def test_number_rewrite_writes_the_same_amount_another_way_but_never_a_year_or_a_range_end():
    assert change("number_rewrite", "保修 1 年内免费换新。") == "保修 12个月内免费换新。"
    assert change("number_rewrite", "价格 299.00元。") == "价格 299元。"
    assert change("number_rewrite", "价格 299元。") == "价格 299.00元。"
    assert change("number_rewrite", "成立于1066年。") is None
    assert change("number_rewrite", "保修 1-3 年。") is None  # one end of a range


def test_synonym_swap_and_courtesy_drop_keep_the_claim():
    assert change("synonym_swap", "目前发货。") == "当前发货。"
    assert change("courtesy_drop", "请在签收后拍照。") == "在签收后拍照。"
    assert change("courtesy_drop", "个人和企业均可申请。") is None  # 申请's 请 is no courtesy


# ----------------------------------------------------------------------------- generator and split


def demo_passages(count: int) -> tuple[list[Passage], dict]:
    source = kb_source(DEMO_DIR)
    return source.passages(count, seed=0), source.names


def test_generator_is_deterministic_and_an_item_does_not_depend_on_the_other_passages():
    passages, names = demo_passages(40)
    first = generate(passages, seed=3, names=names)
    assert first.items == generate(passages, seed=3, names=names).items
    assert first.items != generate(passages, seed=4, names=names).items
    alone = generate(passages[7:8], seed=3, names=names).items
    assert alone == [i for i in first.items if i.evidence_id == passages[7].passage_id]
    # every family yields at most one item per passage and counts the passages it skipped
    for family in FAMILIES:
        made = sum(1 for i in first.items if i.family == family)
        assert made + first.skipped[family] == len(passages)
    assert {i.label for i in first.items if i.family in PERTURBATIONS} == {"contradicted"}
    assert {i.label for i in first.items if i.family in PARAPHRASES} == {"supported"}


def test_the_items_are_the_same_in_another_process_with_another_hash_seed():
    script = (
        "import hashlib, json, sys; from pathlib import Path; "
        "from citescope.workflows.evaluation.bench.reader import kb_source; "
        "from citescope.workflows.evaluation.perturbations import generate; "
        "s = kb_source(Path(sys.argv[1])); g = generate(s.passages(80, seed=0), seed=0, names=s.names); "
        "print(hashlib.sha256(json.dumps([vars(i) for i in g.items], ensure_ascii=False).encode()).hexdigest())"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", script, str(DEMO_DIR)],
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout
        for hash_seed in ("1", "2")
    }
    assert len(digests) == 1 and len(digests.pop()) == 65


def test_training_families_never_include_the_held_out_ones():
    assert HELD_OUT_FAMILIES == {"entity_swap", "date_change"}
    assert set(TRAINING_FAMILIES) == set(FAMILIES) - HELD_OUT_FAMILIES
    passages, names = demo_passages(40)
    made = generate(passages, names=names, families=TRAINING_FAMILIES)
    assert made.items and not {i.family for i in made.items} & HELD_OUT_FAMILIES
    with pytest.raises(ValueError):
        generate(passages, families=["no_such_family"])


def test_the_reader_bench_split_is_stable_by_whole_title():
    # pinned: moving a title between buckets would leak benchmark passages into training
    assert title_bucket("苏格兰议会") == 0 and is_reader_bench_title("苏格兰议会")
    assert title_bucket("范廷颂") == 8 and not is_reader_bench_title("范廷颂")
    assert title_bucket(" 范廷颂 ") == title_bucket("范廷颂")


def test_the_mrc_source_holds_only_reader_bench_titles(tmp_path):
    rows = [
        {"title": "苏格兰议会", "context": "苏格兰议会成立于1999年。议会设在爱丁堡。"},
        {"title": "苏格兰议会", "context": "苏格兰议会成立于1999年。议会设在爱丁堡。"},  # a passage's second question
        {"title": "范廷颂", "context": "范廷颂是越南罗马天主教枢机。"},
    ]
    path = tmp_path / "mrc.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    source = mrc_source(path)
    assert [h.title for h in source.hits.values()] == ["苏格兰议会"]
    assert source.names == {"title": ["苏格兰议会"]}


@pytest.mark.skipif(not MRC_TRAIN.exists(), reason="needs ../shared/training/mrc_train.jsonl")
def test_about_a_tenth_of_the_training_titles_are_held_out():
    titles = {json.loads(line)["title"] for line in MRC_TRAIN.open(encoding="utf-8")}
    held = {t for t in titles if is_reader_bench_title(t)}
    assert 0.07 < len(held) / len(titles) < 0.13


# ----------------------------------------------------------------------------- the bench


def test_bench_reader_report_adds_up_on_a_demo_slice():
    result = run_reader_bench(DEMO_DIR, None, limit=30, seed=0)
    assert isinstance(result["perturbations_rejected"], float) and isinstance(result["paraphrases_rejected"], float)
    counts = result["counts"]
    assert counts["perturbations"] + counts["paraphrases"] == counts["items"] > 0
    assert counts["by_source"] == {DEMO_SOURCE: {"chunks": 635, "passages": 30}}
    families = result["by_family"]
    assert set(families) == set(FAMILIES)
    assert sum(f["items"] for f in families.values()) == counts["items"]
    for name, row in families.items():
        assert row["held_out"] == (name in HELD_OUT_FAMILIES)
        assert row["by_source"][DEMO_SOURCE]["items"] + row["by_source"][DEMO_SOURCE]["skipped_passages"] == 30
    rejected = sum(f["items"] * f["rejected"] for f in families.values() if f["label"] == "contradicted" and f["items"])
    assert round(rejected / counts["perturbations"], 4) == result["perturbations_rejected"]
    trained, held = result["trained_families"], result["held_out_families"]
    assert trained["perturbations"] + held["perturbations"] == counts["perturbations"]
    assert held["paraphrases"] == 0 and held["families"] == sorted(HELD_OUT_FAMILIES)
    # the real inspector: a changed number is caught, the evidence sentence itself passes
    assert families["number_change"]["rejected"] > 0.9
    assert result["verbatim_rejected"] == 0.0


def test_bench_reader_command_prints_the_json_keys():
    shown = CliRunner().invoke(app, ["bench", "reader", "--json", "--no-mrc", "--limit", "8"])
    assert shown.exit_code == 0, shown.output
    result = json.loads(shown.output)
    assert {"perturbations_rejected", "paraphrases_rejected", "by_family", "counts"} <= set(result)
    assert result["counts"]["by_source"][DEMO_SOURCE]["passages"] == 8


def test_bench_reader_command_refuses_a_folder_without_documents(tmp_path):
    shown = CliRunner().invoke(app, ["bench", "reader", "--no-mrc", "--kb", str(tmp_path)])
    assert shown.exit_code == 2 and "no documents in" in shown.output


def test_a_claim_reader_is_measured_alone_and_beside_the_inspector(tmp_path):
    from citescope.agents.claim_reader import ClaimReader
    from citescope.agents.inspector import claims_as_read
    from tests.support.claim_model import constant_claim_model

    rules = run_reader_bench(DEMO_DIR, None, limit=12, seed=0)
    always = ClaimReader(constant_claim_model(tmp_path / "always", "contradicted"), tmp_path / "cache").warm_up()
    rejecting = run_reader_bench(DEMO_DIR, None, limit=12, seed=0, claim_reader=always)
    alone = rejecting["reader_alone"]
    # every item the checker is given (inspector.claims_as_read): not those whose evidence is a table row
    source = kb_source(DEMO_DIR)
    items = generate(source.passages(12, 0), seed=0, names=source.names).items
    read = [i for i in items if claims_as_read(i.claim, [source.hits[i.evidence_id]])]
    assert 0 < len(read) < len(items)
    for label, key in (("contradicted", "perturbations_rejected"), ("supported", "paraphrases_rejected")):
        mine = [i for i in items if i.label == label]
        assert alone[key] == round(sum(i in read for i in mine) / len(mine), 4)
    assert rejecting["checker"].startswith("inspector + claim reader")
    assert rejecting["perturbations_rejected"] >= max(alone["perturbations_rejected"], rules["perturbations_rejected"])

    never = ClaimReader(constant_claim_model(tmp_path / "never", "supported"), tmp_path / "cache").warm_up()
    passing = run_reader_bench(DEMO_DIR, None, limit=12, seed=0, claim_reader=never)
    assert passing["reader_alone"]["perturbations_rejected"] == 0.0
    # a checker that rejects nothing leaves the inspector's verdicts as they were
    assert passing["perturbations_rejected"] == rules["perturbations_rejected"]
    assert passing["paraphrases_rejected"] == rules["paraphrases_rejected"] and rules["reader_alone"] is None


def test_the_demo_source_inspector_reads_the_kb_entity_index_as_the_pipeline_does():
    """The bench's inspector is built as workflows/pipeline.py builds it, with the KB's entity index:
    a sentence quoted verbatim passes, the same sentence naming another brand or another product fails."""
    source = kb_source(DEMO_DIR)
    chunk_id = next(i for i, hit in source.hits.items() if "星择 XZ-2000 的额定能量" in hit.text)
    sentence = next(s for s in re.split(r"(?<=[。！？])", source.hits[chunk_id].text) if "星择 XZ-2000" in s)
    assert not source.rejects(sentence, chunk_id)
    assert source.rejects(sentence.replace("星择 XZ-2000", "乐映 XZ-2000"), chunk_id)  # entity.brand
    assert source.rejects(sentence.replace("星择 XZ-2000", "山野 岩途 GTX"), chunk_id)  # entity.product
    without_index = kb_source(DEMO_DIR)
    without_index.inspector.rules.entities = None  # the rules as the bench built them before
    assert not without_index.rejects(sentence.replace("星择 XZ-2000", "乐映 XZ-2000"), chunk_id)
