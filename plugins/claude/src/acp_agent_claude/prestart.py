"""What `acp-agent --provider claude` starts before its own imports: a spare Claude Code CLI.

The Claude runtime starts one CLI per session, and the CLI takes a while to boot and answer its
handshake. The first session is usually opened in the directory the agent was started in, with
default settings: the command line (`acp_agent.startup.prestart`) starts that CLI here, under a random
session id chosen in advance and kept as the process's tag, while the agent imports and answers
`initialize`. The runtime reads the tag, claims the CLI (`RuntimeContext.prestarted.take`) and
lets the first `session/new` adopt it when that session would start exactly this command with
exactly this environment (same cwd, no MCP servers or additional directories, no client
credentials); the permission mode is set after the handshake, as for every CLI. Otherwise it is
stopped and the session starts its own, as without a spare.
`ACP_AGENT_CLAUDE_SPARE=0` turns it off.

The command line loads this file alone, without the package, so it imports nothing but the
standard library and the core's `acp_agent.startup.prestart`, which the command line has loaded before
its spawn; `locate` and `transport` take the CLI's location, command line and environment
from here, so the spare and a session's CLI are built by the same code.
"""

from __future__ import annotations

import os
import shutil

from acp_agent.backends.installed import package_dir

TYPE_CHECKING = False  # json and typing load only when used: this runs before the spawn
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

CLI_ENV = "ACP_AGENT_CLAUDE_CLI"
SPARE_VAR = "ACP_AGENT_CLAUDE_SPARE"
SPARE_MODE = "default"  # the session's own mode is set over the control protocol after adoption


def bundled_cli() -> str | None:
    """The CLI inside the installed claude-agent-sdk distribution (`_bundled/claude`), if any."""
    package = package_dir("claude_agent_sdk")
    if package is None:
        return None
    bundled = os.path.join(package, "_bundled", "claude")
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


def bypass_allowed(env: Mapping[str, str]) -> bool:
    """Whether a CLI with the environment `env` can enter `bypassPermissions`. Claude Code exits
    at start, started with `--allow-dangerously-skip-permissions` or in that mode, when it runs as
    root outside a sandbox it was told of (`IS_SANDBOX=1` exactly, or `CLAUDE_CODE_BUBBLEWRAP`
    set), "for security reasons"; everywhere else it may be entered with that flag."""
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    return not root or env.get("IS_SANDBOX") == "1" or bool(env.get("CLAUDE_CODE_BUBBLEWRAP"))


BYPASS_REFUSED = ("Claude Code refuses it as root unless IS_SANDBOX=1 (or CLAUDE_CODE_BUBBLEWRAP) is set "
                  "in the agent's environment")
"""Why `bypassPermissions` is not offered where `bypass_allowed` is false: the answer to a
`session/set_mode` to it and the log line for a `permissions.defaultMode` of it say the same."""


def command(program: str, *, session_id: str, resume: bool, mode: str, model: str | None,
            mcp_config: str | None, effort: str | None = None, fast: bool = False,
            add_dirs: Sequence[str] = (), allow_bypass: bool = False, settings: str | None = None,
            instructions: str | None = None) -> list[str]:
    """The CLI's arguments, as claude-agent-sdk builds them for the options the runtime used;
    `allow_bypass` (`bypass_allowed`): the session may switch to `bypassPermissions` later, as
    claude-agent-acp starts the CLI (its `allowDangerouslySkipPermissions`). It starts in `mode`.
    `settings`: the path of the session's own settings file (fast mode, then, is in it).
    `instructions` (AIR's `customInstructions`) follow Claude Code's own system prompt, as the
    SDK's `system_prompt={"type": "preset", "preset": "claude_code", "append": ...}` and
    claude-agent-acp pass them."""
    argv = [program, "--output-format", "stream-json", "--verbose", "--permission-mode", mode]
    if allow_bypass:
        argv.append("--allow-dangerously-skip-permissions")
    if model:
        argv += ["--model", model]
    if effort:
        argv += ["--effort", effort]
    if settings:
        argv += ["--settings", settings]
    elif fast:
        import json

        argv += ["--settings", json.dumps({"fastMode": True})]
    for directory in add_dirs:
        argv += ["--add-dir", directory]
    if mcp_config:
        argv += ["--mcp-config", mcp_config]
    if instructions:
        argv += ["--append-system-prompt", instructions]
    argv += ["--include-partial-messages", "--setting-sources=user,project,local",
             f"--resume={session_id}" if resume else f"--session-id={session_id}",
             "--permission-prompt-tool", "stdio", "--input-format", "stream-json"]
    return argv


def environment(base: Mapping[str, str], extra: Mapping[str, str], cwd: str) -> dict[str, str]:
    """The CLI's environment as the SDK composes it (its own process's, without CLAUDECODE)."""
    env = {key: value for key, value in os.environ.items() if key != "CLAUDECODE"}
    env["CLAUDE_CODE_ENTRYPOINT"] = "sdk-py"
    # `session_state_changed` lines (as claude-agent-acp starts it): `idle` once nothing runs,
    # background subagents and the cycles their notifications start included
    env["CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS"] = "1"
    env.update(base)
    env.update(extra)
    env["PWD"] = cwd
    return env


def spare(environ: Mapping[str, str], session_id: str | None = None) -> tuple[str, list[str], dict[str, str]] | None:
    """The spare's session id, argv and environment for an agent started with `environ` in the
    current directory, under `session_id` (None: a new random one); None when turned off or there
    is nothing to run."""
    if environ.get(SPARE_VAR, "").strip().lower() in ("0", "false", "no", "off"):
        return None
    path = program(environ)
    if path is None:
        return None
    if session_id is None:
        import uuid

        session_id = str(uuid.uuid4())
    env = environment(environ, {}, os.getcwd())
    argv = command(path, session_id=session_id, resume=False, mode=SPARE_MODE, model=None, mcp_config=None,
                   allow_bypass=bypass_allowed(env))
    return session_id, argv, env


def prestart(environ: Mapping[str, str]) -> tuple[list[str], dict[str, str], bytes, str] | None:
    """The hook `ProviderSpec.prestart` names: the spare CLI for the first session, tagged with its
    session id (the runtime reads it back to claim the spare)."""
    wanted = spare(environ)
    return None if wanted is None else (wanted[1], wanted[2], b"", wanted[0])
