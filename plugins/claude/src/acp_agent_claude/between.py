"""What a session's Claude Code CLI writes while no prompt runs, and the stop of its background tasks.

Between prompts the CLI may still write: a background command's end (`task_updated`,
`task_notification`), the work and end of a subagent it runs in the background after the answer
(for a client of AIR's `backgroundSubagents`, or a held turn handed over or cancelled:
`holding`), then a turn it starts on its own to tell the model. One reader per session takes
those lines while no prompt runs (`listen`; a prompt stops it first, `quiet`) and folds them into
session updates through the core's router (a subagent's calls with the session's folds, which
share them: `Turns._fold`); the permission requests of what it reads are asked on the session
(`asking`). A prompt whose message the CLI queued behind such a turn (`command_lifecycle queued`,
until `started`) hands that turn's lines here too (`outside`), so they never end the prompt. For
a client of AIR's `asyncTasks` the CLI's own turn is a task ("Claude is working") from its first
line to its result.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import anyio.abc

from acp_agent.provider import ChildGone, Event, RuntimeContext, TurnEnd, TurnUsage
from acp_agent_claude.fold import TurnFold
from acp_agent_claude.session import ClaudeSession
from acp_agent_claude.transport import ClaudeCLI, ControlError

log = logging.getLogger(__name__)

INTERRUPT_BUDGET_S = 5.0
_OPENS_TURN = frozenset({"assistant", "stream_event", "user", "tool_progress"})
"""Lines of a turn: between prompts, the CLI runs a turn of its own."""


class BetweenPrompts:
    """The readers between prompts of the sessions' CLIs, run in `task_group`; `fold` makes a
    session's fold, `context` is the runtime's current context (its router)."""

    def __init__(self, context: Callable[[], RuntimeContext], task_group: anyio.abc.TaskGroup,
                 fold: Callable[[ClaudeSession], TurnFold]) -> None:
        self._context = context
        self._tg = task_group
        self._fold = fold

    def listen(self, session: ClaudeSession) -> None:
        """Read what the session's CLI writes while no prompt runs (until `quiet`)."""
        cli = session.cli
        if session.listening is not None or cli is None:
            return
        scope, done = anyio.CancelScope(), anyio.Event()
        session.listening = (scope, done)
        self._tg.start_soon(self._between_prompts, session, cli, scope, done)

    async def quiet(self, session: ClaudeSession) -> None:
        """Stop the reader between prompts (a prompt reads the CLI from now on). A line it has
        taken is handled first."""
        listening, session.listening = session.listening, None
        if listening is not None:
            listening[0].cancel()
            await listening[1].wait()

    async def _between_prompts(self, session: ClaudeSession, cli: ClaudeCLI, scope: anyio.CancelScope,
                               done: anyio.Event) -> None:
        try:
            with scope:
                while True:
                    try:
                        message = await cli.receive()
                    except anyio.EndOfStream:
                        break
                    with anyio.CancelScope(shield=True):  # a line taken is never lost
                        await self.outside(session, message)
            if not scope.cancel_called:  # the CLI is gone, and what it ran in the background with it
                with anyio.CancelScope(shield=True):
                    session.own_turn = None
                    await self.publish(session, session.bash_tasks.finish_all())
        finally:
            done.set()
            if session.listening is not None and session.listening[1] is done:
                session.listening = None

    async def outside(self, session: ClaudeSession, message: dict[str, Any]) -> None:
        """A line no prompt owns: a background task's report, or the CLI's own turn (its text
        and tool calls as session updates, and for a client of AIR's `asyncTasks` a task
        "Claude is working" from its first line to its result)."""
        kind = message.get("type")
        if kind == "command_lifecycle":
            return
        events: list[Event] = []
        fold = session.own_turn
        opens = kind in _OPENS_TURN or (kind == "system" and message.get("subtype") == "init")
        if fold is None and opens and message.get("parent_tool_use_id") is None:
            fold = session.own_turn = self._fold(session)
            events.extend(session.bash_tasks.own_turn_started())
        try:
            events.extend((fold or self._fold(session)).feed(message))
        except Exception as exc:  # a line the fold cannot take must not end the reader
            log.warning("claude CLI line between prompts not folded: %s", type(exc).__name__)
        if fold is not None and fold is session.own_turn and fold.finished:
            session.own_turn = None
            events.extend(session.bash_tasks.own_turn_ended(failed=not isinstance(fold.outcome, TurnEnd)))
        await self.publish(session, events)

    async def publish(self, session: ClaudeSession, events: Sequence[Event]) -> None:
        router = self._context().router
        for event in events:
            if not isinstance(event, TurnUsage):  # (no prompt's usage)
                await router.emit(session.session_id, event)

    async def stop_task(self, session: ClaudeSession, task_id: str) -> bool | None:
        """AIR's `_session/async_task/stop`: the CLI's `stop_task` (as claude-agent-sdk's
        `stop_task`), or, for the CLI's own turn, its interrupt."""
        tasks = session.bash_tasks
        if not tasks.known(task_id):
            return None
        task = tasks.claim_stop(task_id)
        cli = session.cli
        # (an interrupt of the CLI's own turn would drop a prompt queued behind it, as in claude-agent-acp)
        if task is None or cli is None or not session.live or (task.autonomous and session.turn is not None):
            if task is not None:
                tasks.release_stop(task_id)
            return False
        try:
            if task.autonomous:
                await cli.request("interrupt", timeout_s=INTERRUPT_BUDGET_S)
            else:
                await cli.request("stop_task", task_id=task_id)
        except (ChildGone, ControlError) as exc:
            log.info("claude CLI did not stop task %s: %s", task_id, type(exc).__name__)
            tasks.release_stop(task_id)
            return False
        await self.publish(session, tasks.stopped(task_id))
        return True

