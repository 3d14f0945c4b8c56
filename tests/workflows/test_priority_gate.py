"""PriorityGate: a long message gives way to the usual questions computing when it reaches a stage,
not to those that start after; the wait ends at its deadline; a coroutine giving way leaves the
loop free for the usual questions. Orders are checked, never speeds (timeouts only catch a hang)."""

from __future__ import annotations

import asyncio
import threading
import time

from citescope.workflows.priority_gate import PriorityGate

HANG = 30.0  # seconds; only a hang reaches it


def until(condition, what: str) -> None:
    stop = time.monotonic() + HANG
    while not condition():
        assert time.monotonic() < stop, f"hung waiting for {what}"
        time.sleep(0.001)


def test_with_no_usual_question_a_long_one_goes_on_at_once():
    gate = PriorityGate()
    assert gate.wait_for_usual(HANG) and not gate.busy
    assert asyncio.run(gate.give_way(HANG))


def test_a_long_message_waits_for_the_usual_questions_computing_when_it_got_there_only():
    gate = PriorityGate()
    order: list[str] = []
    first = gate.usual()
    first.__enter__()  # a usual question computing when the long one reaches a stage

    def long_message() -> None:
        assert gate.wait_for_usual(HANG)
        order.append("long goes on")

    waiter = threading.Thread(target=long_message)
    waiter.start()
    until(lambda: gate.waiting == 1, "the long message to give way")
    with gate.usual():  # a usual question that starts while the long one waits does not hold it back
        order.append("first done")
        first.__exit__(None, None, None)
        waiter.join(HANG)
        assert not waiter.is_alive()
        order.append("second done")
    assert order == ["first done", "long goes on", "second done"]
    assert gate.waiting == 0 and not gate.busy


def test_the_wait_ends_at_the_deadline():
    gate = PriorityGate()
    with gate.usual():
        assert gate.wait_for_usual(0.01) is False  # the usual question is still computing
        assert gate.waiting == 0


def test_a_coroutine_giving_way_leaves_the_loop_to_the_usual_questions():
    async def scenario() -> list[str]:
        gate = PriorityGate()
        order: list[str] = []
        first_done, second_done = asyncio.Event(), asyncio.Event()

        async def usual_question(name: str, done: asyncio.Event) -> None:
            with gate.usual():
                await done.wait()  # computes on the same loop while the long message waits
                order.append(f"{name} done")

        async def long_message() -> None:
            assert await gate.give_way(HANG)
            order.append("long goes on")

        first = asyncio.create_task(usual_question("first", first_done))
        await asyncio.sleep(0)
        long = asyncio.create_task(long_message())
        while gate.waiting == 0:
            await asyncio.sleep(0.001)
        second = asyncio.create_task(usual_question("second", second_done))  # started after: not waited for
        await asyncio.sleep(0)
        first_done.set()
        await long
        second_done.set()
        await asyncio.gather(first, second)
        assert await gate.give_way(0) and gate.waiting == 0
        return order

    assert asyncio.run(asyncio.wait_for(scenario(), HANG)) == ["first done", "long goes on", "second done"]


def test_a_coroutine_stops_giving_way_at_its_deadline():
    async def scenario() -> bool:
        gate = PriorityGate()
        with gate.usual():
            gave_way = await gate.give_way(0.01)
            assert gate.waiting == 0
        return gave_way

    assert asyncio.run(asyncio.wait_for(scenario(), HANG)) is False
