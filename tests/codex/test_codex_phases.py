"""Phase deadlines and backend loss with a stand-in app-server (ACP_AGENT_CODEX_BIN), end to end.

Each phase the runtime marks (initializing, preparing, submitting) is made to stall; the failure
names that phase, says whether a model turn may have been submitted, and the stand-in process
is gone afterwards (cleanup never leaves an orphan, nor replaces the cause).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import acp
import pytest

from tests.codex.e2e_support import stand_in_env, stand_in_gone, text
from tests.e2e.harness import spawn_agent
from tests.e2e.processes import wait_ended

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]


@pytest.mark.parametrize(("hang", "phase"), [("initialize", "initializing"), ("thread/start", "preparing")])
async def test_a_stalled_start_up_names_its_phase(tmp_path: Path, hang: str, phase: str) -> None:
    env = stand_in_env(tmp_path, STAND_IN_HANG=hang, ACP_AGENT_STARTUP_TIMEOUT_MS="300")
    async with spawn_agent("codex", tmp_path, env) as agent:
        await agent.initialize(capable=True)
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.new_session(cwd=str(tmp_path))
        # a failed start-up stops the process (after answering); a failed thread/start leaves a working one running
        if phase == "initializing":
            await wait_ended([int((tmp_path / "stand-in.pid").read_text())], within_s=15)
        else:
            assert not stand_in_gone(tmp_path)
    failure = caught.value.data["failure"]
    assert failure == {"kind": "deadlineExceeded", "source": "adapter", "outcome": "failed", "phase": phase,
                       "execution": "notSubmitted",
                       "recovery": "Check that the backend can start and the deadline fits this machine before trying again."}
    assert "No model turn was submitted." in str(caught.value)
    assert stand_in_gone(tmp_path)
    assert agent.frames.problems == []


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_an_unacknowledged_turn_may_have_been_submitted(tmp_path: Path, capable: bool) -> None:
    env = stand_in_env(tmp_path, STAND_IN_HANG="turn/start", ACP_AGENT_SUBMIT_TIMEOUT_MS="300")
    async with spawn_agent("codex", tmp_path, env) as agent:
        await agent.initialize(capable=capable)
        session = await agent.conn.new_session(cwd=str(tmp_path))
        outcome: Any
        try:
            outcome = await agent.conn.prompt(session_id=session.session_id, prompt=text("hello"))
        except acp.RequestError as error:
            outcome = error
    title = "Codex did not acknowledge the turn within 300 ms (phase submitting); the turn may have been submitted."
    if capable:
        record = outcome.field_meta["jetbrains"]["air"]["sessionFailure"]
        assert (record["title"], record["category"], record["actions"]) == (title, "connection", ["new_session"])
    else:
        assert (outcome.code, str(outcome)) == (
            -32603, f"{title} Reload and inspect the session before deciding to submit again.")
        assert outcome.data["failure"] == {
            "kind": "deadlineExceeded", "source": "adapter", "outcome": "unknown", "phase": "submitting",
            "execution": "possiblySubmitted", "recovery": "Reload and inspect the session before deciding to submit again."}
        assert "sessionFailure" not in agent.frames.text()
    assert stand_in_gone(tmp_path)
    assert agent.frames.problems == []


async def test_backend_exit_while_preparing_is_a_transport_loss(tmp_path: Path) -> None:
    env = stand_in_env(tmp_path, STAND_IN_EXIT_ON="thread/start")
    async with spawn_agent("codex", tmp_path, env) as agent:
        await agent.initialize(capable=False)
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.new_session(cwd=str(tmp_path))
    assert str(caught.value).startswith("The connection to Codex was lost.")
    assert caught.value.data["failure"] == {
        "kind": "transportLost", "source": "transport", "outcome": "failed", "phase": "preparing",
        "execution": "notSubmitted", "recovery": "Start a new session; Codex will be started again."}
    assert agent.frames.problems == []


async def test_a_binary_that_is_not_executable_says_so(tmp_path: Path) -> None:
    binary = tmp_path / "codex"
    binary.write_text("not a program\n")
    env = {"ACP_AGENT_CODEX_BIN": str(binary), "CODEX_HOME": str(tmp_path)}
    async with spawn_agent("codex", tmp_path, env) as agent:
        await agent.initialize(capable=False)
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.new_session(cwd=str(tmp_path))
    assert caught.value.data["failure"]["kind"] == "spawnFailed"
    assert str(caught.value).startswith(f"Codex could not be started: the codex binary at {binary} is not executable. "
                                        "No model turn was submitted. Install the openai-codex-cli-bin wheel")
    assert "Error" not in str(caught.value)
    assert agent.frames.problems == []


async def test_a_missing_binary_is_reported_not_crashed(tmp_path: Path) -> None:
    env = {"ACP_AGENT_CODEX_BIN": str(tmp_path / "no-such-codex"), "CODEX_HOME": str(tmp_path)}
    async with spawn_agent("codex", tmp_path, env) as agent:
        await agent.initialize(capable=False)
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.new_session(cwd=str(tmp_path))
        session_again: Any = None
        with pytest.raises(acp.RequestError):
            session_again = await agent.conn.new_session(cwd=str(tmp_path))
    assert session_again is None
    assert caught.value.data["failure"]["kind"] == "spawnFailed"
    assert caught.value.data["failure"]["phase"] == "initializing"
    # the path the user configured, what is wrong with it and what to do; never an exception's name
    assert str(caught.value) == (f"Codex could not be started: the codex binary was not found at "
                                 f"{tmp_path / 'no-such-codex'}. No model turn was submitted. Install the "
                                 "openai-codex-cli-bin wheel or set ACP_AGENT_CODEX_BIN to a codex binary, then "
                                 "start a new session.")
    assert os.path.exists(tmp_path / "agent-codex.log")
    assert agent.frames.problems == []
