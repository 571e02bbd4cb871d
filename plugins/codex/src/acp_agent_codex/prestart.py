"""What `acp-agent --provider codex` starts before its own imports: `codex app-server`.

The command line loads this file alone, without the package (`ProviderSpec.prestart`), so it imports
nothing but the standard library (it finds the bundled binary where `codex_cli_bin` keeps it,
without importing that package, and leaves `typing` alone: every import here delays the spawn,
hence the first session). The process is
greeted at once with the opening of the handshake (`initialize`, `initialized`, `model/list`), so
app-server answers it as soon as it has booted, while the agent is still importing. The runtime's
opener (`acp_agent_codex.open_runtime`) claims the process with the same argv, environment
and greeting, and reads those answers.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

BIN_VAR = "ACP_AGENT_CODEX_BIN"
PACKAGE_METADATA = "codex-package.json"  # beside codex_cli_bin's __init__, as its functions check


def find_codex(environ: Mapping[str, str]) -> str | None:
    """The codex binary: `ACP_AGENT_CODEX_BIN` if set, else the one bundled in `openai-codex-cli-bin`."""
    override = environ.get(BIN_VAR)
    if override:
        return override
    return _bundled("bin", "codex.exe" if os.name == "nt" else "codex", directory=False)


def child_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The agent's environment plus the wheel's helper directory (rg) on PATH, as openai-codex does."""
    env = dict(environ)
    path_dir = _bundled("codex-path", directory=True)
    if path_dir is not None:
        entries = [entry for entry in env.get("PATH", "").split(os.pathsep) if entry and entry != path_dir]
        env["PATH"] = os.pathsep.join([path_dir, *entries])
    return env


def _bundled(*parts: str, directory: bool) -> str | None:
    """A file (or directory) of the `codex_cli_bin` package, where its `bundled_codex_path` and
    `bundled_path_dir` would find it. Read from the package's location (`package_dir`) rather
    than by importing it, which would import pathlib before the command line's spawn; the
    package's own functions are asked only if its layout is not the one known here."""
    from acp_agent.backends.installed import package_dir  # the command line has it loaded already

    found_dir = package_dir("codex_cli_bin")
    if found_dir is None:
        return None
    package = os.path.realpath(found_dir)  # as the package resolves its own `__file__`
    path = os.path.join(package, *parts)
    if os.path.isfile(os.path.join(package, PACKAGE_METADATA)):
        if os.path.isdir(path) if directory else os.path.isfile(path):
            return path
        if not directory:
            return None  # the package says so too (FileNotFoundError)
    try:
        import codex_cli_bin  # type: ignore[import-untyped]

        found = codex_cli_bin.bundled_path_dir() if directory else codex_cli_bin.bundled_codex_path()
    except (ImportError, AttributeError, OSError):
        return None
    return None if found is None else str(found)


CONFIG_VAR = "CODEX_CONFIG"
"""codex-acp's JSON config for its sessions; its `hooks` reach app-server as `-c hooks=...`, the
hooks of the session's flags (AIR's `codexHooks` lists and trusts these)."""


def app_server_argv(binary: str, environ: Mapping[str, str]) -> list[str]:
    """`codex app-server`, with `CODEX_CONFIG`'s `hooks` as a config override (as codex-acp); a
    value that is not a JSON object with `hooks` adds nothing."""
    argv = [binary, "app-server"]
    try:
        config = json.loads(environ.get(CONFIG_VAR) or "null")
    except ValueError:
        return argv
    if isinstance(config, dict) and config.get("hooks") is not None:
        argv += ["-c", "hooks=" + _toml(config["hooks"])]
    return argv


def _toml(value: Any) -> str:
    """A JSON value as an inline TOML value (codex-acp's `toToml`)."""
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(key)} = {_toml(item)}" for key, item in value.items()) + " }"
    return json.dumps(value)


def app_server(environ: Mapping[str, str]) -> tuple[list[str], dict[str, str]] | None:
    """The argv and environment of the app-server the agent would start with `environ`."""
    binary = find_codex(environ)
    if binary is None:
        return None
    return app_server_argv(binary, environ), child_environment(environ)


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
    """The hook `ProviderSpec.prestart` names: start app-server as the agent process starts, greeted."""
    wanted = app_server(environ)
    return None if wanted is None else (*wanted, greeting())
