"""Terminals, compaction and titles through `acp-agent --provider muse` and the fake MSP host
(issue 12), for clients that opt in and clients that do not; every frame is schema-checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.muse.e2e_support import assert_legacy_clean, muse_agent, text

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]

TERMINAL_CLIENTS = [pytest.param({"terminal_output_delta": True}, id="terminal_output_delta"),
                    pytest.param({"terminal_output": True}, id="terminal_output"),
                    pytest.param({}, id="no-terminal")]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])


def for_call(agent: Any, session_id: str, call_id: str) -> list[dict[str, Any]]:
    return [u for u in agent.frames.updates(session_id) if u.get("toolCallId") == call_id]


@pytest.mark.parametrize("meta", TERMINAL_CLIENTS)
async def test_a_shell_tool_streams_its_visible_output_into_a_terminal(tmp_path: Path, meta: dict[str, Any]) -> None:
    async with muse_agent(tmp_path, capable=False, meta=meta, turn="shell") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        sid = session.session_id
        result = await agent.conn.prompt(session_id=sid, prompt=text("run the tests"))
    assert result.stop_reason == "end_turn"
    assert agent.frames.problems == []
    call = next(u for u in agent.frames.updates(sid) if u["sessionUpdate"] == "tool_call")
    call_id = call["toolCallId"]
    assert (call["kind"], call["title"]) == ("execute", "shell: bash -lc 'make test'")
    later = for_call(agent, sid, call_id)[1:]
    final = later[-1]
    assert final["status"] == "completed"
    if meta:
        key = next(iter(meta))
        assert call["content"] == [{"type": "terminal", "terminalId": call_id}]
        assert call["_meta"] == {"terminal_info": {"terminal_id": call_id}}
        chunks = [u["_meta"][key]["data"] for u in later if key in (u.get("_meta") or {})]
        assert chunks == ["compiling\n", "testing\n", "3 passed\n"]  # as the host streamed them
        assert later.index(final) == len(chunks)  # every chunk before the exit
        assert final["_meta"] == {"terminal_exit": {"terminal_id": call_id, "exit_code": 0, "signal": None}}
        assert final["content"] == [{"type": "terminal", "terminalId": call_id}]
    else:  # as before: the output so far as text, the exit code in rawOutput
        assert call.get("content", []) == []
        texts = [u["content"][0]["content"]["text"] for u in later if u.get("content")]
        assert texts == ["compiling\n", "compiling\ntesting\n", "compiling\ntesting\n3 passed\n",
                         "compiling\ntesting\n3 passed\n"]
        assert final["rawOutput"] == {"exitCode": 0, "durationMs": 40}
        assert not any("_meta" in u for u in later)
        assert_legacy_clean(agent)


@BOTH
async def test_compaction_is_a_compact_conversation_tool_call(tmp_path: Path, capable: bool) -> None:
    async with muse_agent(tmp_path, capable=capable, turn="compact") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        sid = session.session_id
        result = await agent.conn.prompt(session_id=sid, prompt=text("go on"))
    assert result.stop_reason == "end_turn"
    assert agent.frames.problems == []
    start = next(u for u in agent.frames.updates(sid) if u["sessionUpdate"] == "tool_call")
    assert (start["title"], start["kind"], start["status"]) == ("Compact conversation", "think", "in_progress")
    done = for_call(agent, sid, start["toolCallId"])[1:]
    assert [u["status"] for u in done] == ["completed"]
    facts = {"trigger": "auto", "tokensBefore": 150000, "tokensAfter": 20000}
    if capable:
        assert done[0]["_meta"]["jetbrains"]["air"]["contextCompaction"] == {"version": 1, **facts}
        assert "rawOutput" not in done[0]
    else:
        assert done[0]["rawOutput"] == facts and "_meta" not in done[0]
        assert_legacy_clean(agent)


@BOTH
async def test_the_hosts_first_naming_becomes_the_session_title(tmp_path: Path, capable: bool) -> None:
    async with muse_agent(tmp_path, capable=capable, scenario="names") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        sid = session.session_id
        await agent.conn.prompt(session_id=sid, prompt=text("Fix the flaky login test please"))
        titles = [u for u in agent.frames.updates(sid) if u["sessionUpdate"] == "session_info_update" and "title" in u]
        await agent.conn.prompt(session_id=sid, prompt=text("and the other one"))
        listed = await agent.conn.list_sessions(cwd=str(tmp_path))
    assert agent.frames.problems == []
    [title] = titles  # before the first prompt's answer, and never again
    assert title["title"] == "Fix the flaky login test please"
    assert isinstance(title["updatedAt"], str) and title["updatedAt"].endswith("Z")
    assert len([u for u in agent.frames.updates(sid) if "title" in u]) == 1
    assert [s.title for s in listed.sessions if s.session_id == sid] == [title["title"]]  # what session/list says
    if not capable:
        assert_legacy_clean(agent)


@pytest.mark.parametrize("meta", TERMINAL_CLIENTS)
async def test_a_loaded_session_replays_shell_commands_as_finished_terminals(tmp_path: Path,
                                                                             meta: dict[str, Any]) -> None:
    async with muse_agent(tmp_path, capable=False, turn="shell") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        await agent.conn.prompt(session_id=session.session_id, prompt=text("run the tests"))
    async with muse_agent(tmp_path, capable=False, meta=meta) as agent:
        await agent.conn.load_session(session_id=session.session_id, cwd=str(tmp_path))
    assert agent.frames.problems == []
    replay = [u for u in agent.frames.updates(session.session_id) if "toolCallId" in u]
    call = replay[0]
    assert (call["sessionUpdate"], call["status"]) == ("tool_call", "completed")
    if meta:
        key = next(iter(meta))
        assert call["content"] == [{"type": "terminal", "terminalId": call["toolCallId"]}]
        assert [u["_meta"][key]["data"] for u in replay[1:] if key in u.get("_meta", {})] == [
            "compiling\ntesting\n3 passed\n"]
        assert replay[-1]["_meta"]["terminal_exit"]["exit_code"] == 0
    else:  # as before: one finished tool call with its output
        assert replay == [call]
        assert call["content"][0]["content"]["text"] == "compiling\ntesting\n3 passed\n"
