"""Gateways: ACP's unstable `providers/list`, `providers/set` and `providers/disable`.

An ACP "provider" there is an LLM routing slot (not a provider plugin of acp-agent): the client
points a slot at its gateway (`apiType`, `baseUrl`, `headers`) and the sessions the agent opens
from then on send their model requests there. A plugin declares its backend's slots as
`ProviderSpec.gateways`; the core keeps the process-scoped routing (`Gateways`), checks each
request, and hands every session it creates, loads, resumes or forks a snapshot of it (read with
`gateway_route(channel, slot)`). A running session keeps the routing it was opened with.

Header values are secrets (an API key travels there under any name): they are held by the
redactor before the request is checked, so no answer, error or log line carries them, and
`providers/list` never shows headers.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

from attrs import field

from acp_agent.failures.redaction import Redactor, mcp_secret_values
from acp_agent.wire.convert import clip
from acp_agent.wire.records import frozen
from acp_agent.wire.rpc import INVALID_PARAMS, RpcError

log = logging.getLogger(__name__)

_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""An HTTP header name (RFC 9110 token)."""


@frozen
class GatewayRoute:
    """Where a slot's model requests go: what `providers/set` asked for. `headers` (secrets)
    and `meta` (the request's `_meta`, for a provider's own parameters, e.g. Claude's Vertex
    project) never show in a repr."""

    provider_id: str
    api_type: str
    base_url: str
    headers: Mapping[str, str] = field(factory=dict, repr=False)
    meta: Mapping[str, Any] = field(factory=dict, repr=False)


@frozen
class GatewaySlot:
    """One routing slot of a provider's backend, as the plugin declares it.

    `api_types`: the `apiType`s the backend can speak there (ACP's `LlmProtocol` names);
    `native`: the `(apiType, baseUrl)` the backend uses without a gateway, from the agent's
    environment (what `providers/list` shows then); `check`: a provider's own test of a route
    (None: fine; else the reason, answered -32602)."""

    provider_id: str
    api_types: tuple[str, ...]
    native: Callable[[Mapping[str, str]], tuple[str, str]]
    check: Callable[[GatewayRoute], str | None] = lambda route: None


def gateway_route(channel: object, provider_id: str) -> GatewayRoute | None:
    """The route the session was opened with for the slot `provider_id` (None: the backend's own
    routing). A channel that does not carry routes (a test's stand-in) has none."""
    routes = getattr(channel, "gateways", None)
    route = routes.get(provider_id) if isinstance(routes, Mapping) else None
    return route if isinstance(route, GatewayRoute) else None


def valid_base_url(value: object) -> bool:
    """A non-empty absolute http(s) URL with a host."""
    if not isinstance(value, str) or not value.strip() or any(c in value for c in "\r\n\t "):
        return False
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


class Gateways:
    """The agent's routing for its provider's slots, set by the client for later sessions."""

    def __init__(self, slots: tuple[GatewaySlot, ...], environ: Mapping[str, str], redact: Redactor) -> None:
        self.slots = {slot.provider_id: slot for slot in slots}
        self._environ = environ
        self._redact = redact
        self._routes: dict[str, GatewayRoute] = {}

    def snapshot(self) -> dict[str, GatewayRoute]:
        """The routes a session opened now gets (and keeps)."""
        return dict(self._routes)

    def listing(self) -> dict[str, Any]:
        """`providers/list`: every slot with its current `apiType` and `baseUrl` (the gateway's, or
        the backend's own); headers never."""
        providers: list[dict[str, Any]] = []
        for slot in self.slots.values():
            route = self._routes.get(slot.provider_id)
            api_type, base_url = (route.api_type, route.base_url) if route is not None \
                else slot.native(self._environ)
            providers.append({"providerId": slot.provider_id, "supported": list(slot.api_types),
                              "required": False, "current": {"apiType": api_type, "baseUrl": base_url}})
        return {"providers": providers}

    def set(self, params: Any) -> None:
        """`providers/set`: the slot's full routing, replaced (-32602 for an unknown slot, an
        `apiType` it does not speak, a base URL that is not http(s), malformed headers)."""
        if isinstance(params, Mapping):
            headers = params.get("headers")
            if isinstance(headers, Mapping):  # held before anything is checked or logged
                self._redact.add(*mcp_secret_values([{"headers": dict(headers)}]))
        else:
            raise RpcError(INVALID_PARAMS, "providers/set needs an object of parameters")
        slot = self._slot(params)
        api_type = params.get("apiType")
        if api_type not in slot.api_types:
            raise RpcError(INVALID_PARAMS, f"Unsupported apiType {clip(str(api_type))!r} for provider "
                           f"{slot.provider_id!r}; supported: {', '.join(slot.api_types)}",
                           {"field": "apiType", "supported": list(slot.api_types)})
        base_url = params.get("baseUrl")
        if not valid_base_url(base_url):
            raise RpcError(INVALID_PARAMS, "baseUrl must be a non-empty absolute http(s) URL",
                           {"field": "baseUrl"})
        headers = params.get("headers") or {}
        if not isinstance(headers, Mapping) or not all(
                isinstance(name, str) and _HEADER_NAME.fullmatch(name) and isinstance(value, str)
                and not any(c in value for c in "\r\n\0") for name, value in headers.items()):
            raise RpcError(INVALID_PARAMS, "headers must map header names to single-line strings",
                           {"field": "headers"})
        meta = params.get("_meta")
        assert isinstance(api_type, str) and isinstance(base_url, str)
        route = GatewayRoute(slot.provider_id, api_type, base_url, dict(headers),
                             dict(meta) if isinstance(meta, Mapping) else {})
        problem = slot.check(route)
        if problem is not None:
            raise RpcError(INVALID_PARAMS, problem, {"field": "_meta"})
        self._routes[slot.provider_id] = route
        log.info("providers/set %s: apiType %s, baseUrl %s, %d header(s); for sessions opened from now on",
                 slot.provider_id, api_type, self._redact(base_url), len(headers))

    def disable(self, params: Any) -> None:
        """`providers/disable`: the slot goes back to the backend's own routing for later
        sessions. An unknown slot is a success that changes nothing (as both reference adapters)."""
        provider_id = params.get("providerId") if isinstance(params, Mapping) else None
        if not isinstance(provider_id, str):
            raise RpcError(INVALID_PARAMS, "providers/disable needs a providerId", {"field": "providerId"})
        if self._routes.pop(provider_id, None) is not None:
            log.info("providers/disable %s: the backend's own routing for sessions opened from now on",
                     provider_id)

    def _slot(self, params: Mapping[str, Any]) -> GatewaySlot:
        provider_id = params.get("providerId")
        slot = self.slots.get(provider_id) if isinstance(provider_id, str) else None
        if slot is None:
            raise RpcError(INVALID_PARAMS, f"Unknown providerId {clip(str(provider_id))!r}; configurable: "
                           f"{', '.join(self.slots)}", {"field": "providerId"})
        return slot
