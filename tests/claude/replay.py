"""Replay real Claude CLI fixture output through the plugin's pure fold (no process, no network).

Failures are classified, titled and recognised in history through the core's failure hooks, with
the Claude plugin registered as it is installed (its implementations `trylast`), exactly as the
live runtime calls them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import acp_agent_claude
from acp_agent.backends.events import Event, TurnEnd
from acp_agent.backends.plugins import make_plugin_manager
from acp_agent.failures.hooks import FailureHooks, bound
from acp_agent.failures.protocol import FailureObservation
from acp_agent_claude import history
from acp_agent_claude.fold import TurnFold

FIXTURES = Path(__file__).parent / "fixtures"
HOOKS = FailureHooks(make_plugin_manager(load_entry_points=False, plugins=[(acp_agent_claude, "claude")])[0])


def new_fold(*, cancel: bool = False) -> TurnFold:
    """A fold as the runtime makes it: failures classified through the hooks."""
    return TurnFold(cancel_requested=cancel, observe=bound(HOOKS, "claude"))


def replay_history(entries: Any, session_id: str = "", cwd: str | None = None) -> list[Event]:
    """`history.replay` as the runtime calls it: each entry offered to the history hook first."""
    return history.replay(entries, session_id, cwd, lambda entry, user: HOOKS.recognise_history("claude", entry, user))


def raw_lines(name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The fixture's comment object and its stdout lines, as the CLI wrote them."""
    lines = [json.loads(line) for line in (FIXTURES / f"{name}.jsonl").read_text().splitlines() if line.strip()]
    return lines[0]["_fixture"], lines[1:]


def messages(name: str) -> list[dict[str, Any]]:
    """The fixture's stdout as the runtime's transport hands it to the fold (control frames are
    the transport's own)."""
    return [line for line in raw_lines(name)[1]
            if line.get("type") not in ("control_request", "control_response", "control_cancel_request")]


def fold_turns(name: str, *, cancel: bool = False) -> list[tuple[list[Event], TurnEnd | FailureObservation]]:
    """Each turn of the fixture: the events the fold emitted and its outcome."""
    turns: list[tuple[list[Event], TurnEnd | FailureObservation]] = []
    fold, events = new_fold(cancel=cancel), []
    for message in messages(name):
        events.extend(fold.feed(message))
        if fold.outcome is not None:
            turns.append((events, fold.outcome))
            fold, events = new_fold(cancel=cancel), []
    return turns


def fold_steps(natives: list[Any]) -> list[Any]:
    """One turn as the conformance kit's steps: emitted events, then the outcome."""
    fold, steps = new_fold(), []
    for message in natives:
        steps.extend(fold.feed(message))
    steps.append(fold.outcome if fold.outcome is not None else fold.finish_without_result())
    return steps
