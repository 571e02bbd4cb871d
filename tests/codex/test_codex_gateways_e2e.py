"""Gateways (ACP's unstable `providers/*`, issue 28 item 8) through `acp-agent --provider codex`,
the real codex and two fake Responses APIs: the one the user's config.toml names and a gateway
the client points the slot `openai` at. Threads opened after `providers/set` send their model
requests to the gateway with the client's headers (and not the user's key); a session opened
before keeps its provider; `providers/disable` routes later sessions back. The header's secret
value never reaches the client, stderr or the log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import acp
import pytest

from tests.codex.e2e_support import FAKE_KEY, codex_agent, text, workspace, write_codex_home
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]

SECRET = "gw-secret-7d2e5b9c1a"
HEADERS = {"X-Gateway-Key": SECRET, "X-Route": "team-b"}


def said(request: Any) -> str:
    return json.dumps((request.body or {}).get("input"))


async def call(agent: Any, method: str, params: dict[str, Any]) -> Any:
    return await agent.conn._conn.send_request(method, params)


@pytest.mark.parametrize("capable", [True, False], ids=["air", "legacy"])
async def test_later_sessions_reach_the_gateway_with_its_headers(tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI() as own, FakeResponsesAPI() as gateway:
        own_url, gateway_url = own.base_url, gateway.base_url
        home = write_codex_home(own, tmp_path)
        cwd = workspace(tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            init = agent.frames.incoming[0]["result"]
            before_list = await call(agent, "providers/list", {})
            earlier = await agent.conn.new_session(cwd=cwd)
            await call(agent, "providers/set", {"providerId": "openai", "apiType": "openai",
                                                "baseUrl": gateway_url, "headers": HEADERS})
            listed = await call(agent, "providers/list", {})
            later = await agent.conn.new_session(cwd=cwd)
            await agent.conn.prompt(session_id=later.session_id, prompt=text("through the gateway"))
            await agent.conn.prompt(session_id=earlier.session_id, prompt=text("as before"))
            await call(agent, "providers/disable", {"providerId": "openai"})
            after_list = await call(agent, "providers/list", {})
            last = await agent.conn.new_session(cwd=cwd)
            await agent.conn.prompt(session_id=last.session_id, prompt=text("back home"))
            with pytest.raises(acp.RequestError) as refused:
                await call(agent, "providers/set", {"providerId": "openai", "apiType": "anthropic",
                                                    "baseUrl": gateway_url, "headers": HEADERS})
        stderr = (tmp_path / "agent" / "agent-codex.stderr").read_text(errors="replace")
        log = agent.log_text()

    assert init["agentCapabilities"]["providers"] == {}
    slot = {"providerId": "openai", "supported": ["openai"], "required": False}
    assert before_list == {"providers": [{**slot, "current": {"apiType": "openai", "baseUrl": own_url}}]}
    assert listed == {"providers": [{**slot, "current": {"apiType": "openai", "baseUrl": gateway_url}}]}
    assert after_list == before_list
    assert refused.value.code == -32602

    [routed] = gateway.turn_requests
    assert "through the gateway" in said(routed)
    assert routed.headers.get("x-gateway-key") == SECRET
    assert routed.headers.get("x-route") == "team-b"
    assert FAKE_KEY not in str(routed.headers)  # the user's own provider key is not sent there
    assert ["as before" in said(r) for r in own.turn_requests] == [True, False]
    assert "back home" in said(own.turn_requests[1])
    assert all(SECRET not in str(r.headers) for r in own.requests)

    assert SECRET not in agent.frames.text()
    assert "X-Gateway-Key" not in agent.frames.text()  # headers are never listed
    assert SECRET not in stderr
    assert SECRET not in log
    assert agent.frames.problems == []
