"""Gateways (ACP's unstable `providers/*`, issue 28 item 8) through `acp-agent --provider claude`,
the real Claude Code CLI and two fake Anthropic APIs: the agent's own (its environment's
`ANTHROPIC_BASE_URL`) and a gateway the client points the slot `main` at. Sessions opened after
`providers/set` send their model requests to the gateway with the client's headers (and not the
agent's key); a session opened before keeps its routing; `providers/disable` routes later
sessions back. The header's secret value never reaches the client, stderr or the log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp
import pytest

from tests.claude.e2e_support import API_KEY, claude_agent, text, wait_for_requests
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]

SECRET = "gw-secret-4f1c9a7e2b"
HEADERS = {"X-Gateway-Key": SECRET, "X-Route": "team-a"}


def turns(api: FakeAnthropicAPI) -> list[Any]:
    return [request for request in api.requests if request.kind == "turn"]


async def call(agent: Any, method: str, params: dict[str, Any]) -> Any:
    return await agent.conn._conn.send_request(method, params)


async def refused(agent: Any, method: str, params: dict[str, Any]) -> acp.RequestError:
    with pytest.raises(acp.RequestError) as caught:
        await call(agent, method, params)
    return caught.value


@pytest.mark.parametrize("capable", [True, False], ids=["air", "legacy"])
async def test_later_sessions_reach_the_gateway_with_its_headers(tmp_path: Path, capable: bool) -> None:
    with FakeAnthropicAPI([{"reply": "from the agent's API"}] * 2) as own, \
            FakeAnthropicAPI([{"reply": "from the gateway"}]) as gateway:
        own_url, gateway_url = own.base_url, gateway.base_url
        async with claude_agent(own, tmp_path, capable=capable) as agent:
            init = agent.frames.incoming[0]["result"]
            before_list = await call(agent, "providers/list", {})
            earlier = await agent.conn.new_session(cwd=str(tmp_path))
            await call(agent, "providers/set", {"providerId": "main", "apiType": "anthropic",
                                                "baseUrl": gateway.base_url, "headers": HEADERS})
            listed = await call(agent, "providers/list", {})
            later = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=later.session_id, prompt=text("through the gateway"))
            await wait_for_requests(gateway, 1, finished=True)
            await agent.conn.prompt(session_id=earlier.session_id, prompt=text("as before"))
            await wait_for_requests(own, 1, finished=True)
            await call(agent, "providers/disable", {"providerId": "main"})
            after_list = await call(agent, "providers/list", {})
            last = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=last.session_id, prompt=text("back home"))
            await wait_for_requests(own, 2, finished=True)
        stderr = (tmp_path / "agent-claude.stderr").read_text(errors="replace")
        log = agent.log_text()

    assert init["agentCapabilities"]["providers"] == {}
    slot = {"providerId": "main", "supported": ["anthropic", "bedrock", "vertex"], "required": False}
    assert before_list == {"providers": [{**slot, "current": {"apiType": "anthropic", "baseUrl": own_url}}]}
    assert listed == {"providers": [{**slot, "current": {"apiType": "anthropic", "baseUrl": gateway_url}}]}
    assert after_list == before_list

    [routed] = turns(gateway)
    assert routed.last_user_text.endswith("through the gateway")
    assert routed.headers.get("x-gateway-key") == SECRET
    assert routed.headers.get("x-route") == "team-a"
    assert API_KEY not in str(routed.headers)  # the agent's own key is not sent to the gateway
    assert [r.last_user_text.rsplit("\n", 1)[-1] for r in turns(own)] == ["as before", "back home"]
    assert all(SECRET not in str(r.headers) for r in own.requests)

    assert SECRET not in agent.frames.text()
    assert "X-Gateway-Key" not in agent.frames.text()  # headers are never listed
    assert SECRET not in stderr
    assert SECRET not in log
    assert agent.frames.problems == []


async def test_a_route_the_slot_cannot_take_is_refused_without_echoing_its_headers(tmp_path: Path) -> None:
    with FakeAnthropicAPI([]) as own:
        own_url = own.base_url
        async with claude_agent(own, tmp_path, capable=False) as agent:
            base = {"providerId": "main", "apiType": "anthropic", "baseUrl": own.base_url, "headers": HEADERS}
            unknown = await refused(agent, "providers/set", {**base, "providerId": "openai"})
            api_type = await refused(agent, "providers/set", {**base, "apiType": "openai"})
            url = await refused(agent, "providers/set", {**base, "baseUrl": "ftp://127.0.0.1/"})
            relative = await refused(agent, "providers/set", {**base, "baseUrl": "/v1"})
            vertex = await refused(agent, "providers/set", {**base, "apiType": "vertex"})
            header = await refused(agent, "providers/set", {**base, "headers": {"X-Key": SECRET + "\nX-Evil: 1"}})
            still = await call(agent, "providers/list", {})
            disabled = await call(agent, "providers/disable", {"providerId": "no-such-slot"})
        stderr = (tmp_path / "agent-claude.stderr").read_text(errors="replace")
        log = agent.log_text()

    for error in (unknown, api_type, url, relative, vertex, header):
        assert error.code == -32602
    assert "Unknown providerId" in str(unknown)
    assert still["providers"][0]["current"] == {"apiType": "anthropic", "baseUrl": own_url}
    assert disabled == {}  # an unknown slot: nothing to disable, as both reference adapters
    assert SECRET not in agent.frames.text()
    assert SECRET not in stderr
    assert SECRET not in log
    assert agent.frames.problems == []


async def test_a_session_resumed_after_the_set_is_routed_there(tmp_path: Path) -> None:
    """Resumed (or loaded) after `providers/set`, a session opened before takes the new routing;
    its history goes with it."""
    with FakeAnthropicAPI([{"reply": "first answer"}]) as own, \
            FakeAnthropicAPI([{"reply": "second answer"}]) as gateway:
        gateway_url = gateway.base_url
        async with claude_agent(own, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("first question"))
            await call(agent, "providers/set", {"providerId": "main", "apiType": "anthropic",
                                                "baseUrl": gateway_url, "headers": HEADERS})
            await agent.conn.resume_session(cwd=str(tmp_path), session_id=session.session_id)
            await agent.conn.prompt(session_id=session.session_id, prompt=text("second question"))
            await wait_for_requests(gateway, 1, finished=True)
    [routed] = turns(gateway)
    assert routed.headers.get("x-gateway-key") == SECRET
    assert "first question" in str(routed.body) and routed.last_user_text.endswith("second question")
    assert len(turns(own)) == 1
    assert agent.frames.problems == []


async def test_the_users_settings_env_does_not_route_a_gateway_session_elsewhere(tmp_path: Path) -> None:
    """Claude Code applies the `env` of the user's settings.json over its process environment: a
    user who routes the CLI there (`ANTHROPIC_BASE_URL`, an `apiKeyHelper`) would send a gateway
    session's requests, with the gateway's headers, to that URL. The route wins there too."""
    import json

    with FakeAnthropicAPI([{"reply": "not here"}]) as own, FakeAnthropicAPI([{"reply": "here"}]) as gateway:
        gateway_url = gateway.base_url
        config = tmp_path / "claude-config"
        config.mkdir()
        (config / "settings.json").write_text(json.dumps({"env": {"ANTHROPIC_BASE_URL": own.base_url}}))
        async with claude_agent(own, tmp_path, capable=False) as agent:
            await call(agent, "providers/set", {"providerId": "main", "apiType": "anthropic",
                                                "baseUrl": gateway_url, "headers": HEADERS})
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("where to"))
    assert [r.headers.get("x-gateway-key") for r in turns(gateway)] == [SECRET]
    assert turns(own) == []
    assert all(SECRET not in str(r.headers) for r in own.requests)
    assert agent.frames.problems == []
