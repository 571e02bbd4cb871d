"""The Codex provider's entry point: the hook that registers its `ProviderSpec`, and its failure hooks.

This module is imported on every `acp-agent` start (for every installed provider), so it stays
cheap: the runtime that drives `codex app-server` is imported inside `open_runtime`, and the
bundled binary is only looked up when something asks for it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager

from acp_agent.provider import (
    BackendStatus,
    CredentialSpec,
    GatewaySlot,
    ProviderRuntime,
    ProviderSpec,
    RuntimeCapabilities,
    RuntimeContext,
    TerminalLogin,
    hookimpl,
)
from acp_agent_codex.prestart import BIN_VAR as BIN_VAR
from acp_agent_codex.prestart import find_codex as find_codex

log = logging.getLogger(__name__)

INSTALL_HINT = "install the `openai-codex-cli-bin` wheel or set ACP_AGENT_CODEX_BIN to a codex binary"


def codex_home(environ: Mapping[str, str]) -> str:
    """`$CODEX_HOME`, else `~/.codex` (codex's own rule)."""
    explicit = environ.get("CODEX_HOME")
    if explicit:
        return explicit
    home = environ.get("HOME") or os.path.expanduser("~")
    return os.path.join(home, ".codex")


def _stored_files(environ: Mapping[str, str]) -> Sequence[str]:
    return [os.path.join(codex_home(environ), "auth.json")]


def check_backend() -> BackendStatus:
    binary = find_codex(os.environ)
    if binary is None:
        return BackendStatus(False, f"no codex binary found: {INSTALL_HINT}")
    if not os.path.isfile(binary) or not os.access(binary, os.X_OK):
        return BackendStatus(False, f"{binary} is not an executable file: {INSTALL_HINT}")
    return BackendStatus(True, binary)


@asynccontextmanager
async def open_runtime(context: RuntimeContext) -> AsyncIterator[ProviderRuntime]:
    """Opened as soon as `initialize` is answered (`start_early`): app-server (the command
    line's, adopted, already greeted) and its handshake start, then the runtime module is
    loaded, which takes that process for its first session; so the runtime's imports never delay
    `initialize` nor app-server's boot. A spawn that fails here is only logged: the runtime starts
    app-server again on the request path and answers with that attempt's error."""
    import anyio

    from acp_agent_codex.appserver import APP_SERVER_NAME, AppServer, serve_app_server
    from acp_agent_codex.prestart import app_server_argv, child_environment, greeting

    binary = find_codex(context.environ)
    async with anyio.create_task_group() as group:
        early: AppServer | None = None
        if binary is not None:
            argv, env, hello = app_server_argv(binary, context.environ), child_environment(context.environ), greeting()
            adopted = context.prestarted.take("codex", argv, env, hello)  # the command line's, if it matches
            try:
                early = await group.start(serve_app_server, argv, env, 1, adopted, hello)
            except OSError as exc:
                log.info("%s was not started early: %s", APP_SERVER_NAME, type(exc).__name__)
        try:
            from acp_agent_codex.runtime import open_codex_runtime

            log.debug("the Codex runtime is loaded")
            async with open_codex_runtime(context, group, early) as runtime:
                yield runtime
        finally:
            if early is not None:
                early.request_stop()  # unless the runtime took it (then it has stopped it already)
            group.cancel_scope.cancel()


# `codex login` opens a browser on this machine; without one (SSH, NO_BROWSER) the device-code
# sign-in shows a URL and a code to enter anywhere.
TERMINAL_LOGINS = (
    TerminalLogin(id="chatgpt-login", name="ChatGPT", description="Sign in with your ChatGPT account",
                  args=("login",), label="ChatGPT Login", where="local"),
    TerminalLogin(id="chatgpt-device-login", name="ChatGPT (device code)",
                  description="Sign in to ChatGPT by opening a verification page and entering a one-time code",
                  args=("login", "--device-auth"), label="ChatGPT Login", where="remote"),
)


def _native_route(environ: Mapping[str, str]) -> tuple[str, str]:
    from acp_agent_codex.gateway import native_route

    return native_route(environ)


# app-server's one LLM slot, as codex-acp offers it: `acp_agent_codex.gateway`.
GATEWAY = GatewaySlot("openai", ("openai",), native=_native_route)


@hookimpl
def acp_agent_providers() -> list[ProviderSpec]:
    return [
        ProviderSpec(
            name="codex",
            title="Codex",
            open_runtime=open_runtime,
            prestart="acp_agent_codex.prestart:prestart",  # app-server, greeted, at once
            credentials=CredentialSpec(
                env_vars=("OPENAI_API_KEY", "CODEX_API_KEY"),
                keyring_env_var="OPENAI_API_KEY",
                stored_files=_stored_files,
                login_hint="run `acp-agent auth set --provider codex` or sign in with "
                           "`acp-agent login --provider codex`",
                vendor_cli=find_codex,
                logout_args=("logout",),
                status_args=("login", "status"),
                terminal_logins=TERMINAL_LOGINS,
                per_session=False,  # one app-server per agent process serves every session
            ),
            check_backend=check_backend,
            capabilities=RuntimeCapabilities(
                load_session=True,
                list_sessions=True,
                resume_session=True,
                close_session=True,
                fork_session=True,
                fork_at_message=True,  # thread/fork.lastTurnId: the turn that holds the message
                custom_instructions=True,  # thread/start|resume|fork developerInstructions
                delete_session=True,
                set_title=True,
                archive_sessions=True,  # thread/archive, thread/unarchive, thread/list {archived}
                additional_directories=True,  # app-server's runtimeWorkspaceRoots
                file_changes=True,  # fileChange items name their files
                file_patches=True,  # fileChange.changes: whole texts and unified diffs
                recommended_values=True,  # model/list: isDefault, defaultReasoningEffort
                raw_input=True,  # no display copy of a tool's input in its content
                plan_content_delta=True,  # plan mode's plan items stream (`item/plan/delta`)
                image=True,
                embedded_context=True,
                steering=True,
                goal_actions=("set", "pause", "resume", "clear"),  # thread/goal/set, thread/goal/clear
                codex_hooks=True,  # hooks/list, config/batchWrite
                mcp_http=True,  # `mcp_servers.<name>.url`: codex speaks streamable HTTP (no SSE)
                subagents=True,  # spawn_agent's child threads (`acp_agent_codex.subagents`)
            ),
            gateways=(GATEWAY,),
            description="OpenAI Codex through `codex app-server`.",
            classify_failure="acp_agent_codex.classify:classify_failure",  # after any plugin's failure hooks
            failure_title="acp_agent_codex.classify:failure_title",
            recognise_history="acp_agent_codex.items:recognise_turn",
            start_early=True,  # one app-server for every session: it starts while the client initializes
        )
    ]
