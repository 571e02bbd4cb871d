"""Where the Claude Code CLI is: ACP_AGENT_CLAUDE_CLI, else the binary claude-agent-sdk ships.

The SDK is found with `importlib.util.find_spec`, never imported: importing it costs most of a
second (it imports `mcp` at top level), and the agent only needs the file it ships.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Mapping

CLI_ENV = "ACP_AGENT_CLAUDE_CLI"


def bundled_cli() -> str | None:
    """The CLI inside the installed claude-agent-sdk distribution (`_bundled/claude`), if any."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or not spec.submodule_search_locations:
        return None
    bundled = os.path.join(next(iter(spec.submodule_search_locations)), "_bundled", "claude")
    return bundled if os.path.exists(bundled) else None


def find_cli(environ: Mapping[str, str] | None = None) -> str | None:
    """The CLI to run: ACP_AGENT_CLAUDE_CLI, else the bundled binary (None: nothing found)."""
    environ = os.environ if environ is None else environ
    if environ.get(CLI_ENV):
        return environ[CLI_ENV]
    return bundled_cli()


def program(environ: Mapping[str, str]) -> str | None:
    """What to start: `find_cli`, else `claude` on the child's PATH (as the SDK searched)."""
    return find_cli(environ) or shutil.which("claude", path=environ.get("PATH", os.defpath))
