"""What `acp-agent --provider codex` starts before its own imports: `codex app-server`.

The command line loads this file alone, without the package (`acp_agent.prestart`), so it imports
nothing but the standard library (and `codex_cli_bin`, to find the bundled binary). The process is
greeted at once with the opening of the handshake (`initialize`, `initialized`, `model/list`), so
app-server answers it as soon as it has booted, while the agent is still importing. The runtime's
opener (`acp_agent_codex.appserver.open_codex`) claims the process with the same argv, environment
and greeting, and reads those answers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

BIN_VAR = "ACP_AGENT_CODEX_BIN"


def find_codex(environ: Mapping[str, str]) -> str | None:
    """The codex binary: `ACP_AGENT_CODEX_BIN` if set, else the one bundled in `openai-codex-cli-bin`."""
    override = environ.get(BIN_VAR)
    if override:
        return override
    try:
        from codex_cli_bin import bundled_codex_path  # type: ignore[import-untyped]
    except ImportError:
        return None
    try:
        return str(bundled_codex_path())
    except (FileNotFoundError, OSError):
        return None


def child_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The agent's environment plus the wheel's helper directory (rg) on PATH, as openai-codex does."""
    env = dict(environ)
    try:
        from codex_cli_bin import bundled_path_dir

        path_dir = bundled_path_dir()
    except (ImportError, AttributeError, OSError):
        path_dir = None
    if path_dir is not None:
        entries = [entry for entry in env.get("PATH", "").split(os.pathsep) if entry and entry != str(path_dir)]
        env["PATH"] = os.pathsep.join([str(path_dir), *entries])
    return env


def app_server(environ: Mapping[str, str]) -> tuple[list[str], dict[str, str]] | None:
    """The argv and environment of the app-server the agent would start with `environ`."""
    binary = find_codex(environ)
    if binary is None:
        return None
    return [binary, "app-server"], child_environment(environ)


def initialize_params() -> dict[str, Any]:
    """The handshake's `initialize` parameters (the agent's name and the core's version)."""
    from acp_agent import __version__  # the package's `__init__` only: the command line has it

    return {"clientInfo": {"name": "acp-agent", "title": "acp-agent", "version": __version__},
            "capabilities": {"experimentalApi": True}}


GREETING_REQUESTS = ("initialize", "model/list")
"""The requests of the greeting, in order: they have ids 0 and 1 (`initialized` goes between)."""


def greeting() -> bytes:
    """The opening of the handshake, as the connection to app-server would write it."""
    lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize_params()},
             {"jsonrpc": "2.0", "method": "initialized"},
             {"jsonrpc": "2.0", "id": 1, "method": "model/list", "params": {}}]
    return b"".join(json.dumps(line, separators=(",", ":")).encode() + b"\n" for line in lines)


def prestart(environ: Mapping[str, str]) -> tuple[list[str], dict[str, str], bytes] | None:
    """The `acp_agent.prestart` hook: start app-server as the agent process starts, greeted."""
    wanted = app_server(environ)
    return None if wanted is None else (*wanted, greeting())
