"""Slash commands the agent answers itself because the CLI has no non-interactive form of them.

Claude Code 2.1.332 answers most of its local commands in stream-json (`/usage`, `/cost`,
`/context` come back as a synthetic assistant message), but `/mcp` only says "N MCP servers ... Use
`/mcp` in the terminal for details". A bare `/mcp` is answered from the CLI's `mcp_status`
control request instead: one line per server with its transport and state. Only names,
transports, states and errors are shown: a server's configuration holds secrets (env, headers).
`/status` is interactive only (the CLI neither lists nor answers it in stream-json): the agent
offers it and answers with the session's model, mode, directories, where its credentials come
from (the CLI's `account` sources, never a secret) and the CLI's version.
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
    parts = []
    token = account.get("tokenSource")
    if isinstance(token, str) and token and token != "none":
        parts.append(f"token from {token}")
    key = account.get("apiKeySource")
    if isinstance(key, str) and key and key != "none":
        parts.append(f"API key from {key}")
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
