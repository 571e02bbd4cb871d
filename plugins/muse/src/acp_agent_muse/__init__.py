"""The Muse Code provider's entry point: only the hook that registers its `ProviderSpec`.

This module is imported on every `acp-agent` start (for every installed provider), so it stays
cheap: the runtime that drives `muse serve`, and the generated MSP types it uses, are imported
inside `open_runtime`; the executable is looked up only when something asks for it.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager

from acp_agent.provider import (
    BackendStatus,
    CredentialSpec,
    ProviderRuntime,
    ProviderSpec,
    RuntimeCapabilities,
    RuntimeContext,
    TerminalLogin,
    hookimpl,
)

EXECUTABLE_VAR = "MUSE_CODE_EXECUTABLE"
BINARY_NAME = "muse"
INSTALL_HINT = (
    "the Muse Code CLI is not on any package registry: install it from Meta and put `muse` on PATH, "
    f"or set {EXECUTABLE_VAR} to the `muse` executable (supported host versions: "
    "https://meta-models.github.io/muse-code-sdk/compatibility/)"
)
STARTUP_ALIAS = "MUSE_CODE_ACP_STARTUP_TIMEOUT_MS"
SUBMIT_ALIAS = "MUSE_CODE_ACP_SUBMIT_TIMEOUT_MS"


def find_muse(environ: Mapping[str, str]) -> str | None:
    """`MUSE_CODE_EXECUTABLE` when set, else `muse` on the environment's PATH (None: not found)."""
    explicit = environ.get(EXECUTABLE_VAR)
    if explicit:
        return explicit
    import shutil

    return shutil.which(BINARY_NAME, path=environ.get("PATH", os.defpath))


def config_home(environ: Mapping[str, str]) -> str:
    """`$XDG_CONFIG_HOME`, else `~/.config` (the Muse CLI's own rule)."""
    xdg = environ.get("XDG_CONFIG_HOME")
    if xdg:
        return xdg
    home = environ.get("HOME") or os.path.expanduser("~")
    return os.path.join(home, ".config")


def stored_credentials(environ: Mapping[str, str]) -> Sequence[str]:
    """Muse's own sign-in file: evidence by presence and size only, never read."""
    return [os.path.join(config_home(environ), "muse", "auth.json")]


def check_backend() -> BackendStatus:
    executable = find_muse(os.environ)
    if executable is None:
        return BackendStatus(False, f"no `muse` executable found: {INSTALL_HINT}")
    if not os.path.isfile(executable) or not os.access(executable, os.X_OK):
        return BackendStatus(False, f"{executable} is not an executable file: {INSTALL_HINT}")
    return BackendStatus(True, f"Muse Code CLI at {executable}")


@asynccontextmanager
async def open_runtime(context: RuntimeContext) -> AsyncIterator[ProviderRuntime]:
    from acp_agent_muse.runtime import open_muse_runtime

    async with open_muse_runtime(context) as runtime:
        yield runtime


def provider_spec() -> ProviderSpec:
    return ProviderSpec(
        name="muse",
        title="Muse Code",
        open_runtime=open_runtime,
        credentials=CredentialSpec(
            env_vars=("META_API_KEY",),
            keyring_env_var="META_API_KEY",
            stored_files=stored_credentials,
            stored_min_bytes=2,
            login_hint="set META_API_KEY, run `acp-agent auth set --provider muse`, or sign in with "
                       "`acp-agent login --provider muse`",
            vendor_cli=find_muse,
            logout_args=("logout",),
            # Muse has no status command: after `muse login` its auth.json is the evidence.
            terminal_logins=(TerminalLogin(id="muse-login", name="Muse Code sign-in",
                                           description="Run `muse login` in the terminal",
                                           args=("login",), label="Muse Code Login"),),
        ),
        check_backend=check_backend,
        capabilities=RuntimeCapabilities(
            load_session=True,
            list_sessions=True,
            resume_session=True,
            close_session=True,
            fork_session=True,
            fork_at_message=True,  # session/fork cutPoint.lastTurnId: the turn that holds the message
            set_title=True,  # MSP `session/rename`
            additional_directories=True,  # MSP `workspaceRoots` on session/start and turn/start
            file_changes=True,  # edit tool calls name their file in `args` (no diff: no diffPatch)
            raw_input=True,  # a tool's `args` as rawInput; content is its output only
            recommended_values=True,  # model/list: isDefault, defaultReasoningEffort
            image=True,
            embedded_context=True,
            steering=True,
            mcp_http=True,  # MSP's `streamableHttp` MCP transport (it has no SSE arm)
        ),
        deadline_aliases={
            "ACP_AGENT_STARTUP_TIMEOUT_MS": (STARTUP_ALIAS,),
            "ACP_AGENT_SUBMIT_TIMEOUT_MS": (SUBMIT_ALIAS,),
        },
        description="Meta's Muse Code through `muse serve` (Muse Session Protocol).",
        classify_failure="acp_agent_muse.classify:classify_failure",  # after any plugin's failure hooks
        failure_title="acp_agent_muse.classify:failure_title",
        recognise_history="acp_agent_muse.items:recognise_last_turn",
    )


@hookimpl
def acp_agent_providers() -> list[ProviderSpec]:
    return [provider_spec()]
