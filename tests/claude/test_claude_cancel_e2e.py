"""A cancelled Claude prompt stops the CLI's turn: every later prompt gets its own answer (issue 9, item 2).

Real Claude Code CLI against the fake Anthropic API, whose `echo` step answers with the prompt.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.claude.e2e_support import API_KEY, claude_agent, wait_for_requests
from tests.e2e.cancel_support import HOW, assert_cancelled, cancel_prompt, own_answer
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(150)]


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
@pytest.mark.parametrize("how", HOW)
async def test_a_cancelled_prompt_never_shifts_the_answers(tmp_path: Path, capable: bool, how: str) -> None:
    with FakeAnthropicAPI([{"hang_after_events": 4, "echo": True}, {"echo": True}, {"echo": True}]) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            first = await cancel_prompt(agent, session.session_id, "alpha-first", how,
                                        lambda: wait_for_requests(api, 1))
            # Were the CLI still on the first turn, its held answer would now come out as the next one's.
            api.release()
            second = await own_answer(agent, session.session_id, "bravo-second")
            third = await own_answer(agent, session.session_id, "charlie-third")
    assert_cancelled(first, how)
    assert second == "echo: bravo-second"
    assert third == "echo: charlie-third"
    assert agent.frames.problems == []
    assert API_KEY not in agent.frames.text()
    if not capable:
        assert "sessionFailure" not in agent.frames.text()
