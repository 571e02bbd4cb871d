"""Claude Code's LLM routing slot `main` (ACP's unstable `providers/*`, `acp_agent.gateways`):
a route becomes the environment of the CLIs of the sessions opened after it, the variables
claude-agent-acp's `createEnvForProvider` sets. Headers go in `ANTHROPIC_CUSTOM_HEADERS`
(the environment, never the command line); the agent's own key is not sent to the gateway."""

from __future__ import annotations

from collections.abc import Mapping

from acp_agent.provider import GatewayRoute

SLOT = "main"
DEFAULT_VERTEX_BASE_URL = "https://aiplatform.googleapis.com"
AUTH_TOKEN_PLACEHOLDER = "acp-proxy"
"""The bearer token the CLI sends to a gateway (unless the route's headers replace it), so it
skips its own login check: claude-agent-acp's `PROVIDER_AUTH_TOKEN_PLACEHOLDER`."""

_RESET = {
    "ANTHROPIC_BASE_URL": "", "ANTHROPIC_BEDROCK_BASE_URL": "", "ANTHROPIC_VERTEX_BASE_URL": "",
    "CLAUDE_CODE_USE_BEDROCK": "0", "CLAUDE_CODE_USE_VERTEX": "0", "ANTHROPIC_VERTEX_PROJECT_ID": "",
    "CLOUD_ML_REGION": "", "AWS_REGION": "", "ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": "",
    "CLAUDE_CODE_OAUTH_TOKEN": "",
}
"""What the agent's environment may route elsewhere, or authenticate with, is reset."""


def route_env(route: GatewayRoute | None) -> dict[str, str]:
    """The CLI's environment for `route` (empty: none, the CLI's own routing)."""
    if route is None:
        return {}
    headers = "\n".join(f"{name}: {value}" for name, value in route.headers.items())
    if route.api_type == "bedrock":
        return {**_RESET, "CLAUDE_CODE_USE_BEDROCK": "1", "AWS_BEARER_TOKEN_BEDROCK": AUTH_TOKEN_PLACEHOLDER,
                "ANTHROPIC_BEDROCK_BASE_URL": route.base_url, "ANTHROPIC_CUSTOM_HEADERS": headers}
    if route.api_type == "vertex":
        project, region = vertex_of(route.meta)
        env = {**_RESET, "CLAUDE_CODE_USE_VERTEX": "1", "ANTHROPIC_VERTEX_PROJECT_ID": project or "",
               "CLOUD_ML_REGION": region or "", "ANTHROPIC_CUSTOM_HEADERS": headers}
        if route.base_url != DEFAULT_VERTEX_BASE_URL:  # the default host: Claude Code's own endpoint
            env["ANTHROPIC_VERTEX_BASE_URL"] = route.base_url
        return env
    return {**_RESET, "ANTHROPIC_BASE_URL": route.base_url, "ANTHROPIC_CUSTOM_HEADERS": headers,
            "ANTHROPIC_AUTH_TOKEN": AUTH_TOKEN_PLACEHOLDER}


def vertex_of(meta: Mapping[str, object]) -> tuple[str | None, str | None]:
    """`_meta.claudeCode.vertex {projectId, region}` of a `providers/set` (as claude-agent-acp)."""
    code = meta.get("claudeCode")
    vertex = code.get("vertex") if isinstance(code, Mapping) else None
    if not isinstance(vertex, Mapping):
        return None, None
    project, region = vertex.get("projectId"), vertex.get("region")
    return (project.strip() or None if isinstance(project, str) else None,
            region.strip() or None if isinstance(region, str) else None)
