"""A backend's JSON read leniently, and the ACP content every provider builds from it alike.

A backend's notifications are JSON the provider does not control: a field of the wrong type
counts as absent (`json_text`, `json_words`, `json_list`, `json_object`, `json_int`, `is_count`),
never raises. The builders make what each runtime shows the same way: text as tool content, the
texts of a result's content blocks (MCP and Anthropic share the shape), a unified diff's two
sides, context use against a window, a tool's or plan entry's status, ACP MCP servers as a backend's
configuration. Knows no vendor.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, TypeGuard

from acp_agent.wire.acp import (
    McpServer,
    McpServerStdio,
    TextContent,
    ToolCallContent,
    ToolContent,
    ToolStatus,
    UsageUpdate,
)

TOOL_STATUS: Final[Mapping[str, ToolStatus]] = {"inProgress": "in_progress", "completed": "completed", "failed": "failed"}
"""A backend's item status as ACP's tool status; each backend adds its own ways of failing."""
PlanStatus = Literal["pending", "in_progress", "completed"]
PLAN_STATUS: Final[Mapping[str, PlanStatus]] = {
    "pending": "pending",
    "inProgress": "in_progress",
    "in_progress": "in_progress",
    "completed": "completed",
}
"""A backend's plan-entry status (camelCase or snake_case) as ACP's; others are not ACP's."""


def json_text(value: Any) -> str:
    """A string field, or "" for anything else."""
    return value if isinstance(value, str) else ""


def json_list(value: Any) -> list[Any]:
    """A list field; anything else (a number, an object) counts as empty."""
    return value if isinstance(value, list) else []


def json_words(value: Any) -> str | None:
    """A string field with words in it (not blank), or None."""
    return value if isinstance(value, str) and value.strip() else None


def first_text(fields: Mapping[str, Any], *keys: str) -> str | None:
    """The first of `keys` whose value is a non-empty string (a field of another type is skipped)."""
    return next((value for key in keys if isinstance(value := fields.get(key), str) and value), None)


def json_object(value: Any) -> Mapping[str, Any]:
    """An object field; anything else counts as an empty object."""
    return value if isinstance(value, Mapping) else {}


def json_int(value: Any) -> int | None:
    """A whole number (not a bool, which JSON keeps apart), or None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def is_count(value: Any) -> TypeGuard[int]:
    """A count (of tokens, say): a whole number >= 0."""
    return json_int(value) is not None and value >= 0


def first_line(value: str, limit: int = 160) -> str:
    """The first non-blank line of `value`, cut to `limit` characters with an ellipsis."""
    line = value.strip().splitlines()[0] if value.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def text_content(value: str) -> list[ToolCallContent]:
    """Text as a tool call's content (none for no text: ACP replaces content with each update)."""
    return [ToolContent(TextContent(value))] if value else []


def text_blocks(content: Any) -> list[str]:
    """The texts of a list of content blocks (`{"type": "text", "text": ...}`), in order."""
    return [block["text"] for block in json_list(content)
            if isinstance(block, Mapping) and block.get("type") == "text" and isinstance(block.get("text"), str)]


def usage_update(used: Any, size: Any) -> UsageUpdate | None:
    """Tokens in context against the context window's size, when both are counts and the window
    is not empty."""
    return UsageUpdate(used=used, size=size) if is_count(used) and is_count(size) and size > 0 else None


def split_unified_diff(diff: str) -> tuple[str, str]:
    """The old and new text a unified diff's hunks show (context lines belong to both)."""
    old: list[str] = []
    new: list[str] = []
    for line in diff.splitlines(keepends=True):
        if line.startswith(("--- ", "+++ ", "@@", "\\")):
            continue
        if line.startswith("-"):
            old.append(line[1:])
        elif line.startswith("+"):
            new.append(line[1:])
        else:
            body = line[1:] if line.startswith(" ") else line
            old.append(body)
            new.append(body)
    return "".join(old), "".join(new)


McpEntry = Callable[[McpServer, dict[str, str]], dict[str, Any] | None]


def mcp_server_config(servers: Sequence[McpServer], entry: McpEntry,
               key: Callable[[str], str] = str) -> dict[str, dict[str, Any]]:
    """ACP `mcpServers` as a backend's configuration, keyed by `key(name)`: `entry` writes one
    server given its environment (stdio) or headers (HTTP, SSE) as a dict; None leaves it out."""
    config: dict[str, dict[str, Any]] = {}
    for server in servers:
        pairs = server.env if isinstance(server, McpServerStdio) else server.headers
        written = entry(server, {pair.name: pair.value for pair in pairs})
        if written is not None:
            config[key(server.name)] = written
    return config


__all__ = [
    "PLAN_STATUS",
    "TOOL_STATUS",
    "McpEntry",
    "PlanStatus",
    "first_line",
    "first_text",
    "is_count",
    "json_int",
    "json_list",
    "json_object",
    "json_text",
    "json_words",
    "mcp_server_config",
    "split_unified_diff",
    "text_blocks",
    "text_content",
    "usage_update",
]
