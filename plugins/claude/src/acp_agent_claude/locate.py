"""Where the Claude Code CLI is: ACP_AGENT_CLAUDE_CLI, else the binary claude-agent-sdk ships.

The SDK is found with `importlib.util.find_spec`, never imported: importing it costs most of a
second (it imports `mcp` at top level), and the agent only needs the file it ships. The code is
in `prestart` (standard library only), which the command line runs before the agent's imports.
"""

from __future__ import annotations

from acp_agent_claude.prestart import CLI_ENV, bundled_cli, find_cli, program

__all__ = ["CLI_ENV", "bundled_cli", "find_cli", "program"]
