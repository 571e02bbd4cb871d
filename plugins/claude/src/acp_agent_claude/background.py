"""Subagents that run in the background (the Agent tool's `run_in_background`) past their turn.

The turn's result can come while they run; when one ends, the CLI runs a model cycle of its own
on its notification (`subagents.autonomous`). For a client that takes them only inside the turn
(every client but one of AIR's `backgroundSubagents`, `background_subagents(turn)`) the turn is
held past its result (`hold_at_result`, `held_ended`) until the CLI says it is idle, or a result
of its own cycle comes with none of the turn's background subagents running: their work, their end
and that cycle stream before the answer, which keeps the turn's own outcome. A cancel answers a
held turn at once; the subagents go on.

Between turns, while background work runs, the session's follower (`follow_after`) reads the
CLI and sends what it folds to the session; the next prompt takes the reading over after the line
the follower handles (`stop_following`). Its permission requests go to the session then
(`asking`).
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.abc

from acp_agent.provider import TurnChannel, TurnEnd, background_subagents
from acp_agent_claude.fold import TurnFold
from acp_agent_claude.session import ClaudeSession, Hold
from acp_agent_claude.transport import ClaudeCLI


def hold_at_result(session: ClaudeSession, fold: TurnFold, turn: TurnChannel) -> bool:
    """At the turn's own result: whether it is held for the subagents it started in the background
    (then `session.hold` keeps its outcome)."""
    outcome, children = fold.outcome, session.children
    if not (children.spawned and isinstance(outcome, TurnEnd) and outcome.stop_reason != "cancelled"
            and not fold.cancel_requested and not background_subagents(turn)):
        return False
    session.hold, children.idle = Hold(outcome), False
    return True


def held_ended(session: ClaudeSession, fold: TurnFold, hold: Hold) -> bool:
    """Whether a held turn is over (`fold.outcome` then set): with its own outcome once the CLI
    is idle, or at the result of a cycle the CLI ran itself when none of the turn's background
    subagents runs any more; `cancelled` by a cancel."""
    if fold.cancel_requested:
        fold.outcome = TurnEnd("cancelled")
        return True
    children = session.children
    if hold.handed_over or children.idle or (hold.results and not children.spawned & children.background):
        fold.outcome = hold.outcome
        return True
    return False


async def next_line(session: ClaudeSession, fold: TurnFold, cli: ClaudeCLI) -> dict[str, Any] | None:
    """The CLI's next line; None when a cancel or the next prompt ended the hold while it waited
    for one (`fold.outcome` then set; the read is cancelled before it takes a line, so the line
    goes to whoever reads next)."""
    hold = session.hold
    if hold is None:
        return await cli.receive()
    with anyio.CancelScope() as hold.scope:
        if session.cancelling() or hold.handed_over:
            hold.scope.cancel()
        return await cli.receive()
    held_ended(session, fold, hold)
    return None


def hand_over(session: ClaudeSession) -> None:
    """A prompt waits behind the session's turn: a held turn answers now, with its own outcome;
    its background subagents go on and the session's follower reads them (as claude-agent-acp
    hands a held turn over to the next prompt)."""
    hold = session.hold
    if hold is not None:
        hold.handed_over = True
        if hold.scope is not None:
            hold.scope.cancel()


def follow_after(session: ClaudeSession, task_group: anyio.abc.TaskGroup) -> None:
    """After a turn: while subagents it (or an earlier one) started still run in the background,
    or the CLI is not idle after one of them, the session's follower reads its CLI."""
    fold, children = session.fold, session.children
    if (fold is None or session.channel is None or not session.live or session.follower is not None
            or not (children.background or (children.spawned and not children.idle))):
        return
    session.follower, session.followed = anyio.CancelScope(), anyio.Event()
    children.idle = False
    task_group.start_soon(_follow, session, fold)


async def _follow(session: ClaudeSession, fold: TurnFold) -> None:
    """Fold what the CLI writes between turns into the session's events (a background subagent's
    work, its end, the cycle the CLI runs on its notification), until the CLI is idle, the next
    prompt takes over or the CLI is gone. A line taken is handled whole (shielded)."""
    cli, channel, scope, done = session.cli, session.channel, session.follower, session.followed
    assert cli is not None and channel is not None and scope is not None and done is not None
    try:
        with scope:
            while not session.children.idle:
                message = await cli.receive()
                with anyio.CancelScope(shield=True):
                    for event in fold.feed(message):
                        await channel.emit(event)
    except anyio.EndOfStream:
        pass
    finally:
        session.follower = None
        done.set()


async def stop_following(session: ClaudeSession) -> None:
    """The next prompt reads the CLI from here: the follower stops after the line it handles."""
    if session.follower is not None and session.followed is not None:
        session.follower.cancel()
        await session.followed.wait()
