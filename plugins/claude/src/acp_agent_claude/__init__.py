"""The Claude Code provider for acp-agent.

Registers the provider record only; the runtime is imported when the first session starts, so
`acp-agent --help`, `providers` and `initialize` stay fast. claude-agent-sdk is never imported on
the way to a session: it is the distribution that ships the CLI (see `locate`).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from acp_agent.provider import (
    BackendStatus,
    CredentialSpec,
    GatewaySlot,
    ProviderSpec,
    RuntimeCapabilities,
    TerminalLogin,
    hookimpl,
)

if TYPE_CHECKING:
    from acp_agent.provider import GatewayRoute, ProviderRuntime, RuntimeContext

def find_cli(environ: Mapping[str, str] | None = None) -> str | None:
    """The Claude Code CLI to run (`acp_agent_claude.locate.find_cli`, loaded when first asked:
    every installed plugin registers on every start, whatever the provider)."""
    from acp_agent_claude.locate import find_cli as find

    return find(environ)


def check_backend() -> BackendStatus:
    from acp_agent_claude.locate import CLI_ENV

    path = find_cli()
    if path and os.access(path, os.X_OK):
        return BackendStatus(True, f"Claude Code CLI at {path}")
    if path:
        return BackendStatus(False, f"{path} is not an executable file ({CLI_ENV})")
    return BackendStatus(False, "the Claude Code CLI was not found; reinstall acp-agent-claude or set "
                                f"{CLI_ENV}")


def stored_credentials(environ: Mapping[str, str]) -> list[str]:
    config = environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    return [os.path.join(config, ".credentials.json")]


def check_cli(environ: Mapping[str, str]) -> None:
    """Refuse to start when the configured or bundled CLI is missing or cannot run, saying which and why.

    Without a path (nothing bundled, no variable) `claude` on PATH is tried when a session starts.
    """
    path = find_cli(environ)
    if not path:
        return
    from acp_agent.provider import PhaseFailed, executable_problem
    from acp_agent_claude.classify import cli_unavailable

    problem = executable_problem(path, environ)
    if problem is not None:
        raise PhaseFailed(cli_unavailable(problem))


@asynccontextmanager
async def open_runtime(context: RuntimeContext) -> AsyncIterator[ProviderRuntime]:
    check_cli(context.environ)

    import anyio

    from acp_agent_claude.locate import program
    from acp_agent_claude.runtime import ClaudeRuntime

    # The task group runs the CLIs' connects and the stops of failed attempts; leaving it waits for them.
    async with anyio.create_task_group() as task_group:
        runtime = ClaudeRuntime(context, program(context.environ), task_group)
        try:
            yield runtime
        finally:
            with anyio.CancelScope(shield=True):
                await runtime.aclose()


# claude-agent-acp's sign-ins. Without a local browser (SSH, NO_BROWSER) `auth login` would fall
# back to a paste-the-code flow; the interactive CLI's own /login handles that machine better.
TERMINAL_LOGINS = (
    TerminalLogin(id="claude-ai-login", name="Claude Subscription", description="Use Claude subscription",
                  args=("auth", "login", "--claudeai"), label="Claude Login", where="local"),
    TerminalLogin(id="console-login", name="Anthropic Console",
                  description="Use Anthropic Console (API usage billing)",
                  args=("auth", "login", "--console"), label="Anthropic Console Login", where="local"),
    TerminalLogin(id="claude-login", name="Log in with Claude", description="Run `claude /login` in the terminal",
                  args=(), label="Claude Login", where="remote"),
)


def _on(value: str | None) -> bool:
    return bool(value) and str(value).strip().lower() not in ("0", "false", "no", "off")


def native_route(environ: Mapping[str, str]) -> tuple[str, str]:
    """Where the CLI sends model requests without a gateway: its own variables decide."""
    if _on(environ.get("CLAUDE_CODE_USE_BEDROCK")):
        return "bedrock", environ.get("ANTHROPIC_BEDROCK_BASE_URL") or "https://bedrock-runtime.amazonaws.com"
    if _on(environ.get("CLAUDE_CODE_USE_VERTEX")):
        return "vertex", environ.get("ANTHROPIC_VERTEX_BASE_URL") or "https://aiplatform.googleapis.com"
    return "anthropic", environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"


def check_route(route: GatewayRoute) -> str | None:
    """Vertex needs a project and a region, which only `_meta.claudeCode.vertex` can carry."""
    if route.api_type != "vertex":
        return None
    from acp_agent_claude.gateway import vertex_of

    if None in vertex_of(route.meta):
        return ("vertex apiType requires non-empty `_meta.claudeCode.vertex.projectId` and "
                "`_meta.claudeCode.vertex.region`")
    return None


# The CLI's one LLM slot, as claude-agent-acp offers it: `acp_agent_claude.gateway`.
GATEWAY = GatewaySlot("main", ("anthropic", "bedrock", "vertex"), native=native_route, check=check_route)


def provider_spec() -> ProviderSpec:
    return ProviderSpec(
        name="claude",
        title="Claude Code",
        open_runtime=open_runtime,
        prestart="acp_agent_claude.prestart:prestart",  # a spare CLI for the first session
        credentials=CredentialSpec(
            env_vars=("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"),
            keyring_env_var="ANTHROPIC_API_KEY",
            stored_files=stored_credentials,
            login_hint="set ANTHROPIC_API_KEY, run `acp-agent auth set --provider claude`, or sign in with "
                       "`acp-agent login --provider claude`",
            client_env_vars=("ANTHROPIC_BASE_URL",),
            vendor_cli=find_cli,
            logout_args=("auth", "logout"),
            status_args=("auth", "status"),
            terminal_logins=TERMINAL_LOGINS,
        ),
        check_backend=check_backend,
        capabilities=RuntimeCapabilities(load_session=True, list_sessions=True, resume_session=True,
                                         close_session=True, fork_session=True,
                                         delete_session=True, image=True, embedded_context=True,
                                         mcp_http=True, mcp_sse=True, additional_directories=True,
                                         steering=True, set_title=True, fork_at_message=True,
                                         file_changes=True,  # Edit/Write tool calls name their file
                                         file_patches=True,  # from Edit/Write's tool_use_result
                                         raw_input=True,  # no display copy of a tool's input
                                         plan_file=True,
                                         subagents=True,
                                         background_subagents=True,  # Agent's run_in_background
                                         custom_instructions=True,
                                         recommended_values=True,  # the default model, medium effort
                                         async_tasks=True,  # background commands (`bash_tasks`)
                                         # Claude Code's `/goal` (a session Stop hook): no pause
                                         goal_actions=("set", "clear"), goal_if_declared=True),
        gateways=(GATEWAY,),
        description="Claude Code: its CLI (shipped with claude-agent-sdk) over stream-json",
        classify_failure="acp_agent_claude.classify:classify_failure",  # after any plugin's failure hooks
        failure_title="acp_agent_claude.classify:failure_title",
        recognise_history="acp_agent_claude.history:recognise_entry",
    )


@hookimpl
def acp_agent_providers() -> list[ProviderSpec]:
    return [provider_spec()]
