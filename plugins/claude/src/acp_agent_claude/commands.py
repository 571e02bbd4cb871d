"""Slash commands the agent answers itself because the CLI has no non-interactive form of them.

Claude Code 2.1.332 answers most of its local commands in stream-json (`/usage`, `/cost`,
`/context` come back as a synthetic assistant message), but `/mcp` only says "N MCP servers ... Use
`/mcp` in the terminal for details". A bare `/mcp` is answered from the CLI's `mcp_status`
control request instead: one line per server with its transport and state. Only names,
transports, states and errors are shown: a server's configuration holds secrets (env, headers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acp_agent.acp import ContentBlock, TextContent

MCP = "/mcp"


def local_command(prompt: Sequence[ContentBlock]) -> str | None:
    """The command the agent answers itself, when the prompt is exactly that command."""
    if len(prompt) == 1 and isinstance(prompt[0], TextContent) and prompt[0].text.strip() == MCP:
        return MCP
    return None


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
