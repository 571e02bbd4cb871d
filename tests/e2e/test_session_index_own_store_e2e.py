"""AIR's session index where acp-agent keeps the archive state itself: `acp-agent --provider
claude` (the real Claude Code CLI on the fake Anthropic API) and `--provider muse` (the fake MSP
host). Archived in one agent process, still archived in a fresh one; the other index methods."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.codex.e2e_support import WatchedFrames
from tests.e2e.harness import AgentProcess
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(150)]
INDEX_META = {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure", "sessionIndex"]}}}
ARCHIVED = {"_meta": {"jetbrains": {"air": {"list": {"archived": "archived"}}}}}


def air(row: dict[str, Any]) -> dict[str, Any]:
    return row["_meta"]["jetbrains"]["air"]


@asynccontextmanager
async def index_agent(provider: str, tmp_path: Path, stack: AsyncExitStack,
                      capabilities: dict[str, Any] = INDEX_META, **env: str) -> AsyncIterator[AgentProcess]:
    if provider == "claude":
        from tests.claude.e2e_support import claude_agent

        api = stack.enter_context(FakeAnthropicAPI([{"reply": "one"}, {"reply": "two"}]))
        async with claude_agent(api, tmp_path, capable=False, meta=capabilities, extra=env) as agent:
            agent.frames.incoming = WatchedFrames(agent.frames.incoming)
            yield agent
    else:
        from tests.muse.e2e_support import muse_agent

        async with muse_agent(tmp_path, capable=False, meta=capabilities, **env) as agent:
            agent.frames.incoming = WatchedFrames(agent.frames.incoming)
            yield agent


def text(value: str) -> list[Any]:
    from acp import schema

    return [schema.TextContentBlock(type="text", text=value)]


def index_problems(agent: AgentProcess) -> list[str]:
    """The schema log's problems, but its notes on AIR's `_session/*` frames (not ACP's)."""
    return [p for p in agent.frames.problems if not p.startswith(
        ("response to unknown request", "unexpected agent method _session/list/changes"))]


@pytest.mark.parametrize("provider", ["claude", "muse"])
async def test_archived_here_is_archived_in_a_fresh_agent(tmp_path: Path, provider: str) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    async with AsyncExitStack() as stack:
        async with index_agent(provider, tmp_path, stack) as agent:
            advertised = agent.frames.incoming[0]["result"]["_meta"]["jetbrains"]["air"]["capabilities"]
            send = agent.conn._conn.send_request
            first = await agent.conn.new_session(cwd=str(cwd))
            await agent.conn.prompt(session_id=first.session_id, prompt=text("first"))
            second = await agent.conn.new_session(cwd=str(cwd))
            await agent.conn.prompt(session_id=second.session_id, prompt=text("second"))
            sub = await send("_session/list/subscribe", {"cwd": str(cwd)})
            await send("_session/archive", {"sessionId": first.session_id})
            archived = await send("session/list", {"cwd": str(cwd), **ARCHIVED})
            unarchived = await send("session/list", {"cwd": str(cwd)})
            await send("_session/rename", {"sessionId": second.session_id, "title": "Renamed"})
            assert isinstance(agent.frames.incoming, WatchedFrames)
            pushed = await agent.frames.incoming.wait_for(lambda f: f.get("method") == "_session/list/changes" and any(
                s.get("title") == "Renamed" for s in f["params"]["sessions"]))
            got = await send("_session/batch_get", {"sessionIds": [first.session_id, "nope"]})
            first_problems = index_problems(agent)
        async with index_agent(provider, tmp_path, stack) as fresh:
            send = fresh.conn._conn.send_request
            still = await send("session/list", {"cwd": str(cwd), **ARCHIVED})
            await send("_session/unarchive", {"sessionId": first.session_id})
            after = await send("session/list", {"cwd": str(cwd)})
            fresh_problems = index_problems(fresh)
    assert "sessionIndex" in advertised and "sessionArchive" in advertised
    assert [(s["sessionId"], air(s)["archived"]) for s in archived["sessions"]] == [(first.session_id, True)]
    assert [s["sessionId"] for s in unarchived["sessions"]] == [second.session_id]
    assert pushed["params"]["subscriptionId"] == sub["subscriptionId"]
    assert [s["sessionId"] for s in got["sessions"]] == [first.session_id]
    assert [(s["sessionId"], air(s)["archived"]) for s in still["sessions"]] == [(first.session_id, True)]
    assert {s["sessionId"]: air(s)["archived"] for s in after["sessions"]} == {
        first.session_id: False, second.session_id: False}
    assert first_problems == [] and fresh_problems == []


@pytest.mark.parametrize("provider", ["claude", "muse"])
async def test_a_client_without_the_capability_gets_todays_list(tmp_path: Path, provider: str) -> None:
    from acp import RequestError

    cwd = tmp_path / "work"
    cwd.mkdir()
    plain = {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure"]}}}
    async with AsyncExitStack() as stack, index_agent(provider, tmp_path, stack, plain) as agent:
        advertised = agent.frames.incoming[0]["result"]["_meta"]["jetbrains"]["air"]["capabilities"]
        session = await agent.conn.new_session(cwd=str(cwd))
        await agent.conn.prompt(session_id=session.session_id, prompt=text("first"))
        listed = await agent.conn._conn.send_request("session/list", {"cwd": str(cwd)})
        with pytest.raises(RequestError) as refused:
            await agent.conn._conn.send_request("_session/archive", {"sessionId": session.session_id})
    assert "sessionIndex" not in advertised
    assert [s["sessionId"] for s in listed["sessions"]] == [session.session_id]
    assert "jetbrains" not in str(listed["sessions"][0].get("_meta"))
    assert refused.value.code == -32601


@pytest.mark.parametrize("provider", ["claude", "muse"])
async def test_a_session_archived_by_another_agent_process_is_pushed(tmp_path: Path, provider: str) -> None:
    """Two agent processes on one state directory: what the second archives reaches the first
    one's subscriber (its poll re-reads the store), as `_session/list/changes`."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    async with AsyncExitStack() as stack:
        watching = await stack.enter_async_context(index_agent(provider, tmp_path, stack,
                                                               ACP_AGENT_SESSION_LIST_POLL_S="0.2"))
        session = await watching.conn.new_session(cwd=str(cwd))
        await watching.conn.prompt(session_id=session.session_id, prompt=text("first"))
        await watching.conn._conn.send_request("_session/list/subscribe", {"cwd": str(cwd)})
        other = await stack.enter_async_context(index_agent(provider, tmp_path, stack))
        await other.conn._conn.send_request("_session/archive", {"sessionId": session.session_id})
        frames = watching.frames.incoming
        assert isinstance(frames, WatchedFrames)
        pushed = await frames.wait_for(lambda f: f.get("method") == "_session/list/changes" and any(
            s["sessionId"] == session.session_id and air(s)["archived"] for s in f["params"]["sessions"]))
    assert pushed["params"]["removed"] == []


@pytest.mark.parametrize("provider", ["claude", "muse"])
async def test_a_session_open_here_lists_what_it_has_cost(tmp_path: Path, provider: str) -> None:
    """The row's `cost` (as claude-agent-acp): the last `usage_update.cost` of a session open here,
    none before it cost anything; pushed to a subscriber when a turn makes it grow."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    async with AsyncExitStack() as stack, index_agent(provider, tmp_path, stack) as agent:
        send = agent.conn._conn.send_request
        session = await agent.conn.new_session(cwd=str(cwd))
        before = await send("_session/batch_get", {"sessionIds": [session.session_id]})
        await send("_session/list/subscribe", {"cwd": str(cwd)})
        await agent.conn.prompt(session_id=session.session_id, prompt=text("first"))
        listed = await send("session/list", {"cwd": str(cwd)})
        frames = agent.frames.incoming
        assert isinstance(frames, WatchedFrames)
        pushed = await frames.wait_for(lambda f: f.get("method") == "_session/list/changes" and any(
            "cost" in air(s) for s in f["params"]["sessions"]))
        costs = [u["cost"] for u in agent.frames.updates(session.session_id)
                 if u["sessionUpdate"] == "usage_update" and "cost" in u]
    assert "cost" not in air(before["sessions"][0])
    assert costs and costs[-1]["amount"] > 0
    assert air(listed["sessions"][0])["cost"] == costs[-1]
    assert [air(s)["cost"] for s in pushed["params"]["sessions"]] == [costs[-1]]
