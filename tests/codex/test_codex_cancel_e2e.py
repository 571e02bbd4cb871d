"""A cancelled codex prompt stops app-server's turn: every later prompt gets its own answer (issue 9, item 2).

Real `codex app-server` against the fake Responses API, whose `echo` step answers with the prompt.
"""

from __future__ import annotations

from pathlib import Path

import anyio.to_thread
import pytest

from tests.codex.e2e_support import codex_agent, wait_for_turn_requests, workspace, write_codex_home
from tests.e2e.cancel_support import HOW, assert_cancelled, cancel_prompt, own_answer
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]

HELD = {"echo": True, "slow_stream": {"text": " ".join(f"word{n}" for n in range(600)), "interval_s": 0.05}}


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
@pytest.mark.parametrize("how", HOW)
async def test_a_cancelled_prompt_never_shifts_the_answers(tmp_path: Path, capable: bool, how: str) -> None:
    with FakeResponsesAPI([HELD, {"echo": True}, {"echo": True}]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            first = await cancel_prompt(agent, session.session_id, "alpha-first", how,
                                        lambda: wait_for_turn_requests(api, 1))
            # The held answer lasts 30 s: it ends at once only if the turn was interrupted.
            [held] = api.turn_requests
            assert await anyio.to_thread.run_sync(lambda: held.wait_ended(10)) == "disconnected"
            second = await own_answer(agent, session.session_id, "bravo-second")
            third = await own_answer(agent, session.session_id, "charlie-third")
    assert_cancelled(first, how)
    assert second == "echo: bravo-second"
    assert third == "echo: charlie-third"
    assert agent.frames.problems == []
    if not capable:
        assert "sessionFailure" not in agent.frames.text()
