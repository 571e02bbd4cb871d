"""A cancelled Muse prompt cancels the host's turn: every later prompt gets its own answer (issue 9, item 2).

The fake MSP host queues a `turn/start` behind a running turn (MSP's default `ifBusy: queue`), so a
turn left running would hold back every later one; its `echo` turn answers with the prompt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.cancel_support import HOW, assert_cancelled, cancel_prompt, own_answer
from tests.muse.e2e_support import assert_legacy_clean, hooked, host_pids, muse_agent, process_gone, received

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
@pytest.mark.parametrize("how", HOW)
async def test_a_cancelled_prompt_never_shifts_the_answers(tmp_path: Path, capable: bool, how: str) -> None:
    working = anyio.Event()
    async with muse_agent(tmp_path, capable=capable, turn="echo") as agent:
        def on_update(session_id: str, update: Any) -> None:
            if getattr(update, "session_update", None) == "agent_message_chunk":
                working.set()

        hooked(agent).update_hook = on_update
        session = await agent.conn.new_session(cwd=str(tmp_path))
        first = await cancel_prompt(agent, session.session_id, "turn:wait alpha-first", how, working.wait)
        second = await own_answer(agent, session.session_id, "bravo-second", timeout_s=20)
        third = await own_answer(agent, session.session_id, "charlie-third", timeout_s=20)
    assert_cancelled(first, how)
    assert second == "echo: bravo-second"
    assert third == "echo: charlie-third"
    [cancel] = received(tmp_path, "turn/cancel")
    assert cancel["params"]["sessionId"] == session.session_id
    assert agent.frames.problems == []
    if not capable:
        assert_legacy_clean(agent)


@pytest.mark.parametrize("how", HOW)
async def test_a_turn_the_host_never_ends_costs_the_host_not_the_session(tmp_path: Path, how: str) -> None:
    """The host ignores `turn/cancel`: after the cancel grace the agent stops that host, and the next
    prompt runs in a new one instead of queueing behind the turn forever."""
    working = anyio.Event()
    async with muse_agent(tmp_path, capable=True, turn="echo", scenario="hang=turn/cancel") as agent:
        def on_update(session_id: str, update: Any) -> None:
            if getattr(update, "session_update", None) == "agent_message_chunk":
                working.set()

        hooked(agent).update_hook = on_update
        session = await agent.conn.new_session(cwd=str(tmp_path))
        first = await cancel_prompt(agent, session.session_id, "turn:wait alpha-first", how, working.wait)
        [first_host] = host_pids(tmp_path)
        second = await own_answer(agent, session.session_id, "bravo-second", timeout_s=20)
    assert_cancelled(first, how)
    assert second == "echo: bravo-second"
    assert process_gone(first_host)
    assert len(host_pids(tmp_path)) == 2
    assert agent.frames.problems == []
