"""AIR's `agentFileChangeReport`: the files a turn changed, for a client that asks in its prompt.

A prompt whose `_meta.jetbrains.air` carries `agentFileChangeReportRequest {version: 1,
requestId}` is answered, before its `session/prompt` response, with one `session_info_update`
whose `_meta.jetbrains.air.agentFileChangeReport` is `{version: 1, requestId, status: "reported",
paths, declaredComplete: false, truncated}` or `{version: 1, requestId, status: "unavailable",
reason}` (`cancelled`, `providerError`), as claude-agent-acp (`dist/file-change-audit.js`) and
codex-acp (`AgentFileChangeReport.ts`) send it.

The paths come from the neutral tool calls every provider emits: a tool call of kind edit, delete
or move that completed names its files in its diffs, patches and locations. What a shell command
changed is not seen, so the report never declares itself complete. Paths are absolute, resolved
against the session's directory, canonical (symbolic links of existing ancestors resolved), and
only those strictly inside the session's directory or its additional directories (others are
left out, and the report is `truncated`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import define, field

from acp_agent.wire import acp

FILE_CHANGE_REPORT = "agentFileChangeReport"
REQUEST_KEY = "agentFileChangeReportRequest"
VERSION = 1
MAX_PATHS = 1024
MAX_PATH_LENGTH = 4096
MAX_BYTES = 256 * 1024
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_CHANGING = frozenset({"edit", "delete", "move"})
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def requested_id(meta: Any) -> str | None:
    """The `requestId` of a prompt's `agentFileChangeReportRequest`, or None when it has none or it
    is not exactly `{version: 1, requestId}` with an id of 1-128 of `[A-Za-z0-9._:-]`."""
    air = _mapping(_mapping(_mapping(meta).get("jetbrains")).get("air"))
    request = air.get(REQUEST_KEY)
    if not isinstance(request, Mapping) or set(request) != {"version", "requestId"}:
        return None
    if request["version"] != VERSION or isinstance(request["version"], bool):
        return None
    request_id = request["requestId"]
    return request_id if isinstance(request_id, str) and _REQUEST_ID.fullmatch(request_id) else None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


@define
class ChangedFiles:
    """One turn's request and the files its completed edits named, in the order first seen."""

    request_id: str
    paths: dict[str, None] = field(factory=dict)
    _pending: dict[str, tuple[str | None, list[str]]] = field(factory=dict)
    """Per tool call not yet completed: its kind and the paths it names so far."""

    def take(self, update: object) -> None:
        """Follow one tool call or update of the turn."""
        if not isinstance(update, acp.ToolCall | acp.ToolCallUpdate):
            return
        kind, named = self._pending.pop(update.tool_call_id, (None, []))
        if isinstance(update.kind, str):
            kind = update.kind
        named = [*named, *_named(update)]
        if update.status == "completed":
            if kind in _CHANGING:
                self.paths.update(dict.fromkeys(named))
        elif update.status != "failed":
            self._pending[update.tool_call_id] = (kind, named)

    def report(self, cwd: str, additional_directories: Sequence[str]) -> dict[str, Any]:
        paths, truncated = normalized(self.paths, cwd, additional_directories)
        result = {"version": VERSION, "requestId": self.request_id, "status": "reported",
                  "paths": paths, "declaredComplete": False, "truncated": truncated}
        while len(json.dumps(result).encode()) > MAX_BYTES and paths:
            paths.pop()
            result["truncated"] = True
        return result

    def unavailable(self, reason: str) -> dict[str, Any]:
        return {"version": VERSION, "requestId": self.request_id, "status": "unavailable", "reason": reason}


def _named(update: acp.ToolCall | acp.ToolCallUpdate) -> list[str]:
    names: list[str] = []
    for item in update.content if isinstance(update.content, list) else []:
        if isinstance(item, acp.ToolDiff):
            names.append(item.path)
    for patch in update.patches:
        names += [patch.path, *([patch.old_path] if patch.old_path else [])]
    for location in update.locations if isinstance(update.locations, list) else []:
        names.append(location.path)
    return [name for name in names if name]


def normalized(reported: Iterable[str], cwd: str, additional_directories: Sequence[str]) -> tuple[list[str], bool]:
    """The reported paths as AIR takes them (absolute, canonical, inside a root, each once, at
    most 1024 and 256 KiB), and whether any was left out."""
    root = os.path.realpath(os.path.abspath(cwd))
    roots = [root, *(os.path.realpath(os.path.join(root, extra)) for extra in additional_directories)]
    paths: list[str] = []
    seen: set[str] = set()
    total, truncated = 0, False
    for path in reported:
        if not path.strip() or len(path) > MAX_PATH_LENGTH or _CONTROL.search(path):
            truncated = True
            continue
        resolved = os.path.join(os.path.realpath(os.path.dirname(os.path.join(root, path))),
                                os.path.basename(os.path.join(root, path)))
        if (len(resolved) > MAX_PATH_LENGTH or _CONTROL.search(resolved)
                or not any(_strictly_inside(resolved, base) for base in roots)):
            truncated = True
            continue
        if resolved in seen:
            continue
        size = len(resolved.encode("utf-8", "surrogatepass"))
        if len(paths) >= MAX_PATHS or total + size > MAX_BYTES:
            truncated = True
            continue
        seen.add(resolved)
        paths.append(resolved)
        total += size
    return paths, truncated


def _strictly_inside(path: str, root: str) -> bool:
    relative = os.path.relpath(path, root)
    return relative not in (".", "..") and not relative.startswith(".." + os.sep) and not os.path.isabs(relative)


def report_update(report: Mapping[str, Any]) -> acp.SessionInfoUpdate:
    """The `session_info_update` that carries a report (no title or time: they would clear the
    client's)."""
    return acp.SessionInfoUpdate(meta={"jetbrains": {"air": {"version": 1, FILE_CHANGE_REPORT: dict(report)}}})


__all__ = ["FILE_CHANGE_REPORT", "ChangedFiles", "normalized", "report_update", "requested_id"]
