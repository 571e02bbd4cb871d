"""Startup phases, deadlines (with the MUSE_CODE_ACP_* aliases), the missing binary and command re-sends.

Each phase the runtime marks is made to stall in the fake host; the failure names the phase and
the budget, says whether a model turn may have been submitted, and no host process is left behind.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import acp
import pytest

from acp_agent_muse.classify import INSTALL_RECOVERY
from tests.e2e.harness import agent_executable
from tests.muse.e2e_support import (
    assert_hosts_gone,
    assert_legacy_clean,
    host_pids,
    methods_received,
    muse_agent,
    muse_env,
    received,
    records,
    text,
)

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
START_UP_HINT = "Check that the backend can start and the deadline fits this machine before trying again."


async def outcome_of(call: Any) -> Any:
    try:
        return await call
    except acp.RequestError as error:
        return error


@BOTH
async def test_a_missing_binary_fails_session_new_without_submitting(tmp_path: Path, capable: bool) -> None:
    async with muse_agent(tmp_path, capable=capable, MUSE_CODE_EXECUTABLE="", PATH="/nonexistent-bin") as agent:
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.new_session(cwd=str(tmp_path))
        log = agent.log_text()
    assert caught.value.code == -32603
    assert caught.value.data == {"failure": {
        "kind": "hostNotFound", "source": "adapter", "retryable": False, "outcome": "failed",
        "recovery": INSTALL_RECOVERY, "phase": "initializing", "execution": "notSubmitted"}}
    assert str(caught.value) == ("Muse Code could not be started: the Muse Code CLI was not found (no `muse` on "
                                 f"PATH). No model turn was submitted. {INSTALL_RECOVERY}")
    assert "Traceback" not in log
    assert agent.frames.problems == []
    if not capable:
        assert_legacy_clean(agent)


def test_providers_says_how_to_install_the_missing_binary(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("MUSE_", "ACP_AGENT_"))}
    missing = subprocess.run([agent_executable(), "providers"], env={**env, "PATH": "/nonexistent-bin"},
                             capture_output=True, text=True, check=True)
    [line] = [row for row in missing.stdout.splitlines() if row.startswith("muse")]
    assert "backend NOT usable: no `muse` executable found" in line
    assert "not on any package registry" in line and "MUSE_CODE_EXECUTABLE" in line
    found = subprocess.run([agent_executable(), "providers"], env={**env, **muse_env(tmp_path)},
                           capture_output=True, text=True, check=True)
    [line] = [row for row in found.stdout.splitlines() if row.startswith("muse")]
    assert "backend usable: Muse Code CLI at " + str(tmp_path / "bin" / "muse") in line


@BOTH
@pytest.mark.parametrize(("hang", "phase"), [("initialize", "initializing"), ("session/start", "preparing"),
                                             ("session/read", "preparing")])
async def test_start_up_deadlines_name_the_phase_and_say_no_turn_was_submitted(
        tmp_path: Path, capable: bool, hang: str, phase: str) -> None:
    async with muse_agent(tmp_path, capable=capable, scenario=f"hang={hang}",
                          MUSE_CODE_ACP_STARTUP_TIMEOUT_MS="500") as agent:
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.new_session(cwd=str(tmp_path))
        assert_hosts_gone(tmp_path)  # the stalled host is stopped at once, not at shutdown
    assert caught.value.data == {"failure": {
        "kind": "deadlineExceeded", "source": "adapter", "outcome": "failed", "recovery": START_UP_HINT,
        "phase": phase, "execution": "notSubmitted"}}
    assert str(caught.value) == (f"Muse Code did not finish {phase} within 500 ms. No model turn was submitted. "
                                 f"{START_UP_HINT}")
    assert agent.frames.problems == []
    if not capable:
        assert_legacy_clean(agent)


@BOTH
async def test_an_unacknowledged_turn_may_have_been_submitted(tmp_path: Path, capable: bool) -> None:
    async with muse_agent(tmp_path, capable=capable, scenario="hang=turn/start",
                          MUSE_CODE_ACP_SUBMIT_TIMEOUT_MS="300") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        outcome = await outcome_of(agent.conn.prompt(session_id=session.session_id, prompt=text("secret prompt")))
        assert_hosts_gone(tmp_path)  # the host that never acknowledged is stopped
        log = agent.log_text()
    title = "Muse Code did not acknowledge the turn within 300 ms (phase submitting); the turn may have been submitted."
    if capable:
        record = outcome.field_meta["jetbrains"]["air"]["sessionFailure"]
        assert (record["title"], record["category"], record["actions"]) == (title, "connection", ["new_session"])
    else:
        assert (outcome.code, str(outcome)) == (
            -32603, f"{title} Reload and inspect the session before deciding to submit again.")
        assert outcome.data == {"failure": {
            "kind": "deadlineExceeded", "source": "adapter", "outcome": "unknown",
            "recovery": "Reload and inspect the session before deciding to submit again.", "phase": "submitting",
            "execution": "possiblySubmitted"}}
        assert_legacy_clean(agent)
    assert "phase submitting (turn/start) deadline" in log
    assert "secret prompt" not in log
    assert agent.frames.problems == []


async def test_the_next_prompt_after_a_submit_deadline_resumes_in_a_new_host(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=True, scenario="hang=turn/start",
                          MUSE_CODE_ACP_SUBMIT_TIMEOUT_MS="300") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        await agent.conn.prompt(session_id=session.session_id, prompt=text("one"))
        await agent.conn.prompt(session_id=session.session_id, prompt=text("two"))
    assert len(host_pids(tmp_path)) == 2
    assert [f["params"]["sessionId"] for f in received(tmp_path, "session/resume")] == [session.session_id] * 2
    assert methods_received(tmp_path).count("session/start") == 1


@BOTH
async def test_a_stalled_list_is_a_read_deadline(tmp_path: Path, capable: bool) -> None:
    async with muse_agent(tmp_path, capable=capable, scenario="hang=session/list",
                          ACP_AGENT_READ_TIMEOUT_MS="300") as agent:
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.list_sessions(cwd=str(tmp_path))
        assert_hosts_gone(tmp_path)
    assert caught.value.data["failure"] == {
        "kind": "deadlineExceeded", "source": "adapter", "outcome": "failed", "recovery": START_UP_HINT,
        "phase": "reading", "execution": "notSubmitted"}
    assert str(caught.value) == ("Muse Code did not finish reading within 300 ms. No model turn was submitted. "
                                 f"{START_UP_HINT}")


async def test_a_stalled_load_is_a_read_deadline(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=False, scenario="hang=session/resume",
                          ACP_AGENT_READ_TIMEOUT_MS="300") as agent:
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.load_session(session_id="01900000-0000-7000-8000-000000000001", cwd=str(tmp_path))
    assert (caught.value.data["failure"]["phase"], caught.value.data["failure"]["execution"]) == (
        "reading", "notSubmitted")
    assert_hosts_gone(tmp_path)


@BOTH
async def test_a_stalled_fork_may_have_created_a_branch(tmp_path: Path, capable: bool) -> None:
    async with muse_agent(tmp_path, capable=capable, scenario="hang=session/fork",
                          ACP_AGENT_FORK_TIMEOUT_MS="300") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.fork_session(session_id=session.session_id, cwd=str(tmp_path))
    assert caught.value.data == {"failure": {
        "kind": "deadlineExceeded", "source": "adapter", "outcome": "unknown",
        "recovery": "Inspect session/list before retrying the fork.", "phase": "forking",
        "execution": "notSubmitted", "mutation": "possiblyApplied"}}
    assert str(caught.value) == ("Muse Code did not finish forking within 300 ms. No model turn was submitted, but a "
                                 "branch may have been created. Inspect session/list before retrying the fork.")
    assert agent.frames.problems == []
    assert_hosts_gone(tmp_path)


async def test_a_host_lost_after_the_fork_was_sent_may_have_created_a_branch(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=False, scenario="exit=session/fork") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.fork_session(session_id=session.session_id, cwd=str(tmp_path))
    failure = caught.value.data["failure"]
    assert (failure["kind"], failure["source"], failure["outcome"], failure["mutation"], failure["phase"]) == (
        "transportError", "transport", "unknown", "possiblyApplied", "forking")


async def test_a_rejected_fork_is_definite(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=False, scenario="reject=session/fork") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.fork_session(session_id=session.session_id, cwd=str(tmp_path))
    failure = caught.value.data["failure"]
    assert (failure["kind"], failure["outcome"], failure["phase"]) == ("commandRejected", "failed", "forking")
    assert "mutation" not in failure


@pytest.mark.parametrize(("scenario", "method"), [("overloaded-once=turn/start", "turn/start"),
                                                  ("backpressured-once=turn/start", "turn/start"),
                                                  ("overloaded-once=session/start", "session/start"),
                                                  ("backpressured-once=approval/decide", "approval/decide")])
async def test_overloaded_and_backpressured_commands_are_resent_with_the_same_id(
        tmp_path: Path, scenario: str, method: str) -> None:
    turn = "approval" if method == "approval/decide" else None
    async with muse_agent(tmp_path, capable=True, scenario=scenario, turn=turn) as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("go"))
    assert result.stop_reason == "end_turn" and records(agent) == []
    first, second = received(tmp_path, method)
    assert first["params"] == second["params"]  # the same command, the same commandId
    assert agent.frames.problems == []


@BOTH
async def test_a_rejected_command_is_not_resent(tmp_path: Path, capable: bool) -> None:
    async with muse_agent(tmp_path, capable=capable, scenario="reject=turn/start") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        outcome = await outcome_of(agent.conn.prompt(session_id=session.session_id, prompt=text("go")))
    assert len(received(tmp_path, "turn/start")) == 1
    title = "turn/start was rejected by the fake host's policy."
    if capable:
        record = outcome.field_meta["jetbrains"]["air"]["sessionFailure"]
        assert (record["title"], record["category"], record["actions"]) == (title, "request", [])
    else:
        assert str(outcome) == (f"{title} No model turn was submitted. "
                                "Check the prompt, model and settings before trying again.")
        assert outcome.data == {"failure": {
            "kind": "commandRejected", "source": "host", "retryable": False, "outcome": "failed",
            "recovery": "Check the prompt, model and settings before trying again.", "phase": "submitting",
            "execution": "notSubmitted"}}


def test_an_invalid_alias_value_stops_start_up_naming_the_variable(tmp_path: Path) -> None:
    env = {**os.environ, **muse_env(tmp_path), "MUSE_CODE_ACP_SUBMIT_TIMEOUT_MS": "0"}
    env = {key: value for key, value in env.items() if value != "" and not key.startswith("ACP_AGENT_")}
    done = subprocess.run([agent_executable(), "--provider", "muse"], env=env, capture_output=True, text=True,
                          input="", check=False)
    assert done.returncode == 2
    assert "MUSE_CODE_ACP_SUBMIT_TIMEOUT_MS" in done.stderr


async def test_the_core_variable_wins_over_the_alias(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=False, scenario="hang=initialize", ACP_AGENT_STARTUP_TIMEOUT_MS="250",
                          MUSE_CODE_ACP_STARTUP_TIMEOUT_MS="60000") as agent:
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.new_session(cwd=str(tmp_path))
    assert "within 250 ms" in str(caught.value)


async def test_an_executable_that_cannot_run_fails_session_new_without_submitting(tmp_path: Path) -> None:
    not_executable = tmp_path / "muse-not-executable"
    not_executable.write_text("not a program\n")
    async with muse_agent(tmp_path, capable=False, MUSE_CODE_EXECUTABLE=str(not_executable)) as agent:
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.new_session(cwd=str(tmp_path))
    failure = caught.value.data["failure"]
    assert (failure["kind"], failure["source"], failure["phase"], failure["execution"], failure["outcome"]) == (
        "hostLaunchFailed", "adapter", "initializing", "notSubmitted", "failed")
    assert str(caught.value) == (f"Muse Code could not be started: the Muse Code CLI at {not_executable} is not "
                                 f"executable. No model turn was submitted. {INSTALL_RECOVERY}")
    assert "Error" not in str(caught.value)


@BOTH
async def test_an_executable_path_that_does_not_exist_says_so_and_how_to_fix_it(tmp_path: Path,
                                                                                capable: bool) -> None:
    missing = tmp_path / "no-such-dir" / "muse"
    async with muse_agent(tmp_path, capable=capable, MUSE_CODE_EXECUTABLE=str(missing)) as agent:
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.new_session(cwd=str(tmp_path))
    assert caught.value.code == -32603
    assert caught.value.data["failure"]["kind"] == "hostNotFound"
    assert str(caught.value) == (f"Muse Code could not be started: the Muse Code CLI was not found at {missing}. "
                                 "No model turn was submitted. Install the Muse Code CLI and put `muse` on PATH, "
                                 "or set MUSE_CODE_EXECUTABLE to its path, then start a new session.")
    assert agent.frames.problems == []
    assert "Traceback" not in agent.log_text()
