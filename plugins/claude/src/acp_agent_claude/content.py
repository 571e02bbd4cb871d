"""Pure mapping of Claude Code content to ACP session updates: text, thinking, tools, plans, usage.

Takes the claude-agent-sdk's content blocks and raw stream events; returns `acp_agent.acp` updates.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import define

from acp_agent.acp import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ContentBlock,
    ImageContent,
    McpServer,
    McpServerStdio,
    Plan,
    PlanEntry,
    TextContent,
    ToolCall,
    ToolCallContent,
    ToolCallUpdate,
    ToolContent,
    ToolDiff,
    ToolKind,
    ToolLocation,
    UsageUpdate,
    agent_text,
    thought_text,
)
from acp_agent.prompt import TextStyle, prompt_parts
from acp_agent.wire import UNSET

TOOL_KINDS: Mapping[str, ToolKind] = {
    "Bash": "execute", "BashOutput": "execute", "KillShell": "execute", "KillBash": "execute",
    "Read": "read", "NotebookRead": "read",
    "Edit": "edit", "MultiEdit": "edit", "Write": "edit", "NotebookEdit": "edit",
    "Glob": "search", "Grep": "search", "LS": "search", "ToolSearch": "search",
    "WebFetch": "fetch", "WebSearch": "fetch",
    "Task": "think", "Agent": "think", "TodoWrite": "think",
    "ExitPlanMode": "switch_mode",
}


def stream_delta(event: Mapping[str, Any]) -> AgentMessageChunk | AgentThoughtChunk | None:
    """A raw Anthropic stream event's text or thinking delta, as a chunk."""
    if event.get("type") != "content_block_delta":
        return None
    delta = event.get("delta") or {}
    if delta.get("type") == "text_delta" and delta.get("text"):
        return agent_text(delta["text"])
    if delta.get("type") == "thinking_delta" and delta.get("thinking"):
        return thought_text(delta["thinking"])
    return None


def _short(path: str, cwd: str | None) -> str:
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return os.path.relpath(path, cwd)
    return path


def tool_title(name: str, tool_input: Mapping[str, Any], cwd: str | None = None) -> str:
    """What an editor shows for a tool call: the command, the file, the pattern."""
    path = tool_input.get("file_path") or tool_input.get("notebook_path") or tool_input.get("path")
    if name == "Bash" and tool_input.get("command"):
        return f"`{tool_input['command']}`"
    if name in ("Read", "Edit", "MultiEdit", "Write", "NotebookEdit", "NotebookRead") and isinstance(path, str):
        return f"{name} {_short(path, cwd)}"
    if name in ("Glob", "Grep") and tool_input.get("pattern"):
        return f"{name} {tool_input['pattern']}"
    if name in ("WebFetch",) and tool_input.get("url"):
        return f"Fetch {tool_input['url']}"
    if name == "WebSearch" and tool_input.get("query"):
        return f"Search: {tool_input['query']}"
    if name in ("Task", "Agent") and tool_input.get("description"):
        return str(tool_input["description"])
    return name


def tool_locations(tool_input: Mapping[str, Any]) -> list[ToolLocation]:
    path = tool_input.get("file_path") or tool_input.get("notebook_path")
    return [ToolLocation(path)] if isinstance(path, str) else []


def tool_diffs(name: str, tool_input: Mapping[str, Any]) -> list[ToolCallContent]:
    """Diff content for edits, from the tool's own input (before it runs)."""
    path = tool_input.get("file_path")
    if not isinstance(path, str):
        return []
    if name == "Write" and isinstance(tool_input.get("content"), str):
        return [ToolDiff(path=path, new_text=tool_input["content"], old_text=None)]
    if name == "Edit" and isinstance(tool_input.get("new_string"), str):
        return [ToolDiff(path=path, new_text=tool_input["new_string"], old_text=tool_input.get("old_string"))]
    if name == "MultiEdit" and isinstance(tool_input.get("edits"), list):
        return [ToolDiff(path=path, new_text=edit.get("new_string", ""), old_text=edit.get("old_string"))
                for edit in tool_input["edits"] if isinstance(edit, dict)]
    return []


def tool_call(tool_use_id: str, name: str, tool_input: Mapping[str, Any], cwd: str | None = None) -> ToolCall:
    diffs = tool_diffs(name, tool_input)
    locations = tool_locations(tool_input)
    return ToolCall(
        tool_call_id=tool_use_id,
        title=tool_title(name, tool_input, cwd),
        kind=TOOL_KINDS.get(name, "other"),
        status="pending",
        content=diffs or UNSET,
        locations=locations or UNSET,
        raw_input=dict(tool_input),
    )


def plan_from_todos(tool_input: Mapping[str, Any]) -> Plan | None:
    """TodoWrite's list as an ACP plan."""
    todos = tool_input.get("todos")
    if not isinstance(todos, list):
        return None
    entries = []
    for todo in todos:
        if not isinstance(todo, dict) or not isinstance(todo.get("content"), str):
            continue
        status, priority = todo.get("status"), todo.get("priority")
        entries.append(PlanEntry(
            content=todo["content"],
            priority=priority if priority in ("high", "medium", "low") else "medium",
            status=status if status in ("pending", "in_progress", "completed") else "pending",
        ))
    return Plan(entries)


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text")
    return ""


def tool_result(tool_use_id: str, content: Any, is_error: bool | None, name: str | None,
                tool_use_result: Any = None) -> ToolCallUpdate:
    """A tool's result: completed or failed, with its output as text (shell output for Bash)."""
    text = _result_text(content)
    if name == "Bash" and isinstance(tool_use_result, dict) and not is_error:
        stdout, stderr = tool_use_result.get("stdout") or "", tool_use_result.get("stderr") or ""
        text = "\n".join(part for part in (stdout, stderr) if part) or text
    blocks: list[ToolCallContent] = [ToolContent(TextContent(f"```\n{text}\n```" if name == "Bash" else text))] if text else []
    return ToolCallUpdate(
        tool_call_id=tool_use_id,
        status="failed" if is_error else "completed",
        content=blocks or UNSET,
        raw_output=tool_use_result if tool_use_result is not None else UNSET,
    )


@define
class ContextWindow:
    """A session's context window as the CLI last reported it (results' `modelUsage`): a
    compaction's boundary carries the tokens kept but not the window."""

    size: int | None = None


def usage_update(usage: Mapping[str, Any] | None, model_usage: Mapping[str, Any] | None,
                 window: ContextWindow | None = None, used: int | None = None) -> UsageUpdate | None:
    """Context use after a turn: tokens sent and produced (or `used`, when known otherwise)
    against the model's context window; `window` learns the size."""
    if not usage:
        return None
    if used is None:
        used = sum(int(usage.get(key) or 0) for key in (
            "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"))
    windows = [int(entry.get("contextWindow") or 0) for entry in (model_usage or {}).values() if isinstance(entry, dict)]
    size = max(windows, default=0)
    if size <= 0:
        return None
    if window is not None:
        window.size = size
    return UsageUpdate(used=used, size=size)


TEXT_STYLE = TextStyle(links="paths", mention_embedded=True, binary_links=False)
"""Claude Code's own `@path` mentions; the CLI reads a mentioned file itself."""


def prompt_blocks(prompt: Sequence[ContentBlock]) -> list[dict[str, Any]]:
    """ACP prompt content as Anthropic message content blocks for the CLI's stream-json input."""
    blocks: list[dict[str, Any]] = []
    for part in prompt_parts(prompt, TEXT_STYLE):
        if isinstance(part, str):
            blocks.append({"type": "text", "text": part})
        elif isinstance(part, ImageContent):
            blocks.append({"type": "image", "source": {"type": "base64", "media_type": part.mime_type,
                                                       "data": part.data}})
    return blocks


def mcp_servers(servers: Sequence[McpServer]) -> dict[str, dict[str, Any]]:
    """ACP `mcpServers` (stdio, http, sse) as the CLI's MCP configuration, keyed by server name."""
    configs: dict[str, dict[str, Any]] = {}
    for server in servers:
        if isinstance(server, McpServerStdio):
            env = {pair.name: pair.value for pair in server.env}
            configs[server.name] = {"type": "stdio", "command": server.command, "args": list(server.args),
                                    **({"env": env} if env else {})}
        else:
            headers = {pair.name: pair.value for pair in server.headers}
            configs[server.name] = {"type": server.type, "url": server.url,
                                    **({"headers": headers} if headers else {})}
    return configs


def shell_output(content: Any, is_error: bool | None, tool_use_result: Any = None) -> str:
    """A Bash call's output as a terminal shows it: stdout then stderr, else the result's text."""
    if isinstance(tool_use_result, dict) and not is_error:
        stdout, stderr = tool_use_result.get("stdout") or "", tool_use_result.get("stderr") or ""
        joined = "\n".join(part for part in (stdout, stderr) if part)
        if joined:
            return joined
    return _result_text(content)


def exit_code(content: Any, is_error: bool | None) -> int | None:
    """A Bash call's exit code: 0 for a success; a failure's `Exit code N` line (None: not given)."""
    if not is_error:
        return 0
    match = _EXIT_CODE.search(_result_text(content))
    return int(match[1]) if match else None


_EXIT_CODE = re.compile(r"^Exit code (\d+)", re.MULTILINE)
