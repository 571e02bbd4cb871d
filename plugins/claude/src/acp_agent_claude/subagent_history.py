"""A subagent's stored history, replayed as its child session on `session/load`.

Claude Code keeps each subagent's transcript beside the session's:
`<session>/subagents/agent-<agent id>.jsonl`, and `agent-<agent id>.meta.json` names the
Agent/Task call that launched it (`toolUseId`), its kind (`agentType`), its `description` and
whether the user stopped it (`stoppedByUser`), as claude-agent-acp reads them
(dist/subagent-history.js). A launch without its meta file has no child history: it replays as the
tool call it always was (for every client).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from acp_agent.provider import (
    Event,
    HistoryFailure,
    OfSubagent,
    SubagentFinished,
    SubagentLaunch,
    SubagentStarted,
    read_regular_file,
    regular_file_stat,
)
from acp_agent_claude import history

log = logging.getLogger(__name__)

META_LIMIT = 1 << 16
"""A meta file is a few hundred bytes; a larger one is not one."""


def launches(subagents: Path) -> dict[str, tuple[str, Mapping[str, Any]]]:
    """The subagents a session's transcript directory holds, by the call that launched each:
    (agent id, meta). A damaged or unsafe meta file leaves its subagent without history."""
    found: dict[str, tuple[str, Mapping[str, Any]]] = {}
    try:
        names = sorted(path.name for path in subagents.iterdir())
    except OSError:
        return found
    for name in names:
        if not (name.startswith("agent-") and name.endswith(".meta.json")):
            continue
        try:
            meta = json.loads(read_regular_file(str(subagents / name), META_LIMIT))
        except (OSError, ValueError):
            continue
        launch = meta.get("toolUseId") if isinstance(meta, dict) else None
        if isinstance(launch, str) and launch:
            found[launch] = (name.removeprefix("agent-").removesuffix(".meta.json"), meta)
    return found


def replay(subagents: Path, agent_id: str, meta: Mapping[str, Any], asked: Mapping[str, Any],
           launch_id: str, cwd: str | None, recogniser: history.Recogniser) -> list[Event]:
    """The subagent `agent_id` (launched by `launch_id` with input `asked`) as its child session:
    started, its transcript's replay, ended (cancelled when the user stopped it, else
    completed, as claude-agent-acp restores a replayed child)."""
    path = subagents / f"agent-{agent_id}.jsonl"
    entries: list[dict[str, Any]] = []
    try:
        regular_file_stat(str(path))
        with path.open("rb") as handle:
            history.TranscriptReader(sidechain=True).read(handle, entries.extend)
    except OSError as exc:  # UnsafeFile too
        log.warning("could not read the history of subagent %s: %s", agent_id, type(exc).__name__)
        return []
    shown: list[Event] = []
    for event in history.replay(entries, "", cwd, recogniser):
        if isinstance(event, SubagentLaunch):  # its own subagents are not restored: their calls
            shown.append(event.event)
        elif isinstance(event, HistoryFailure):
            shown.extend(event.legacy_updates)
        else:
            shown.append(event)

    def text(key: str, source: Mapping[str, Any]) -> str | None:
        value = source.get(key)
        return value.strip() if isinstance(value, str) and value.strip() else None

    description = text("description", meta) or text("description", asked)
    role = text("agentType", meta) or text("subagent_type", asked)
    name = text("name", meta) or text("name", asked) or description or role or f"Agent {agent_id[-8:]}"
    ended = SubagentFinished(agent_id, "cancelled" if meta.get("stoppedByUser") is True else "completed")
    return [SubagentStarted(agent_id, name, description or "Delegated task", role=role, tool_call_id=launch_id),
            OfSubagent(agent_id, tuple(shown), ()), ended]
