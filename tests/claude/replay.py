"""Replay real Claude CLI fixture output through the plugin's pure fold (no process, no network)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from claude_agent_sdk._internal.message_parser import parse_message

from acp_agent.events import Event, TurnEnd
from acp_agent.failures import FailureObservation
from acp_agent_claude.fold import TurnFold

FIXTURES = Path(__file__).parent / "fixtures"


def raw_lines(name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The fixture's comment object and its stdout lines, as the CLI wrote them."""
    lines = [json.loads(line) for line in (FIXTURES / f"{name}.jsonl").read_text().splitlines() if line.strip()]
    return lines[0]["_fixture"], lines[1:]


def messages(name: str) -> list[Any]:
    """The fixture's stdout as the SDK parses it for the runtime (control frames skipped)."""
    parsed = []
    for line in raw_lines(name)[1]:
        if line.get("type") in ("control_request", "control_response"):
            continue
        message = parse_message(line)
        if message is not None:
            parsed.append(message)
    return parsed


def fold_turns(name: str, *, cancel: bool = False) -> list[tuple[list[Event], TurnEnd | FailureObservation]]:
    """Each turn of the fixture: the events the fold emitted and its outcome."""
    turns: list[tuple[list[Event], TurnEnd | FailureObservation]] = []
    fold, events = TurnFold(cancel_requested=cancel), []
    for message in messages(name):
        events.extend(fold.feed(message))
        if fold.outcome is not None:
            turns.append((events, fold.outcome))
            fold, events = TurnFold(cancel_requested=cancel), []
    return turns


def fold_steps(natives: list[Any]) -> list[Any]:
    """One turn as the conformance kit's steps: emitted events, then the outcome."""
    fold, steps = TurnFold(), []
    for message in natives:
        steps.extend(fold.feed(message))
    steps.append(fold.outcome if fold.outcome is not None else fold.finish_without_result())
    return steps
