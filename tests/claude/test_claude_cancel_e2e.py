"""A cancelled Claude prompt stops the CLI's turn: every later prompt gets its own answer (issue 9, item 2).

Real Claude Code CLI against the fake Anthropic API, whose `echo` step answers with the prompt.
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest

from tests.claude.e2e_support import API_KEY, claude_agent, wait_for_requests
from tests.e2e.cancel_support import HOW, assert_cancelled, cancel_prompt, own_answer
from tests.e2e.processes import child_matching
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


def is_claude_cli(argv: list[bytes]) -> bool:
    return any(re.search(rb"claude$", part) for part in argv[:2])


@pytest.mark.parametrize("how", HOW)
async def test_a_cli_that_does_not_stop_in_time_is_replaced(tmp_path: Path, how: str) -> None:
    """The CLI is frozen (SIGSTOP) while its turn is held, so the interrupt goes unanswered and the
    prompt is cut off after the cancel grace. Woken up again it would finish the old turn into
    the next prompt's stream: the agent must replace it instead."""
    with FakeAnthropicAPI([{"hang_after_events": 4, "echo": True}, {"echo": True}]) as api:
        async with claude_agent(api, tmp_path, capable=True) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            frozen: list[int] = []

            async def running() -> None:
                await wait_for_requests(api, 1)
                frozen.append(child_matching(agent.process.pid, is_claude_cli, "Claude CLI"))
                os.kill(frozen[0], signal.SIGSTOP)

            try:
                first = await cancel_prompt(agent, session.session_id, "alpha-first", how, running)
            finally:
                for pid in frozen:
                    os.kill(pid, signal.SIGCONT)
            api.release()
            second = await own_answer(agent, session.session_id, "bravo-second")
    assert_cancelled(first, how)
    assert second == "echo: bravo-second"
    assert agent.frames.problems == []
