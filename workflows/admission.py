"""How many questions the service computes at once, and how many may wait for a turn.

Every question's CPU work runs on the one Assistant thread (service.AssistantLoop), so questions
computed "at once" share it: ten at a time make each ten times slower and every one of them late.
`Admission` lets `max_running` questions compute together, keeps up to `max_queued` more waiting in
arrival order (asyncio.Semaphore is first come, first served) and turns the rest away at once
(`Saturated`: the service answers 503 with Retry-After) instead of letting a queue grow without end.
A question's deadline counts from its arrival, so one that waited too long is refused quickly
(pipeline: refusal_reason "deadline") instead of being computed for a client that has given up.
"""

from __future__ import annotations

import asyncio


class Saturated(Exception):
    """Every slot is busy and the queue is full."""


class Admission:
    def __init__(self, max_running: int, max_queued: int):
        if max_running < 1 or max_queued < 0:
            raise ValueError("Admission needs max_running >= 1 and max_queued >= 0")
        self.max_running, self.max_queued = max_running, max_queued
        self.running = 0
        self.queued = 0
        self._slots: asyncio.Semaphore | None = None  # made on the server's loop, on first use

    @property
    def full(self) -> bool:
        """A question arriving now would be turned away."""
        return self.running >= self.max_running and self.queued >= self.max_queued

    def counts(self) -> dict[str, int]:
        return {
            "running": self.running,
            "queued": self.queued,
            "max_running": self.max_running,
            "max_queued": self.max_queued,
        }

    async def enter(self) -> None:
        """Take one of the max_running slots, waiting in the queue for one if need be; Saturated
        when none is free and the queue is full. A waiter cancelled (its client gone) leaves the
        queue without a slot. Every successful enter() is paired with one leave()."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_running)
        # checked and counted without an await in between: two arrivals never both take the last place
        if self.full:
            raise Saturated(
                f"{self.running} questions computing and {self.queued} waiting (the most this "
                f"service takes: {self.max_running} + {self.max_queued})"
            )
        self.queued += 1
        try:
            await self._slots.acquire()
        finally:
            self.queued -= 1
        self.running += 1

    def leave(self) -> None:
        """Give a slot back (on the loop that entered); the longest waiter gets it."""
        self.running -= 1
        assert self._slots is not None  # enter() made it
        self._slots.release()
