"""What every stage of one question shares: its budget and deadline, its span clock, its place
before the priority gate, and the degradations it has met so far."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from citescope.agents.budget import BudgetTracker
from citescope.workflows.priority_gate import PriorityGate
from citescope.workflows.traces import StageClock

if TYPE_CHECKING:
    from citescope.workflows.stages.stream import Streaming


@dataclass
class QuestionRun:
    tracker: BudgetTracker
    priority: PriorityGate
    long: bool  # a long message: it gives way to the usual questions before each stage
    clock: StageClock = field(default_factory=StageClock)
    degradations: list[str] = field(default_factory=list)
    streaming: Streaming | None = None  # a streamed answer's listener and what it was shown

    async def checkpoint(self, stage: str) -> None:
        """Before a stage: a long message first gives way to the usual questions computing now, for
        at most what is left of its deadline (workflows/priority_gate.py); then DeadlinePassed if
        it has passed. Python cannot stop a stage midway: every stage starts only inside the
        deadline, and the heavy ones read a bounded question, so a refusal comes at most one stage late."""
        if self.long:
            await self.priority.give_way(self.tracker.remaining_s())
        self.tracker.check_deadline(stage)

    @asynccontextmanager
    async def stage(self, span: str, deadline: str | None = None) -> AsyncIterator[None]:
        """The block is a stage: checkpoint(deadline, else the span's name) before it, its span
        (timings_ms[span]) around it."""
        await self.checkpoint(deadline or span)
        with self.clock.span(span):
            yield

    def checkpoint_in_thread(self, stage: str) -> None:
        """checkpoint() for a stage's step on a worker thread, which can block while it waits."""
        if self.long:
            self.priority.wait_for_usual(self.tracker.remaining_s())
        self.tracker.check_deadline(stage)
