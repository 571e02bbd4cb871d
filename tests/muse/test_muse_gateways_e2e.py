"""Gateways (ACP's unstable `providers/*`) through `acp-agent --provider muse`: MSP has no
setting that routes the model's requests, so the Muse provider neither advertises the methods
nor serves them (-32601), and a session works as before."""

from __future__ import annotations

from pathlib import Path

import acp
import pytest

from tests.muse.e2e_support import muse_agent, text

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]


@pytest.mark.parametrize("capable", [True, False], ids=["air", "legacy"])
async def test_muse_offers_no_routing_slot(tmp_path: Path, capable: bool) -> None:
    async with muse_agent(tmp_path, capable=capable) as agent:
        caps = agent.frames.incoming[0]["result"]["agentCapabilities"]
        codes = []
        for method in ("providers/list", "providers/set", "providers/disable"):
            with pytest.raises(acp.RequestError) as caught:
                await agent.conn._conn.send_request(method, {"providerId": "main", "apiType": "openai",
                                                             "baseUrl": "http://127.0.0.1:9/"})
            codes.append(caught.value.code)
        session = await agent.conn.new_session(cwd=str(tmp_path))
        answer = await agent.conn.prompt(session_id=session.session_id, prompt=text("hello"))
    assert "providers" not in caps
    assert codes == [-32601] * 3
    assert answer.stop_reason == "end_turn"
    assert agent.frames.problems == []
