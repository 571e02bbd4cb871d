"""Codex sessions the agent holds open: the real codex app-server, through `acp-agent`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.codex.e2e_support import codex_agent, model_text, text, workspace, write_codex_home
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(90)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])


@BOTH
@pytest.mark.parametrize("how", ["resume", "load"])
async def test_a_live_thread_never_prompted_can_be_resumed_or_loaded(tmp_path: Path, capable: bool,
                                                                     how: str) -> None:
    """Codex writes a thread's rollout on its first turn; a thread the agent holds is still there."""
    with FakeResponsesAPI([{"reply": "Answer after reopening."}]) as api:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=cwd)
            if how == "resume":
                await agent.conn.resume_session(cwd=cwd, session_id=session.session_id)
            else:
                await agent.conn.load_session(cwd=cwd, session_id=session.session_id)
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("Hello"))
            answer = model_text(agent, session.session_id)
    assert result.stop_reason == "end_turn"
    assert answer == "Answer after reopening."
    assert len(api.turn_requests) == 1
    assert agent.frames.problems == []
