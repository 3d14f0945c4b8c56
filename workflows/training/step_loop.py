"""The optimisation loop every trainer here shares: one run folder, steps in a time budget,
warm-up, clipping, a checkpoint + validation every K steps, and the speed of the session.

A trainer gives its loss of one batch and its validation; `StepLoop.run` takes steps until the
deadline or max_steps, then saves (what `--resume` continues from) and returns the speed record
the trainer adds to its end record (exports and engine checks stay the trainer's own).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch

from citescope.workflows.training.checkpoints import (
    CHECKPOINT_NAME,
    Position,
    TrainableModel,
    save_checkpoint,
)


def open_run_folder(out: Path, resume: bool) -> None:
    """A fresh run needs a folder without a checkpoint, a resumed one a folder with one."""
    has_checkpoint = (out / CHECKPOINT_NAME).exists()
    if resume and not has_checkpoint:
        raise ValueError(f"--resume: no {CHECKPOINT_NAME} in {out}")
    if not resume and has_checkpoint:
        raise ValueError(f"{out} holds a run already: add --resume, or choose another --out")
    out.mkdir(parents=True, exist_ok=True)


def speed_record(losses: list[float], steps: int, seconds: float) -> dict[str, Any]:
    return {
        "loss": round(float(np.mean(losses)), 4) if losses else None,
        "session_steps": steps,
        "steps_per_s": round(steps / seconds, 3) if seconds else None,
    }


@dataclass
class StepLoop:
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer  # each param group carries its own "base_lr"
    position: Position
    out: Path
    shape: dict[str, Any]  # what a checkpoint must match to resume (checkpoints.load_checkpoint)
    warmup_steps: int
    checkpoint_every: int
    max_steps: int | None
    deadline: float  # time.monotonic() at which the session stops after its current step

    @classmethod
    def for_run(
        cls,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        position: Position,
        shape: dict,
        settings: Any,
        started: float,
    ) -> StepLoop:
        """From a trainer's settings (out_dir, warmup_steps, checkpoint_every, max_steps,
        max_minutes); the budget counts from `started` (the session's start, data loading included)."""
        deadline = started + settings.max_minutes * 60
        return cls(
            model,
            optimizer,
            position,
            settings.out_dir,
            shape,
            settings.warmup_steps,
            settings.checkpoint_every,
            settings.max_steps,
            deadline,
        )

    def run(self, batch_loss: Callable[[], torch.Tensor], validate: Callable[..., Any]) -> dict[str, Any]:
        """batch_loss: draws the next batch and returns its loss; validate(event, **extra) logs.
        Returns the speed of the steps since the last checkpoint and why the loop stopped."""
        model = cast(TrainableModel, self.model)  # an nn.Module with e5_parameters(): both trainers' models
        trainable = [p for p in self.model.parameters() if p.requires_grad]
        position, losses = self.position, []
        train_seconds, session_steps = 0.0, 0
        self.model.train()
        while time.monotonic() < self.deadline and (self.max_steps is None or position.step < self.max_steps):
            tick = time.monotonic()
            loss = batch_loss()
            if not torch.isfinite(loss):
                raise FloatingPointError(f"loss is {loss.item()} at step {position.step}")
            for group in self.optimizer.param_groups:
                group["lr"] = group["base_lr"] * min(1.0, (position.step + 1) / self.warmup_steps)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trainable, 1.0)
            self.optimizer.step()
            position.step += 1
            session_steps += 1
            losses.append(float(loss.item()))
            train_seconds += time.monotonic() - tick
            if position.step % self.checkpoint_every == 0:
                save_checkpoint(self.out, model, self.optimizer, position, self.shape)
                validate("checkpoint", **speed_record(losses, session_steps, train_seconds))
                losses = []
        save_checkpoint(self.out, model, self.optimizer, position, self.shape)
        extra = speed_record(losses, session_steps, train_seconds)  # loss: of the steps since the last checkpoint
        extra["stopped_by"] = "max_steps" if time.monotonic() < self.deadline else "time budget"
        return extra
