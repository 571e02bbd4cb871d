"""Gateways (ACP's unstable `providers/*`) through `acp-agent` serving every provider: the
list holds every provider's slot (Claude `main`, Codex `openai`; Muse has none), and a
`providers/set` reaches the provider that owns the slot: a later Codex session (the real codex)
sends its model requests to the gateway, with the client's headers."""

from __future__ import annotations

import json
from pathlib import Path

import acp
import pytest

from tests.e2e.test_every_provider_e2e import every_agent, every_env, text
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(150)]
SECRET = "gw-secret-every-5e6f7a8b"


async def test_every_providers_slots_are_listed_and_set_where_they_belong(tmp_path: Path) -> None:
    with FakeAnthropicAPI([]) as claude, FakeResponsesAPI() as codex, FakeResponsesAPI() as gateway:
        urls = claude.base_url, codex.base_url, gateway.base_url
        env = every_env(claude, codex, tmp_path)
        async with every_agent(env, tmp_path, capable=False, args=("--default-provider", "codex")) as agent:
            caps = agent.frames.incoming[0]["result"]["agentCapabilities"]
            before = await agent.conn._conn.send_request("providers/list", {})
            await agent.conn._conn.send_request("providers/set", {
                "providerId": "openai", "apiType": "openai", "baseUrl": urls[2],
                "headers": {"X-Gateway-Key": SECRET}})
            await agent.conn._conn.send_request("providers/set", {
                "providerId": "main", "apiType": "anthropic", "baseUrl": urls[2]})
            after = await agent.conn._conn.send_request("providers/list", {})
            with pytest.raises(acp.RequestError) as unknown:
                await agent.conn._conn.send_request("providers/set", {
                    "providerId": "muse", "apiType": "openai", "baseUrl": urls[2]})
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("through the gateway"))

    assert caps["providers"] == {}
    current = {row["providerId"]: row["current"] for row in before["providers"]}
    assert current == {"main": {"apiType": "anthropic", "baseUrl": urls[0]},
                       "openai": {"apiType": "openai", "baseUrl": urls[1]}}
    assert {row["providerId"]: row["current"]["baseUrl"] for row in after["providers"]} == {
        "main": urls[2], "openai": urls[2]}
    assert unknown.value.code == -32602
    [routed] = gateway.turn_requests
    assert "through the gateway" in json.dumps(routed.body)
    assert routed.headers.get("x-gateway-key") == SECRET
    assert codex.turn_requests == []
    assert SECRET not in agent.frames.text()
    assert agent.frames.problems == []
