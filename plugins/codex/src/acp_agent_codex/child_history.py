"""A Codex thread's stored turns replayed with its child threads in place (`session/load`).

A `spawnAgent` collab call in a stored turn names the child threads it started
(`receiverThreadIds`); app-server keeps each child's own rollout, which `thread/turns/list`
reads like any thread's, also on an app-server that never ran it (codex 0.163). For a client
that takes child sessions, each child replays where its spawn was, as the live path shows it
(`acp_agent_codex.subagents`): started (`Agent <last 8 of its id>`, the spawn's prompt as its
task), its stored transcript under its id (its prompt, as Claude's replayed subagents show
theirs, its messages, thoughts, commands, edits and plan), its own children in their places,
and its end from its last turn (`completed`, `cancelled` when interrupted, `failed`;
`disconnected` when its end is not stored, as codex-acp ends a replayed child it saw no end
of). A child whose thread cannot be read replays as started and `disconnected`, as does every
child past `CHILD_LIMIT` in one load (not read at all).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import aclosing
from typing import Any, Final

from attrs import define, field

from acp_agent.provider import (
    DEFAULT_MAX_ITEMS,
    Event,
    HistoryFailure,
    OfSubagent,
    Phase,
    PhaseClock,
    PhaseFailed,
    SessionNotFound,
    SubagentFinished,
    SubagentStarted,
    UserMessageChunk,
    json_list,
    json_text,
)
from acp_agent_codex import items, threads
from acp_agent_codex.appserver import AppServer
from acp_agent_codex.subagents import SHOWN, SubagentState

log = logging.getLogger(__name__)

CHILD_LIMIT: Final = DEFAULT_MAX_ITEMS
"""The child threads one load reads at most (a parent with more replays the rest unread)."""
_TURN_ENDS: Final[Mapping[str, SubagentState]] = {
    "completed": "completed", "interrupted": "cancelled", "failed": "failed"}
"""A stored turn's status as its child's end (codex-acp `turnEndState`)."""


def _no_failure(turn: Mapping[str, Any], user_message_id: str | None) -> HistoryFailure | None:
    return None  # a child's failed turn is its `failed` end, not a record of the parent's


def _receivers(item: Mapping[str, Any]) -> list[str]:
    receivers = json_list(item.get("receiverThreadIds"))
    return [child for child in receivers if isinstance(child, str) and child.strip()]


@define
class ChildHistory:
    """One load's replay: its session's pages with their children, `left` children still to read
    (each child once: a loop or a second spawn naming it replays nothing more)."""

    server: AppServer
    clock: PhaseClock
    redact: Callable[[str], str]
    root: str
    """The session's own thread (never a child of its own)."""
    left: int = CHILD_LIMIT
    replayed: set[str] = field(factory=set)

    async def page(self, turns: Sequence[Any], last: bool,
                   recogniser: items.Recogniser = items.recognise_turn, *, thread_id: str | None = None,
                   ancestry: tuple[str, ...] = ()) -> list[Event]:
        """A page of the stored turns of the session (`thread_id` None) or of a child, each spawn's
        children replayed in its place."""
        children: dict[str, list[Event]] = {}
        for turn in turns:
            for item in json_list(turn.get("items")) if isinstance(turn, Mapping) else ():
                if isinstance(item, Mapping) and item.get("type") == "collabAgentToolCall" and item.get(
                        "tool") == "spawnAgent":
                    for child_id in _receivers(item):
                        if child_id not in self.replayed and child_id not in (self.root, *ancestry):
                            self.replayed.add(child_id)
                            children[child_id] = await self._child(child_id, item, thread_id, ancestry)

        def at_spawn(item: Mapping[str, Any]) -> list[Event]:
            return [event for child_id in _receivers(item) for event in children.pop(child_id, [])]

        return items.history_events(turns, self.redact, recogniser, last=last, at_spawn=at_spawn)

    async def _child(self, child_id: str, spawn: Mapping[str, Any], within: str | None,
                     ancestry: tuple[str, ...]) -> list[Event]:
        task = json_text(spawn.get("prompt")).strip() or "Delegated task"
        events: list[Event] = [SubagentStarted(child_id, f"Agent {child_id[-8:]}", task, within=within)]
        end: SubagentState = "disconnected"
        if self.left <= 0:
            return [*events, SubagentFinished(child_id, end)]
        self.left -= 1
        shown: list[Event] = []

        def flush() -> None:
            if shown:
                events.append(OfSubagent(child_id, tuple(shown), ()))
                shown.clear()

        pages = self.clock.paced(Phase.READING, threads.pages(self.server, child_id),
                                 label="thread/turns/list")
        try:
            async with aclosing(pages):
                async for turns, last in pages:
                    for event in await self.page(turns, last, _no_failure, thread_id=child_id,
                                                 ancestry=(*ancestry, child_id)):
                        if isinstance(event, (*SHOWN, UserMessageChunk)):
                            shown.append(event)
                        elif isinstance(event, SubagentStarted | SubagentFinished | OfSubagent):
                            flush()  # its own child, in its place
                            events.append(event)
                    stored = [turn for turn in turns if isinstance(turn, Mapping)]
                    if stored:
                        end = _TURN_ENDS.get(json_text(stored[-1].get("status")), "disconnected")
        except (PhaseFailed, SessionNotFound) as exc:
            if not self.server.alive:
                raise
            log.warning("could not read the history of child thread %s: %s", child_id, type(exc).__name__)
        flush()
        return [*events, SubagentFinished(child_id, end)]


__all__ = ["CHILD_LIMIT", "ChildHistory"]
