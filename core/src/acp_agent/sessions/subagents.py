"""A session's child sessions: where the events of its subagents go, for the form the client takes.

A provider emits the neutral subagent events (`acp_agent.backends.events.Subagent`); this module
decides, once for every provider, what each becomes (`SubagentTable.route`):

- a client that takes no child sessions: the launching tool call and the subagent's work in the
  parent session, exactly as before (the events' `legacy` rendering);
- AIR's draft (`nativeSubagentSessions`, as claude-agent-acp sends it): the launching tool call is
  not shown (unless it failed before any child started), `subagent_spawned {subagentSessionId,
  name, task, prompt?, capabilities: {}}` on the parent before the child's first update, the
  child's updates under its own session id, `subagent_state_update {subagentSessionId, state}` on
  the parent when it ends (once: later updates of an ended child are dropped, as AIR's draft
  ends a child for good); a cancelled turn ends its children still running as `cancelled`;
- a subagent's tool call the client is not shown at all (a child without a rendering in the
  parent, as Codex's): its permission requests are not asked (`unseen`);
- ACP's unstable `subagent_update` (`subagents`): the child announced on its parent with its
  title, description and `{"state": "running"}`, its updates under its own id, and its end as an
  `idle` (or `unknown`) state. The launching tool call stays a tool call of the parent.

Knows nothing of providers or of the connection.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import attrs
from attrs import define, field

from acp_agent.backends.events import (
    OfSubagent,
    SubagentFinished,
    SubagentLaunch,
    SubagentStarted,
    SubagentState,
)
from acp_agent.sessions.presentation import Presenter
from acp_agent.wire import acp
from acp_agent.wire.convert import UNSET

Form = Literal["air", "rfd"] | None
Routed = tuple[str | None, Any]
"""Where an event goes (None: the session itself, through its own fold; else a child's id) and
the event (an ACP update, or a `Presented` event to render for that session)."""

_RFD_END: dict[SubagentState, dict[str, Any]] = {
    "completed": {"state": "idle", "stopReason": "end_turn"},
    "cancelled": {"state": "idle", "stopReason": "cancelled"},
    "failed": {"state": "idle", "stopReason": "error"},
    "disconnected": {"state": "unknown"},
}
"""A child's end as the RFD's work state (claude-agent-acp `rfdEndState`)."""


@define
class Child:
    """One child session: the session it was announced on, and whether it ended."""

    subagent_id: str
    parent_id: str | None
    """The child session it was announced on (None: the session itself)."""
    ended: bool = False
    presenter: Presenter = field(factory=Presenter)


@define
class SubagentTable:
    """One session's child sessions and the launches it did not show."""

    children: dict[str, Child] = field(factory=dict)
    launches: dict[str, acp.ToolCall] = field(factory=dict)
    """AIR's draft: the first report of each launching tool call not shown."""
    launched: set[str] = field(factory=set)
    """The launching tool calls a child started for."""
    owners: dict[str, str] = field(factory=dict)
    """The child each tool call shown in a child session belongs to."""
    unseen: set[str] = field(factory=set)
    """The tool calls of subagents the client is not shown at all (a child it takes no session
    of, whose work has no rendering in the parent: Codex's): their permission requests are not
    asked (the provider declines them), as before the provider reported them."""

    def child_ids(self) -> list[str]:
        return list(self.children)

    def replaying(self) -> None:
        """The session's history is replayed again (a `session/load` of a session open here):
        the client is shown its ended children anew; a running child keeps its session."""
        ended = {child_id for child_id, child in self.children.items() if child.ended}
        for child_id in ended:
            del self.children[child_id]
        self.owners = {call_id: owner for call_id, owner in self.owners.items() if owner not in ended}

    def presenter(self, child_id: str) -> Presenter:
        return self.children[child_id].presenter

    def route(self, event: SubagentStarted | SubagentFinished | SubagentLaunch | OfSubagent,
              form: Form) -> list[Routed]:
        """What `event` becomes for a client that takes child sessions in `form` (None: none)."""
        if form is None:
            if isinstance(event, SubagentLaunch):
                return [(None, event.event)]
            if isinstance(event, OfSubagent):
                return self._legacy(event)
            return []
        if isinstance(event, SubagentStarted):
            return self._started(event, form)
        if isinstance(event, SubagentFinished):
            child = self.children.get(event.subagent_id)
            if child is None or child.ended:
                return []
            child.ended = True
            if form == "air":
                return [(child.parent_id, acp.SubagentStateUpdate(child.subagent_id, event.state))]
            return [(child.parent_id, acp.SubagentUpdate(child.subagent_id, state=dict(_RFD_END[event.state])))]
        if isinstance(event, SubagentLaunch):
            return self._launch(event, form)
        child = self.children.get(event.subagent_id)
        if child is None:  # never announced: shown as before rather than lost
            return self._legacy(event)
        if child.ended and form == "air":
            return []  # AIR's draft ends a child for good
        for call_id in _call_ids(event.child):
            self.owners[call_id] = child.subagent_id
        return [(child.subagent_id, shown) for shown in event.child]

    def _legacy(self, event: OfSubagent) -> list[Routed]:
        """A subagent's work as a client without its child session sees it (nothing at all: its
        calls are `unseen`)."""
        if not event.legacy:
            self.unseen.update(_call_ids(event.child))
        return [(None, shown) for shown in event.legacy]

    def running_owner(self, tool_call_id: str, form: Form) -> str | None:
        """The running child session that showed the call `tool_call_id` (None: none): its
        permission requests and later updates go there, as claude-agent-acp routes them."""
        child = self.children.get(self.owners.get(tool_call_id, "")) if form is not None else None
        return child.subagent_id if child is not None and not child.ended else None

    def cancelled(self, form: Form) -> list[Routed]:
        """The parent's turn was cancelled: AIR's draft ends every child still running as
        `cancelled` (the RFD reports only what the backend says)."""
        if form != "air":
            return []
        ended: list[Routed] = []
        for child in reversed(list(self.children.values())):
            if not child.ended:
                child.ended = True
                ended.append((child.parent_id, acp.SubagentStateUpdate(child.subagent_id, "cancelled")))
        return ended

    def _started(self, event: SubagentStarted, form: Literal["air", "rfd"]) -> list[Routed]:
        if event.subagent_id in self.children:
            return []
        parent = event.within if event.within in self.children else None
        self.children[event.subagent_id] = Child(event.subagent_id, parent)
        if event.tool_call_id is not None:
            self.launched.add(event.tool_call_id)
            self.launches.pop(event.tool_call_id, None)
        if form == "air":
            prompt: Any = event.prompt if event.prompt is not None else UNSET
            return [(parent, acp.SubagentSpawned(event.subagent_id, event.name, event.task, prompt=prompt))]
        description = event.role if event.role and event.role != event.name else UNSET
        return [(parent, acp.SubagentUpdate(event.subagent_id, title=event.name, description=description,
                                            state={"state": "running"}))]

    def _launch(self, event: SubagentLaunch, form: Literal["air", "rfd"]) -> list[Routed]:
        target = event.within if event.within in self.children else None
        if form == "rfd":
            return [(target, event.event)]
        shown = event.event
        call_id = event.tool_call_id
        if call_id in self.launched:
            return []
        if isinstance(shown, acp.ToolCall):
            self.launches.setdefault(call_id, shown)
            return []
        if isinstance(shown, acp.ToolCallUpdate) and shown.status == "failed":
            # No child started for it: the client sees the failed launch after all, as one call.
            first = self.launches.pop(call_id, None)
            if first is None:
                return [(target, shown)]
            changed = {name: value for name, value in attrs.asdict(shown, recurse=False).items()
                       if value is not UNSET and value is not None and name != "session_update"
                       and name in attrs.fields_dict(acp.ToolCall)}
            return [(target, attrs.evolve(first, **changed))]
        return []


def _call_ids(events: Iterable[object]) -> list[str]:
    """The tool calls `events` show (a terminal's start carries its call)."""
    found = (getattr(getattr(shown, "call", shown), "tool_call_id", None) for shown in events)
    return [call_id for call_id in found if isinstance(call_id, str)]


__all__ = ["Child", "Form", "SubagentTable"]
