"""`acp-agent --provider claude` as a subprocess, driven by the agent-client-protocol client, against
the real Claude Code CLI bundled in claude-agent-sdk, pointed at the loopback fake Anthropic API."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest

from tests.claude.e2e_support import (
    API_KEY,
    agent_texts,
    claude_agent,
    kill_claude_cli,
    text,
    wait_for_requests,
)
from tests.claude.replay import FIXTURES
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])


async def prompt_outcome(agent: Any, session_id: str, words: str = "Say hello.") -> Any:
    try:
        return await agent.conn.prompt(session_id=session_id, prompt=text(words))
    except acp.RequestError as exc:
        return exc


def record_of(result: Any) -> dict[str, Any]:
    return result.field_meta["jetbrains"]["air"]["sessionFailure"]


def assert_clean(agent: Any, *, capable: bool) -> None:
    assert agent.frames.problems == []
    wire = agent.frames.text()
    if not capable:
        assert "sessionFailure" not in wire
    assert API_KEY not in wire
    assert API_KEY not in agent.log_text()


@BOTH
async def test_ok_text_streams_and_ends_the_turn(tmp_path: Path, capable: bool) -> None:
    with FakeAnthropicAPI([{"reply": "Hello from the fake model!"}]) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            result = await prompt_outcome(agent, session.session_id)
    assert result.stop_reason == "end_turn"
    assert "".join(agent_texts(agent, session.session_id)) == "Hello from the fake model!"
    assert any(u["sessionUpdate"] == "available_commands_update" for u in agent.frames.updates())
    assert any(u["sessionUpdate"] == "usage_update" for u in agent.frames.updates())
    assert_clean(agent, capable=capable)


FAULTS = [
    # (script, retries, category, actions, baseline code, native kind, title prefix)
    ([{"status": 429, "error_type": "rate_limit_error", "message": "slow down", "times": 3}], 2,
     "limit", ["retry"], -32603, "rate_limit", r"API Error: Request rejected \(429\) · slow down"),
    ([{"status": 529, "error_type": "overloaded_error", "message": "Overloaded", "times": 3}], 2,
     "service", ["retry"], -32603, "server_error", r"API Error: (Repeated )?529 Overloaded"),
    ([{"status": 500, "error_type": "api_error", "message": "Internal server error", "times": 3}], 2,
     "service", ["retry"], -32603, "server_error", "API Error: 500"),
    ([{"status": 401, "error_type": "authentication_error", "message": "invalid x-api-key", "times": 2}], 1,
     "access", ["login"], -32000, "authentication_failed", "Invalid API key"),
    ([{"status": 400, "error_type": "invalid_request_error", "message": "bad thing", "times": 6}], 0,
     "request", [], -32603, "unknown", "API Error: 400 bad thing"),
]


@BOTH
@pytest.mark.parametrize(("script", "retries", "category", "actions", "code", "native", "title"), FAULTS,
                         ids=["429", "529", "500", "401", "400"])
async def test_api_failures(tmp_path: Path, capable: bool, script: list[Any], retries: int, category: str,
                            actions: list[str], code: int, native: str, title: str) -> None:
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=capable, retries=retries) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            result = await prompt_outcome(agent, session.session_id)
    if capable:
        assert result.stop_reason == "end_turn"
        terminal = record_of(result)
        records = agent.frames.failure_records()
        assert len(records) == retries + 1
        assert {record["id"] for record in records} == {terminal["id"]}
        assert [record["revision"] for record in records] == list(range(1, retries + 2))
        assert all(record["severity"] == "warning" and record["actions"] == [] for record in records[:-1])
        assert (terminal["severity"], terminal["category"], terminal["actions"]) == ("error", category, actions)
        assert re.match(title, terminal["title"]), terminal["title"]
        assert terminal["id"].endswith(":error")
    else:
        assert isinstance(result, acp.RequestError)
        assert result.code == code
        assert re.match(title, str(result)), str(result)
        assert result.data["errorKind"] == native
        assert result.data["failure"]["kind"] == native
        assert set(result.data["failure"]) <= {"kind", "source", "retryable", "outcome", "recovery", "phase",
                                               "execution"}
    assert_clean(agent, capable=capable)


@BOTH
async def test_stream_cut_then_success(tmp_path: Path, capable: bool) -> None:
    with FakeAnthropicAPI([{"cut_after_events": 3}, {"reply": "Recovered."}]) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            result = await prompt_outcome(agent, session.session_id)
    assert result.stop_reason == "end_turn"
    assert "".join(agent_texts(agent, session.session_id)) == "Recovered."
    if capable:
        [warning] = agent.frames.failure_records()
        assert (warning["severity"], warning["category"]) == ("warning", "connection")
        assert warning["title"] == "Reconnecting to Claude, attempt 1 of 2."
    assert_clean(agent, capable=capable)


@BOTH
async def test_tool_permission_allowed_then_rejected(tmp_path: Path, capable: bool) -> None:
    script = [
        {"tool_use": {"name": "Bash", "input": {"command": "touch allowed.txt", "description": "Create a file"}}},
        {"reply": "Created it."},
        {"tool_use": {"name": "Bash", "input": {"command": "touch rejected.txt", "description": "Create a file"}}},
        {"reply": "Understood, I did not create it."},
    ]
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            first = await prompt_outcome(agent, session.session_id, "Create allowed.txt")
            agent.client.permission = lambda options: next(o.option_id for o in options if o.kind == "reject_once")
            second = await prompt_outcome(agent, session.session_id, "Create rejected.txt")
    assert (first.stop_reason, second.stop_reason) == ("end_turn", "end_turn")
    assert (tmp_path / "allowed.txt").exists()
    assert not (tmp_path / "rejected.txt").exists()
    asked = [call for call, _ in agent.client.permission_requests]
    assert [call.title for call in asked] == ["`touch allowed.txt`", "`touch rejected.txt`"]
    assert [option.kind for option in agent.client.permission_requests[0][1]] == [
        "allow_once", "allow_always", "reject_once"]
    statuses = [(u["toolCallId"], u.get("status")) for u in agent.frames.updates()
                if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
    assert [status for _, status in statuses] == ["pending", "in_progress", "completed", "pending", "failed"]
    assert_clean(agent, capable=capable)


@BOTH
async def test_cancel_during_a_slow_stream(tmp_path: Path, capable: bool) -> None:
    with FakeAnthropicAPI([{"hang_after_events": 4, "reply": "This answer never finishes streaming"},
                           {"reply": "Next turn works."}]) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            results: list[Any] = []
            async with anyio.create_task_group() as tg:

                async def run() -> None:
                    results.append(await prompt_outcome(agent, session.session_id))

                tg.start_soon(run)
                await wait_for_requests(api, 1)
                await agent.conn.cancel(session_id=session.session_id)
            after = await prompt_outcome(agent, session.session_id, "Again.")
    assert results[0].stop_reason == "cancelled"
    assert after.stop_reason == "end_turn"
    assert agent.frames.failure_records() == []
    assert_clean(agent, capable=capable)


@BOTH
async def test_cli_killed_mid_turn_is_transport_loss_and_the_next_prompt_recovers(tmp_path: Path, capable: bool) -> None:
    with FakeAnthropicAPI([{"hang_after_events": 4, "reply": "never completes"}, {"reply": "Back again."}]) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            results: list[Any] = []
            async with anyio.create_task_group() as tg:

                async def run() -> None:
                    results.append(await prompt_outcome(agent, session.session_id))

                tg.start_soon(run)
                await wait_for_requests(api, 1)
                kill_claude_cli(agent.process.pid)
            api.release()
            after = await prompt_outcome(agent, session.session_id, "Are you there?")
    lost = results[0]
    if capable:
        record = record_of(lost)
        assert (record["category"], record["actions"], record["title"]) == (
            "connection", ["new_session"], "The connection to Claude was lost.")
    else:
        assert isinstance(lost, acp.RequestError)
        assert str(lost) == f"The connection to Claude was lost. {lost.data['failure']['recovery']}"
        assert lost.data["failure"] == {"kind": "transportLost", "source": "transport", "outcome": "unknown",
                                        "recovery": lost.data["failure"]["recovery"], "phase": "running",
                                        "execution": "possiblySubmitted"}
    assert after.stop_reason == "end_turn"
    assert "Back again." in "".join(agent_texts(agent, session.session_id))
    assert_clean(agent, capable=capable)


def install_transcript(config_dir: Path, cwd: Path, name: str) -> str:
    """Put a stored CLI transcript fixture where the CLI keeps the transcripts of `cwd`."""
    lines = (FIXTURES / f"{name}.jsonl").read_text().splitlines()[1:]
    session_id = next(json.loads(line)["sessionId"] for line in lines if '"sessionId"' in line)
    body = "\n".join(line.replace("/tmp/claude-fixture/work", str(cwd)) for line in lines) + "\n"
    project = config_dir / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", str(cwd))
    project.mkdir(parents=True, exist_ok=True)
    (project / f"{session_id}.jsonl").write_text(body)
    return session_id


@BOTH
async def test_load_replays_a_stored_usage_limit_in_place(tmp_path: Path, capable: bool) -> None:
    work = tmp_path / "work"
    work.mkdir()
    session_id = install_transcript(tmp_path / "claude-config", work, "transcript_usage_limit")
    with FakeAnthropicAPI([{"reply": "Fresh answer."}]) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            listed = await agent.conn.list_sessions(cwd=str(work))
            await agent.conn.load_session(cwd=str(work), session_id=session_id)
            replayed = list(agent.frames.updates(session_id))
            after = await prompt_outcome(agent, session_id, "Try again.")
    assert session_id in [info.session_id for info in listed.sessions]
    kinds = [update["sessionUpdate"] for update in replayed if update["sessionUpdate"] != "available_commands_update"]
    if capable:
        assert kinds == ["user_message_chunk", "session_info_update"]
        [record] = agent.frames.failure_records()
        assert record == {"id": "00000000-0000-4000-8000-000000000001:error", "revision": 1, "category": "limit",
                          "severity": "error", "title": "You've hit your limit · resets 9:26pm (UTC)", "actions": []}
    else:
        assert kinds == ["user_message_chunk", "agent_message_chunk"]
        assert replayed[1]["content"]["text"] == "You've hit your limit · resets 9:26pm (UTC)"
    assert after.stop_reason == "end_turn"
    assert_clean(agent, capable=capable)


async def test_resume_does_not_replay(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    session_id = install_transcript(tmp_path / "claude-config", work, "transcript_usage_limit")
    with FakeAnthropicAPI([{"reply": "Resumed."}]) as api:
        async with claude_agent(api, tmp_path, capable=True) as agent:
            await agent.conn.resume_session(cwd=str(work), session_id=session_id)
            kinds = [u["sessionUpdate"] for u in agent.frames.updates(session_id)]
            result = await prompt_outcome(agent, session_id)
    assert set(kinds) <= {"available_commands_update"}
    assert result.stop_reason == "end_turn"


async def test_unknown_session_load_is_a_clear_error(tmp_path: Path) -> None:
    with FakeAnthropicAPI([]) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            with pytest.raises(acp.RequestError) as caught:
                await agent.conn.load_session(cwd=str(tmp_path), session_id="00000000-0000-4000-8000-00000000dead")
    assert caught.value.code == -32002


async def test_modes_and_model_option(tmp_path: Path) -> None:
    with FakeAnthropicAPI([{"reply": "ok"}]) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            modes = [mode.id for mode in session.modes.available_modes]
            await agent.conn.set_session_mode(session_id=session.session_id, mode_id="plan")
            option = session.config_options[0]  # the model; the effort follows it
            choice = option.root.options[-1].value if hasattr(option, "root") else option.options[-1].value
            updated = await agent.conn.set_config_option(session_id=session.session_id, config_id="model", value=choice)
            result = await prompt_outcome(agent, session.session_id)
    assert modes == ["default", "acceptEdits", "plan", "auto"]  # bypassPermissions is refused as root
    assert any(u["sessionUpdate"] == "current_mode_update" and u["currentModeId"] == "plan" for u in agent.frames.updates())
    assert updated is not None
    assert result.stop_reason == "end_turn"
    assert shutil.which("true")


@pytest.mark.parametrize("how", ["eof", "sigterm"])
async def test_shutdown_closes_every_cli_with_no_orphans(tmp_path: Path, how: str) -> None:
    import os
    import signal

    from tests.e2e.processes import children

    with FakeAnthropicAPI([{"reply": "one"}, {"reply": "two"}]) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            for _ in range(2):
                session = await agent.conn.new_session(cwd=str(tmp_path))
                await prompt_outcome(agent, session.session_id)
            clis = children(agent.process.pid)
            assert len(clis) == 2
            if how == "eof":
                agent.process.stdin.close()
            else:
                agent.process.send_signal(signal.SIGTERM)
            with anyio.fail_after(5):
                code = await agent.process.wait()
    assert code == 0
    from tests.e2e.processes import gone

    assert all(gone(pid) for pid in clis), "a CLI outlived the agent"
    assert os.path.exists(tmp_path)


PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


async def test_rich_prompt_content_reaches_the_model(tmp_path: Path) -> None:
    from acp import schema

    (tmp_path / "notes.md").write_text("remember the milk\n")
    prompt = [
        schema.TextContentBlock(type="text", text="Look at these."),
        schema.ImageContentBlock(type="image", data=PIXEL, mime_type="image/png"),
        schema.ResourceContentBlock(type="resource_link", uri=f"file://{tmp_path}/notes.md", name="notes.md"),
        schema.EmbeddedResourceContentBlock(type="resource", resource=schema.TextResourceContents(
            uri=f"file://{tmp_path}/inline.py", text="print('inline')\n")),
    ]
    with FakeAnthropicAPI([{"thinking": "Considering the files.", "reply": "Seen them."}]) as api:
        async with claude_agent(api, tmp_path, capable=True) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            result = await agent.conn.prompt(session_id=session.session_id, prompt=prompt)
    assert result.stop_reason == "end_turn"
    sent = json.dumps(api.turn_requests[0].body)
    assert PIXEL in sent
    assert "print('inline')" in sent
    assert "notes.md" in sent
    kinds = [u["sessionUpdate"] for u in agent.frames.updates(session.session_id)]
    assert "agent_thought_chunk" in kinds
    thoughts = [u["content"]["text"] for u in agent.frames.updates() if u["sessionUpdate"] == "agent_thought_chunk"]
    assert "".join(thoughts) == "Considering the files."
    assert agent.frames.problems == []


async def test_edits_show_diffs_and_shell_output_is_shown(tmp_path: Path) -> None:
    target = tmp_path / "hello.py"
    script = [
        {"tool_use": {"name": "Write", "input": {"file_path": str(target), "content": "print('hi')\n"}}},
        {"tool_use": {"name": "Bash", "input": {"command": "echo shell-output-marker", "description": "Echo"}}},
        {"reply": "Done."},
    ]
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            result = await prompt_outcome(agent, session.session_id, "Write and run")
    assert result.stop_reason == "end_turn"
    assert target.read_text() == "print('hi')\n"
    calls = [u for u in agent.frames.updates() if u["sessionUpdate"] == "tool_call"]
    write = next(call for call in calls if call["kind"] == "edit")
    assert write["title"] == "Write hello.py"
    assert write["locations"] == [{"path": str(target)}]
    assert write["content"] == [{"type": "diff", "path": str(target), "newText": "print('hi')\n", "oldText": None}]
    outputs = [json.dumps(u.get("content")) for u in agent.frames.updates()
               if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "completed"]
    assert any("shell-output-marker" in output for output in outputs)
    assert agent.frames.problems == []


async def test_close_stops_the_sessions_cli(tmp_path: Path) -> None:
    from tests.e2e.processes import children

    with FakeAnthropicAPI([]) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            [cli] = children(agent.process.pid)
            await agent.conn.close_session(session_id=session.session_id)
            remaining = children(agent.process.pid)
            with pytest.raises(acp.RequestError):
                await agent.conn.prompt(session_id=session.session_id, prompt=text("gone"))
    assert cli not in remaining


async def test_todo_list_becomes_a_plan(tmp_path: Path) -> None:
    todos = [{"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
             {"content": "Write the fix", "status": "in_progress", "activeForm": "Writing the fix"}]
    script = [{"tool_use": {"name": "ToolSearch", "input": {"query": "select:TodoWrite", "max_results": 1}}},
              {"tool_use": {"name": "TodoWrite", "input": {"todos": todos}}},
              {"reply": "Plan recorded."}]
    # This CLI version defers TodoWrite behind ToolSearch and a feature switch (see fixtures/README.md).
    extra = {"CLAUDE_CODE_ENABLE_TASKS": "0", "CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"}
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=True, extra=extra) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            result = await prompt_outcome(agent, session.session_id, "Plan it")
    assert result.stop_reason == "end_turn"
    [plan] = [u for u in agent.frames.updates() if u["sessionUpdate"] == "plan"]
    assert plan["entries"] == [{"content": "Read the code", "priority": "medium", "status": "completed"},
                               {"content": "Write the fix", "priority": "medium", "status": "in_progress"}]
    assert agent.frames.problems == []


async def test_the_editors_mcp_servers_reach_the_cli(tmp_path: Path) -> None:
    from acp import schema

    from tests.e2e.processes import argv_of, children

    server = schema.McpServerStdio(name="editor-tools", command="/bin/true", args=["--flag"],
                                   env=[schema.EnvVariable(name="TOOL_MODE", value="x")])
    with FakeAnthropicAPI([{"reply": "ok"}]) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            await agent.conn.new_session(cwd=str(tmp_path), mcp_servers=[server])
            [cli] = children(agent.process.pid)
            argv = argv_of(cli)
            # a file, not JSON on the command line: env values and headers are secrets
            config = json.loads(Path(argv[argv.index(b"--mcp-config") + 1].decode()).read_text())
    assert config["mcpServers"]["editor-tools"] == {"type": "stdio", "command": "/bin/true", "args": ["--flag"],
                                                    "env": {"TOOL_MODE": "x"}}


async def test_a_live_usage_limit_replays_later_under_the_same_id(tmp_path: Path) -> None:
    from tests.fakes.anthropic_api import gateway_token

    # The CLI words quota failures as "You've hit your ..." only behind a gateway or subscription.
    gateway = {"ANTHROPIC_AUTH_TOKEN": gateway_token()}
    with FakeAnthropicAPI([{"usage_limit": True}]) as api:
        async with claude_agent(api, tmp_path, capable=True, key=None, extra=gateway) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            live = await prompt_outcome(agent, session.session_id, "Hit the limit")
        async with claude_agent(api, tmp_path, capable=True, key=None, extra=gateway) as reloaded:
            await reloaded.conn.load_session(cwd=str(tmp_path), session_id=session.session_id)
    record = record_of(live)
    assert record["title"].startswith("You've hit your")
    assert (record["category"], record["actions"], record["severity"]) == ("limit", [], "error")
    [replayed] = reloaded.frames.failure_records()
    assert replayed["id"] == record["id"]
    assert replayed["title"] == record["title"]
    assert_clean(agent, capable=True)
    assert_clean(reloaded, capable=True)


@BOTH
async def test_a_cli_that_died_between_turns_is_replaced_before_the_next_prompt(tmp_path: Path, capable: bool) -> None:
    import os

    from tests.claude.e2e_support import kill_claude_cli

    with FakeAnthropicAPI([{"reply": "first"}, {"reply": "second"}]) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await prompt_outcome(agent, session.session_id, "one")
            pid = kill_claude_cli(agent.process.pid)
            exited = os.pidfd_open(pid)
            try:
                with anyio.fail_after(10):
                    await anyio.wait_readable(exited)  # the CLI is really gone before we prompt
            finally:
                os.close(exited)
            result = await prompt_outcome(agent, session.session_id, "two")
    assert result.stop_reason == "end_turn"
    assert "second" in "".join(agent_texts(agent, session.session_id))
    if capable:
        [lost] = agent.frames.failure_records()
        assert lost["id"].startswith(f"{session.session_id}:session-error:")
        assert (lost["title"], lost["category"]) == ("The connection to Claude was lost.", "connection")
    assert_clean(agent, capable=capable)
