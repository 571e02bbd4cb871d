"""The core's SessionRouter: a backend's items reach the running turn or the session, in order."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import anyio.lowlevel
import pytest
from attrs import define, field

from acp_agent.acp import PermissionOption, ToolCallUpdate
from acp_agent.events import Event, Notice
from acp_agent.routing import SessionRouter
from acp_agent.turnqueue import TurnQueue

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]


@define(eq=False)
class Channel:
    """A session channel whose every emit yields while it writes (as the core's does)."""

    events: list[Event] = field(factory=list)

    async def emit(self, event: Event) -> None:
        await anyio.lowlevel.checkpoint()
        self.events.append(event)

    async def request_permission(self, tool_call: ToolCallUpdate, options: Sequence[PermissionOption]) -> str | None:
        return None


def titles(events: Sequence[Event]) -> list[str]:
    return [event.title for event in events if isinstance(event, Notice)]


async def test_items_go_to_the_running_turn_else_outside_in_order() -> None:
    outside: list[tuple[str, str]] = []

    async def handle(key: str, item: str) -> None:
        await anyio.lowlevel.checkpoint()  # an awaited handler: the next item waits for it
        outside.append((key, item))

    router = SessionRouter[str, str](handle)
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


async def test_session_events_are_kept_until_the_session_has_a_channel_then_come_in_order() -> None:
    async def handle(key: str, item: str) -> None:
        raise AssertionError("no backend item in this test")

    router = SessionRouter[str, str](handle)
    await router.emit("s", Notice("one"))
    router.keep("s", Notice("two"))
    router.keep_notice(Notice("process"))
    channel = Channel()
    await router.flush("s", channel)
    assert titles(channel.events) == ["process", "one", "two"]
    # Attached: later events go straight to the channel, one after the other, in call order.
    async with anyio.create_task_group() as group:
        for title in ("three", "four", "five"):
            group.start_soon(router.emit, "s", Notice(title))
    assert titles(channel.events) == ["process", "one", "two", "three", "four", "five"]
    turn = Channel()
    router.keep("s", Notice("six"))
    await router.flush("s", turn, attach=False)
    await router.emit("s", Notice("seven"))
    assert titles(turn.events) == ["six"]
    assert titles(channel.events)[-1] == "seven"


async def test_a_process_wide_notice_goes_into_a_running_turn_else_waits_for_the_next_session() -> None:
    async def handle(key: str, item: Event) -> None:
        raise AssertionError("no backend item in this test")

    router = SessionRouter[str, Event](handle)
    queue = TurnQueue[Event](4)
    router.start_turn("a", queue)
    await router.notice(Notice("to the turn"), lambda event: event)
    got = await queue.get()
    assert isinstance(got, Notice) and got.title == "to the turn"
    await router.end_turn("a", queue)
    await router.notice(Notice("kept"), lambda event: event)
    channel = Channel()
    await router.flush("b", channel)
    assert titles(channel.events) == ["kept"]
