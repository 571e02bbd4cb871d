"""Claude Code's session goal (its `/goal <condition>` command) as AIR's goal snapshot.

`/goal <condition>` sets a session Stop hook whose condition a side model call judges at each
stop; `/goal clear` (or `stop`, `off`, `reset`, `none`, `cancel`) ends it. Claude Code 2.1.332
reports the goal in stream-json (`{"type": "active_goal", "value": {condition, iterations, set_at,
tokens_at_start, last_reason?} | null}`) only in a remote session (`CLAUDE_CODE_REMOTE`): locally
it says nothing of the goal but the command's own answer. So, as claude-agent-acp, the goal a
prompt's command sets is the snapshot as soon as the command is submitted, the CLI's
`active_goal` reports follow where it sends them, and a command that fails puts back the goal the
client had. Pure state (no I/O): the turn feeds it the prompts it submits and the lines it reads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import define, field

from acp_agent.provider import ContentBlock, Event, GoalSnapshot, TextContent

CONTROL_METHOD = "_session/goal"
CLEAR_WORDS = frozenset({"clear", "stop", "off", "reset", "none", "cancel"})
"""The `/goal` arguments Claude Code takes for ending the goal (case-insensitive)."""
MAX_CONDITION = 4000
"""The longest condition Claude Code's `/goal` sets (a longer one is refused with a message)."""
_COMMAND = re.compile(r"/goal(?:\s+([\s\S]*))?")

Goal = Mapping[str, Any] | None


def requested(prompt: Sequence[ContentBlock]) -> tuple[bool, Goal]:
    """Whether the prompt is a `/goal` command that sets or ends the goal (a bare `/goal` only
    shows it, a too long condition is refused), and the goal it asks for (None: cleared)."""
    first = prompt[0] if prompt else None
    match = _COMMAND.fullmatch(first.text) if isinstance(first, TextContent) else None
    argument = (match.group(1) or "").strip() if match else ""
    if not argument or len(argument) > MAX_CONDITION:
        return False, None
    if argument.lower() in CLEAR_WORDS:
        return True, None
    return True, {"objective": argument, "status": "active", "controlMethod": CONTROL_METHOD}


def reported(value: Any) -> tuple[bool, Goal]:
    """An `active_goal` line's value as AIR's snapshot (claude-agent-acp's `toGoalSnapshot`);
    False for a value that is not one."""
    if value is None:
        return True, None
    if not isinstance(value, Mapping) or not isinstance(condition := value.get("condition"), str):
        return False, None
    reason = value.get("last_reason")
    return True, {"objective": condition.strip(), "status": "active",
                  "iterations": value.get("iterations") if isinstance(value.get("iterations"), int) else 0,
                  "lastReason": reason if isinstance(reason, str) else None,
                  "createdAt": value.get("set_at") if isinstance(value.get("set_at"), int) else None,
                  "controlMethod": CONTROL_METHOD}


@define
class _Pending:
    """A submitted `/goal` command whose result is not in yet."""

    command_id: str
    expected: Goal
    previous: Goal
    started: bool = False


@define
class Goals:
    """A session's goal as last published, and the `/goal` command in flight. Until its result,
    a report that does not match what the command asked for is an older state and is not sent."""

    published: Goal = None
    told: bool = False
    """A snapshot was published: a remote CLI's report of no goal, as it starts, is news only then."""
    pending: _Pending | None = field(default=None)

    def submitted(self, prompt: Sequence[ContentBlock], message_id: str) -> list[Event]:
        """The user message `message_id` went to the CLI: the goal its command sets, if any."""
        changes, goal = requested(prompt)
        if not changes:
            return []
        self.pending = _Pending(message_id, goal, self.published)
        return self._publish(goal)

    def line(self, message: Mapping[str, Any]) -> list[Event]:
        """One stream-json line of the CLI: the goal snapshots it makes."""
        kind, pending = message.get("type"), self.pending
        if kind == "active_goal":
            valid, goal = reported(message.get("value"))
            if not valid or (goal is None and not self.told):
                return []
            if pending is not None:
                expected = pending.expected
                if (goal is None) != (expected is None) or (
                        goal is not None and expected is not None and goal["objective"] != expected["objective"]):
                    return []
                self.pending = None
            return self._publish(goal)
        if pending is None:
            return []
        if kind == "command_lifecycle" and message.get("command_uuid") == pending.command_id:
            pending.started = pending.started or message.get("state") == "started"
        elif kind == "result" and pending.started:
            # The command's own result: no older report can follow it.
            self.pending = None
            if message.get("is_error") or message.get("stop_reason") == "refusal":
                return self._publish(pending.previous)
        return []

    def _publish(self, goal: Goal) -> list[Event]:
        self.published, self.told = goal, True
        return [GoalSnapshot(goal)]
