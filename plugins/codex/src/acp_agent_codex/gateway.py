"""Codex's LLM routing slot `openai` (ACP's unstable `providers/*`, `acp_agent.gateways`).

A route becomes the `custom-gateway` model provider of the threads opened after it, as
codex-acp's CodexAcpClient.ts names it: `model_provider` and `model_providers.custom-gateway`
(`name`, `base_url`, `wire_api`, `http_headers`) in the thread's own config overrides, which go to
app-server over its stdin with `thread/start`, `thread/resume` and `thread/fork` (never a command
line or an environment; app-server keeps running for the sessions opened before, which keep
their provider).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from acp_agent.provider import SETTINGS_LIMIT, GatewayRoute, UnsafeFile, read_regular_file

SLOT = "openai"
PROVIDER_ID = "custom-gateway"
WIRE_APIS = {"openai": "responses"}
"""The `apiType`s the slot speaks, and codex's `wire_api` for each (codex-acp's
`SUPPORTED_GATEWAY_PROTOCOLS`)."""
DEFAULT_BASE_URL = "https://api.openai.com/v1"


def route_config(route: GatewayRoute | None) -> dict[str, Any]:
    """The thread config overrides for `route` (empty: none, the user's own provider)."""
    if route is None:
        return {}
    provider: dict[str, Any] = {"name": "User-provided gateway", "base_url": route.base_url,
                                "wire_api": WIRE_APIS[route.api_type]}
    if route.headers:
        provider["http_headers"] = dict(route.headers)
    return {"model_provider": PROVIDER_ID, f"model_providers.{PROVIDER_ID}": provider}


def native_route(environ: Mapping[str, str]) -> tuple[str, str]:
    """Where codex sends model requests without a gateway: the base URL of the model provider
    its config.toml chooses (its built-in `openai`: `OPENAI_BASE_URL` or OpenAI's)."""
    from acp_agent_codex import codex_home

    fallback = environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    try:
        data = read_regular_file(os.path.join(codex_home(environ), "config.toml"), SETTINGS_LIMIT)
    except (OSError, UnsafeFile):
        return "openai", fallback
    import tomllib

    try:
        config = tomllib.loads(data.decode())
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return "openai", fallback
    chosen, providers = config.get("model_provider"), config.get("model_providers")
    provider = providers.get(chosen) if isinstance(chosen, str) and isinstance(providers, Mapping) else None
    base_url = provider.get("base_url") if isinstance(provider, Mapping) else None
    return "openai", base_url if isinstance(base_url, str) and base_url else fallback
