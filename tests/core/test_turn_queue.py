"""The core's `TurnQueue` on its own (Codex and Muse route turn notifications through it): bound, order,
loss, close."""

from __future__ import annotations

import anyio
import pytest

from acp_agent.sessions.queue import TurnQueue

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]


async def test_a_held_consumer_bounds_the_queue_and_a_drain_keeps_the_order() -> None:
    queue = TurnQueue(4)
    queue.acknowledged()
    put: list[int] = []

    async def produce() -> None:
        for index in range(50):
            await queue.put(index)
            put.append(index)

    async with anyio.create_task_group() as group:
        group.start_soon(produce)
        await queue.producer_waited.wait()
        await anyio.wait_all_tasks_blocked()
        assert put == [0, 1, 2, 3] and len(queue) == 4  # the fifth waits for room
        taken = [await queue.get() for _ in range(50)]
    assert taken == list(range(50))
    assert queue.high_water == 4


async def test_before_the_acknowledgement_nothing_waits() -> None:
    queue = TurnQueue(2)
    for index in range(10):
        await queue.put(index)  # the reader must still read the acknowledgement
    assert len(queue) == 10 and not queue.producer_waited.is_set()
    queue.acknowledged()
    assert [await queue.get() for _ in range(10)] == list(range(10))


async def test_loss_never_waits_and_comes_after_the_queued_items() -> None:
    queue = TurnQueue(2)
    queue.acknowledged()
    await queue.put("a")
    await queue.put("b")
    queue.fail()  # full queue: still recorded at once
    assert [await queue.get(), await queue.get(), await queue.get()] == ["a", "b", None]


async def test_close_releases_a_waiting_producer_and_hands_back_the_rest() -> None:
    queue = TurnQueue(1)
    queue.acknowledged()
    await queue.put("kept")
    outcome: list[str] = []

    async def produce() -> None:
        try:
            await queue.put("late")
        except anyio.ClosedResourceError:
            outcome.append("closed")

    async with anyio.create_task_group() as group:
        group.start_soon(produce)
        await queue.producer_waited.wait()
        assert queue.close() == ["kept"]
    assert outcome == ["closed"]
    with pytest.raises(anyio.ClosedResourceError):
        await queue.put("after")
