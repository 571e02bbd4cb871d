"""Codex's child threads (its multi-agent tools) as the core's subagent events.

codex 0.163's `spawn_agent` (the tool namespace `multi_agent_v1`, feature `multi_agent`, stable
and on by default) starts a child thread on the same app-server. The spawning thread reports the
call as a `collabAgentToolCall` item (`tool: spawnAgent`; `receiverThreadIds` names the child once
the item completed; `wait`, `sendInput`, `closeAgent` report the children's `agentsStates`), and
the child's own notifications carry its thread id. As codex-acp 2.6.0 maps them
(`CodexSubagentEventRouter`): the child is a child session whose id is its thread id, named
`Agent <last 8 of its id>` (v1 gives it no path to name it by) with the spawn's prompt as its task,
announced (`SubagentStarted`) before any update of it, its notifications folded by a translator of
its own (`OfSubagent`: nothing for a client without child sessions, which saw nothing of the child
before), and ended (`SubagentFinished`) by its turn's end or by a terminal state a collab call
reports. With `features.multi_agent_v2` codex reports its children as `subAgentActivity` items
instead, naming each by its agent path (`/root/<task name>`), which names the child. The core
decides what each client sees (`acp_agent.sessions.subagents`).

The table is filled by the runtime's reader, in wire order (`spawned`), so that a child's first
notifications, which may come before the session's prompt has folded the spawn, are routed to the
session; `fold` runs in the session's order (its prompt's queue, or outside any prompt).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, Literal

from attrs import define, field

from acp_agent.provider import (
    AgentMessageChunk,
    AgentThoughtChunk,
    Compaction,
    Event,
    FailureObservation,
    OfSubagent,
    Plan,
    SubagentFinished,
    SubagentStarted,
    TerminalExited,
    TerminalOutput,
    TerminalStarted,
    ToolCall,
    ToolCallUpdate,
    TurnDone,
    json_list,
    json_object,
    json_text,
)
from acp_agent_codex.translate import TurnTranslator

SubagentState = Literal["completed", "failed", "cancelled", "disconnected"]
SHOWN: Final = (AgentMessageChunk, AgentThoughtChunk, ToolCall, ToolCallUpdate, Plan, TerminalStarted,
                TerminalOutput, TerminalExited, Compaction)
"""What a child session shows of its thread: its messages, thoughts, tool calls and plan (not its
notices, usage or failure records: the child's end says how it went)."""
_AGENT_STATES: Final[Mapping[str, SubagentState]] = {
    "completed": "completed", "interrupted": "cancelled", "errored": "failed", "shutdown": "failed",
    "notFound": "failed"}
"""A collab call's terminal `agentsStates` status as the child's end (codex-acp `terminalStateOf`)."""
_TURN_ENDS: Final[Mapping[str, SubagentState]] = {"end_turn": "completed", "cancelled": "cancelled"}


@define
class Child:
    """One child thread of a session."""

    thread_id: str
    root: str
    """The app-server thread of the session it belongs to."""
    within: str | None
    """The child thread that spawned it (None: the session's own thread)."""
    task: str
    name: str = ""
    """What the client shows it as (blank: `Agent <last 8 of its id>`)."""
    path: str | None = None
    """Its agent path (`multi_agent_v2`: `/root/<task name>`)."""
    announced: bool = False
    translator: TurnTranslator = field(factory=TurnTranslator)


def _collab(params: Mapping[str, Any]) -> Mapping[str, Any] | None:
    item = params.get("item")
    return item if isinstance(item, Mapping) and item.get("type") == "collabAgentToolCall" else None


def _activity(params: Mapping[str, Any]) -> Mapping[str, Any] | None:
    item = params.get("item")
    return item if isinstance(item, Mapping) and item.get("type") == "subAgentActivity" else None


def _path(value: Any) -> str:
    """An agent path, normalised (codex-acp `normalizeAgentPath`): no trailing slash, `/root` if blank."""
    return json_text(value).strip().rstrip("/") or "/root"


def _path_name(path: str) -> str:
    """A child's name from its agent path (codex-acp `nameFromAgentPath`): the last part, `_`
    and `-` as spaces, the first letter upper-case (blank when the part is)."""
    words = " ".join(re.sub(r"[_-]+", " ", path.rsplit("/", 1)[-1]).split())
    return words[:1].upper() + words[1:]


def _of(child: Child, shown: list[Event]) -> list[Event]:
    """What the child's session shows (a client without child sessions sees none of it, as before)."""
    return [OfSubagent(child.thread_id, tuple(shown), ())] if shown else []


@define
class Children:
    """The child threads of every session of one runtime, by thread id."""

    by_thread: dict[str, Child] = field(factory=dict)

    def root_of(self, thread_id: Any) -> str | None:
        """The session thread a child thread belongs to (None: not a known child)."""
        child = self.by_thread.get(thread_id) if isinstance(thread_id, str) else None
        return child.root if child is not None else None

    def is_child(self, params: Mapping[str, Any]) -> bool:
        return self.root_of(params.get("threadId")) is not None

    def items_of(self, thread_id: Any) -> Mapping[str, Any] | None:
        """A child thread's items of its current turn (None: not a known child)."""
        child = self.by_thread.get(thread_id) if isinstance(thread_id, str) else None
        return child.translator.items if child is not None else None

    def spawned(self, method: str, params: Mapping[str, Any]) -> None:
        """(The reader, in wire order.) A notification of a session's thread or of a child: the
        children its `spawnAgent` call names join the table."""
        sender = params.get("threadId")
        if method not in ("item/started", "item/completed") or not isinstance(sender, str):
            return
        parent = self.by_thread.get(sender)
        root = parent.root if parent is not None else sender
        activity = _activity(params)
        if activity is not None:
            self._active(root, activity)
        item = _collab(params)
        if item is None or item.get("tool") != "spawnAgent":
            return
        for child_id in json_list(item.get("receiverThreadIds")):
            if isinstance(child_id, str) and child_id.strip() and child_id not in (sender, root, *self.by_thread):
                task = json_text(item.get("prompt")).strip() or "Delegated task"
                self.by_thread[child_id] = Child(child_id, root, parent.thread_id if parent else None, task)

    def _active(self, root: str, item: Mapping[str, Any]) -> None:
        """codex's `multi_agent_v2` reports its children as `subAgentActivity` items naming the
        child's thread and agent path: a child not known yet joins, named by its path, within
        the child whose path holds it (codex-acp `materialize`, `parentForPath`)."""
        child_id, path = item.get("agentThreadId"), _path(item.get("agentPath"))
        if (not isinstance(child_id, str) or not child_id.strip() or child_id == root or child_id in self.by_thread
                or path in ("/root", "root")):
            return
        above = path[:path.rfind("/")]
        within = next((child.thread_id for child in self.by_thread.values()
                       if child.root == root and child.path == above), None)
        name = _path_name(path) or f"Agent {child_id[-8:]}"
        self.by_thread[child_id] = Child(child_id, root, within, f"Delegated task for {name}", name=name, path=path)

    def forget(self, root: str) -> None:
        """The session of the thread `root` closed: its children are no longer routed."""
        for child_id in [child.thread_id for child in self.by_thread.values() if child.root == root]:
            del self.by_thread[child_id]

    def fold(self, method: str, params: Mapping[str, Any]) -> list[Event]:
        """A notification of a session's thread or of one of its children, in the session's order:
        the subagent events it makes (none for the session's own notifications but its collab calls)."""
        item = _collab(params) if method in ("item/started", "item/completed") else None
        events = self._collab_events(item) if item is not None else []
        activity = _activity(params) if method in ("item/started", "item/completed") else None
        if activity is not None:
            child_id = activity.get("agentThreadId")
            active = self.by_thread.get(child_id) if isinstance(child_id, str) else None
            events.extend(self._announce(active))
            if active is not None and activity.get("kind") == "interrupted":
                events.append(SubagentFinished(active.thread_id, "cancelled"))
        thread_id = params.get("threadId")
        child = self.by_thread.get(thread_id) if isinstance(thread_id, str) else None
        if child is not None:
            events.extend([*self._announce(child), *self._own(child, method, params)])
        return events

    def _collab_events(self, item: Mapping[str, Any]) -> list[Event]:
        """A collab call: the children it names are announced, those it reports ended end."""
        events: list[Event] = []
        for child_id in json_list(item.get("receiverThreadIds")):
            events.extend(self._announce(self.by_thread.get(child_id) if isinstance(child_id, str) else None))
        for child_id, reported in json_object(item.get("agentsStates")).items():
            end = _AGENT_STATES.get(json_text(json_object(reported).get("status")))
            child = self.by_thread.get(child_id)
            if end is not None and child is not None:
                events.extend([*self._announce(child), SubagentFinished(child_id, end)])
        return events

    @staticmethod
    def _own(child: Child, method: str, params: Mapping[str, Any]) -> list[Event]:
        """The child thread's own notification, through its translator: what its session shows,
        and its end with its turn's."""
        if method == "turn/started":
            child.translator = TurnTranslator()  # each turn of the child (a send_input starts one)
        shown: list[Event] = []
        for step in child.translator.feed(method, params):
            if isinstance(step, TurnDone):
                state: SubagentState = ("failed" if isinstance(step.end, FailureObservation)
                                        else _TURN_ENDS.get(step.end.stop_reason, "failed"))
                return [*_of(child, shown), SubagentFinished(child.thread_id, state)]
            if isinstance(step, SHOWN):
                shown.append(step)
        return _of(child, shown)

    @staticmethod
    def _announce(child: Child | None) -> list[Event]:
        if child is None or child.announced:
            return []
        child.announced = True
        name = child.name or f"Agent {child.thread_id[-8:]}"
        return [SubagentStarted(child.thread_id, name, child.task, within=child.within)]


__all__ = ["Child", "Children"]
