"""Claude session settings and session management through `acp-agent --provider claude`, against
the real bundled CLI and the fake API: reasoning effort (seen in the API request's
`output_config.effort`, kept across a released CLI), the `auto` permission mode,
`additionalDirectories` (`--add-dir`), and `session/fork` / `session/delete` on the CLI's
stored transcripts."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from acp import RequestError, schema

from tests.claude.e2e_support import API_KEY, agent_texts, claude_agent, claude_env, text
from tests.claude.test_claude_idle_e2e import cli_of, flag, user_texts
from tests.e2e.harness import AgentProcess, spawn_agent
from tests.e2e.processes import argv_of, wait_ended
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.fakes.mcp_http import FakeMcpHttp

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(120)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
UNKNOWN = "00000000-0000-4000-8000-000000000000"


@asynccontextmanager
async def agent_with_caps(api: FakeAnthropicAPI, tmp_path: Path, *,
                          capable: bool) -> AsyncIterator[tuple[AgentProcess, Any]]:
    """The agent and its `initialize` answer's session capabilities."""
    async with spawn_agent("claude", tmp_path, claude_env(api, tmp_path)) as agent:
        answer = await agent.initialize(capable=capable)
        agent.initialized_capabilities = answer.agent_capabilities  # type: ignore[attr-defined]
        yield agent, answer.agent_capabilities.session_capabilities


def effort_of(body: dict[str, Any] | None) -> str | None:
    return ((body or {}).get("output_config") or {}).get("effort")


def option(options: Any, config_id: str) -> Any:
    return next(o for o in options or [] if o.id == config_id)


@BOTH
async def test_effort_reaches_the_api_and_survives_a_released_cli(tmp_path: Path, capable: bool) -> None:
    script = [{"reply": "one"}, {"reply": "two"}, {"reply": "other"}, {"reply": "three"}]
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=capable,
                                extra={"ACP_AGENT_CLAUDE_MAX_LIVE_CLIS": "1"}) as agent:
            pid = agent.process.pid
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            offered = option(session.config_options, "effort")
            changed = await agent.conn.set_config_option(session_id=sid, config_id="effort", value="max")
            await agent.conn.prompt(session_id=sid, prompt=text("first"))  # applied to the running CLI
            await agent.conn.set_config_option(session_id=sid, config_id="effort", value="low")
            await agent.conn.prompt(session_id=sid, prompt=text("second"))
            released = cli_of(pid, sid)
            other = await agent.conn.new_session(cwd=str(tmp_path))  # one live CLI: the first goes
            await wait_ended([released], within_s=30)
            await agent.conn.prompt(session_id=other.session_id, prompt=text("elsewhere"))
            await agent.conn.prompt(session_id=sid, prompt=text("third"))  # a resumed CLI
            revived = argv_of(cli_of(pid, sid))
    assert offered.category == "thought_level" and offered.current_value == "default"
    assert [o.value for o in offered.options] == ["default", "low", "medium", "high", "xhigh", "max"]
    assert option(changed.config_options, "effort").current_value == "max"
    efforts = [effort_of(r.body) for r in api.turn_requests]
    assert efforts[0] == "max" and efforts[1] == "low" and efforts[3] == "low"
    assert efforts[2] != "low"  # the other session kept the CLI's own default
    assert flag(revived, "--effort") == "low"
    assert user_texts(api.turn_requests[3].body)[-1] == "user: third"
    assert agent.frames.problems == []


async def test_a_client_that_never_sets_effort_leaves_the_cli_default(tmp_path: Path) -> None:
    with FakeAnthropicAPI([{"reply": "one"}]) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("hello"))
            argv = argv_of(cli_of(agent.process.pid, session.session_id))
    assert b"--effort" not in argv
    assert effort_of(api.turn_requests[0].body) in (None, "high", "medium")  # whatever the CLI chose
    assert agent.frames.problems == []


async def test_back_to_default_effort_clears_the_sessions_level(tmp_path: Path) -> None:
    with FakeAnthropicAPI([{"reply": "one"}, {"reply": "two"}, {"reply": "three"}]) as api:
        async with claude_agent(api, tmp_path, capable=True) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            await agent.conn.prompt(session_id=sid, prompt=text("plain"))
            await agent.conn.set_config_option(session_id=sid, config_id="effort", value="max")
            await agent.conn.prompt(session_id=sid, prompt=text("max"))
            back = await agent.conn.set_config_option(session_id=sid, config_id="effort", value="default")
            await agent.conn.prompt(session_id=sid, prompt=text("plain again"))
    plain, high, again = (effort_of(r.body) for r in api.turn_requests)
    assert high == "max" and again == plain != "max"
    assert option(back.config_options, "effort").current_value == "default"
    assert agent.frames.problems == []


@BOTH
async def test_auto_mode_is_offered_and_the_cli_takes_it(tmp_path: Path, capable: bool) -> None:
    with FakeAnthropicAPI([{"reply": "one"}]) as api:
        async with claude_agent(api, tmp_path, capable=capable,
                                extra={"ACP_AGENT_CLAUDE_IDLE_RELEASE_MS": "0"}) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            await agent.conn.set_session_mode(session_id=sid, mode_id="auto")  # the CLI verifies it
            await agent.conn.prompt(session_id=sid, prompt=text("hello"))
    modes = {m.id: m for m in session.modes.available_modes} if session.modes else {}
    assert "auto" in modes and modes["auto"].name == "Auto" and modes["auto"].description
    assert session.modes is not None and session.modes.current_mode_id == "default"
    assert len(api.turn_requests) == 1
    assert agent.frames.problems == []


@pytest.mark.parametrize("uses", [True, False], ids=["with-directories", "without"])
async def test_additional_directories_widen_the_clis_workspace(tmp_path: Path, uses: bool) -> None:
    """A file beside the workspace: in an additional directory the CLI reads it without asking;
    otherwise it asks (and the client here refuses)."""
    work, extra = tmp_path / "work", tmp_path / "extra-root"
    work.mkdir()
    extra.mkdir()
    (extra / "notes.txt").write_text("the marker is kingfisher\n")
    script = [{"tool_use": {"name": "Read", "input": {"file_path": str(extra / "notes.txt")}}},
              {"reply": "done"}]
    with FakeAnthropicAPI(script) as api:
        async with agent_with_caps(api, tmp_path, capable=True) as (agent, caps):
            agent.client.permission = lambda options: next(
                o.option_id for o in options if o.kind == "reject_once")
            session = await agent.conn.new_session(cwd=str(work),
                                                   additional_directories=[str(extra)] if uses else None)
            await agent.conn.prompt(session_id=session.session_id, prompt=text("read the notes"))
            argv = argv_of(cli_of(agent.process.pid, session.session_id))
    assert caps.additional_directories is not None
    assert (b"--add-dir" in argv) == uses
    if uses:
        assert flag(argv, "--add-dir") == str(extra)
    asked = [call for call, _ in agent.client.permission_requests]
    assert len(asked) == (0 if uses else 1)
    assert ("kingfisher" in str(api.turn_requests[1].body)) == uses
    assert agent.frames.problems == []


@BOTH
async def test_a_fork_carries_the_history_and_goes_its_own_way(tmp_path: Path, capable: bool) -> None:
    script = [{"reply": "Noted: heron."}, {"reply": "fork answer"}, {"reply": "source answer"}]
    with FakeAnthropicAPI(script) as api:
        async with agent_with_caps(api, tmp_path, capable=capable) as (agent, caps):
            source = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.set_config_option(session_id=source.session_id, config_id="effort", value="max")
            await agent.conn.prompt(session_id=source.session_id, prompt=text("Remember heron."))
            fork = await agent.conn.fork_session(cwd=str(tmp_path), session_id=source.session_id)
            await agent.conn.prompt(session_id=fork.session_id, prompt=text("in the fork"))
            await agent.conn.prompt(session_id=source.session_id, prompt=text("in the source"))
            listed = await agent.conn.list_sessions(cwd=str(tmp_path))
            with pytest.raises(RequestError) as missing:
                await agent.conn.fork_session(cwd=str(tmp_path), session_id=UNKNOWN)
    assert caps.fork is not None
    assert fork.session_id != source.session_id
    requests = api.turn_requests
    assert user_texts(requests[1].body)[-3:] == ["user: Remember heron.", "assistant: Noted: heron.",
                                                 "user: in the fork"]
    assert user_texts(requests[2].body)[-3:] == ["user: Remember heron.", "assistant: Noted: heron.",
                                                 "user: in the source"]
    assert "in the fork" not in str(requests[2].body)
    assert [effort_of(r.body) for r in requests] == ["max"] * 3  # the fork keeps the source's effort
    assert {source.session_id, fork.session_id} <= {s.session_id for s in listed.sessions}
    assert missing.value.code == -32002
    assert agent.frames.problems == []


@BOTH
async def test_a_deleted_session_leaves_the_list_and_its_transcript_goes(tmp_path: Path, capable: bool) -> None:
    with FakeAnthropicAPI([{"reply": "kept"}, {"reply": "gone"}]) as api:
        async with agent_with_caps(api, tmp_path, capable=capable) as (agent, caps):
            kept = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=kept.session_id, prompt=text("keep me"))
            doomed = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=doomed.session_id, prompt=text("delete me"))
            before = await agent.conn.list_sessions(cwd=str(tmp_path))
            answer = await agent.conn._conn.send_request("session/delete", {"sessionId": doomed.session_id})
            after = await agent.conn.list_sessions(cwd=str(tmp_path))
            with pytest.raises(RequestError) as unknown:
                await agent.conn._conn.send_request("session/delete", {"sessionId": UNKNOWN})
            never = await agent.conn.new_session(cwd=str(tmp_path))  # no turn: nothing stored
            unwritten = await agent.conn._conn.send_request("session/delete", {"sessionId": never.session_id})
    transcripts = [p.name for p in (tmp_path / "claude-config" / "projects").rglob("*.jsonl")]
    assert caps.delete is not None
    assert answer == {} and unwritten == {}
    assert {s.session_id for s in before.sessions} == {kept.session_id, doomed.session_id}
    assert [s.session_id for s in after.sessions] == [kept.session_id]
    assert f"{kept.session_id}.jsonl" in transcripts and f"{doomed.session_id}.jsonl" not in transcripts
    assert unknown.value.code == -32002
    assert len(api.turn_requests) == 2
    assert agent.frames.problems == []


@BOTH
async def test_mcp_and_usage_commands_are_offered_and_answered(tmp_path: Path, capable: bool) -> None:
    """Claude Code 2.1.332 answers /usage itself in stream-json (no model call); its /mcp answer
    there is only a count, so the agent answers /mcp from `mcp_status`: each server by name, with
    its transport and state, and nothing of its configuration (env values are secrets)."""
    mcp = [schema.McpServerStdio(name="editor-tools", command="/bin/true", args=[],
                                 env=[schema.EnvVariable(name="TOOLS_TOKEN", value="secret-value-4711")])]
    with FakeAnthropicAPI([]) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path), mcp_servers=mcp)
            sid = session.session_id
            answers = {}
            for command in ("/mcp", "/usage"):
                before = len(agent_texts(agent, sid))
                result = await agent.conn.prompt(session_id=sid, prompt=text(command))
                answers[command] = (result.stop_reason, "".join(agent_texts(agent, sid)[before:]))
            offered = {c["name"] for u in agent.frames.updates(sid)
                       if u["sessionUpdate"] == "available_commands_update" for c in u["availableCommands"]}
    assert {"mcp", "usage"} <= offered
    assert answers["/mcp"][0] == "end_turn"
    assert answers["/mcp"][1].startswith("MCP servers (1):\n- editor-tools (stdio): ")
    assert "secret-value-4711" not in str(agent.frames.updates(sid))
    assert answers["/usage"][0] == "end_turn" and "Usage:" in answers["/usage"][1]
    assert api.turn_requests == []
    assert agent.frames.problems == []


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_the_advertised_mcp_transports_work(tmp_path: Path, transport: str) -> None:
    """`mcpCapabilities` says http and sse: a server of each kind connects and its tool runs."""
    script = [{"tool_use": {"name": "mcp__web__echo", "input": {"text": "over " + transport}}},
              {"reply": "done"}]
    with FakeAnthropicAPI(script) as api, FakeMcpHttp() as mcp:
        async with agent_with_caps(api, tmp_path, capable=True) as (agent, _):
            caps = agent.initialized_capabilities
            server: Any = (schema.HttpMcpServer(type="http", name="web", url=mcp.url, headers=[])
                           if transport == "http" else
                           schema.SseMcpServer(type="sse", name="web", url=mcp.sse_url, headers=[]))
            session = await agent.conn.new_session(cwd=str(tmp_path), mcp_servers=[server])
            await anyio.to_thread.run_sync(lambda: mcp.wait_for("tools/list"))
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("use the tool"))
    assert getattr(caps.mcp_capabilities, transport) is True
    assert result.stop_reason == "end_turn"
    assert "tools/call" in mcp.methods()
    assert f"echo: over {transport}" in str(api.turn_requests[1].body)
    assert agent.frames.problems == []


@BOTH
async def test_fast_mode_reaches_the_api_and_survives_a_released_cli(tmp_path: Path, capable: bool) -> None:
    script = [{"reply": "plain"}, {"reply": "fast"}, {"reply": "other"}, {"reply": "still fast"},
              {"reply": "off"}]
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=capable,
                                extra={"ACP_AGENT_CLAUDE_MAX_LIVE_CLIS": "1"}) as agent:
            pid = agent.process.pid
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            offered = option(session.config_options, "fast-mode")
            await agent.conn.prompt(session_id=sid, prompt=text("plain"))
            on = await agent.conn.set_config_option(session_id=sid, config_id="fast-mode", value="on")
            await agent.conn.prompt(session_id=sid, prompt=text("fast"))
            released = cli_of(pid, sid)
            other = await agent.conn.new_session(cwd=str(tmp_path))
            await wait_ended([released], within_s=30)
            await agent.conn.prompt(session_id=other.session_id, prompt=text("elsewhere"))
            await agent.conn.prompt(session_id=sid, prompt=text("resumed"))
            revived = argv_of(cli_of(pid, sid))
            await agent.conn.set_config_option(session_id=sid, config_id="fast-mode", value="off")
            await agent.conn.prompt(session_id=sid, prompt=text("slow again"))
    assert offered.category == "model_config" and offered.current_value == "off"
    assert [o.value for o in offered.options] == ["off", "on"]
    assert option(on.config_options, "fast-mode").current_value == "on"
    speeds = [(r.body or {}).get("speed") for r in api.turn_requests]
    assert speeds[1] == speeds[3] == "fast"
    assert "fast" not in (speeds[0], speeds[2], speeds[4])
    assert json.loads(flag(revived, "--settings")) == {"fastMode": True}
    assert agent.frames.problems == []


@BOTH
@pytest.mark.parametrize("reopen", ["resume", "load"])
async def test_effort_and_fast_mode_survive_close_and_reopen(tmp_path: Path, capable: bool, reopen: str) -> None:
    """A session closed and resumed (or loaded) in the same agent keeps its effort and fast mode:
    the CLI that reopens it starts with them, and the session advertises them again."""
    with FakeAnthropicAPI([{"reply": "one"}, {"reply": "two"}]) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            await agent.conn.set_config_option(session_id=sid, config_id="effort", value="high")
            await agent.conn.set_config_option(session_id=sid, config_id="fast-mode", value="on")
            await agent.conn.prompt(session_id=sid, prompt=text("first"))
            await agent.conn.close_session(session_id=sid)
            if reopen == "resume":
                reopened = await agent.conn.resume_session(cwd=str(tmp_path), session_id=sid)
            else:
                reopened = await agent.conn.load_session(cwd=str(tmp_path), session_id=sid)
            await agent.conn.prompt(session_id=sid, prompt=text("second"))
    assert option(reopened.config_options, "effort").current_value == "high"
    assert option(reopened.config_options, "fast-mode").current_value == "on"
    assert [effort_of(r.body) for r in api.turn_requests] == ["high", "high"]
    assert [(r.body or {}).get("speed") for r in api.turn_requests] == ["fast", "fast"]
    assert user_texts(api.turn_requests[1].body)[-1] == "user: second"
    assert agent.frames.problems == []


AUTO_PROMPT = "While auto mode is active"  # in the CLI's system prompt only when it runs in auto mode


PLAN_PROMPT = "Plan mode is active"


def in_auto_mode(api: FakeAnthropicAPI) -> list[bool]:
    return [AUTO_PROMPT in json.dumps(request.body) for request in api.turn_requests]


@BOTH
async def test_a_new_session_starts_in_auto_where_the_model_supports_it(tmp_path: Path, capable: bool) -> None:
    """No `permissions.defaultMode` in Claude Code's settings: `auto`, as claude-agent-acp starts
    (the CLI's default model supports auto mode: its `supportsAutoMode`)."""
    with FakeAnthropicAPI([{"reply": "one"}]) as api:
        async with claude_agent(api, tmp_path, capable=capable, default_mode=None) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("hello"))
    assert session.modes is not None and session.modes.current_mode_id == "auto"
    assert in_auto_mode(api) == [True]
    assert agent.frames.problems == []


@BOTH
async def test_a_model_without_auto_mode_starts_in_default(tmp_path: Path, capable: bool) -> None:
    """claude-haiku-4-5 has no auto mode behind a base URL that is not Anthropic's (Claude Code
    2.1.332's `supportsAutoMode`): `default`, auto not offered; the session's model is the one
    ANTHROPIC_MODEL makes the CLI run."""
    with FakeAnthropicAPI([{"reply": "one"}]) as api:
        async with claude_agent(api, tmp_path, capable=capable, default_mode=None,
                                extra={"ANTHROPIC_MODEL": "claude-haiku-4-5"}) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("hello"))
    assert session.modes is not None and session.modes.current_mode_id == "default"
    assert "auto" not in [m.id for m in session.modes.available_modes]
    assert option(session.config_options, "model").current_value == "claude-haiku-4-5"
    assert in_auto_mode(api) == [False]
    assert [request.body["model"] for request in api.turn_requests] == ["claude-haiku-4-5"]
    assert agent.frames.problems == []


@pytest.mark.parametrize(("configured", "model", "expected"), [
    ("acceptEdits", None, "acceptEdits"),
    ("auto", "claude-haiku-4-5", "acceptEdits"),  # chosen auto the model cannot run: claude-agent-acp's fallback
    ("plan", None, "plan"),
])
async def test_the_settings_default_mode_wins(tmp_path: Path, configured: str, model: str | None,
                                              expected: str) -> None:
    with FakeAnthropicAPI([{"reply": "one"}]) as api:
        async with claude_agent(api, tmp_path, capable=True, default_mode=configured,
                                extra={"ANTHROPIC_MODEL": model} if model else None) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("hello"))
    assert session.modes is not None and session.modes.current_mode_id == expected
    assert in_auto_mode(api) == [False]
    assert agent.frames.problems == []


async def test_a_projects_local_settings_choose_the_mode(tmp_path: Path) -> None:
    """`.claude/settings.local.json` in the session's cwd outranks the user's settings."""
    work = tmp_path / "work"
    (work / ".claude").mkdir(parents=True)
    (work / ".claude" / "settings.local.json").write_text(json.dumps({"permissions": {"defaultMode": "auto"}}))
    with FakeAnthropicAPI([{"reply": "one"}]) as api:
        async with claude_agent(api, tmp_path, capable=True, default_mode="acceptEdits") as agent:
            session = await agent.conn.new_session(cwd=str(work))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("hello"))
    assert session.modes is not None and session.modes.current_mode_id == "auto"
    assert in_auto_mode(api) == [True]
    assert agent.frames.problems == []


@BOTH
@pytest.mark.parametrize("reopen", ["resume", "load"])
async def test_mode_and_model_survive_close_and_reopen(tmp_path: Path, capable: bool, reopen: str) -> None:
    """A session closed and resumed (or loaded) in the same agent keeps its mode and model: the
    CLI that reopens it runs with them (its system prompt says plan mode; the API request names
    the model), and the session advertises them again."""
    # plan mode: its instructions are in every request (auto mode's are not, for every model)
    with FakeAnthropicAPI([{"reply": "one"}, {"reply": "two"}]) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            await agent.conn.set_session_mode(session_id=sid, mode_id="plan")
            await agent.conn.set_config_option(session_id=sid, config_id="model", value="sonnet")
            await agent.conn.prompt(session_id=sid, prompt=text("first"))
            await agent.conn.close_session(session_id=sid)
            if reopen == "resume":
                reopened = await agent.conn.resume_session(cwd=str(tmp_path), session_id=sid)
            else:
                reopened = await agent.conn.load_session(cwd=str(tmp_path), session_id=sid)
            await agent.conn.prompt(session_id=sid, prompt=text("second"))
    assert session.modes is not None and session.modes.current_mode_id == "default"
    assert reopened.modes is not None and reopened.modes.current_mode_id == "plan"
    assert option(reopened.config_options, "model").current_value == "sonnet"
    assert [PLAN_PROMPT in json.dumps(r.body) for r in api.turn_requests] == [True, True]
    assert [(r.body or {}).get("model") for r in api.turn_requests] == ["claude-sonnet-5-5"] * 2
    assert user_texts(api.turn_requests[1].body)[-1] == "user: second"
    assert agent.frames.problems == []


@BOTH
async def test_status_is_offered_and_answered_by_the_agent(tmp_path: Path, capable: bool) -> None:
    """Claude Code 2.1.332 neither lists nor answers /status in stream-json: the agent offers it and
    answers from the session and the CLI's own report (version, credential sources), with no
    model call and no secret."""
    extra_dir = tmp_path / "extra"
    extra_dir.mkdir()
    with FakeAnthropicAPI([]) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path), additional_directories=[str(extra_dir)])
            sid = session.session_id
            await agent.conn.set_session_mode(session_id=sid, mode_id="acceptEdits")
            await agent.conn.set_config_option(session_id=sid, config_id="effort", value="high")
            result = await agent.conn.prompt(session_id=sid, prompt=text("/status"))
            answer = "".join(agent_texts(agent, sid))
            offered = {c["name"] for u in agent.frames.updates(sid)
                       if u["sessionUpdate"] == "available_commands_update" for c in u["availableCommands"]}
    assert "status" in offered
    assert result.stop_reason == "end_turn"
    assert answer.startswith("Claude Code 2.1.")
    for line in (f"Session: {sid}", f"Working directory: {tmp_path}", f"Additional directories: {extra_dir}",
                 "Model: Default (recommended) (claude-opus-5-5)", "Mode: Accept edits", "Effort: high",
                 "Fast mode: off", "Credentials: API key from ANTHROPIC_API_KEY (firstParty)"):
        assert line in answer.splitlines(), (line, answer)
    assert API_KEY not in str(agent.frames.incoming)
    assert api.turn_requests == []
    assert agent.frames.problems == []


@BOTH
async def test_a_load_in_another_agent_goes_on_in_the_transcripts_mode(tmp_path: Path, capable: bool) -> None:
    """A session loaded by a new agent process starts in the permission mode its transcript was
    last in (claude-agent-acp's resumed mode), before the settings' default."""
    with FakeAnthropicAPI([{"reply": "one"}, {"reply": "two"}]) as api:
        async with claude_agent(api, tmp_path, capable=capable) as first:
            session = await first.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            await first.conn.set_session_mode(session_id=sid, mode_id="plan")
            await first.conn.prompt(session_id=sid, prompt=text("first"))
        async with claude_agent(api, tmp_path, capable=capable) as second:
            loaded = await second.conn.load_session(cwd=str(tmp_path), session_id=sid)
            await second.conn.prompt(session_id=sid, prompt=text("second"))
    assert loaded.modes is not None and loaded.modes.current_mode_id == "plan"
    assert [PLAN_PROMPT in json.dumps(r.body) for r in api.turn_requests] == [True, True]
    assert first.frames.problems == [] and second.frames.problems == []


async def test_fast_mode_is_a_switch_for_a_client_that_renders_boolean_options(tmp_path: Path) -> None:
    """`session.configOptions.boolean`: Claude's fast mode is claude-agent-acp's
    `{id: "fast", type: "boolean"}`, set with `{type: "boolean", value: true}`; the real CLI then
    asks the API for `speed: "fast"`."""
    with FakeAnthropicAPI([{"reply": "fast"}]) as api:
        async with claude_agent(api, tmp_path, capable=False, session={"configOptions": {"boolean": {}}}) as agent:
            created = await agent.conn._conn.send_request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
            sid = created["sessionId"]
            changed = await agent.conn._conn.send_request("session/set_config_option", {
                "sessionId": sid, "configId": "fast", "type": "boolean", "value": True})
            await agent.conn.prompt(session_id=sid, prompt=text("fast"))
    [fast] = [o for o in created["configOptions"] if o["id"] == "fast"]
    assert (fast["type"], fast["currentValue"], fast["category"]) == ("boolean", False, "model_config")
    assert [o["currentValue"] for o in changed["configOptions"] if o["id"] == "fast"] == [True]
    assert [(r.body or {}).get("speed") for r in api.turn_requests] == ["fast"]
    assert agent.frames.problems == []
