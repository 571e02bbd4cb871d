"""A Muse session the agent holds open, reopened before any prompt, through `acp-agent`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.muse.e2e_support import agent_texts, muse_agent, text

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])


@BOTH
@pytest.mark.parametrize("how", ["resume", "load"])
@pytest.mark.parametrize("durability", ["durable", "ephemeral"])
async def test_a_live_session_never_prompted_can_be_resumed_or_loaded(tmp_path: Path, capable: bool,
                                                                      how: str, durability: str) -> None:
    scenario = "ephemeral" if durability == "ephemeral" else None
    async with muse_agent(tmp_path, capable=capable, scenario=scenario) as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        if how == "resume":
            await agent.conn.resume_session(cwd=str(tmp_path), session_id=session.session_id)
        else:
            await agent.conn.load_session(cwd=str(tmp_path), session_id=session.session_id)
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("hello"))
        texts = agent_texts(agent, session.session_id)
    assert result.stop_reason == "end_turn"
    assert texts
    assert agent.frames.problems == []
