"""Notices with severities and compaction's cancel and replay, through `acp-agent --provider muse`
and the fake MSP host (issue 27 items 1 and 2).

A client with `session.notices` gets the schema fingerprint, MCP grant and
`session/modelRouteUnserved` notices as ACP `notice` updates with their severity; a client of the
failure extension gets advisory records instead, any other client nothing. A compaction whose
`outcome` is `cancelled` is `compaction_update` `cancelled` for `session.compaction` clients (the
tool call other clients see shows it failed, as before); stored compactions replay on
`session/load` as completed ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp import schema

from tests.codex.e2e_support import WatchedFrames
from tests.muse.e2e_support import assert_legacy_clean, muse_agent, records, text

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]
CLIENTS = pytest.mark.parametrize("client", ["notices", "records", "plain"])
COMPACTION = pytest.mark.parametrize("compaction", [True, False], ids=["compaction", "plain"])


def notices(agent: Any, session_id: str) -> list[tuple[str, str]]:
    return [(u["severity"], u["title"]) for u in agent.frames.updates(session_id) if u["sessionUpdate"] == "notice"]


@CLIENTS
async def test_the_hosts_notices_reach_the_client_with_their_severity(tmp_path: Path, client: str) -> None:
    server: Any = schema.McpServerStdio(name="db", command="db-mcp", args=[], env=[])
    session_caps = {"notices": {}} if client == "notices" else None
    async with muse_agent(tmp_path, capable=client != "plain", session=session_caps,
                          scenario="fingerprint=sha256:feedface,no-mcp-grant") as agent:
        agent.frames.incoming = watched = WatchedFrames(agent.frames.incoming)
        session = await agent.conn.new_session(cwd=str(tmp_path), mcp_servers=[server])
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("turn:unserved go on"))
        if client != "plain":  # the host's second one comes between turns, after the prompt's answer
            await watched.wait_for(lambda frame: "provider bedrock" in json.dumps(frame))
    assert result.stop_reason == "end_turn"
    shown = notices(agent, session.session_id)
    titles = [r["title"] for r in records(agent)]
    unserved = "Muse Code cannot serve the model muse-large with the provider {} now installed."
    if client == "notices":
        assert [severity for severity, _ in shown] == ["warning"] * 4
        fingerprint, mcp, *rest = (title for _, title in shown)
        assert fingerprint.startswith("Muse Code 1.4.13 serves MSP schema sha256:feedface")
        assert mcp.startswith("Muse Code did not accept the editor's MCP servers")
        assert rest == [unserved.format("openrouter"), unserved.format("bedrock")]  # in the turn, then between
        assert titles == []
    elif client == "records":
        assert shown == []
        assert [t[len("Muse Code "):][:10] for t in titles] == ["1.4.13 ser", "did not ac", "cannot ser", "cannot ser"]
        assert all(r["severity"] == "warning" for r in records(agent))
    else:
        assert shown == [] and titles == []
        assert "feedface" not in agent.frames.text() and "cannot serve" not in agent.frames.text()
        assert_legacy_clean(agent)
    assert agent.frames.problems == []


@COMPACTION
async def test_a_cancelled_compaction_is_cancelled_for_a_compaction_client(tmp_path: Path, compaction: bool) -> None:
    async with muse_agent(tmp_path, capable=False, session={"compaction": {}} if compaction else None) as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("turn:compact-cancel now"))
    assert result.stop_reason == "end_turn"
    updates = agent.frames.updates(session.session_id)
    if compaction:
        shown = [(u["status"], u.get("error")) for u in updates if u["sessionUpdate"] == "compaction_update"]
        assert shown == [("in_progress", None), ("cancelled", None)]
        assert not any(u["sessionUpdate"] in ("tool_call", "tool_call_update") for u in updates)
    else:  # today's frames: the compaction tool call ends failed, with the host's reason
        calls = [u for u in updates if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
        assert [u.get("status") for u in calls] == ["in_progress", "failed"]
        assert calls[1]["content"] == [{"type": "content", "content": {
            "type": "text", "text": "Compaction failed: The compaction was cancelled."}}]
        assert not any(u["sessionUpdate"] == "compaction_update" for u in updates)
    assert agent.frames.problems == []


@COMPACTION
async def test_a_stored_compaction_replays_as_a_completed_one(tmp_path: Path, compaction: bool) -> None:
    caps = {"compaction": {}} if compaction else None
    async with muse_agent(tmp_path, capable=False, session=caps) as first:
        session = await first.conn.new_session(cwd=str(tmp_path))
        await first.conn.prompt(session_id=session.session_id, prompt=text("turn:compact now"))
    async with muse_agent(tmp_path, capable=False, session=caps) as second:
        await second.conn.load_session(session_id=session.session_id, cwd=str(tmp_path))
    live, replayed = first.frames.updates(session.session_id), second.frames.updates(session.session_id)
    if compaction:
        def shown(updates: list[dict[str, Any]]) -> list[tuple[str, str]]:
            return [(u["compactionId"], u["status"]) for u in updates if u["sessionUpdate"] == "compaction_update"]
        assert shown(replayed) == shown(live) and [s for _, s in shown(live)] == ["in_progress", "completed"]
    else:
        calls = [(u["toolCallId"], u["status"]) for u in replayed if u["sessionUpdate"] == "tool_call"]
        [(live_id, _)] = [(u["toolCallId"], u["status"]) for u in live if u["sessionUpdate"] == "tool_call"]
        assert calls == [(live_id, "completed")]
        assert not any(u["sessionUpdate"] == "compaction_update" for u in replayed)
    assert first.frames.problems == [] and second.frames.problems == []
