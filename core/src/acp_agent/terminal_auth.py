"""Terminal sign-in: the auth methods a client runs in a terminal, and checking what they did.

Owns which `terminal` auth methods `initialize` offers (the keyring key and the vendor CLI's own
sign-ins, declared by each provider as `TerminalLogin` records), the exact command line each one
runs through `acp-agent`, and asking the vendor CLI afterwards whether the sign-in took. It must
not know any vendor: the commands and arguments come from the provider's `CredentialSpec`.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import anyio

from acp_agent.backends.contract import ProviderSpec, TerminalLogin
from acp_agent.wire import acp
from acp_agent.wire.convert import UNSET, Unset

log = logging.getLogger(__name__)

REMOTE_ENV_VARS = ("NO_BROWSER", "SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY")
"""Set on machines where a browser opened by the CLI would not reach the user (claude-agent-acp's
rule): there only the sign-ins that work without a local browser are offered."""

STATUS_BUDGET_S = 20.0
"""How long `authenticate` waits for the vendor CLI's status command."""

META_KEY = "terminal-auth"


def is_remote(environ: Mapping[str, str]) -> bool:
    return any(environ.get(name) for name in REMOTE_ENV_VARS)


def client_runs_terminal_auth(capabilities: acp.ClientCapabilities) -> tuple[bool, bool]:
    """(offer terminal methods, attach `_meta["terminal-auth"]` to them).

    ACP's `auth.terminal` asks for the methods; the older `_meta["terminal-auth"]: true` asks for
    them with the command line in `_meta`, which such clients run themselves.
    """
    meta = capabilities.meta
    by_meta = isinstance(meta, Mapping) and meta.get(META_KEY) is True
    return capabilities.auth.terminal or by_meta, by_meta


def agent_command(argv0: str | None = None, executable: str | None = None) -> tuple[str, ...]:
    """The command that starts this `acp-agent` again, for a client to run in a terminal.

    The console script when that is what runs (absolute, so the terminal's PATH does not matter),
    else this interpreter with `-m acp_agent.cli`.
    """
    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = sys.executable if executable is None else executable
    if argv0 and not argv0.endswith(".py") and os.path.isfile(argv0) and os.access(argv0, os.X_OK):
        return (os.path.abspath(argv0),)
    return (executable, "-m", "acp_agent.cli")


def vendor_logins(provider: ProviderSpec, environ: Mapping[str, str]) -> tuple[TerminalLogin, ...]:
    """The provider's sign-ins that suit this machine (local or remote), in its order."""
    unwanted: Literal["local", "remote"] = "local" if is_remote(environ) else "remote"
    return tuple(login for login in provider.credentials.terminal_logins if login.where != unwanted)


def key_method_id(provider: ProviderSpec) -> str:
    return f"{provider.name}-terminal"


def auth_methods(provider: ProviderSpec, capabilities: acp.ClientCapabilities, environ: Mapping[str, str],
                 command: Sequence[str]) -> list[acp.AuthMethod]:
    """`initialize`'s auth methods: the agent method always; terminal ones only when asked for."""
    spec = provider.credentials
    hint = spec.login_hint or f"Configure credentials for {provider.title}."
    methods = [acp.AuthMethod(id=provider.name, name=f"{provider.title} credentials", description=hint)]
    offered, with_meta = client_runs_terminal_auth(capabilities)
    if not offered:
        return methods

    def meta(args: Sequence[str], label: str) -> dict[str, Any] | Unset:
        if not with_meta:
            return UNSET
        return {META_KEY: {"command": command[0], "args": [*command[1:], *args], "label": label}}

    key_args = ["auth", "set", "--provider", provider.name]
    methods.append(acp.AuthMethod(
        id=key_method_id(provider), name=f"Store a {provider.title} key in the keyring",
        description="Runs `acp-agent auth set` in a terminal.", type="terminal", args=key_args,
        meta=meta(key_args, f"{provider.title} API key")))
    for login in vendor_logins(provider, environ):
        # `--provider` too: whether a client appends `args` to its configured ones or runs the agent
        # with `args` alone, the command names the provider (a repeated option takes the last value).
        args = ["--provider", provider.name, "--cli", *login.args]
        methods.append(acp.AuthMethod(id=login.id, name=login.name, description=login.description,
                                      type="terminal", args=args, meta=meta(args, login.label)))
    return methods


async def vendor_status(program: str, args: Sequence[str], environ: Mapping[str, str]) -> bool | None:
    """Whether the vendor CLI says it is signed in (exit 0), or None when it could not answer.

    Bounded by `STATUS_BUDGET_S`; its output only reaches the debug log (it may name an account).
    """
    from acp_agent.backends.process import parent_death_argv  # not needed to offer the methods at `initialize`

    command = (program, *args)
    try:
        with anyio.fail_after(STATUS_BUDGET_S):
            result = await anyio.run_process(parent_death_argv(command, environ), env=dict(environ), check=False)
    except (OSError, TimeoutError) as exc:
        log.warning("%s could not be run: %s", os.path.basename(program), type(exc).__name__)
        return None
    log.info("%s %s exited with %d", os.path.basename(program), " ".join(args), result.returncode)
    return result.returncode == 0
