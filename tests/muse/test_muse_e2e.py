"""`acp-agent --provider muse` end to end: turns, streaming, approvals, cancel, failures, retries, host loss.

The agent is the installed console script, driven by the `agent-client-protocol` SDK client; the
backend is the fake MSP host (tests/fakes/muse_host.py) reached through MUSE_CODE_EXECUTABLE.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp
import anyio
import pytest

from acp_agent_muse.ids import is_uuid7
from tests.muse.e2e_support import (
    agent_texts,
    assert_hosts_gone,
    assert_legacy_clean,
    hooked,
    host_events,
    host_pids,
    methods_received,
    muse_agent,
    received,
    records,
    text,
)

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
COMMANDS = ("session/start", "session/resume", "session/setApprovalMode", "session/setModel", "turn/start",
            "turn/cancel", "approval/decide", "session/fork", "session/leave", "userInput/cancel")


async def prompt_outcome(agent: Any, session_id: str, value: str) -> Any:
    try:
        return await agent.conn.prompt(session_id=session_id, prompt=text(value))
    except acp.RequestError as error:
        return error


def tool_updates(agent: Any, session_id: str) -> list[dict[str, Any]]:
    return [u for u in agent.frames.updates(session_id) if u["sessionUpdate"] in ("tool_call", "tool_call_update")]


@BOTH
async def test_a_normal_turn_streams_text_and_thoughts(tmp_path: Path, capable: bool) -> None:
    async with muse_agent(tmp_path, capable=capable) as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("hello"))
    assert result.stop_reason == "end_turn"
    assert agent_texts(agent, session.session_id) == ["Hello", ", world."]
    assert agent_texts(agent, session.session_id, "agent_thought_chunk") == ["Thinking", " it over."]
    usage = [u for u in agent.frames.updates(session.session_id) if u["sessionUpdate"] == "usage_update"]
    # the session's cost so far rides on it (the fake host reports $0.0125 a model call)
    assert usage == [{"sessionUpdate": "usage_update", "used": 1200, "size": 200000,
                      "cost": {"amount": 0.0125, "currency": "USD"}}]
    # session/new: resume the minted id, start it on -32020, settings verified with session/read
    assert methods_received(tmp_path) == ["initialize", "initialized", "session/resume", "session/start", "model/list",
                                          "session/read", "turn/start"]
    [start] = received(tmp_path, "session/start")
    assert start["params"]["sessionId"] == session.session_id  # the ACP session id is the Muse session id
    assert (start["params"]["workspaceRoot"], start["params"]["approvalMode"]) == (str(tmp_path), "promptUnmatched")
    [resume] = received(tmp_path, "session/resume")
    assert resume["params"]["sessionId"] == session.session_id
    command_ids = [frame["params"]["commandId"] for frame in received(tmp_path) if frame.get("method") in COMMANDS]
    assert len(command_ids) == 3 and all(is_uuid7(value) for value in command_ids)
    assert len(set(command_ids)) == 3
    [turn] = received(tmp_path, "turn/start")
    assert turn["params"]["input"] == [{"type": "text", "text": "hello"}]
    assert session.modes is not None and session.modes.current_mode_id == "default"
    assert [mode.id for mode in session.modes.available_modes] == [
        "default", "readOnly", "plan", "bypassApprovals", "rejectApprovals"]
    [model] = session.config_options or []
    assert model.current_value == "muse-large"
    assert agent.frames.problems == []
    if not capable:
        assert_legacy_clean(agent)
    assert_hosts_gone(tmp_path)


async def test_streamed_turn_with_tool_calls_and_a_plan(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=True, turn="stream") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("summarise notes.md"))
    assert result.stop_reason == "end_turn"
    updates = agent.frames.updates(session.session_id)
    [plan] = [u for u in updates if u["sessionUpdate"] == "plan"]
    assert [(e["content"], e["status"]) for e in plan["entries"]] == [
        ("Read the file", "completed"), ("Summarise it", "in_progress"), ("Report back", "pending")]
    tools = tool_updates(agent, session.session_id)
    assert tools[0]["sessionUpdate"] == "tool_call"
    assert (tools[0]["title"], tools[0]["kind"], tools[0]["status"]) == ("Reading notes.md", "read", "in_progress")
    assert tools[0]["locations"] == [{"path": "notes.md"}]
    assert (tools[-1]["status"], tools[-1]["title"]) == ("completed", "Read notes.md")
    assert tools[-1]["content"][0]["content"]["text"] == "# Notes\nship it\n"
    # the delta that arrived before its item opened is not lost
    assert "".join(agent_texts(agent, session.session_id)) == "The notes say to ship it."
    assert "".join(agent_texts(agent, session.session_id, "agent_thought_chunk")) == "Let me read it."
    assert agent.frames.problems == []


@BOTH
async def test_an_approval_offers_only_the_hosts_choices(tmp_path: Path, capable: bool) -> None:
    async with muse_agent(tmp_path, capable=capable, turn="approval") as agent:
        agent.client.permission = lambda options: "allow-session"
        session = await agent.conn.new_session(cwd=str(tmp_path))
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("clean the build"))
    assert result.stop_reason == "end_turn"
    [(tool_call, options)] = agent.client.permission_requests  # asked once for the notification and the request
    assert [(o.option_id, o.name, o.kind) for o in options] == [
        ("allow-once", "Allow once", "allow_once"), ("allow-session", "Allow for this session", "allow_always"),
        ("deny", "Deny", "reject_once"), ("abort", "Deny and stop", "reject_once")]
    assert (tool_call.title, tool_call.kind, tool_call.status) == ("rm -rf build", "execute", "pending")
    [decide] = received(tmp_path, "approval/decide")
    assert decide["params"]["choiceId"] == "allow-session"
    assert decide["params"]["requirementId"] == {"approvalId": decide["params"]["approvalId"], "sourceIndex": 0}
    assert decide["params"]["sessionId"] == session.session_id
    assert is_uuid7(decide["params"]["commandId"])
    assert tool_updates(agent, session.session_id)[-1]["status"] == "completed"
    assert agent_texts(agent, session.session_id) == ["Removed the build directory."]
    assert agent.frames.problems == []
    if not capable:
        assert_legacy_clean(agent)


async def test_a_cancelled_permission_request_takes_the_hosts_deny(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=True, turn="approval") as agent:
        agent.client.permission = lambda options: None  # the client answers "cancelled"
        session = await agent.conn.new_session(cwd=str(tmp_path))
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("clean the build"))
    assert result.stop_reason == "end_turn"
    [decide] = received(tmp_path, "approval/decide")
    assert decide["params"]["choiceId"] == "deny"
    last = tool_updates(agent, session.session_id)[-1]
    assert last["status"] == "failed"
    assert agent_texts(agent, session.session_id) == ["I did not remove it."]


async def test_cancelling_during_an_approval_aborts_and_the_turn_is_cancelled(tmp_path: Path) -> None:
    asked = anyio.Event()
    release = anyio.Event()

    async def hold(options: list[Any], tool_call: Any) -> Any:
        asked.set()
        await release.wait()
        raise acp.RequestError.internal_error({"reason": "gone"})

    async with muse_agent(tmp_path, capable=True, turn="approval") as agent:
        hooked(agent).permission_hook = hold
        session = await agent.conn.new_session(cwd=str(tmp_path))
        outcome: list[Any] = []

        async def run() -> None:
            outcome.append(await agent.conn.prompt(session_id=session.session_id, prompt=text("clean the build")))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await asked.wait()
            await agent.conn.cancel(session_id=session.session_id)
        release.set()
    assert outcome[0].stop_reason == "cancelled"
    [decide] = received(tmp_path, "approval/decide")
    assert decide["params"]["choiceId"] == "abort"
    [cancel] = received(tmp_path, "turn/cancel")
    assert cancel["params"]["turnId"].startswith("turn-")
    assert agent.frames.problems == []


async def test_reject_approvals_mode_answers_with_the_hosts_deny_without_asking(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=True, turn="approval") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        await agent.conn.set_session_mode(session_id=session.session_id, mode_id="rejectApprovals")
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("clean the build"))
    assert result.stop_reason == "end_turn"
    assert agent.client.permission_requests == []
    [decide] = received(tmp_path, "approval/decide")
    assert decide["params"]["choiceId"] == "deny"
    # rejectApprovals keeps Muse's prompting mode (the adapter answers), so nothing needed changing
    assert received(tmp_path, "session/setApprovalMode")[0]["params"]["mode"] == "promptUnmatched"


@BOTH
async def test_cancel_sends_turn_cancel_and_returns_cancelled(tmp_path: Path, capable: bool) -> None:
    working = anyio.Event()
    async with muse_agent(tmp_path, capable=capable, turn="wait") as agent:
        def on_update(session_id: str, update: Any) -> None:
            if getattr(update, "session_update", None) == "agent_message_chunk":
                working.set()

        hooked(agent).update_hook = on_update
        session = await agent.conn.new_session(cwd=str(tmp_path))
        outcome: list[Any] = []

        async def run() -> None:
            outcome.append(await agent.conn.prompt(session_id=session.session_id, prompt=text("take your time")))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await working.wait()
            await agent.conn.cancel(session_id=session.session_id)
    assert outcome[0].stop_reason == "cancelled"
    [cancel] = received(tmp_path, "turn/cancel")
    assert cancel["params"]["sessionId"] == session.session_id
    assert is_uuid7(cancel["params"]["commandId"])
    assert agent.frames.problems == []
    if not capable:
        assert_legacy_clean(agent)


# kind → (neutral category, actions, source, JSON-RPC code)
FAILURES = {
    "authRequired": ("access", ["login"], "provider", -32000),
    "modelError": ("service", ["retry"], "provider", -32603),
    "configError": ("request", [], "host", -32603),
    "environmentError": ("request", [], "host", -32603),
    "projectionError": ("request", [], "host", -32603),
    "launchError": ("service", ["retry"], "host", -32603),
    "mcpLinkError": ("service", ["retry"], "host", -32603),
    "workflowLaunchError": ("service", ["retry"], "host", -32603),
    "logError": ("service", ["retry"], "host", -32603),
    "sandboxEscape": ("service", ["retry"], "host", -32603),  # a kind this version does not know
}


@BOTH
@pytest.mark.parametrize("kind", list(FAILURES))
async def test_a_failed_turn_names_the_hosts_error(tmp_path: Path, capable: bool, kind: str) -> None:
    category, actions, source, code = FAILURES[kind]
    message = f"Muse says: {kind} happened (token {'meta-test-key-0123456789abcdef'})."
    async with muse_agent(tmp_path, capable=capable, turn=f"fail:{kind}", MUSE_FAKE_ERROR_MESSAGE=message) as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        outcome = await prompt_outcome(agent, session.session_id, "go")
    redacted = "Muse says: " + kind + " happened (token [REDACTED])."
    if capable:
        record = outcome.field_meta["jetbrains"]["air"]["sessionFailure"]
        assert outcome.stop_reason == "end_turn"
        assert (record["category"], record["actions"], record["severity"], record["title"]) == (
            category, actions, "error", redacted)
        assert record["revision"] == 1 and record["id"].endswith(":error")
    else:
        assert isinstance(outcome, acp.RequestError)
        # spec/004: the host's message, then the recovery sentence
        assert (outcome.code, str(outcome)) == (code, f"{redacted} {outcome.data['failure']['recovery']}")
        retryable = kind in ("modelError", "launchError", "mcpLinkError")
        assert outcome.data == {"failure": {"kind": kind, "source": source, "retryable": retryable,
                                            "outcome": "failed", "recovery": outcome.data["failure"]["recovery"],
                                            "phase": "running", "execution": "possiblySubmitted"}}
        assert_legacy_clean(agent)
    assert "meta-test-key-0123456789abcdef" not in agent.frames.text()
    assert agent.frames.problems == []


async def test_a_quota_message_keeps_the_hosts_own_title(tmp_path: Path) -> None:
    quota = "You have used 100% of your weekly Muse quota. It resets on Monday at 09:00 UTC."
    async with muse_agent(tmp_path, capable=True, turn="fail:modelError", MUSE_FAKE_ERROR_MESSAGE=quota) as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        outcome = await prompt_outcome(agent, session.session_id, "go")
    record = outcome.field_meta["jetbrains"]["air"]["sessionFailure"]
    assert (record["title"], record["category"]) == (quota, "service")


@BOTH
async def test_a_step_limit_keeps_its_stop_reason(tmp_path: Path, capable: bool) -> None:
    async with muse_agent(tmp_path, capable=capable, turn="steplimit") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("go"))
    assert result.stop_reason == "max_turn_requests"
    assert records(agent) == []


async def test_retries_are_warnings_on_the_turns_incident(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=True, turn="retry") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("go"))
    assert result.stop_reason == "end_turn" and result.field_meta is None
    first, second = records(agent)
    assert first["id"] == second["id"] and first["id"].endswith(":error")
    assert [(r["revision"], r["severity"], r["actions"]) for r in (first, second)] == [
        (1, "warning", []), (2, "warning", [])]
    assert first["title"] == "The model provider rate limited the request (retrying in 1s · attempt 2/3)"
    assert (first["category"], second["category"]) == ("limit", "service")
    assert second["title"] == "Meta model API is unavailable (HTTP 529); retrying in 2s · attempt 3/3."
    assert "".join(agent_texts(agent, session.session_id)) == "Recovered after retrying."
    assert agent.frames.problems == []


@BOTH
async def test_a_terminal_failure_after_retries_raises_the_revision(tmp_path: Path, capable: bool) -> None:
    async with muse_agent(tmp_path, capable=capable, turn="retry-fail") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        outcome = await prompt_outcome(agent, session.session_id, "go")
    if capable:
        found = records(agent)
        assert len({r["id"] for r in found}) == 1
        assert [(r["revision"], r["severity"]) for r in found] == [(1, "warning"), (2, "warning"), (3, "error")]
        assert found[-1]["title"] == "The model is overloaded; giving up after 3 attempts."
        assert found[-1]["actions"] == ["retry"]
    else:
        assert isinstance(outcome, acp.RequestError)
        assert outcome.data["failure"]["kind"] == "modelError"
        assert_legacy_clean(agent)
    assert agent.frames.problems == []


@BOTH
async def test_the_host_dying_mid_turn_is_terminal_unknown_and_the_next_prompt_restarts_it(
        tmp_path: Path, capable: bool) -> None:
    async with muse_agent(tmp_path, capable=capable, turn="exit") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        outcome = await prompt_outcome(agent, session.session_id, "go")
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("turn:text again"))
    title = "The connection to Muse Code was lost; the turn's outcome is unknown."
    if capable:
        record = outcome.field_meta["jetbrains"]["air"]["sessionFailure"]
        assert (record["title"], record["category"], record["actions"]) == (title, "connection", ["new_session"])
    else:
        assert isinstance(outcome, acp.RequestError)
        assert (outcome.code, str(outcome)) == (
            -32603, f"{title} Reload and inspect the session before deciding to submit again.")
        assert outcome.data == {"failure": {
            "kind": "terminalUnknown", "source": "transport", "outcome": "unknown",
            "recovery": "Reload and inspect the session before deciding to submit again.", "phase": "running",
            "execution": "possiblySubmitted"}}
        assert_legacy_clean(agent)
    assert result.stop_reason == "end_turn"
    assert agent_texts(agent, session.session_id)[-2:] == ["Hello", ", world."]
    first, second = host_pids(tmp_path)
    assert first != second
    # the second host resumed the session (it exists on disk): no new start
    assert methods_received(tmp_path).count("session/start") == 1
    assert [f["params"]["sessionId"] for f in received(tmp_path, "session/resume")] == [session.session_id] * 2
    assert agent.frames.problems == []
    assert_hosts_gone(tmp_path)


async def test_a_question_the_user_declines_is_cancelled(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=True, turn="question") as agent:
        agent.client.permission = lambda options: "decline"  # the question is asked as a permission now
        session = await agent.conn.new_session(cwd=str(tmp_path))
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("go"))
    assert result.stop_reason == "end_turn"
    [cancel] = received(tmp_path, "userInput/cancel")
    assert cancel["params"]["userInputId"].endswith("/q1")
    assert agent_texts(agent, session.session_id) == ["Continuing without an answer."]
    # the server request got its (empty) presentation receipt
    receipts = [frame for frame in received(tmp_path) if "result" in frame]
    assert receipts and all(frame["result"] == {} for frame in receipts)


async def test_a_session_the_host_unloaded_is_resumed_for_the_next_prompt(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=True, turn="closed") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        await agent.conn.prompt(session_id=session.session_id, prompt=text("one"))
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("turn:text two"))
    assert result.stop_reason == "end_turn"
    assert len(host_pids(tmp_path)) == 1
    assert methods_received(tmp_path).count("session/resume") == 2
    assert next(e for e in host_events(tmp_path) if e["event"] == "spawn")["cwd"] == str(tmp_path)


async def test_a_host_that_dies_between_turns_is_reported_and_replaced(tmp_path: Path) -> None:
    import os
    import signal

    from tests.muse.e2e_support import wait_for_exit

    reported = anyio.Event()

    def on_update(session_id: str, update: Any) -> None:
        if "jetbrains" in (getattr(update, "field_meta", None) or {}):
            reported.set()

    async with muse_agent(tmp_path, capable=True) as agent:
        hooked(agent).update_hook = on_update
        session = await agent.conn.new_session(cwd=str(tmp_path))
        await agent.conn.prompt(session_id=session.session_id, prompt=text("one"))
        [pid] = host_pids(tmp_path)
        os.kill(pid, signal.SIGKILL)  # by PID: the one host this test's agent started
        await wait_for_exit(pid)
        await reported.wait()  # the agent noticed on its own, outside any turn
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("two"))
    assert result.stop_reason == "end_turn"
    [record] = records(agent)
    assert record["id"].startswith(f"{session.session_id}:session-error:")
    assert (record["category"], record["severity"]) == ("connection", "error")
    assert record["title"] == "Muse Code exited; it will be started again for the next prompt."
    assert len(host_pids(tmp_path)) == 2
    assert agent.frames.problems == []


async def test_an_ephemeral_host_that_lost_the_session_starts_it_again_with_a_notice(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=True, scenario="ephemeral", turn="exit") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        await prompt_outcome(agent, session.session_id, "go")
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("turn:text again"))
    assert result.stop_reason == "end_turn"
    turn_failure, notice = records(agent)
    assert turn_failure["category"] == "connection"
    assert notice["title"] == "Muse Code no longer had this session's history; it continues as a new session with " \
                              "the same id."
    assert (notice["severity"], notice["category"]) == ("warning", "unknown")
    starts = received(tmp_path, "session/start")
    assert [frame["params"]["sessionId"] for frame in starts] == [session.session_id] * 2


async def test_closing_a_session_with_a_running_turn_cancels_it_and_stops_the_host(tmp_path: Path) -> None:
    working = anyio.Event()

    def on_update(session_id: str, update: Any) -> None:
        if getattr(update, "session_update", None) == "agent_message_chunk":
            working.set()

    async with muse_agent(tmp_path, capable=False, turn="wait", scenario="hang=turn/cancel") as agent:
        hooked(agent).update_hook = on_update
        session = await agent.conn.new_session(cwd=str(tmp_path))
        outcome: list[Any] = []

        async def run() -> None:
            outcome.append(await prompt_outcome(agent, session.session_id, "take your time"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await working.wait()
            await agent.conn.close_session(session_id=session.session_id)
        assert_hosts_gone(tmp_path)
    assert outcome[0].stop_reason == "cancelled"
    assert sorted(frame["method"] for frame in received(tmp_path)
                  if frame.get("method") in ("turn/cancel", "session/leave")) == ["session/leave", "turn/cancel"]
    assert_legacy_clean(agent)
