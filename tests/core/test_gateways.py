"""Gateways in the core (ACP's unstable `providers/*`, `acp_agent.gateways`): advertised and
served only for a provider that declares a routing slot, each `providers/set` checked, the routes
handed to the sessions opened later (a session opened before keeps its own), header values held
as secrets and never listed."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Mapping
from typing import Any

import pytest
from attrs import evolve

from acp_agent.gateways import GatewayRoute, GatewaySlot, gateway_route
from acp_agent.testing import run_in_process
from acp_agent.wire.rpc import RpcError
from acp_agent_scripted import ScriptedRuntime, make_spec

pytestmark = [pytest.mark.timeout(30), pytest.mark.anyio]
CWD = tempfile.gettempdir()
SECRET = "gw-secret-0a1b2c3d4e"
NEW = {"cwd": CWD, "mcpServers": []}


def native(environ: Mapping[str, str]) -> tuple[str, str]:
    return "anthropic", environ.get("NATIVE_URL", "https://native.example/")


def needs_region(route: GatewayRoute) -> str | None:
    return "bedrock needs a region" if route.api_type == "bedrock" and "region" not in route.meta else None


def routed_spec() -> Any:
    return evolve(make_spec({}), gateways=(GatewaySlot("main", ("anthropic", "bedrock"), native=native,
                                                        check=needs_region),))


def runtime_of(client: Any) -> ScriptedRuntime:
    host = client.agent._opening
    assert host is not None and isinstance(host.runtime, ScriptedRuntime)
    return host.runtime


async def test_a_provider_without_a_slot_advertises_and_serves_none() -> None:
    async with run_in_process(make_spec({})) as client:
        caps = (await client.initialize())["agentCapabilities"]
        codes = []
        for method in ("providers/list", "providers/set", "providers/disable"):
            with pytest.raises(RpcError) as caught:
                await client.request(method, {"providerId": "main"})
            codes.append(caught.value.code)
    assert "providers" not in caps
    assert codes == [-32601] * 3


async def test_later_sessions_get_the_route_and_earlier_ones_keep_theirs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with run_in_process(routed_spec()) as client:
        caps = (await client.initialize())["agentCapabilities"]
        native_list = await client.request("providers/list", {})
        earlier = await client.request("session/new", NEW)
        answer = await client.request("providers/set", {"providerId": "main", "apiType": "anthropic",
                                                        "baseUrl": "http://127.0.0.1:9/gw",
                                                        "headers": {"Authorization": f"Bearer {SECRET}"}})
        listed = await client.request("providers/list", {})
        await client.request("session/new", NEW)
        await client.request("providers/disable", {"providerId": "main"})
        await client.request("session/new", NEW)
        channels = runtime_of(client).creation_channels
        kept = client.agent.sessions[earlier["sessionId"]].gateways
        held = client.agent.settings.redact.secrets()
    assert caps["providers"] == {}
    assert answer == {}
    assert native_list["providers"] == [{"providerId": "main", "supported": ["anthropic", "bedrock"],
                                         "required": False,
                                         "current": {"apiType": "anthropic", "baseUrl": "https://native.example/"}}]
    assert listed["providers"][0]["current"] == {"apiType": "anthropic", "baseUrl": "http://127.0.0.1:9/gw"}
    assert "headers" not in listed["providers"][0]
    routes = [gateway_route(channel, "main") for channel in channels]
    assert routes[0] is None and routes[2] is None and kept == {}
    assert routes[1] is not None and routes[1].headers == {"Authorization": f"Bearer {SECRET}"}
    assert SECRET not in repr(routes[1])
    assert f"Bearer {SECRET}" in held
    assert SECRET not in caplog.text


@pytest.mark.parametrize(("change", "field"), [
    ({"providerId": "openai"}, "providerId"),
    ({"apiType": "openai"}, "apiType"),
    ({"apiType": "bedrock"}, "_meta"),  # the slot's own check
    ({"baseUrl": "file:///etc/passwd"}, "baseUrl"),
    ({"baseUrl": "http://"}, "baseUrl"),
    ({"baseUrl": ""}, "baseUrl"),
    ({"baseUrl": 7}, "baseUrl"),
    ({"headers": {"X-Key": f"{SECRET}\r\nX-Injected: 1"}}, "headers"),
    ({"headers": {"Bad Name": SECRET}}, "headers"),
    ({"headers": {"X-Key": 5}}, "headers"),
], ids=["slot", "api-type", "slot-check", "scheme", "no-host", "empty-url", "url-type", "header-newline",
        "header-name", "header-type"])
async def test_a_route_the_slot_cannot_take_is_invalid_params(change: dict[str, Any], field: str) -> None:
    params = {"providerId": "main", "apiType": "anthropic", "baseUrl": "https://gw.example/",
              "headers": {"X-Key": SECRET}, **change}
    async with run_in_process(routed_spec()) as client:
        await client.initialize()
        with pytest.raises(RpcError) as caught:
            await client.request("providers/set", params)
        listed = await client.request("providers/list", {})
    assert caught.value.code == -32602
    assert caught.value.data is not None and caught.value.data.get("field") == field
    assert SECRET not in str(caught.value.message) and SECRET not in str(caught.value.data)
    assert listed["providers"][0]["current"]["baseUrl"] == "https://native.example/"


async def test_a_resumed_session_takes_the_routing_of_its_resume() -> None:
    spec = evolve(routed_spec(), open_runtime=make_spec({"history": {"stored-1": []}}).open_runtime)
    async with run_in_process(spec) as client:
        await client.initialize()
        await client.request("providers/set", {"providerId": "main", "apiType": "anthropic",
                                               "baseUrl": "https://gw.example/"})
        await client.request("session/resume", {"sessionId": "stored-1", **NEW})
        route = client.agent.sessions["stored-1"].gateways.get("main")
    assert route is not None and route.base_url == "https://gw.example/"
