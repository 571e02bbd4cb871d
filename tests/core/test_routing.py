"""The core's SessionRouter: a backend's items and events reach the running turn or the session, in
order, with one backlog (sessions being created, not yet announced, and process-wide notices)."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import anyio.lowlevel
import pytest
from attrs import define, field

from acp_agent.backends.events import Event, Notice
from acp_agent.sessions.queue import TurnQueue
from acp_agent.sessions.routing import SessionRouter

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]


@define(eq=False)
class Sink:
    """A session as the core opens it: every event yields while it is written (as the core's do)."""

    events: list[Event] = field(factory=list)
    writes: int = 1

    async def take(self, event: Event) -> None:
        for _ in range(self.writes):
            await anyio.lowlevel.checkpoint()
        self.events.append(event)


def titles(events: Sequence[Event]) -> list[str]:
    return [event.title for event in events if isinstance(event, Notice)]


def outside_recorder(router: SessionRouter) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []

    async def handle(key: str, item: str) -> None:
        await anyio.lowlevel.checkpoint()  # an awaited handler: the next item waits for it
        await anyio.lowlevel.checkpoint()
        seen.append((key, item))

    router.serve(handle)
    return seen


async def test_items_go_to_the_running_turn_else_outside_in_order() -> None:
    router = SessionRouter()
    outside = outside_recorder(router)
    await router.deliver("a", "before")
    queue = TurnQueue[str](4)
    router.start_turn("a", queue)
    await router.deliver("a", "in turn")
    await router.deliver("b", "other session")
    assert await queue.get() == "in turn"
    await router.deliver("a", "left over")
    await router.end_turn("a", queue)
    await router.deliver("a", "after")
    assert outside == [("a", "before"), ("b", "other session"), ("a", "left over"), ("a", "after")]
    assert router.turn("a") is None


async def test_what_an_ended_turn_left_comes_before_what_the_reader_delivers_next() -> None:
    """The reader keeps delivering while the turn ends: the leftovers (handled by the prompt's
    task) come first, then the reader's items, each in wire order, however the handler yields."""
    router = SessionRouter()
    outside = outside_recorder(router)
    queue = TurnQueue[str](64)
    router.start_turn("s", queue)
    for index in range(10):
        await router.deliver("s", f"left {index}")
    ending = anyio.Event()

    async def reader() -> None:
        await ending.wait()
        for index in range(10):
            await router.deliver("s", f"later {index}")

    async with anyio.create_task_group() as group:
        group.start_soon(reader)
        ending.set()
        await router.end_turn("s", queue)
    assert [item for _, item in outside] == [f"left {i}" for i in range(10)] + [f"later {i}" for i in range(10)]


async def test_a_producer_waiting_for_room_when_the_turn_ends_goes_after_the_leftovers() -> None:
    router = SessionRouter()
    outside = outside_recorder(router)
    queue = TurnQueue[str](2)
    queue.acknowledged()
    router.start_turn("s", queue)
    await router.deliver("s", "one")
    await router.deliver("s", "two")
    async with anyio.create_task_group() as group:
        group.start_soon(router.deliver, "s", "three")  # waits for room
        await queue.producer_waited.wait()
        await router.end_turn("s", queue)
    assert [item for _, item in outside] == ["one", "two", "three"]


async def test_events_before_the_session_is_opened_wait_and_come_in_order_with_notices() -> None:
    router = SessionRouter()
    await router.emit("s", Notice("one"))
    router.keep_notice(Notice("process"))  # process-wide, found after "one"
    await router.emit("s", Notice("two"))
    await router.emit("t", Notice("other session"))
    sink = Sink()
    await router.open("s", sink.take)
    assert titles(sink.events) == ["one", "process", "two"]
    other = Sink()
    await router.open("t", other.take)
    assert titles(other.events) == ["other session"]  # the notice went to the first session opened


async def test_a_burst_while_the_backlog_is_written_comes_after_it_in_order() -> None:
    """Emits racing the opening flush (each write yields) neither overtake it nor each other."""
    router = SessionRouter()
    for index in range(20):
        await router.emit("s", Notice(f"kept {index}"))
    sink = Sink(writes=3)
    async with anyio.create_task_group() as group:
        group.start_soon(router.open, "s", sink.take)
        await anyio.lowlevel.checkpoint()  # the flush has started and yields in its first write
        for index in range(20):
            group.start_soon(router.emit, "s", Notice(f"live {index}"))
    assert titles(sink.events) == [f"kept {i}" for i in range(20)] + [f"live {i}" for i in range(20)]


async def test_a_session_being_created_keeps_its_events_under_a_provisional_key() -> None:
    """What the provider emits on the creation channel and what its reader emits by the new id
    merge in the order they came, once the session exists and is announced."""
    router = SessionRouter()
    provisional = router.provisional_key()
    await router.emit(provisional, Notice("on the channel 1"))
    await router.emit("s", Notice("by id"))
    await router.emit(provisional, Notice("on the channel 2"))
    router.rekey(provisional, "s")
    await router.emit("s", Notice("after creation"))
    sink = Sink()
    await router.open("s", sink.take)
    assert titles(sink.events) == ["on the channel 1", "by id", "on the channel 2", "after creation"]


async def test_between_turns_events_go_live_and_a_closed_session_gets_none() -> None:
    router = SessionRouter()
    sink = Sink(writes=2)
    await router.open("s", sink.take)
    await router.emit("s", Notice("between turns"))
    assert titles(sink.events) == ["between turns"]
    router.close("s")
    await router.emit("s", Notice("after close"))
    reopened = Sink()
    await router.open("s", reopened.take)  # session/load of the same id
    await router.emit("s", Notice("after load"))
    assert titles(sink.events) == ["between turns"] and titles(reopened.events) == ["after load"]


async def test_awaited_emits_of_one_producer_keep_their_order_where_tasks_would_not() -> None:
    """The Muse reorder: a failure (two writes) emitted in a task of its own was overtaken by the
    next event. Through the router, awaited in the producer, it is not."""
    router = SessionRouter()
    sink = Sink(writes=2)
    await router.open("s", sink.take)
    await router.emit("s", Notice("failure"))
    await router.emit("s", Notice("next"))
    assert titles(sink.events) == ["failure", "next"]


async def test_a_process_wide_notice_goes_into_a_running_turn_else_waits_for_the_next_session() -> None:
    router = SessionRouter()
    queue = TurnQueue[Event](4)
    router.start_turn("a", queue)
    await router.notice(Notice("to the turn"), lambda event: event)
    got = await queue.get()
    assert isinstance(got, Notice) and got.title == "to the turn"
    await router.end_turn("a", queue)
    await router.notice(Notice("kept"), lambda event: event)
    await router.notice(Notice("no queue item type"))  # a runtime whose turns take no notices
    sink = Sink()
    await router.open("b", sink.take)
    assert titles(sink.events) == ["kept", "no queue item type"]


async def test_an_opening_cut_off_keeps_what_it_did_not_write_for_the_next_one() -> None:
    router = SessionRouter()
    for index in range(3):
        await router.emit("s", Notice(f"kept {index}"))
    stalled = anyio.Event()

    async def stalls(event: Event) -> None:
        stalled.set()
        await anyio.sleep_forever()

    async with anyio.create_task_group() as group:
        group.start_soon(router.open, "s", stalls)
        await stalled.wait()
        group.cancel_scope.cancel()
    await router.emit("s", Notice("later"))
    sink = Sink()
    await router.open("s", sink.take)
    assert titles(sink.events) == ["kept 0", "kept 1", "kept 2", "later"]
