"""`additionalDirectories` and `session/delete` in the core: advertised, checked and routed only
for a provider that declares them."""

from __future__ import annotations

import tempfile
from typing import Any

import pytest
from attrs import evolve

from acp_agent.testing import run_in_process
from acp_agent.wire.rpc import RpcError
from acp_agent_scripted import ScriptedRuntime, make_spec

pytestmark = [pytest.mark.timeout(30), pytest.mark.anyio]
CWD = tempfile.gettempdir()


def widening_spec() -> Any:
    spec = make_spec({})
    return evolve(spec, capabilities=evolve(spec.capabilities, additional_directories=True))


def runtime_of(client: Any) -> ScriptedRuntime:
    host = client.agent._opening
    assert host is not None and isinstance(host.runtime, ScriptedRuntime)
    return host.runtime


async def test_a_provider_without_them_advertises_neither_and_refuses_directories() -> None:
    with tempfile.TemporaryDirectory() as extra:
        async with run_in_process(make_spec({})) as client:
            caps = (await client.initialize())["agentCapabilities"]["sessionCapabilities"]
            with pytest.raises(RpcError) as refused:
                await client.request("session/new", {"cwd": CWD, "mcpServers": [], "additionalDirectories": [extra]})
            plain = await client.request("session/new", {"cwd": CWD, "mcpServers": [], "additionalDirectories": []})
            with pytest.raises(RpcError) as delete:
                await client.request("session/delete", {"sessionId": plain["sessionId"]})
    assert "additionalDirectories" not in caps and "delete" not in caps
    assert (refused.value.code, refused.value.data) == (-32602, {"field": "additionalDirectories"})
    assert delete.value.code == -32601


async def test_the_checked_directories_reach_the_runtime_on_the_channel() -> None:
    with tempfile.TemporaryDirectory() as extra:
        async with run_in_process(widening_spec()) as client:
            caps = (await client.initialize())["agentCapabilities"]["sessionCapabilities"]
            await client.request("session/new", {"cwd": CWD, "mcpServers": [],
                                                 "additionalDirectories": [extra, extra]})
            channel = runtime_of(client).creation_channels[-1]
            errors = []
            for bad in ("relative", f"{extra}/missing"):
                with pytest.raises(RpcError) as caught:
                    await client.request("session/new", {"cwd": CWD, "mcpServers": [], "additionalDirectories": [bad]})
                errors.append((caught.value.code, caught.value.data))
    assert caps["additionalDirectories"] == {}
    assert channel.additional_directories == (extra,)  # duplicates dropped, order kept
    assert errors == [(-32602, {"field": "additionalDirectories"})] * 2
