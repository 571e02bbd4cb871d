"""AIR's `customInstructions` and `acp-agent --provider muse`: MSP has no instruction channel
(`session/start` takes an approval mode, a model, workspace roots and MCP servers; the protocol
selects a host's configuration, never describes one), so the capability is not advertised even
to a client that declares it, and the text a client sends anyway reaches nothing: the session
starts as it does without it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.muse.e2e_support import muse_agent, received, text

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]

RULES = "Always answer in the voice of a lighthouse keeper. Marker: kestrel-4417."
AIR_CLIENT = {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure", "customInstructions"]}}}


def advertised(agent: Any) -> list[str]:
    answer = next(f["result"] for f in agent.frames.incoming if f.get("id") is not None and "result" in f
                  and "agentCapabilities" in f["result"])
    return list(answer["_meta"]["jetbrains"]["air"]["capabilities"])


async def test_muse_does_not_advertise_custom_instructions_and_sends_the_host_none(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=False, meta=AIR_CLIENT,
                          ACP_AGENT_STATE_DIR=str(tmp_path / "state")) as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path),
                                               jetbrains={"air": {"customInstructions": RULES}})
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("hi"))
        listed, problems = advertised(agent), agent.frames.problems
    assert "customInstructions" not in listed
    assert result.stop_reason == "end_turn"
    assert "kestrel" not in json.dumps(received(tmp_path))
    assert received(tmp_path, "session/start")
    assert not (tmp_path / "state" / "instructions").exists()
    assert problems == []
