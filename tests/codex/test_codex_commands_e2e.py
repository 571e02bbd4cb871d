"""Codex's slash commands through `acp-agent --provider codex`, against the real app-server.

`/compact` and `/review` run their own app-server requests (the fake Responses API sees codex's
compaction and reviewer requests); `/status` and `/mcp` are answered by the agent with no model
request at all.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp import schema

from tests.codex.e2e_support import CodexAgent, codex_agent, model_text, text, workspace, write_codex_home
from tests.fakes.mcp_http import FakeMcpHttp
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(90)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])


def command_lists(agent: CodexAgent, session_id: str) -> list[list[str]]:
    return [[c["name"] for c in u["availableCommands"]] for u in agent.frames.updates(session_id)
            if u["sessionUpdate"] == "available_commands_update"]


async def commands_listed(agent: CodexAgent, session_id: str) -> None:
    """A new or forked session's updates follow its response: wait for the list to arrive."""
    await agent.watched.wait_for(lambda frame: frame.get("method") == "session/update"
                                 and frame["params"]["sessionId"] == session_id
                                 and frame["params"]["update"]["sessionUpdate"] == "available_commands_update")


@BOTH
async def test_sessions_list_codexs_commands(tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI() as api:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=cwd)
            await agent.conn.prompt(session_id=session.session_id, prompt=text("hello"))
            fork = await agent.conn.fork_session(cwd=cwd, session_id=session.session_id)
            await commands_listed(agent, fork.session_id)
        async with codex_agent(home, tmp_path, capable=capable, log_name="second") as second:
            await second.conn.load_session(cwd=cwd, session_id=session.session_id)
    expected = ["compact", "review", "review-branch", "review-commit", "status", "mcp"]
    assert command_lists(agent, session.session_id) == [expected]
    assert command_lists(agent, fork.session_id) == [expected]
    assert command_lists(second, session.session_id) == [expected]
    assert agent.frames.problems == [] and second.frames.problems == []


@BOTH
async def test_compact_runs_codexs_compaction(tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI([{"reply": "first"}, {"reply": "after"}]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            sid = session.session_id
            await agent.conn.prompt(session_id=sid, prompt=text("remember apples"))
            compacted = await agent.conn.prompt(session_id=sid, prompt=text("/compact"))
            await agent.conn.prompt(session_id=sid, prompt=text("go on"))
            shown = model_text(agent, sid)
            calls = [u for u in agent.frames.updates(sid) if u["sessionUpdate"] == "tool_call"]
        requests = api.requests
    assert compacted.stop_reason == "end_turn"
    # turn, codex's own compaction request, turn: the command text never reached the model
    assert [r.request_kind for r in requests] == ["turn", "compaction", "turn"]
    assert all("/compact" not in json.dumps(r.body.get("input")) for r in requests)
    # the compaction shows as the core's typed event (issue 12), and no reply text of its own
    assert [(c["title"], c["kind"]) for c in calls] == [("Compact conversation", "think")]
    assert shown == "firstafter"
    assert agent.frames.problems == []


async def test_review_starts_a_codex_review(tmp_path: Path) -> None:
    with FakeResponsesAPI() as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=True) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            result = await agent.conn.prompt(session_id=session.session_id,
                                             prompt=text("/review focus on the error handling"))
            missing = await agent.conn.prompt(session_id=session.session_id, prompt=text("/review-branch"))
            updates = agent.frames.updates(session.session_id)
        requests = api.requests
    assert result.stop_reason == "end_turn" and missing.stop_reason == "end_turn"
    # one request, codex's reviewer (a side request the fake answers with its side reply);
    # /review-branch without a branch ran nothing
    [review] = requests
    assert review.kind == "side"
    assert "focus on the error handling" in json.dumps(review.body)
    assert "/review" not in json.dumps(review.body.get("input"))
    texts = [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert "Fake side reply" in "".join(texts)
    assert texts[-1] == "`/review-branch` needs a branch name, e.g. `/review-branch main`."
    assert agent.frames.problems == []


@BOTH
async def test_status_and_mcp_are_answered_by_the_agent(tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI() as api, FakeMcpHttp() as mcp:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            server = schema.HttpMcpServer(type="http", name="web", url=mcp.url, headers=[])
            session = await agent.conn.new_session(cwd=cwd, mcp_servers=[server])
            sid = session.session_id
            await agent.conn.set_config_option(session_id=sid, config_id="reasoning_effort", value="high")
            status = await agent.conn.prompt(session_id=sid, prompt=text("/status"))
            status_text = model_text(agent, sid)
            listed = await agent.conn.prompt(session_id=sid, prompt=text("/mcp"))
            mcp_text = model_text(agent, sid)[len(status_text):]
        requests = api.turn_requests
    assert status.stop_reason == listed.stop_reason == "end_turn"
    assert requests == []  # neither asked the model anything
    assert f"- Workspace: `{cwd}`" in status_text
    assert "- Model: gpt-5.5" in status_text and "- Reasoning effort: high" in status_text
    assert "- Fast mode: off" in status_text and "- Mode: Auto" in status_text
    assert "`web`" in mcp_text and "`echo`" in mcp_text
    assert agent.frames.problems == []
