"""Where the Claude Code CLI is: `ACP_AGENT_CLAUDE_CLI`, else the binary bundled in claude-agent-sdk.

Only finds a path: it never imports the SDK (`find_spec` locates the package without running it),
so `acp-agent --cli`, `providers` and `initialize` stay fast. Shared by the runtime, the
pass-through (`acp-agent --provider claude --cli ...`), logout and the sign-in check.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping

CLI_ENV = "ACP_AGENT_CLAUDE_CLI"


def bundled_cli() -> str | None:
    """The CLI inside the installed claude_agent_sdk distribution, or None when there is none."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or not spec.submodule_search_locations:
        return None
    bundled = os.path.join(next(iter(spec.submodule_search_locations)), "_bundled", "claude")
    return bundled if os.path.exists(bundled) else None


def find_cli(environ: Mapping[str, str] | None = None) -> str | None:
    """The CLI to run: ACP_AGENT_CLAUDE_CLI, else the SDK's bundled binary (None: let the SDK search)."""
    environ = os.environ if environ is None else environ
    if environ.get(CLI_ENV):
        return environ[CLI_ENV]
    return bundled_cli()
