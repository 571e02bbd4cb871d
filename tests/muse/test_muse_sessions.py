"""Session management end to end: list, load (replay), resume, close, fork, modes, models, idle release,
the schema fingerprint notice and MCP servers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp
import anyio
import pytest
from acp import schema

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
    wait_for_exit,
)

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])


async def make_history(tmp_path: Path) -> str:
    """One session with a good turn and a failed last turn, created by an earlier agent process."""
    async with muse_agent(tmp_path, capable=True, MUSE_FAKE_ERROR_MESSAGE="The model refused (key sk-abcdef123456).",
                          turn="text", EXTRA_SECRET_KEY="sk-abcdef123456") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        await agent.conn.prompt(session_id=session.session_id, prompt=text("first question"))
        await agent.conn.prompt(session_id=session.session_id, prompt=text("turn:fail:modelError second"))
    return session.session_id


@BOTH
async def test_list_load_resume_and_close(tmp_path: Path, capable: bool) -> None:
    session_id = await make_history(tmp_path)
    first_hosts = len(host_pids(tmp_path))
    async with muse_agent(tmp_path, capable=capable, EXTRA_SECRET_KEY="sk-abcdef123456") as agent:
        listing = await agent.conn.list_sessions(cwd=str(tmp_path))
        elsewhere = await agent.conn.list_sessions(cwd="/")
        loaded = await agent.conn.load_session(session_id=session_id, cwd=str(tmp_path))
        replay = agent.frames.updates(session_id)
        resumed = await agent.conn.resume_session(session_id=session_id, cwd=str(tmp_path))
        after_resume = len(agent.frames.updates(session_id))
        result = await agent.conn.prompt(session_id=session_id, prompt=text("third"))
        await agent.conn.close_session(session_id=session_id)
        with pytest.raises(acp.RequestError) as gone:
            await agent.conn.prompt(session_id=session_id, prompt=text("fourth"))
        assert_hosts_gone(tmp_path)  # list's read-only host and the closed session's host
    [row] = listing.sessions
    assert (row.session_id, row.cwd, row.title) == (session_id, str(tmp_path), "first question")
    assert elsewhere.sessions == []
    kinds = [u["sessionUpdate"] for u in replay]
    assert kinds[:3] == ["user_message_chunk", "agent_thought_chunk", "agent_message_chunk"]
    assert replay[0]["content"]["text"] == "first question"
    assert replay[3]["content"]["text"] == "turn:fail:modelError second"
    if capable:
        [record] = [r for r in records(agent) if r["id"].endswith(":error")]
        turn_ids = [f["params"]["commandId"] for f in received(tmp_path, "turn/start")]
        assert record["id"].startswith("turn-") and record["id"].endswith("-user:error")
        assert record["id"] != f"{turn_ids[0]}:error"
        assert (record["severity"], record["category"], record["title"]) == (
            "error", "service", "The model refused (key [REDACTED]).")
        assert kinds[-1] == "session_info_update"
    else:
        assert replay[-1] == {"sessionUpdate": "agent_message_chunk",
                              "content": {"type": "text", "text": "The model refused (key [REDACTED])."}}
        assert_legacy_clean(agent)
    assert loaded.modes is not None and loaded.modes.current_mode_id == "default"
    assert resumed is not None
    assert len(agent.frames.updates(session_id)) >= after_resume  # resume replays nothing itself
    resumes = received(tmp_path, "session/resume")
    assert [r["params"]["excludeItems"] for r in resumes[-2:]] == [False, True]
    assert result.stop_reason == "end_turn"
    [leave] = received(tmp_path, "session/leave")
    assert leave["params"]["sessionId"] == session_id
    assert gone.value.code == -32002
    assert len(host_pids(tmp_path)) == first_hosts + 4  # two lists, load, resume (replacing the load's host)
    assert "sk-abcdef123456" not in agent.frames.text()
    assert agent.frames.problems == []


async def test_loading_an_unknown_session_is_not_found(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=True) as agent:
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.load_session(session_id="01900000-0000-7000-8000-00000000dead", cwd=str(tmp_path))
    assert caught.value.code == -32002
    assert_hosts_gone(tmp_path)


async def test_fork_branches_a_session_into_a_new_one(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=True) as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        await agent.conn.prompt(session_id=session.session_id, prompt=text("before the fork"))
        forked = await agent.conn.fork_session(session_id=session.session_id, cwd=str(tmp_path))
        result = await agent.conn.prompt(session_id=forked.session_id, prompt=text("on the branch"))
        original = await agent.conn.prompt(session_id=session.session_id, prompt=text("on the trunk"))
    assert forked.session_id != session.session_id
    assert (result.stop_reason, original.stop_reason) == ("end_turn", "end_turn")
    assert forked.modes is not None and forked.modes.current_mode_id == "default"
    methods = methods_received(tmp_path)
    fork_at = methods.index("session/fork")
    assert methods[fork_at - 1] == "session/read"  # the bounded source read comes first
    [fork] = received(tmp_path, "session/fork")
    assert fork["params"]["sessionId"] == session.session_id and fork["params"]["commandId"]
    turns = received(tmp_path, "turn/start")
    assert [t["params"]["sessionId"] for t in turns] == [session.session_id, forked.session_id, session.session_id]
    assert agent.frames.problems == []
    assert_hosts_gone(tmp_path)


async def test_forking_an_unknown_session_is_not_found(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=False) as agent:
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.fork_session(session_id="01900000-0000-7000-8000-00000000dead", cwd=str(tmp_path))
    assert caught.value.code == -32002
    assert "session/fork" not in methods_received(tmp_path)


async def test_modes_and_models_are_applied_and_verified(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=True) as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        [option] = session.config_options or []
        await agent.conn.set_session_mode(session_id=session.session_id, mode_id="readOnly")
        await agent.conn.set_session_mode(session_id=session.session_id, mode_id="plan")
        await agent.conn.set_session_mode(session_id=session.session_id, mode_id="bypassApprovals")
        changed = await agent.conn.set_config_option(session_id=session.session_id, config_id="model",
                                                     value="muse-small")
        with pytest.raises(acp.RequestError) as bad_mode:
            await agent.conn.set_session_mode(session_id=session.session_id, mode_id="yolo")
        with pytest.raises(acp.RequestError) as bad_model:
            await agent.conn.set_config_option(session_id=session.session_id, config_id="model", value="gpt-x")
        await agent.conn.prompt(session_id=session.session_id, prompt=text("hi"))
    assert [(o.value, o.name) for o in option.options] == [("muse-large", "Muse Large"), ("muse-small", "Muse Small")]
    assert [f["params"]["mode"] for f in received(tmp_path, "session/setApprovalMode")] == [
        "denyUnmatched", "onRequest", "allowAll"]
    assert [f["params"]["model"] for f in received(tmp_path, "session/setModel")] == [{"modelId": "muse-small"}]
    assert changed.config_options[0].current_value == "muse-small"
    methods = methods_received(tmp_path)
    for index, method in enumerate(methods):
        if method in ("session/setApprovalMode", "session/setModel"):
            assert methods[index + 1] == "session/read"  # every change is verified
    modes = [u["currentModeId"] for u in agent.frames.updates(session.session_id)
             if u["sessionUpdate"] == "current_mode_update"]
    assert modes == ["readOnly", "plan", "bypassApprovals"]
    assert (bad_mode.value.code, bad_model.value.code) == (-32602, -32602)
    assert agent.frames.problems == []


async def test_a_setting_the_host_does_not_apply_is_an_error(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=False, scenario="settings-ignored") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.set_session_mode(session_id=session.session_id, mode_id="readOnly")
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("still usable"))
    failure = caught.value.data["failure"]
    assert (failure["kind"], failure["source"], failure["phase"], failure["execution"]) == (
        "settingsNotApplied", "host", "preparing", "notSubmitted")
    assert "denyUnmatched" in str(caught.value) and "promptUnmatched" in str(caught.value)
    assert result.stop_reason == "end_turn"


@pytest.mark.parametrize("models", ["error", "hang"])
async def test_models_fall_back_to_the_built_in_catalog(tmp_path: Path, models: str) -> None:
    async with muse_agent(tmp_path, capable=True, scenario=f"models={models}") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
    [option] = session.config_options or []
    assert [o.value for o in option.options][-2:] == ["muse-code", "muse-code-fast"]
    assert option.current_value == "muse-large"  # what the session really uses (from session/read)
    assert "using the built-in" in agent.log_text()


@BOTH
async def test_a_schema_fingerprint_mismatch_is_noticed_once_and_the_session_goes_on(
        tmp_path: Path, capable: bool) -> None:
    async with muse_agent(tmp_path, capable=capable, scenario="fingerprint=sha256:feedface") as agent:
        first = await agent.conn.new_session(cwd=str(tmp_path))
        second = await agent.conn.new_session(cwd=str(tmp_path))
        result = await agent.conn.prompt(session_id=second.session_id, prompt=text("hi"))
        log = agent.log_text()
    assert result.stop_reason == "end_turn"
    assert log.count("serves MSP schema sha256:feedface") == 2  # logged for each host
    if capable:
        [notice] = records(agent)
        assert (notice["severity"], notice["category"], notice["actions"]) == ("warning", "unknown", [])
        assert notice["title"].startswith("Muse Code 1.4.13 serves MSP schema sha256:feedface, but this adapter was "
                                          "built for sha256:")
        assert notice["id"].startswith(f"{first.session_id}:notice:")
    else:
        assert_legacy_clean(agent)
        assert "feedface" not in agent.frames.text()
    assert agent.frames.problems == []


async def test_an_idle_host_is_released_and_started_again_on_demand(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=True, ACP_AGENT_MUSE_IDLE_RELEASE_MS="300") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        await agent.conn.prompt(session_id=session.session_id, prompt=text("one"))
        first = host_pids(tmp_path)[-1]
        await wait_for_exit(first)  # released after the idle budget, without anyone asking
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("two"))
    assert result.stop_reason == "end_turn"
    assert host_pids(tmp_path)[-1] != first
    assert [e["event"] for e in host_events(tmp_path) if e["pid"] == first][-1] == "eof"  # stdin closed: orderly
    resumed = [f["params"]["sessionId"] for f in received(tmp_path, "session/resume")]
    assert len(resumed) >= 2 and set(resumed) == {session.session_id}
    assert methods_received(tmp_path).count("session/start") == 1
    assert agent_texts(agent, session.session_id)[-2:] == ["Hello", ", world."]
    assert "releasing the idle host" in agent.log_text()
    assert records(agent) == []


async def test_mcp_servers_reach_the_host_when_granted(tmp_path: Path) -> None:
    server: Any = schema.McpServerStdio(name="db", command="db-mcp", args=["--ro"],
                                        env=[schema.EnvVariable(name="DB", value="main")])
    async with muse_agent(tmp_path, capable=True) as agent:
        await agent.conn.new_session(cwd=str(tmp_path), mcp_servers=[server])
    [start] = received(tmp_path, "session/start")
    assert start["params"]["config"] == {"mcpServers": {"db": {"transport": "stdio", "command": "db-mcp",
                                                               "args": ["--ro"], "env": {"DB": "main"}}}}
    [initialize] = received(tmp_path, "initialize")
    assert initialize["params"]["capabilities"] == {"requestedCapabilities": ["sessionMcp"]}


async def test_mcp_servers_without_the_grant_are_a_notice(tmp_path: Path) -> None:
    server: Any = schema.McpServerStdio(name="db", command="db-mcp", args=[], env=[])
    noticed = anyio.Event()
    async with muse_agent(tmp_path, capable=True, scenario="no-mcp-grant") as agent:
        hooked(agent).update_hook = lambda session_id, update: noticed.set()
        session = await agent.conn.new_session(cwd=str(tmp_path), mcp_servers=[server])
        await noticed.wait()  # delivered once the session/new response is out
    [start] = received(tmp_path, "session/start")
    assert "config" not in start["params"]
    [notice] = records(agent)
    assert notice["title"].startswith("Muse Code did not accept the editor's MCP servers")
    assert notice["id"].startswith(f"{session.session_id}:notice:")
