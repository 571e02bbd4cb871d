"""Where the agent keeps what outlives one of its processes (session holds, the early-start record)."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # the command line reads the state directory before its imports
if TYPE_CHECKING:
    from collections.abc import Mapping

STATE_DIR_VARIABLE = "ACP_AGENT_STATE_DIR"
"""Where the agent keeps its state (tests point it at a directory of their own)."""


def state_directory(environ: Mapping[str, str]) -> str | None:
    """`$ACP_AGENT_STATE_DIR`, else `$XDG_STATE_HOME/acp-agent`, else `~/.local/state/acp-agent`
    (from the agent's environment; None without any of them)."""
    explicit = environ.get(STATE_DIR_VARIABLE)
    if explicit:
        return explicit
    xdg = environ.get("XDG_STATE_HOME")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "acp-agent")
    home = environ.get("HOME")
    if home and os.path.isabs(home):
        return os.path.join(home, ".local", "state", "acp-agent")
    return None
