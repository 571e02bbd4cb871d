"""Issue 27 (today's ACP) for Claude, through `acp-agent --provider claude` with the real bundled
CLI and the fake Anthropic API: the turn's tokens in `PromptResponse.usage`, the session's cost on
`usage_update`, one `messageId` per message the same live and on `session/load`, notices, the
compaction summary, and a fork at a message; for a client that declares the capability and one
that does not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.claude.e2e_support import claude_agent, text
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]
CAPABLE = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
TOKENS = {"input_tokens": 1200, "cache_read_input_tokens": 300, "cache_creation_input_tokens": 40,
          "output_tokens": 25}


def answers(agent: Any) -> list[dict[str, Any]]:
    return [frame["result"] for frame in agent.frames.incoming
            if isinstance(frame.get("result"), dict) and "stopReason" in frame["result"]]


@CAPABLE
async def test_each_answer_has_its_turns_tokens_and_the_session_cost_grows(tmp_path: Path, capable: bool) -> None:
    """`PromptResponse.usage` = the turn's result `usage` (input, output, cache read and creation
    tokens), `usage_update.cost` = the result's `total_cost_usd` (the session's running sum), as
    claude-agent-acp sends them. The second turn makes two model calls (a tool, then the reply)."""
    script = [{"reply": "first answer", "usage": TOKENS},
              {"tool_use": {"name": "Glob", "input": {"pattern": "*.none"}}, "usage": TOKENS},
              {"reply": "second answer", "usage": {**TOKENS, "output_tokens": 7}}]
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("one"))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("two"))
    first, second = (answer["usage"] for answer in answers(agent))
    assert first == {"inputTokens": 1200, "outputTokens": 25, "cachedReadTokens": 300, "cachedWriteTokens": 40,
                     "totalTokens": 1565}
    assert second == {"inputTokens": 2400, "outputTokens": 32, "cachedReadTokens": 600, "cachedWriteTokens": 80,
                      "totalTokens": 3112}
    costs = [u["cost"] for u in agent.frames.updates(session.session_id)
             if u["sessionUpdate"] == "usage_update" and "cost" in u]
    assert len(costs) == 2 and all(cost["currency"] == "USD" for cost in costs)
    assert 0 < costs[0]["amount"] < costs[1]["amount"]  # cumulative for the session
    assert agent.frames.problems == []


def chunk_ids(agent: Any, session_id: str) -> list[tuple[str, str | None, str]]:
    """(kind, messageId, text) of every message, thought and user chunk, merged per message."""
    merged: list[tuple[str, str | None, str]] = []
    for update in agent.frames.updates(session_id):
        kind = update["sessionUpdate"]
        if kind not in ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk"):
            continue
        key = (kind, update.get("messageId"))
        if merged and merged[-1][:2] == key:
            merged[-1] = (*key, merged[-1][2] + update["content"]["text"])
        else:
            merged.append((*key, update["content"]["text"]))
    return merged


async def test_message_ids_are_the_same_live_and_on_load(tmp_path: Path) -> None:
    """One `messageId` per message: the API message id on its thinking and text (they share it),
    a tool call's message and the reply after it each their own; on `session/load` the same ids,
    and the user's message under its transcript entry's uuid."""
    script = [{"thinking": "Let me look.", "reply": "Looking now.",
               "tool_use": {"name": "Glob", "input": {"pattern": "*.none"}}},
              {"thinking": "Nothing there.", "reply": "No such files."}]
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("Find them"))
        async with claude_agent(api, tmp_path, capable=False) as reloaded:
            await reloaded.conn.load_session(cwd=str(tmp_path), session_id=session.session_id)
    live = chunk_ids(agent, session.session_id)
    replayed = chunk_ids(reloaded, session.session_id)
    assert [kind for kind, _, _ in live] == ["agent_thought_chunk", "agent_message_chunk"] * 2
    first, second = live[0][1], live[2][1]
    assert first and second and first != second and first.startswith("msg_")
    assert [message_id for _, message_id, _ in live] == [first, first, second, second]
    [user] = [row for row in replayed if row[0] == "user_message_chunk"]
    assert user[2] == "Find them" and user[1]
    assert [row for row in replayed if row[0] != "user_message_chunk"] == live
    assert agent.frames.problems == [] and reloaded.frames.problems == []


async def test_a_title_set_before_the_first_prompt_is_the_one_listed(tmp_path: Path) -> None:
    """`session/set_title` on a new session before its CLI kept a transcript: the CLI takes the
    title after the first turn, and neither the prompt nor the CLI's generated title replaces it
    (live or in a fresh agent's `session/list`)."""
    with FakeAnthropicAPI([{"reply": "hello"}]) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            renamed = await agent.conn._conn.send_request("session/set_title", {"sessionId": sid,
                                                                                 "title": "My own title"})
            await agent.conn.prompt(session_id=sid, prompt=text("Write a parser for me"))
            await agent.conn.close_session(session_id=sid)
        async with claude_agent(api, tmp_path, capable=False) as fresh:
            listing = await fresh.conn._conn.send_request("session/list", {"cwd": str(tmp_path)})
    assert renamed == {"title": "My own title"}
    shown = [u["title"] for u in agent.frames.updates(sid) if u["sessionUpdate"] == "session_info_update"
             and "title" in u]
    assert shown == ["My own title"]
    [row] = [row for row in listing["sessions"] if row["sessionId"] == sid]
    assert row["title"] == "My own title"
    assert agent.frames.problems == [] and fresh.frames.problems == []


def compaction_updates(agent: Any, session_id: str) -> list[dict[str, Any]]:
    return [u for u in agent.frames.updates(session_id) if u["sessionUpdate"] == "compaction_update"]


@CAPABLE
async def test_compact_ends_with_its_summary_and_replays_as_a_compaction(tmp_path: Path, capable: bool) -> None:
    """`/compact` for a `session.compaction` client: `in_progress`, then `completed` with the
    summary the PostCompact hook handed over (the fake's `<summary>`, its `<analysis>` dropped),
    with AIR's facts for a client of the extension. On `session/load` the stored compaction
    replays as a completed compaction with that summary, never as a user message."""
    with FakeAnthropicAPI([{"reply": "first answer"}, {"reply": "after compaction"}]) as api:
        async with claude_agent(api, tmp_path, capable=capable, session={"compaction": {}}) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            await agent.conn.prompt(session_id=sid, prompt=text("hello"))
            await agent.conn.prompt(session_id=sid, prompt=text("/compact"))
            await agent.conn.prompt(session_id=sid, prompt=text("again"))
        async with claude_agent(api, tmp_path, capable=capable, session={"compaction": {}}) as reloaded:
            await reloaded.conn.load_session(cwd=str(tmp_path), session_id=sid)
    live = compaction_updates(agent, sid)
    assert [u["status"] for u in live][:2] == ["in_progress", "completed"]
    assert live[1]["summary"] == [{"type": "text", "text": "Fake summary of the conversation."}]
    assert all(u["status"] == "completed" for u in live[1:])
    if capable:
        facts = live[-1]["_meta"]["jetbrains"]["air"]["contextCompaction"]
        assert facts["trigger"] == "manual" and facts["preTokens"] > facts["postTokens"] > 0
        assert isinstance(facts["durationMs"], int)
    replayed = reloaded.frames.updates(sid)
    users = [u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert not any("being continued" in said or "Fake summary" in said for said in users)
    [stored] = [u for u in compaction_updates(reloaded, sid) if u["status"] == "completed"]
    assert stored["summary"] == [{"type": "text", "text": "Fake summary of the conversation."}]
    assert "hello" in users and "again" in users
    assert agent.frames.problems == [] and reloaded.frames.problems == []


async def test_a_client_without_compaction_updates_sees_no_summary_as_user_text_on_load(tmp_path: Path) -> None:
    """A client that does not declare `session.compaction`: live, today's tool call; on load the
    stored compaction is that tool call, completed, and not the summary as a user message."""
    with FakeAnthropicAPI([{"reply": "first answer"}]) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            await agent.conn.prompt(session_id=sid, prompt=text("hello"))
            await agent.conn.prompt(session_id=sid, prompt=text("/compact"))
        async with claude_agent(api, tmp_path, capable=False) as reloaded:
            await reloaded.conn.load_session(cwd=str(tmp_path), session_id=sid)
    assert compaction_updates(agent, sid) == [] and compaction_updates(reloaded, sid) == []
    calls = [u for u in agent.frames.updates(sid) if u["sessionUpdate"] == "tool_call"]
    assert [call["title"] for call in calls] == ["Compact conversation"]
    replayed = reloaded.frames.updates(sid)
    users = [u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert not any("being continued" in said for said in users)
    [call] = [u for u in replayed if u["sessionUpdate"] == "tool_call"]
    assert call["title"] == "Compact conversation" and call["status"] == "completed"
    assert agent.frames.problems == [] and reloaded.frames.problems == []


NOTICES = pytest.mark.parametrize("notices", [True, False], ids=["notices", "legacy"])


@NOTICES
async def test_a_hooks_message_and_a_failed_mcp_server_are_notices(tmp_path: Path, notices: bool) -> None:
    """`system/informational` (here a UserPromptSubmit hook's systemMessage) is an `info` notice,
    a client's MCP server the CLI could not start a `warning`, told once for the session (the CLI
    reports its servers every turn); a client without notices sees neither (today's frames)."""
    import json

    from acp import schema

    config = tmp_path / "claude-config"
    config.mkdir()
    hook = "echo '{\"systemMessage\": \"Heads up: the **hook** ran.\"}'"
    (config / "settings.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": [
        {"hooks": [{"type": "command", "command": hook}]}]}}))
    broken = schema.McpServerStdio(name="broken", command="/bin/false", args=[], env=[])
    with FakeAnthropicAPI([{"reply": "first answer"}, {"reply": "second answer"}]) as api:
        async with claude_agent(api, tmp_path, capable=False,
                                session={"notices": {}} if notices else None) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path), mcp_servers=[broken])
            await agent.conn.prompt(session_id=session.session_id, prompt=text("one"))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("two"))
    updates = agent.frames.updates(session.session_id)
    shown = [(u["severity"], u["title"], u.get("description")) for u in updates if u["sessionUpdate"] == "notice"]
    said = [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(said) == "first answersecond answer"
    if notices:
        hook_notice = ("info", "UserPromptSubmit says: Heads up: the hook ran.", None)
        assert shown.count(hook_notice) == 2  # one each turn: the hook ran twice
        assert shown.count(("warning", 'MCP server "broken" failed to start',
                            "Its tools are unavailable in this session. Run /mcp for the error.")) == 1
        assert len(shown) == 3
    else:
        assert shown == []
    assert agent.frames.problems == []


def fork_meta(message_id: str) -> dict[str, Any]:
    return {"jetbrains": {"air": {"fork": {"version": 1, "messageId": message_id}}}}


async def test_a_fork_at_a_message_keeps_the_history_up_to_it(tmp_path: Path) -> None:
    """`session/fork` with AIR's `fork.messageId`: at an answer's `messageId` (with a client's
    `:segment:<n>`) the fork keeps the history up to that answer, the turns after it gone (its
    replay and the model's next request show it); at a user message's id (its replayed
    `messageId`, the entry's uuid) up to that message; an unknown id is -32602."""
    import acp

    script = [{"reply": "first answer"}, {"reply": "second answer"}, {"echo": True}, {"reply": "at the question"}]
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            await agent.conn.prompt(session_id=sid, prompt=text("one"))
            await agent.conn.prompt(session_id=sid, prompt=text("two"))
            [first] = [m for kind, m, said in chunk_ids(agent, sid) if said == "first answer"]
            assert first
            forked = await agent.conn._conn.send_request("session/fork", {
                "sessionId": sid, "cwd": str(tmp_path), "mcpServers": [], "_meta": fork_meta(f"{first}:segment:0")})
            fid = forked["sessionId"]
            await agent.conn.prompt(session_id=fid, prompt=text("three"))
            sent = api.turn_requests[-1].body["messages"]
            with pytest.raises(acp.RequestError) as unknown:
                await agent.conn._conn.send_request("session/fork", {
                    "sessionId": sid, "cwd": str(tmp_path), "mcpServers": [], "_meta": fork_meta("msg_nowhere")})
        async with claude_agent(api, tmp_path, capable=False) as reloaded:
            await reloaded.conn.load_session(cwd=str(tmp_path), session_id=sid)
            [two] = [m for kind, m, said in chunk_ids(reloaded, sid) if kind == "user_message_chunk" and said == "two"]
            assert two
            at_user = await reloaded.conn._conn.send_request("session/fork", {
                "sessionId": sid, "cwd": str(tmp_path), "mcpServers": [], "_meta": fork_meta(two)})
            uid = at_user["sessionId"]
            await reloaded.conn.load_session(cwd=str(tmp_path), session_id=uid)
    assert fid != sid and uid not in (sid, fid)
    history = json.dumps(sent)
    assert "first answer" in history and "three" in history
    assert "two" not in history and "second answer" not in history
    assert unknown.value.code == -32602
    kept = [(kind, said) for kind, _, said in chunk_ids(reloaded, uid)]
    assert ("user_message_chunk", "two") in kept and ("agent_message_chunk", "first answer") in kept
    assert ("agent_message_chunk", "second answer") not in kept
    assert agent.frames.problems == [] and reloaded.frames.problems == []


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_the_apis_compaction_block_streams_the_summary_to_a_compaction_client(
        tmp_path: Path, capable: bool) -> None:
    """The API's server-side compaction (a `compaction` content block whose `compaction_delta`s
    carry the retained summary) reaches a `session.compaction` client as `compaction_summary_chunk`s
    of one open compaction, which the turn's end cancels if nothing else ended it; a client
    without the capability gets no summary chunk."""
    summary = "Kept: the user greeted the assistant."
    with FakeAnthropicAPI([{"compaction": summary, "reply": "answer after compaction"}]) as api:
        async with claude_agent(api, tmp_path, capable=capable, session={"compaction": {}}) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("hello"))
        async with claude_agent(api, tmp_path, capable=capable) as plain:
            other = await plain.conn.new_session(cwd=str(tmp_path))
            await plain.conn.prompt(session_id=other.session_id, prompt=text("hello"))
    assert result.stop_reason == "end_turn"
    updates = agent.frames.updates(session.session_id)
    chunks = [u for u in updates if u["sessionUpdate"] == "compaction_summary_chunk"]
    assert "".join(u["content"]["text"] for u in chunks) == summary
    ids = {u["compactionId"] for u in updates if u["sessionUpdate"] in ("compaction_update", "compaction_summary_chunk")}
    assert len(ids) == 1
    statuses = [u["status"] for u in updates if u["sessionUpdate"] == "compaction_update"]
    # as claude-agent-acp: only the CLI's compact boundary ends a compaction; here none came
    assert statuses == ["in_progress", "cancelled"]
    assert not [u for u in plain.frames.updates(other.session_id) if "compaction" in u["sessionUpdate"]]
    assert agent.frames.problems == [] and plain.frames.problems == []
