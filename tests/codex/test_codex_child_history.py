"""The replay of a Codex thread's spawned children (`acp_agent_codex.child_history`) against a
stand-in for app-server's `thread/turns/list`: what the real codex's e2e tests
(test_codex_subagent_load_e2e.py) cannot show on the fake: the bound on children read in one
load, a child's own children, a child that was interrupted or ended nowhere, and a loop."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import pytest

from acp_agent.backends.events import OfSubagent, SubagentFinished, SubagentStarted
from acp_agent.backends.phases import Deadlines, PhaseClock
from acp_agent.wire.acp import AgentMessageChunk
from acp_agent.wire.messages import RpcError
from acp_agent_codex.appserver import AppServer
from acp_agent_codex.child_history import ChildHistory

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(10)]


def _spawn(sender: str, *children: str) -> dict[str, Any]:
    return {"type": "collabAgentToolCall", "id": f"spawn-{children[0]}", "tool": "spawnAgent",
            "senderThreadId": sender, "receiverThreadIds": list(children), "prompt": f"task of {sender}"}


def _turn(status: str, *items: Mapping[str, Any]) -> dict[str, Any]:
    return {"id": "turn", "status": status, "items": list(items), "error": None}


def _said(text: str) -> dict[str, Any]:
    return {"type": "agentMessage", "id": f"msg-{text}", "text": text}


class Threads:
    """app-server's stored threads, by id (a missing one answers as codex does: `thread not loaded`)."""

    alive = True

    def __init__(self, stored: Mapping[str, list[dict[str, Any]]]) -> None:
        self.stored = stored
        self.read: list[str] = []

    async def call(self, method: str, params: Mapping[str, Any]) -> Any:
        assert method == "thread/turns/list"
        self.read.append(params["threadId"])
        if params["threadId"] not in self.stored:
            raise RpcError(-32600, f"thread not loaded: {params['threadId']}")
        return {"data": self.stored[params["threadId"]], "nextCursor": None}


async def _replay(threads: Threads, turns: list[dict[str, Any]], **limits: Any) -> list[Any]:
    clock = PhaseClock(Deadlines(), "Codex")
    history = ChildHistory(cast(AppServer, threads), clock, lambda text: text, "root", **limits)
    return await history.page(turns, True)


def _shape(events: list[Any]) -> list[tuple[Any, ...]]:
    shapes: list[tuple[Any, ...]] = []
    for event in events:
        if isinstance(event, SubagentStarted):
            shapes.append(("started", event.subagent_id, event.within))
        elif isinstance(event, SubagentFinished):
            shapes.append(("ended", event.subagent_id, event.state))
        elif isinstance(event, OfSubagent):
            shapes.append(("of", event.subagent_id, "".join(e.content.text for e in event.child)))
        elif isinstance(event, AgentMessageChunk):
            shapes.append(("said", event.content.text))
    return shapes


async def test_children_past_the_limit_are_announced_and_ended_unread() -> None:
    threads = Threads({"a": [_turn("completed", _said("A"))], "b": [_turn("completed", _said("B"))]})
    events = await _replay(threads, [_turn("completed", _spawn("root", "a", "b"), _said("done"))], left=1)
    assert _shape(events) == [("started", "a", None), ("of", "a", "A"), ("ended", "a", "completed"),
                              ("started", "b", None), ("ended", "b", "disconnected"), ("said", "done")]
    assert threads.read == ["a"]


async def test_a_childs_own_child_replays_within_it_in_its_place() -> None:
    threads = Threads({"a": [_turn("completed", _said("before"), _spawn("a", "g"), _said("after"))],
                       "g": [_turn("interrupted", _said("G"))]})
    events = await _replay(threads, [_turn("completed", _spawn("root", "a"))])
    assert _shape(events) == [("started", "a", None), ("of", "a", "before"), ("started", "g", "a"),
                              ("of", "g", "G"), ("ended", "g", "cancelled"), ("of", "a", "after"),
                              ("ended", "a", "completed")]


async def test_an_unreadable_child_a_loop_and_a_child_without_an_end() -> None:
    threads = Threads({"a": [_turn("inProgress", _spawn("a", "root"), _spawn("a", "a"), _said("A"))]})
    events = await _replay(threads, [_turn("completed", _spawn("root", "a"), _spawn("root", "gone"))])
    assert _shape(events) == [("started", "a", None), ("of", "a", "A"), ("ended", "a", "disconnected"),
                              ("started", "gone", None), ("ended", "gone", "disconnected")]
    assert threads.read == ["a", "gone"]
