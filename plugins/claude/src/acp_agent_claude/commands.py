"""Slash commands the agent answers itself because the CLI has no non-interactive form of them.

In stream-json `/mcp` only counts the servers: a bare `/mcp` is answered from the CLI's
`mcp_status` control request, one line per server with its transport, state and error (never its
configuration: it holds secrets). `/status` is interactive only: the agent offers it and answers
with the session's model, mode, directories, credential sources (never a secret) and CLI version.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acp_agent.provider import ContentBlock, TextContent

MCP = "/mcp"
STATUS = "/status"
STATUS_COMMAND: dict[str, Any] = {
    "name": "status", "argumentHint": "",
    "description": "Show the session's model, mode, directories, sign-in and Claude Code version"}
"""Offered with the CLI's own commands (which lack it)."""


def local_command(prompt: Sequence[ContentBlock]) -> str | None:
    """The command the agent answers itself, when the prompt is exactly that command."""
    if len(prompt) == 1 and isinstance(prompt[0], TextContent) and prompt[0].text.strip() in (MCP, STATUS):
        return prompt[0].text.strip()
    return None


def with_status(commands: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The CLI's commands plus `/status`, unless the CLI offers one of its own."""
    return commands if any(c.get("name") == "status" for c in commands) else [*commands, STATUS_COMMAND]


def credential_source(account: Any) -> str:
    """Where the CLI's credentials come from, from its `account` report: names of sources only."""
    if not isinstance(account, dict):
        return "unknown"
    parts = [f"{label} from {source}" for key, label in (("tokenSource", "token"), ("apiKeySource", "API key"))
             if isinstance(source := account.get(key), str) and source and source != "none"]
    provider = account.get("apiProvider")
    where = ", ".join(parts) or "not signed in"
    return f"{where} ({provider})" if isinstance(provider, str) and provider else where


def status_text(*, version: str | None, session_id: str, cwd: str, directories: Sequence[str], model: str,
                mode: str, effort: str | None, fast: bool | None, account: Any) -> str:
    lines = [f"Claude Code {version or '(version unknown)'}",
             f"Session: {session_id}",
             f"Working directory: {cwd}"]
    if directories:
        lines.append(f"Additional directories: {', '.join(directories)}")
    lines += [f"Model: {model}", f"Mode: {mode}", f"Effort: {effort or 'Claude Code default'}"]
    if fast is not None:
        lines.append(f"Fast mode: {'on' if fast else 'off'}")
    lines.append(f"Credentials: {credential_source(account)}")
    return "\n".join(lines)


def mcp_text(status: dict[str, Any]) -> str:
    servers = [s for s in status.get("mcpServers") or [] if isinstance(s, dict) and s.get("name")]
    if not servers:
        return "No MCP servers are configured for this session."
    lines = [f"MCP servers ({len(servers)}):"]
    for server in servers:
        line = f"- {server['name']}"
        if server.get("transport"):
            line += f" ({server['transport']})"
        line += f": {server.get('status') or 'unknown'}"
        if isinstance(server.get("error"), str) and server["error"]:
            line += f" ({server['error'].splitlines()[0][:200]})"
        tools = server.get("tools")
        if isinstance(tools, list) and tools:
            line += f", {len(tools)} tool{'s' if len(tools) != 1 else ''}"
        lines.append(line)
    return "\n".join(lines)
