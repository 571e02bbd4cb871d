"""SIGTERM to the agent while a Claude turn runs: the running prompt is answered before the agent
exits (issue 25, item 2). It went unanswered: the signal cut the connection off with the turn.

Real Claude Code CLI against the fake Anthropic API, whose answer is held open. The answer is a
worker-shutdown failure (DESIGN §4 and §5: the agent ended the turn, the user did not cancel it).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest

from tests.claude.e2e_support import claude_agent, wait_for_requests
from tests.e2e.cancel_support import prompt_outcome
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_sigterm_answers_the_running_prompt_before_the_agent_exits(tmp_path: Path, capable: bool) -> None:
    with FakeAnthropicAPI([{"hang_after_events": 4, "echo": True}]) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            outcome: list[Any] = []
            answered = anyio.Event()

            async def run() -> None:
                outcome.append(await prompt_outcome(agent, session.session_id, "alpha-first"))
                answered.set()

            async with anyio.create_task_group() as group:
                group.start_soon(run)
                await wait_for_requests(api, 1)
                os.kill(agent.process.pid, signal.SIGTERM)
                with anyio.fail_after(15):  # bounded: without its answer the prompt waits for ever
                    await agent.process.wait()
                    await answered.wait()
            api.release()
    [answer] = outcome
    if capable:
        assert answer.stop_reason == "end_turn", answer
        record = answer.field_meta["jetbrains"]["air"]["sessionFailure"]
        assert (record["category"], record["actions"]) == ("connection", ["new_session"])
    else:
        assert isinstance(answer, acp.RequestError), answer
        assert answer.code == -32603
        assert answer.data["failure"]["kind"] == "workerShutdown"
    assert agent.frames.problems == []
