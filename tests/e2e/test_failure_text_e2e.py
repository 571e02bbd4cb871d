"""The JSON-RPC error text a client without sessionFailure sees (spec/004), through `acp-agent`.

Such a client may show only `error.message`: it must name the failure and the recovery.
"""

from __future__ import annotations

from pathlib import Path

import acp
import pytest

from tests.e2e.harness import spawn_agent
from tests.e2e.test_scripted_e2e import RATE, script_env, text_prompt

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]


async def test_a_failed_turn_names_the_failure_then_the_recovery(tmp_path: Path) -> None:
    async with spawn_agent("scripted", tmp_path, script_env(tmp_path, {"turns": [[{"fail": RATE}]]})) as agent:
        await agent.initialize(capable=False)
        session = await agent.conn.new_session(cwd=str(tmp_path))
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.prompt(session_id=session.session_id, prompt=text_prompt("x"))
    recovery = caught.value.data["failure"]["recovery"]
    assert recovery == "Wait a moment before trying again."
    assert str(caught.value) == f"{RATE['title']}. {recovery}"
    assert agent.frames.problems == []


async def test_a_deadline_names_the_phase_budget_and_the_recovery(tmp_path: Path) -> None:
    env = {**script_env(tmp_path, {"turns": [[{"hang_submit": True}]]}), "ACP_AGENT_SUBMIT_TIMEOUT_MS": "300"}
    async with spawn_agent("scripted", tmp_path, env) as agent:
        await agent.initialize(capable=False)
        session = await agent.conn.new_session(cwd=str(tmp_path))
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.prompt(session_id=session.session_id, prompt=text_prompt("x"))
    failure = caught.value.data["failure"]
    assert (failure["kind"], failure["phase"]) == ("deadlineExceeded", "submitting")
    message = str(caught.value)
    assert "within 300 ms" in message and "submitting" in message
    assert message.endswith(" " + failure["recovery"])


async def test_a_deadline_outside_a_turn_names_the_recovery_for_every_client(tmp_path: Path) -> None:
    env = {**script_env(tmp_path, {"hang_new_session": True}), "ACP_AGENT_STARTUP_TIMEOUT_MS": "300"}
    for capable in (False, True):
        async with spawn_agent("scripted", tmp_path, env) as agent:
            await agent.initialize(capable=capable)
            with pytest.raises(acp.RequestError) as caught:
                await agent.conn.new_session(cwd=str(tmp_path))
        failure = caught.value.data["failure"]
        assert (failure["kind"], failure["phase"], failure["execution"]) == (
            "deadlineExceeded", "preparing", "notSubmitted")
        assert str(caught.value) == (f"Scripted did not finish preparing within 300 ms. No model turn was submitted. "
                                     f"{failure['recovery']}")
