"""Long messages give way to usual questions between stages.

A pasted story costs several usual questions (agents/retrieval_question.py), and while one
computes it shares the GIL and both cores with the usual questions beside it: its query embedding
alone spreads over every core for ~0.15 s. The service already computes one long message at a time
(its long lane); this gate makes that one wait its turn. Before each of its stages (the points where
the pipeline checks the deadline) a long message waits while the usual questions computing *when it
got there* finish; one that starts later does not hold it back again until its next stage. So a
usual question waits at most for one stage of a long message, and a long message waits at most for
the usual questions in flight at each of its stages (a steady stream of them slows it, never
starves it). Every wait is bounded by the long message's deadline: past it, the pipeline refuses
it as it would anyway.

The gate is shared by every question of a pipeline: usual questions mark themselves (`usual()`),
a long message waits on the loop (`await give_way(...)`, no thread held) or on the worker thread
that scores its readings (`wait_for_usual(...)`).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class PriorityGate:
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._computing: set[int] = set()  # the usual questions computing now, by ticket
        self._tickets = itertools.count()
        self.waiting = 0  # long messages giving way now
        # coroutines giving way: (the usual questions ahead of each, its loop, the future that lets it go on)
        self._coroutines: list[tuple[set[int], asyncio.AbstractEventLoop, asyncio.Future]] = []

    @contextmanager
    def usual(self) -> Iterator[None]:
        """A usual question computes inside this block: long messages give way to it."""
        with self._changed:
            ticket = next(self._tickets)
            self._computing.add(ticket)
        try:
            yield
        finally:
            with self._changed:
                self._computing.discard(ticket)
                self._changed.notify_all()
                for ahead, loop, turn in self._coroutines:
                    if not ahead & self._computing:
                        try:
                            loop.call_soon_threadsafe(_settle, turn)
                        except RuntimeError:  # its loop is closed (shut down): nobody is waiting any more
                            pass

    @property
    def busy(self) -> bool:
        """A usual question is computing."""
        with self._changed:
            return bool(self._computing)

    def wait_for_usual(self, timeout_s: float) -> bool:
        """Block until every usual question computing now has finished (not those that start
        meanwhile), at most timeout_s; False when the time ran out first."""
        with self._changed:
            ahead = set(self._computing)
            self.waiting += 1
            try:
                return self._changed.wait_for(lambda: not ahead & self._computing, timeout=max(timeout_s, 0.0))
            finally:
                self.waiting -= 1

    async def give_way(self, timeout_s: float) -> bool:
        """wait_for_usual for a coroutine, without a thread: the loop goes on computing the usual
        questions meanwhile (a worker thread would be one the usual questions' own stages may need)."""
        loop = asyncio.get_running_loop()
        with self._changed:
            ahead = set(self._computing)
            if not ahead:
                return True
            turn = loop.create_future()
            waiter = (ahead, loop, turn)
            self._coroutines.append(waiter)
            self.waiting += 1
        try:
            await asyncio.wait_for(turn, max(timeout_s, 0.0))
            return True
        except TimeoutError:
            return False
        finally:
            with self._changed:
                self._coroutines.remove(waiter)
                self.waiting -= 1


def _settle(turn: asyncio.Future) -> None:
    if not turn.done():  # not already settled, nor cancelled by its timeout
        turn.set_result(None)
