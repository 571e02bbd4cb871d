"""`acp-agent --provider codex` as a subprocess, driven by the agent-client-protocol SDK client.

The backend is the real `codex app-server` (from openai-codex-cli-bin) with a CODEX_HOME whose
config.toml routes the model provider to the loopback fake Responses API, which injects faults
per request. Every test runs for a capable client (typed `sessionFailure` records) and a legacy
one (baseline JSON-RPC errors, the established text, and never the word `sessionFailure`).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest
from acp import schema

from tests.codex.e2e_support import (
    BUBBLEWRAP_PREFIX,
    agent_texts,
    app_server_pid,
    codex_agent,
    kill_app_server,
    model_text,
    notice_records,
    process_gone,
    text,
    turn_metadata,
    turn_records,
    wait_for_turn_requests,
    workspace,
    write_codex_home,
)
from tests.e2e.harness import AgentProcess
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(90)]

CLIENTS = [pytest.param(True, id="capable"), pytest.param(False, id="legacy")]
HIGH_DEMAND = "We’re currently experiencing high demand, which may cause temporary errors."
SLOW = {"slow_stream": {"text": " ".join(f"word{n}" for n in range(600)), "interval_s": 0.05}}


async def prompt_outcome(agent: AgentProcess, session_id: str, value: str) -> Any:
    """The prompt's result, or the JSON-RPC error it was rejected with."""
    try:
        return await agent.conn.prompt(session_id=session_id, prompt=text(value))
    except acp.RequestError as error:
        return error


def assert_clean(agent: AgentProcess, *, capable: bool) -> None:
    assert agent.frames.problems == []
    if not capable:
        assert "sessionFailure" not in agent.frames.text()


async def one_turn(api: FakeResponsesAPI, tmp_path: Path, *, capable: bool, retries: int = 2,
                   prompt: str = "do it") -> tuple[AgentProcess, str, Any]:
    home = write_codex_home(api, tmp_path, retries=retries)
    async with codex_agent(home, tmp_path, capable=capable) as agent:
        session = await agent.conn.new_session(cwd=workspace(tmp_path))
        outcome = await prompt_outcome(agent, session.session_id, prompt)
    return agent, session.session_id, outcome


# --- answers and retries -------------------------------------------------------------------------------


@pytest.mark.parametrize("capable", CLIENTS)
async def test_ok_reply_streams_text_and_ends_the_turn(tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI([{"reasoning": "Thinking it over.", "reply": "Hello from the fake model"}]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            outcome = await prompt_outcome(agent, session.session_id, "say hello")
            backend = app_server_pid(agent.process.pid)
        session_id = session.session_id
    assert process_gone(backend)  # the agent stopped its app-server when it exited
    assert outcome.stop_reason == "end_turn"
    assert outcome.field_meta is None
    assert model_text(agent, session_id) == "Hello from the fake model"
    assert len([t for t in agent_texts(agent, session_id) if not t.startswith("Config warning")]) > 1  # streamed
    updates = agent.frames.updates(session_id)
    thoughts = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_thought_chunk")
    assert thoughts == "Thinking it over."
    assert any(u["sessionUpdate"] == "usage_update" and u["size"] > 0 for u in updates)
    assert turn_records(agent) == []
    assert_clean(agent, capable=capable)


@pytest.mark.parametrize("capable", CLIENTS)
async def test_500_repeated_warns_then_fails_on_one_incident(tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI([{"status": 500}] * 3) as api:
        agent, _, outcome = await one_turn(api, tmp_path, capable=capable)
        assert len(api.turn_requests) == 3
    if capable:
        records = turn_records(agent)
        assert [(r["revision"], r["severity"], r["title"]) for r in records] == [
            (1, "warning", "Reconnecting... 1/2"), (2, "warning", "Reconnecting... 2/2"), (3, "error", HIGH_DEMAND)]
        assert len({r["id"] for r in records}) == 1
        assert all(r["actions"] == [] for r in records[:2])
        terminal = outcome.field_meta["jetbrains"]["air"]["sessionFailure"]
        assert outcome.stop_reason == "end_turn"
        assert terminal == records[-1]
        assert (terminal["category"], terminal["actions"]) == ("service", ["retry"])
    else:
        assert isinstance(outcome, acp.RequestError)
        assert (outcome.code, str(outcome)) == (-32603, f"{HIGH_DEMAND} {outcome.data['failure']['recovery']}")
        assert outcome.data["codexErrorInfo"] == "internalServerError"
        assert outcome.data["failure"] == {
            "kind": "internalServerError", "source": "provider", "retryable": True, "outcome": "failed",
            "recovery": "Check the session before trying again.", "phase": "running", "execution": "possiblySubmitted"}
    assert_clean(agent, capable=capable)


@pytest.mark.parametrize("capable", CLIENTS)
async def test_429_is_a_rate_limit(tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI([{"status": 429}] * 2) as api:
        agent, _, outcome = await one_turn(api, tmp_path, capable=capable, retries=1)
    if capable:
        records = turn_records(agent)
        assert [(r["severity"], r["category"]) for r in records] == [("warning", "limit"), ("error", "limit")]
        assert records[-1]["actions"] == ["retry"]
        assert records[-1]["title"].startswith("exceeded retry limit, last status: 429 Too Many Requests")
        assert outcome.field_meta["jetbrains"]["air"]["sessionFailure"] == records[-1]
    else:
        assert isinstance(outcome, acp.RequestError) and outcome.code == -32603
        assert outcome.data["failure"]["kind"] == "responseTooManyFailedAttempts"
        assert outcome.data["codexErrorInfo"] == {"responseTooManyFailedAttempts": {"httpStatusCode": 429}}
    assert_clean(agent, capable=capable)


@pytest.mark.parametrize("capable", CLIENTS)
async def test_401_asks_for_login(tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI([{"status": 401}] * 2) as api:
        agent, _, outcome = await one_turn(api, tmp_path, capable=capable, retries=1)
    if capable:
        terminal = outcome.field_meta["jetbrains"]["air"]["sessionFailure"]
        assert (terminal["category"], terminal["actions"], terminal["severity"]) == ("access", ["login"], "error")
        assert terminal["title"].startswith("unexpected status 401 Unauthorized")
        assert [r["revision"] for r in turn_records(agent)] == [1, 2]
    else:
        assert isinstance(outcome, acp.RequestError) and outcome.code == -32000
        assert outcome.data["failure"]["kind"] == "httpConnectionFailed"
        assert outcome.data["failure"]["retryable"] is False
    assert "sk-fake-test-key-0123456789" not in agent.frames.text()
    assert_clean(agent, capable=capable)


@pytest.mark.parametrize("capable", CLIENTS)
async def test_stream_cut_before_completion(tmp_path: Path, capable: bool) -> None:
    cut = {"cut_after_events": 4, "reply": "a partial answer that is cut"}
    with FakeResponsesAPI([cut, cut]) as api:
        agent, _, outcome = await one_turn(api, tmp_path, capable=capable, retries=1)
    if capable:
        records = turn_records(agent)
        assert [(r["revision"], r["severity"]) for r in records] == [(1, "warning"), (2, "error")]
        assert records[0]["title"] == "Reconnecting... 1/1"
        assert records[-1]["title"].startswith("stream disconnected before completion")
        assert records[-1]["category"] == "service"
    else:
        assert isinstance(outcome, acp.RequestError) and outcome.code == -32603
        assert outcome.data["failure"]["kind"] == "other"
        assert str(outcome).startswith("stream disconnected before completion")
    assert_clean(agent, capable=capable)


@pytest.mark.parametrize("capable", CLIENTS)
async def test_500_500_then_ok_warns_then_ends_the_turn(tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI([{"status": 500}, {"status": 500}, {"reply": "third time lucky"}]) as api:
        agent, session_id, outcome = await one_turn(api, tmp_path, capable=capable)
    assert outcome.stop_reason == "end_turn"
    assert outcome.field_meta is None
    assert model_text(agent, session_id) == "third time lucky"
    if capable:
        assert [(r["revision"], r["severity"]) for r in turn_records(agent)] == [(1, "warning"), (2, "warning")]
    assert_clean(agent, capable=capable)


# --- notices at start-up ----------------------------------------------------------------------------------

DEPRECATED_TOP = "experimental_use_unified_exec_tool = true\nunknown_top_level_key = \"x\"\n"
DEPRECATION_SUMMARY = "`[features].experimental_use_unified_exec_tool` is deprecated. Use `[features].unified_exec` instead."
UNKNOWN_KEY_SUMMARY = "Codex is ignoring 1 unrecognized configuration setting."


@pytest.mark.parametrize("capable", CLIENTS)
async def test_config_warning_and_deprecation_notice_at_start_up(tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI([{"reply": "fine"}]) as api:
        home = write_codex_home(api, tmp_path, top=DEPRECATED_TOP)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            # they reach the client as soon as the session exists, without waiting for a prompt
            await agent.watched.wait_for(lambda f: f.get("method") == "session/update" and UNKNOWN_KEY_SUMMARY in str(f))
            assert not any(f.get("method") == "session/prompt" for f in agent.frames.outgoing)
            outcome = await prompt_outcome(agent, session.session_id, "hello")
    assert outcome.stop_reason == "end_turn"
    sid = session.session_id
    if capable:
        notices = notice_records(agent, sid)
        titles = [r["title"] for r in notices]
        assert any(t.startswith(UNKNOWN_KEY_SUMMARY) for t in titles), titles
        deprecation = next(r for r in notices if r["title"] == DEPRECATION_SUMMARY)
        assert deprecation["details"].startswith("Enable it with `--enable unified_exec`")
        for record in notices:
            assert (record["severity"], record["category"], record["actions"]) == ("warning", "unknown", [])
            assert record["id"].startswith(f"{sid}:notice:")
        assert not any(t.startswith("Config warning") for t in agent_texts(agent, sid))
    else:
        shown = agent_texts(agent, sid)
        config = [t for t in shown if t.startswith(f"Config warning: {UNKNOWN_KEY_SUMMARY}")]
        assert len(config) == 1 and config[0].endswith("is ignored.\n\n")
        assert not any("experimental_use_unified_exec_tool" in t for t in shown)
        assert model_text(agent, sid) == "fine"
    # after the session/new response (the client knows the session id by then)
    session_new = next(i for i, f in enumerate(agent.frames.incoming) if "sessionId" in (f.get("result") or {}))
    first_notice = next(i for i, f in enumerate(agent.frames.incoming)
                        if f.get("method") == "session/update" and UNKNOWN_KEY_SUMMARY in str(f))
    assert first_notice > session_new
    assert_clean(agent, capable=capable)


# --- approvals -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("capable", CLIENTS)
@pytest.mark.parametrize("answer", ["accept", "decline"])
async def test_shell_command_needing_approval(tmp_path: Path, capable: bool, answer: str) -> None:
    marker = tmp_path / "work" / "approved.txt"
    step = {"shell": ["bash", "-lc", f"echo approved > {marker}; echo wrote"],
            "justification": "Allow writing the marker file?"}
    with FakeResponsesAPI([step, {"reply": "all done"}]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            agent.client.permission = lambda options: answer
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            # the user decides only in Workspace access (the default, Auto review, asks codex's reviewer)
            await agent.conn.set_session_mode(session_id=session.session_id, mode_id="auto")
            outcome = await prompt_outcome(agent, session.session_id, "write the marker")
    assert outcome.stop_reason == "end_turn"
    (tool_call, options), = agent.client.permission_requests
    assert tool_call.kind == "execute" and tool_call.title == f"echo approved > {marker}; echo wrote"
    assert [option.option_id for option in options] == ["accept", "acceptForSession", "decline"]
    updates = agent.frames.updates(session.session_id)
    call = next(u for u in updates if u["sessionUpdate"] == "tool_call")
    done = [u for u in updates if u["sessionUpdate"] == "tool_call_update" and u.get("status")]
    assert call["kind"] == "execute" and call["toolCallId"] == tool_call.tool_call_id
    if answer == "accept":
        assert marker.read_text() == "approved\n"
        assert done[-1]["status"] == "completed"
        assert done[-1]["content"][0]["content"]["text"].endswith("wrote\n")
    else:
        assert not marker.exists()
        assert done[-1]["status"] == "failed"
    assert model_text(agent, session.session_id) == "all done"
    assert_clean(agent, capable=capable)


@pytest.mark.parametrize("answer", ["accept", "decline"])
async def test_file_change_outside_the_workspace_needs_approval(tmp_path: Path, answer: str) -> None:
    outside = Path(tempfile.mkdtemp(prefix="acp-codex-e2e-", dir="/var/tmp"))  # not a writable root
    try:
        target = outside / "patched.txt"
        patch = f"*** Begin Patch\n*** Add File: {target}\n+hello from apply_patch\n*** End Patch\n"
        with FakeResponsesAPI([{"apply_patch": patch}, {"reply": "patched"}]) as api:
            home = write_codex_home(api, tmp_path)
            async with codex_agent(home, tmp_path, capable=True) as agent:
                agent.client.permission = lambda options: answer
                session = await agent.conn.new_session(cwd=workspace(tmp_path))
                await agent.conn.set_session_mode(session_id=session.session_id, mode_id="auto")
                outcome = await prompt_outcome(agent, session.session_id, "create the file")
        created = target.exists()
    finally:
        shutil.rmtree(outside, ignore_errors=True)
    assert outcome.stop_reason == "end_turn"
    (tool_call, _), = agent.client.permission_requests
    assert (tool_call.kind, tool_call.title) == ("edit", f"Add {target}")
    diff = tool_call.content[0]
    assert (diff.path, diff.new_text, diff.old_text) == (str(target), "hello from apply_patch\n", None)
    assert created is (answer == "accept")
    done = [u for u in agent.frames.updates(session.session_id) if u["sessionUpdate"] == "tool_call_update"]
    assert done[-1]["status"] == ("completed" if answer == "accept" else "failed")
    assert agent.frames.problems == []


# --- cancel and a dying backend --------------------------------------------------------------------------------


@pytest.mark.parametrize("capable", CLIENTS)
async def test_cancel_interrupts_the_turn(tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI([SLOW]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            outcomes: list[Any] = []
            async with anyio.create_task_group() as group:
                async def run() -> None:
                    outcomes.append(await prompt_outcome(agent, session.session_id, "talk slowly"))

                group.start_soon(run)
                await wait_for_turn_requests(api, 1)
                await agent.conn.cancel(session_id=session.session_id)
    (outcome,) = outcomes
    assert outcome.stop_reason == "cancelled"
    assert turn_records(agent) == []
    assert_clean(agent, capable=capable)


@pytest.mark.parametrize("capable", CLIENTS)
async def test_app_server_killed_mid_turn_then_a_fresh_one(tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI([SLOW, {"reply": "back again"}]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            outcomes: list[Any] = []
            async with anyio.create_task_group() as group:
                async def run() -> None:
                    outcomes.append(await prompt_outcome(agent, session.session_id, "talk slowly"))

                group.start_soon(run)
                await wait_for_turn_requests(api, 1)
                killed = kill_app_server(agent.process.pid)
            again = await prompt_outcome(agent, session.session_id, "are you there?")
            replacement = app_server_pid(agent.process.pid)
    (lost,) = outcomes
    if capable:
        assert lost.stop_reason == "end_turn"
        record = lost.field_meta["jetbrains"]["air"]["sessionFailure"]
        assert (record["title"], record["category"], record["actions"], record["severity"]) == (
            "The connection to Codex was lost.", "connection", ["new_session"], "error")
    else:
        assert isinstance(lost, acp.RequestError) and lost.code == -32603
        assert str(lost) == ("The connection to Codex was lost. "
                             "Reload and inspect the session before deciding to submit again.")
        assert lost.data == {"failure": {
            "kind": "transportLost", "source": "transport", "outcome": "unknown",
            "recovery": "Reload and inspect the session before deciding to submit again.", "phase": "running",
            "execution": "possiblySubmitted"}}
    assert again.stop_reason == "end_turn" and again.field_meta is None
    assert model_text(agent, session.session_id).endswith("back again")
    assert replacement != killed
    assert_clean(agent, capable=capable)


# --- list and load ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("capable", CLIENTS)
async def test_list_and_load_replay_a_finished_thread(tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI([{"reply": "first answer"}, {"status": 500}, {"status": 500}]) as api:
        home = write_codex_home(api, tmp_path, retries=1)
        cwd = workspace(tmp_path)
        async with codex_agent(home, tmp_path, capable=capable, log_name="first") as first:
            session = await first.conn.new_session(cwd=cwd)
            await first.conn.prompt(session_id=session.session_id, prompt=text("hello there"))
            live = await prompt_outcome(first, session.session_id, "this one fails")
        async with codex_agent(home, tmp_path, capable=capable, log_name="second") as second:
            listed = await second.conn.list_sessions(cwd=cwd)
            loaded = await second.conn.load_session(cwd=cwd, session_id=session.session_id)
            again = await prompt_outcome(second, session.session_id, "after loading")
    (info,) = [s for s in listed.sessions if s.session_id == session.session_id]
    assert (info.cwd, info.title) == (cwd, "hello there")
    assert loaded.modes is not None and loaded.modes.current_mode_id == "auto-review"
    replay = second.frames.updates(session.session_id)
    shown = [(u["sessionUpdate"], u.get("content", {}).get("text")) for u in replay
             if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk")]
    assert shown[:3] == [("user_message_chunk", "hello there"), ("agent_message_chunk", "first answer"),
                         ("user_message_chunk", "this one fails")]
    if capable:
        (history,) = [r for r in second.frames.failure_records() if r["id"].endswith(":error")][:1]
        assert (history["title"], history["category"], history["severity"]) == (HIGH_DEMAND, "service", "error")
        # the same occurrence keeps the same id live and replayed
        assert history["id"] == live.field_meta["jetbrains"]["air"]["sessionFailure"]["id"]
        assert ("agent_message_chunk", HIGH_DEMAND) not in shown
    else:
        assert shown[3] == ("agent_message_chunk", HIGH_DEMAND)
    assert again.stop_reason == "end_turn"
    assert_clean(second, capable=capable)
    assert_clean(first, capable=capable)


# --- modes and the model ------------------------------------------------------------------------------------------


async def test_modes_and_model_reach_the_next_turn(tmp_path: Path) -> None:
    with FakeResponsesAPI([{"reply": "one"}, {"reply": "two"}, {"reply": "three"}]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=True) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            assert session.modes is not None and session.modes.current_mode_id == "auto-review"
            assert [m.id for m in session.modes.available_modes] == ["read-only", "auto", "auto-review", "full-access"]
            model = next(o for o in session.config_options or [] if o.id == "model")
            assert (model.id, model.current_value) == ("model", "gpt-5.5")
            choices = [option.value for option in model.options]
            other = next(choice for choice in choices if choice != "gpt-5.5")
            await agent.conn.prompt(session_id=session.session_id, prompt=text("default"))
            await agent.conn.set_session_mode(session_id=session.session_id, mode_id="read-only")
            await agent.conn.prompt(session_id=session.session_id, prompt=text("read only"))
            changed = await agent.conn.set_config_option(config_id="model", session_id=session.session_id,
                                                         value=other)
            await agent.conn.set_session_mode(session_id=session.session_id, mode_id="full-access")
            await agent.conn.prompt(session_id=session.session_id, prompt=text("full access"))
            with pytest.raises(acp.RequestError) as unknown:
                await agent.conn.set_session_mode(session_id=session.session_id, mode_id="yolo")
        requests = api.turn_requests
    assert next(o for o in changed.config_options if o.id == "model").current_value == other
    assert unknown.value.code == -32602
    sandboxes = [turn_metadata(request).get("sandbox_mode") for request in requests]
    assert sandboxes == ["workspace-write", "read-only", "danger-full-access"]
    assert [request.body["model"] for request in requests] == ["gpt-5.5", "gpt-5.5", other]
    modes = [u["currentModeId"] for u in agent.frames.updates(session.session_id)
             if u["sessionUpdate"] == "current_mode_update"]
    assert modes == ["read-only", "full-access"]
    assert agent.frames.problems == []


async def test_the_users_config_chooses_the_starting_mode(tmp_path: Path) -> None:
    with FakeResponsesAPI([{"reply": "ok"}]) as api:
        home = write_codex_home(api, tmp_path, policy='sandbox_mode = "read-only"\napproval_policy = "on-request"\n')
        async with codex_agent(home, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("hi"))
    assert session.modes is not None and session.modes.current_mode_id == "read-only"
    assert turn_metadata(api.turn_requests[0]).get("sandbox_mode") == "read-only"
    assert agent.frames.problems == []


async def test_bubblewrap_notice_reaches_a_capable_client_once(tmp_path: Path) -> None:
    """Whatever the machine's PATH, the process-wide notices go to the first session only."""
    with FakeResponsesAPI([{"reply": "a"}, {"reply": "b"}]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=True) as agent:
            first = await agent.conn.new_session(cwd=workspace(tmp_path))
            await agent.conn.prompt(session_id=first.session_id, prompt=text("a"))
            second = await agent.conn.new_session(cwd=workspace(tmp_path))
            await agent.conn.prompt(session_id=second.session_id, prompt=text("b"))
    bubblewrap = [r for r in agent.frames.failure_records() if r["title"].startswith(BUBBLEWRAP_PREFIX)]
    on_path = any(os.access(os.path.join(p, "bwrap"), os.X_OK) for p in os.environ.get("PATH", "").split(os.pathsep) if p)
    assert len(bubblewrap) == (0 if on_path else 1)
    assert notice_records(agent, second.session_id) == []
    assert agent.frames.problems == []


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "plain"])
async def test_the_bubblewrap_warning_is_a_notice_for_a_client_that_presents_notices(
        tmp_path: Path, capable: bool) -> None:
    """A client with `session.notices` gets Codex's config warnings as `notice` updates (warning
    severity), not as agent text before the first prompt and not as advisory records."""
    with FakeResponsesAPI([{"reply": "a"}]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable, session={"notices": {}}) as agent:
            first = await agent.conn.new_session(cwd=workspace(tmp_path))
            await agent.conn.prompt(session_id=first.session_id, prompt=text("a"))
    updates = agent.frames.updates(first.session_id)
    notices = [u for u in updates if u["sessionUpdate"] == "notice" and u["title"].startswith(BUBBLEWRAP_PREFIX)]
    on_path = any(os.access(os.path.join(p, "bwrap"), os.X_OK) for p in os.environ.get("PATH", "").split(os.pathsep) if p)
    assert [notice["severity"] for notice in notices] == ([] if on_path else ["warning"])
    texts = [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert texts == ["a"]
    assert agent.frames.failure_records() == []
    assert agent.frames.problems == []


async def test_prompt_with_image_and_resources_reaches_the_model(tmp_path: Path) -> None:
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    blocks: list[Any] = [
        schema.TextContentBlock(type="text", text="look at these"),
        schema.ImageContentBlock(type="image", data=png, mime_type="image/png"),
        schema.ResourceContentBlock(type="resource_link", uri="file:///w/a.py", name="a.py"),
        schema.EmbeddedResourceContentBlock(type="resource", resource=schema.TextResourceContents(
            uri="file:///w/b.py", text="print('embedded')")),
    ]
    with FakeResponsesAPI([{"reply": "seen"}]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=True) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            outcome = await agent.conn.prompt(session_id=session.session_id, prompt=blocks)
        body = api.turn_requests[0].body or {}
    assert outcome.stop_reason == "end_turn"
    user = [item for item in body["input"] if item.get("role") == "user"][-1]
    parts = [(part["type"], part.get("text") or part.get("image_url")) for part in user["content"]]
    assert ("input_text", "look at these") in parts
    assert ("input_image", f"data:image/png;base64,{png}") in parts
    assert ("input_text", "[@a.py](file:///w/a.py)") in parts
    assert ("input_text", '<context ref="file:///w/b.py">\nprint(\'embedded\')\n</context>') in parts
    assert agent.frames.problems == []


async def test_resume_continues_without_replay(tmp_path: Path) -> None:
    with FakeResponsesAPI([{"reply": "before"}, {"reply": "after"}]) as api:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        async with codex_agent(home, tmp_path, capable=True, log_name="first") as first:
            session = await first.conn.new_session(cwd=cwd)
            await first.conn.prompt(session_id=session.session_id, prompt=text("remember this"))
        async with codex_agent(home, tmp_path, capable=True, log_name="second") as second:
            await second.conn.resume_session(cwd=cwd, session_id=session.session_id)
            outcome = await second.conn.prompt(session_id=session.session_id, prompt=text("and now?"))
            await second.conn.close_session(session_id=session.session_id)
            closed = await prompt_outcome(second, session.session_id, "still there?")
        history = json.dumps(api.turn_requests[1].body)
    assert outcome.stop_reason == "end_turn"
    assert isinstance(closed, acp.RequestError) and closed.code == -32002
    assert len(api.turn_requests) == 2
    kinds = [u["sessionUpdate"] for u in second.frames.updates(session.session_id)]
    assert "user_message_chunk" not in kinds
    assert model_text(second, session.session_id) == "after"
    assert "remember this" in history  # the resumed thread kept its history
    assert second.frames.problems == []


async def test_auth_status_rejected_then_accepted_for_turn(tmp_path: Path) -> None:
    env_key = "sk-env-openai-key-7777777777"
    with FakeResponsesAPI([{"status": 401}, {"status": 401}, {"reply": "welcome back"}]) as api:
        home = write_codex_home(api, tmp_path, retries=1)
        env = {"OPENAI_API_KEY": env_key, "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
        async with codex_agent(home, tmp_path, capable=False, env=env, meta={"codex/authStatus": 1}) as agent:
            init = agent.initialized
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            failed = await prompt_outcome(agent, session.session_id, "first")
            ok = await prompt_outcome(agent, session.session_id, "second")
    assert init.field_meta["codex/authStatus"] == {"configured": True, "source": "environment",
                                                   "verification": "unknown", "identity": "unknown"}
    assert isinstance(failed, acp.RequestError) and failed.code == -32000
    assert ok.stop_reason == "end_turn"
    statuses = [u["_meta"]["codex/authStatus"] for u in agent.frames.updates(session.session_id)
                if u["sessionUpdate"] == "session_info_update" and "codex/authStatus" in (u.get("_meta") or {})]
    assert [s["verification"] for s in statuses] == ["rejected", "acceptedForTurn"]
    assert statuses[0]["latestFailure"]["kind"] == "httpConnectionFailed"
    assert statuses[1]["latestFailure"] is None
    assert env_key not in agent.frames.text()
    assert agent.frames.problems == []
