"""Admission: at most max_running questions at once, at most max_queued waiting, the rest turned
away at once; waiters served in arrival order; a waiter that gives up leaves the queue."""

from __future__ import annotations

import asyncio

import pytest

from citescope.workflows.admission import Admission, Saturated


def test_slots_queue_and_saturation():
    async def scenario() -> list[str]:
        admission = Admission(max_running=1, max_queued=2)
        order: list[str] = []
        await admission.enter()  # the one slot

        async def waiter(name: str) -> None:
            await admission.enter()
            order.append(name)
            admission.leave()

        first, second = asyncio.create_task(waiter("first")), asyncio.create_task(waiter("second"))
        await asyncio.sleep(0)
        assert admission.counts() == {"running": 1, "queued": 2, "max_running": 1, "max_queued": 2}
        assert admission.full
        with pytest.raises(Saturated):
            await admission.enter()
        assert admission.queued == 2  # the one turned away took no place
        admission.leave()
        await asyncio.wait_for(asyncio.gather(first, second), 10)
        assert admission.counts()["running"] == admission.counts()["queued"] == 0 and not admission.full
        return order

    assert asyncio.run(scenario()) == ["first", "second"]


def test_a_cancelled_waiter_leaves_the_queue_without_a_slot():
    async def scenario() -> None:
        admission = Admission(max_running=1, max_queued=1)
        await admission.enter()
        waiting = asyncio.create_task(admission.enter())
        await asyncio.sleep(0)
        assert admission.full
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert admission.counts()["queued"] == 0 and not admission.full
        admission.leave()
        await asyncio.wait_for(admission.enter(), 10)  # the slot was not lost
        assert admission.running == 1

    asyncio.run(scenario())


def test_limits_are_checked():
    with pytest.raises(ValueError):
        Admission(max_running=0, max_queued=1)
