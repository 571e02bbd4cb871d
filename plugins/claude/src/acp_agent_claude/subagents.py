"""A subagent's progress (an Agent/Task call's own messages, `parent_tool_use_id` set).

As claude-agent-acp renders them for a client without child sessions: the subagent's tool calls
are tool calls of their own that name the Agent call in `_meta.claudeCode.parentToolUseId`, and
its text shows on the Agent call. For a client with child sessions the fold also says which
subagent each message is of (`Children`): the CLI's `task_started` names the subagent (its
`task_id`, the agent id, is the child session's id) and the Agent call that launched it
(`tool_use_id`); `task_notification` ends it.

A subagent started in the background (`run_in_background`, `task_started.is_backgrounded`)
outlives the call that started it: the turn's result may come while it runs, and when it ends
the CLI starts a model cycle of its own on the notification, whose result names no prompt of
ours (`origin.kind` `task-notification`: `autonomous`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar

import attrs
from attrs import define, field

from acp_agent.provider import (
    Event,
    OfSubagent,
    SubagentFinished,
    SubagentLaunch,
    SubagentStarted,
    TextContent,
    ToolCall,
    ToolCallUpdate,
    ToolContent,
    agent_text,
)

Call = TypeVar("Call", ToolCall, ToolCallUpdate)
LAUNCH_TOOLS = frozenset({"Agent", "Task"})
"""The tools that launch a subagent."""
_STATES: dict[Any, Literal["completed", "failed", "cancelled", "disconnected"]] = {
    "completed": "completed", "failed": "failed", "disconnected": "disconnected",
    "killed": "cancelled", "cancelled": "cancelled", "stopped": "cancelled"}
"""A task's end status as a child session's end (claude-agent-acp `nativeSubagentState`)."""
AUTONOMOUS_ORIGINS = frozenset({"task-notification", "peer", "coordinator", "observer", "observer-activity"})
"""A result's `origin.kind` for a cycle Claude Code ran on its own (claude-agent-acp's
`AUTONOMOUS_RESULT_ORIGINS`); absent or another kind: a user's prompt."""


def autonomous(result: Mapping[str, Any], prompts: set[str]) -> bool:
    """Whether a `result` ends a cycle the CLI started itself (a background task's notification),
    not one of `prompts` (the uuids of the user messages sent): a prompt the CLI folded into such
    a cycle is named in `user_message_uuids` and makes the result that prompt's."""
    origin = result.get("origin")
    if not isinstance(origin, Mapping) or origin.get("kind") not in AUTONOMOUS_ORIGINS:
        return False
    named = result.get("user_message_uuids")
    answered = named if isinstance(named, list) else [result.get("user_message_uuid")]
    return not any(isinstance(uuid, str) and uuid in prompts for uuid in answered)


def mark(call: Call, parent: str) -> Call:
    """The subagent's tool call (or its update), naming the Agent call that runs it."""
    meta = dict(call.meta) if isinstance(call.meta, dict) else {}
    meta["claudeCode"] = {**meta.get("claudeCode", {}), "parentToolUseId": parent}
    return attrs.evolve(call, meta=meta)


def progress(parent: str, texts: Sequence[str]) -> ToolCallUpdate:
    """The Agent call with what its subagent said so far (content replaces, so all of it)."""
    return ToolCallUpdate(tool_call_id=parent, content=[ToolContent(TextContent("\n\n".join(texts)))])


@define
class Launch:
    """An Agent/Task call: its input and the subagent whose session made it (None: the session)."""

    tool_input: Mapping[str, Any]
    within: str | None


@define
class Children:
    """A session's subagents across its turns (a background subagent outlives its turn)."""

    launches: dict[str, Launch] = field(factory=dict)
    by_launch: dict[str, str] = field(factory=dict)
    """The subagent (its agent id) each Agent/Task call started."""
    owners: dict[str, str] = field(factory=dict)
    """The subagent each of its own tool calls belongs to."""
    said: dict[str, str] = field(factory=dict)
    """The last text each subagent's messages said."""
    background: set[str] = field(factory=set)
    """The subagents running in the background (started so, not ended yet)."""
    spawned: set[str] = field(factory=set)
    """The subagents the running (or last) turn started in the background."""
    idle: bool = False
    """The CLI said it is idle (`session_state_changed`): nothing runs, in the background neither."""

    def child_of(self, launch_id: str | None) -> str | None:
        return self.by_launch.get(launch_id) if launch_id is not None else None

    def started(self, data: Mapping[str, Any]) -> SubagentStarted | None:
        """A `task_started` line: a subagent's, when it names its kind of agent."""
        task_id, role = _text(data.get("task_id")), _text(data.get("subagent_type"))
        if task_id is None or role is None:
            return None  # a background command's task, not a subagent
        launch_id = _text(data.get("tool_use_id"))
        launch = self.launches.get(launch_id) if launch_id is not None else None
        asked: Mapping[str, Any] = launch.tool_input if launch is not None else {}
        if launch_id is not None:
            self.by_launch[launch_id] = task_id
        if data.get("is_backgrounded") is True:
            self.background.add(task_id)
            self.spawned.add(task_id)
        description = _text(asked.get("description")) or _text(data.get("description"))
        role = _text(asked.get("subagent_type")) or role
        prompt = _prompt(data.get("prompt")) or _prompt(asked.get("prompt"))
        name = _text(asked.get("name")) or description or role or f"Agent {task_id[-8:]}"
        return SubagentStarted(task_id, name, (prompt or description or "Delegated task").strip(), prompt=prompt,
                               role=role, tool_call_id=launch_id, within=launch.within if launch else None)

    def system(self, data: Mapping[str, Any]) -> list[Event]:
        """A `system` line of the subagents' and the CLI's state: `task_started`,
        `task_notification`, `session_state_changed` (any other: nothing)."""
        subtype = data.get("subtype")
        if subtype == "session_state_changed":
            self.idle = data.get("state") == "idle"
            return []
        if subtype == "task_notification":
            return self.ended(data)
        started = self.started(data) if subtype == "task_started" else None
        return [started] if started is not None else []

    def own(self, events: list[Event], tool_id: str) -> list[Event]:
        """A tool call's events, said to be a launch's (Agent/Task) or a subagent's own (its
        child session shows them as they are), where they are one."""
        launch = self.launches.get(tool_id)
        if launch is not None:
            return [SubagentLaunch(tool_id, event, launch.within) for event in events]
        owner = self.owners.get(tool_id)
        if owner is not None:
            return [OfSubagent(owner, tuple(events), tuple(events))]
        return events

    def ended(self, data: Mapping[str, Any]) -> list[Event]:
        """A `task_notification`: a subagent's end. The CLI streams no message for a foreground
        subagent's last answer (its launch's result carries it): its child session gets it from
        the notification's `summary`, unless the subagent's last text said it already."""
        finished = self.finished(data)
        if finished is None:
            return []
        report = data.get("summary")
        if isinstance(report, str) and report.strip() and report != self.said.get(finished.subagent_id):
            return [OfSubagent(finished.subagent_id, (agent_text(report),), ()), finished]
        return [finished]

    def finished(self, data: Mapping[str, Any]) -> SubagentFinished | None:
        """A `task_notification` line: a subagent's end, when it is one this session started."""
        task_id, state = _text(data.get("task_id")), _STATES.get(data.get("status"))
        self.background.discard(task_id or "")
        if task_id is None or state is None or task_id not in self.by_launch.values():
            return None
        return SubagentFinished(task_id, state)


def _text(value: Any) -> str | None:
    """A non-blank string, trimmed."""
    return value.strip() if isinstance(value, str) and value.strip() else None


def _prompt(value: Any) -> str | None:
    """A non-blank prompt as written."""
    return value if isinstance(value, str) and value.strip() else None
