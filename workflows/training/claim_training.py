"""`run.py train claims`: the reader's claim checker (agents/claim_reader.py), trained on CMRC passages.

The model is a cross-encoder: the encoder (a "scales" fine-tune of the first N layers of the
bundled e5-small, so its export is exact) reads `claim_reader.pair_text(claim, evidence)` as one
passage, and a linear head over the unit vector x LOGIT_SCALE gives supported / contradicted /
not enough info, trained with cross-entropy. The run folder holds what pair training's holds
(manifest, log, checkpoint; resumable in a time budget) and, exported, the model folder the
runtime loads: `encoder-delta.npz`, `head.npz`, `card.json` (data, licence, settings, metrics).
Validation: accuracy and how often each gold label is called "contradicted", on the valid
articles' examples (the same ones every run), in torch at every checkpoint and through the engine
(ClaimReader on the exported folder) at the end.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from citescope.agents.claim_reader import LABELS, LOGIT_SCALE, ClaimReader, pair_text
from citescope.knowledge.e5_delta import save_delta
from citescope.knowledge.e5_model_file import E5ModelFile, bundled_model_path
from citescope.workflows.training.checkpoints import Position, load_checkpoint
from citescope.workflows.training.claim_data import SOURCE, ClaimExample, claim_examples, read_passages
from citescope.workflows.training.e5_torch import E5TorchEncoder, export, pad
from citescope.workflows.training.pair_training import (
    MANIFEST_NAME,
    SeededBatches,
    append_log,
    settings_dict,
)
from citescope.workflows.training.step_loop import StepLoop, open_run_folder

MODEL_DIR = "model"
CONTRADICTED = LABELS.index("contradicted")


@dataclass
class ClaimTrainingSettings:
    data_dir: Path
    out_dir: Path
    max_minutes: float = 10.0
    max_steps: int | None = None
    seed: int = 0
    resume: bool = False
    layers: int = 4
    batch_size: int = 32
    max_tokens: int = 160  # claim + evidence window (claim_reader.WINDOW_CHARS) fit in most
    learning_rate: float = 1e-4  # biases, norms, positions
    scale_learning_rate: float = 2e-3  # the block gains
    head_learning_rate: float = 2e-3
    warmup_steps: int = 20
    checkpoint_every: int = 100
    generator_seeds: int = 3  # each seed draws other sentences of the passages
    valid_examples: int = 600  # checked in torch at each checkpoint; the end check reads every valid example
    max_false_rejections: float = (
        0.03  # the threshold stored in the card: at most this share of valid non-contradictions
    )
    export_model: bool = True
    model_path: Path = field(default_factory=bundled_model_path)


class ClaimModel(nn.Module):
    def __init__(self, source: E5ModelFile, layers: int):
        super().__init__()
        self.encoder = E5TorchEncoder(source, layers=layers, fine_tune="scales")
        self.head = nn.Linear(self.encoder.config.hidden, len(LABELS))

    def e5_parameters(self) -> dict[str, torch.Tensor]:
        return {**self.encoder.e5_parameters(), "head.weight": self.head.weight, "head.bias": self.head.bias}

    def forward(self, examples: list[ClaimExample], max_tokens: int) -> torch.Tensor:
        windows = [self.encoder.token_ids(pair_text(e.claim, e.evidence), False, max_tokens) for e in examples]
        vectors = self.encoder(*pad(windows, self.encoder.source.vocabulary.pad))
        return self.head(vectors * LOGIT_SCALE)


def rejection_rates(predicted: list[int], gold: list[int]) -> dict[str, Any]:
    """Accuracy, and per gold label the share predicted "contradicted" (what the inspector rejects)."""
    out: dict[str, Any] = {"accuracy": round(float(np.mean([p == g for p, g in zip(predicted, gold, strict=True)])), 4)}
    for index, label in enumerate(LABELS):
        chosen = [p == CONTRADICTED for p, g in zip(predicted, gold, strict=True) if g == index]
        out[f"{label}_rejected"] = round(float(np.mean(chosen)), 4) if chosen else None
    return out


def train_claims(settings: ClaimTrainingSettings) -> dict[str, Any]:
    """Run (or resume) a claim-checker run; returns the last log record."""
    out = settings.out_dir
    open_run_folder(out, settings.resume)
    started = time.monotonic()
    torch.manual_seed(settings.seed)

    passages, counts = read_passages(settings.data_dir)
    train = claim_examples(passages["train"], list(range(settings.generator_seeds)))
    every_valid = claim_examples(passages["valid"], [0])  # the end check reads them all, through the engine
    valid = every_valid[: settings.valid_examples]
    if len(train) < settings.batch_size:
        raise ValueError(f"{len(train)} training examples, fewer than one batch of {settings.batch_size}")
    data = {
        "source": {"name": SOURCE.name, "licence": SOURCE.licence, "passages": counts},
        "examples": {
            part: {label: sum(e.label == i for e in rows) for i, label in enumerate(LABELS)}
            for part, rows in (("train", train), ("valid", valid))
        },
        "held_out": "the claim benchmark's articles (perturbations.is_reader_bench_title) and families "
        "(perturbations.HELD_OUT_FAMILIES); valid articles by pair_data.split_of_title",
        "seed": settings.seed,
    }
    manifest = {**data, "settings": settings_dict(settings)}
    (out / MANIFEST_NAME).write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")

    model = ClaimModel(E5ModelFile.read(settings.model_path), settings.layers)
    gains = [module.gain for module in model.encoder.q4_layers().values()]
    head = list(model.head.parameters())
    others = [p for p in model.parameters() if p.requires_grad and all(p is not q for q in [*gains, *head])]
    groups = [
        {"params": others, "lr": settings.learning_rate, "base_lr": settings.learning_rate},
        {"params": gains, "lr": settings.scale_learning_rate, "base_lr": settings.scale_learning_rate},
        {"params": head, "lr": settings.head_learning_rate, "base_lr": settings.head_learning_rate},
    ]
    groups[1]["weight_decay"] = 0.0  # decay would pull a gain to 0, not to the file's scale
    optimizer = torch.optim.AdamW(groups, weight_decay=0.01)
    shape = {"layers": settings.layers, "model": Path(settings.model_path).name, "kind": "claims"}
    position = load_checkpoint(out, model, optimizer, shape) if settings.resume else Position()

    @torch.no_grad()
    def predict(examples: list[ClaimExample]) -> list[int]:
        model.eval()
        predicted: list[int] = []
        for start in range(0, len(examples), 64):
            predicted += model(examples[start : start + 64], settings.max_tokens).argmax(-1).tolist()
        model.train()
        return predicted

    def validate(event: str, **extra: Any) -> dict[str, Any]:
        record = {"event": event, "step": position.step, "epoch": position.epoch, "layers": settings.layers, **extra}
        record["valid"] = rejection_rates(predict(valid), [e.label for e in valid])
        append_log(out, record)
        return record

    if position.step == 0:
        validate("start")
    stream = SeededBatches(train, settings.seed, position)

    def batch_loss() -> torch.Tensor:
        batch = stream.batch(settings.batch_size)
        return F.cross_entropy(model(batch, settings.max_tokens), torch.tensor([e.label for e in batch]))

    extra = StepLoop.for_run(model, optimizer, position, shape, settings, started).run(batch_loss, validate)
    if settings.export_model:
        folder = export_claim_model(model, settings, out / MODEL_DIR, data)
        reader = ClaimReader(folder, out / "cache").warm_up()
        # every valid example, through the engine: what the shipped folder does, and where it rejects
        verdicts = reader.check([(e.claim, e.evidence) for e in every_valid])
        gold = [e.label for e in every_valid]
        extra["engine_valid"] = rejection_rates([LABELS.index(v.label) for v in verdicts], gold)
        chosen = choose_reject_above([v.contradicted for v in verdicts], gold, settings.max_false_rejections)
        extra["reject_above"] = chosen
        write_card(folder, {"reject_above": chosen})
        extra["exported"] = MODEL_DIR
    return validate("end", **extra)


def choose_reject_above(contradicted: list[float], gold: list[int], max_false: float) -> dict[str, Any]:
    """The lowest P(contradicted) threshold at which at most `max_false` of the valid claims that
    are not contradictions (supported, not enough info) would be rejected, and what it catches:
    chosen on the training data's valid articles, never on a benchmark's items."""
    others = sorted((p for p, g in zip(contradicted, gold, strict=True) if g != CONTRADICTED), reverse=True)
    caught = [p for p, g in zip(contradicted, gold, strict=True) if g == CONTRADICTED]
    allowed = int(max_false * len(others))
    threshold = others[allowed] if allowed < len(others) else 0.0
    return {
        "threshold": round(float(threshold), 4),
        "max_false_rejections": max_false,
        "false_rejections": round(sum(p > threshold for p in others) / len(others), 4) if others else None,
        "contradictions_rejected": round(sum(p > threshold for p in caught) / len(caught), 4) if caught else None,
        "valid_examples": len(gold),
    }


def write_card(folder: Path, updates: dict[str, Any]) -> None:
    path = folder / "card.json"
    card = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    card.update(updates)
    path.write_text(json.dumps(card, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def export_claim_model(model: ClaimModel, settings: ClaimTrainingSettings, folder: Path, data: dict) -> Path:
    """The folder agents/claim_reader.ClaimReader loads: encoder delta, head, card."""
    folder.mkdir(parents=True, exist_ok=True)
    card = {
        "task": "claim check: supported / contradicted / not_enough_info (agents/claim_reader.py)",
        "labels": list(LABELS),
        "base": Path(settings.model_path).name,
        "base_variant": "enpt" if "enpt" in Path(settings.model_path).name else "original",
        "data": data,
        "settings": settings_dict(settings),
    }
    save_delta(export(model.encoder), settings.model_path, folder / "encoder-delta.npz", card={"task": card["task"]})
    weight = model.head.weight.detach().cpu().numpy().astype(np.float32)
    bias = model.head.bias.detach().cpu().numpy().astype(np.float32)
    with (folder / "head.npz").open("wb") as handle:
        np.savez(handle, weight=weight, bias=bias)
    write_card(folder, card)
    return folder
