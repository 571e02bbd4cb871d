"""Subagents that run in the background (the Agent tool's `run_in_background`) past their turn.

The turn's result can come while they run; when one ends, the CLI runs a model cycle of its own
on its notification (`subagents.autonomous`). For a client that takes them only inside the turn
(every client but one of AIR's `backgroundSubagents`, `background_subagents(turn)`) the turn is
held past its result (`hold_at_result`, `held_ended`) until the CLI says it is idle, or a result
of its own cycle comes with none of the turn's background subagents running: their work, their end
and that cycle stream before the answer, which keeps the turn's own outcome. A cancel answers a
held turn at once; the subagents go on.

A client of `backgroundSubagents` is answered at the result; what the subagents do after it is
read by the session's reader between prompts (`between`), as a prompt handed over or cancelled
leaves them to it.
"""

from __future__ import annotations

from typing import Any

import anyio

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
    its background subagents go on, read between prompts (`between`), as claude-agent-acp
    hands a held turn over to the next prompt."""
    hold = session.hold
    if hold is not None:
        hold.handed_over = True
        if hold.scope is not None:
            hold.scope.cancel()
