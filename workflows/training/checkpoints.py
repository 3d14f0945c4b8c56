"""A training run's checkpoint: what resuming needs to continue as if never stopped.

The trainable weights only (by the model file's tensor names; a frozen word table is the bundled
one and would add 384 MB), the optimizer's state, the step, where the run is in its data order,
torch's RNG state and the settings that shape the model. Written to a temporary name and renamed,
so a run killed mid-write leaves the previous checkpoint whole.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch


class TrainableModel(Protocol):
    """A model whose trainable tensors have stable names (E5TorchEncoder, the claim model)."""

    def e5_parameters(self) -> dict[str, torch.Tensor]: ...


CHECKPOINT_NAME = "checkpoint.pt"


@dataclass
class Position:
    step: int = 0  # optimizer steps taken
    epoch: int = 0  # passes over the training pairs begun
    cursor: int = 0  # pairs of this epoch's order already used


def save_checkpoint(
    out_dir: Path, model: TrainableModel, optimizer: torch.optim.Optimizer, position: Position, shape: dict[str, Any]
) -> Path:
    path = out_dir / CHECKPOINT_NAME
    state = {
        "weights": {name: p.detach().clone() for name, p in model.e5_parameters().items() if p.requires_grad},
        "optimizer": optimizer.state_dict(),
        "position": vars(position).copy(),
        "torch_rng": torch.get_rng_state(),
        "shape": shape,
    }
    temporary = path.with_suffix(".tmp")
    torch.save(state, temporary)
    os.replace(temporary, path)
    return path


def load_checkpoint(
    out_dir: Path, model: TrainableModel, optimizer: torch.optim.Optimizer, shape: dict[str, Any]
) -> Position:
    """Restore the run saved in out_dir into model and optimizer; ValueError when the checkpoint's
    model shape (layers, trained tables) differs from this run's settings."""
    state = _weights_into(model, out_dir / CHECKPOINT_NAME, shape)
    optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["torch_rng"])
    return Position(**state["position"])


def load_weights(run_dir: Path, model: TrainableModel, shape: dict[str, Any]) -> None:
    """Start from another run's trained weights (its checkpoint): a new run with new data goes on from
    where that one got, with its own optimizer, step 0 and data order. ValueError when the shapes
    differ, or when the folder holds no checkpoint."""
    if not (run_dir / CHECKPOINT_NAME).exists():
        raise ValueError(f"{run_dir}: no {CHECKPOINT_NAME} to start from")
    _weights_into(model, run_dir / CHECKPOINT_NAME, shape)


def _weights_into(model: TrainableModel, path: Path, shape: dict[str, Any]) -> dict[str, Any]:
    """The checkpoint at `path`, its trained weights copied into model (after its shape is checked)."""
    # onto the CPU first: a run saved on a GPU resumes here (copy_ and the optimizer move it to the model's device)
    state = torch.load(path, weights_only=True, map_location="cpu")
    if state["shape"] != shape:
        raise ValueError(f"{path} was trained as {state['shape']}, this run asks for {shape}")
    parameters = model.e5_parameters()
    with torch.no_grad():
        for name, values in state["weights"].items():
            parameters[name].copy_(values)
    return state
