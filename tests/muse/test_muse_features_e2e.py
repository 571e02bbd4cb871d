"""Terminals, compaction and titles through `acp-agent --provider muse` and the fake MSP host
(issue 12), for clients that opt in and clients that do not; every frame is schema-checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp import schema

from tests.muse.e2e_support import agent_texts, assert_legacy_clean, muse_agent, received, text

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
    if capable:  # AIR's names, as claude-agent-acp sends them
        assert done[0]["_meta"]["jetbrains"]["air"]["contextCompaction"] == {
            "version": 1, "trigger": "automatic", "preTokens": 150000, "postTokens": 20000}
        assert "rawOutput" not in done[0]
    else:
        assert done[0]["rawOutput"] == facts and "_meta" not in done[0]
        assert_legacy_clean(agent)


@BOTH
async def test_a_compaction_client_gets_compaction_updates_instead_of_the_tool_call(
        tmp_path: Path, capable: bool) -> None:
    async with muse_agent(tmp_path, capable=capable, turn="compact", session={"compaction": {}}) as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        sid = session.session_id
        result = await agent.conn.prompt(session_id=sid, prompt=text("go on"))
    assert result.stop_reason == "end_turn"
    assert agent.frames.problems == []
    updates = agent.frames.updates(sid)
    assert not [u for u in updates if u["sessionUpdate"] == "tool_call" and u["title"] == "Compact conversation"]
    compactions = [u for u in updates if u["sessionUpdate"] == "compaction_update"]
    assert [u["status"] for u in compactions] == ["in_progress", "completed"]
    assert len({u["compactionId"] for u in compactions}) == 1
    if capable:
        assert compactions[1]["_meta"]["jetbrains"]["air"]["contextCompaction"] == {
            "version": 1, "trigger": "automatic", "preTokens": 150000, "postTokens": 20000}
    else:
        assert all("_meta" not in u for u in compactions)


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


# --- questions -------------------------------------------------------------------------------------------


def answered(tmp_path: Path) -> list[dict[str, Any]]:
    return [frame["params"] for frame in received(tmp_path, "userInput/answer")]


@pytest.mark.parametrize(("response", "reply"), [
    (schema.AcceptElicitationResponse(action="accept", content={"q1": "a.py"}), "You chose a.py."),
    (schema.DeclineElicitationResponse(action="decline"), "Continuing without an answer."),
], ids=["accept", "decline"])
async def test_a_hosts_question_is_an_elicitation_for_a_client_that_offers_it(tmp_path: Path, response: Any,
                                                                              reply: str) -> None:
    form = schema.ElicitationCapabilities(form=schema.ElicitationFormCapabilities())
    async with muse_agent(tmp_path, capable=False, elicitation=form, turn="question") as agent:
        agent.client.elicitation = lambda message, mode: response
        session = await agent.conn.new_session(cwd=str(tmp_path))
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("go"))
    assert result.stop_reason == "end_turn"
    assert agent.frames.problems == []
    [(message, mode)] = agent.client.elicitations
    assert message == "Which file?"
    prop = mode.requested_schema.model_dump(by_alias=True, exclude_none=True)["properties"]["q1"]
    assert (prop["title"], [o["const"] for o in prop["oneOf"]]) == ("Pick", ["a.py"])
    assert agent_texts(agent, session.session_id) == [reply]
    if response.action == "accept":
        assert [a["answers"] for a in answered(tmp_path)] == [[{"questionId": "q1", "selectedLabel": "a.py"}]]
        assert received(tmp_path, "userInput/cancel") == []
    else:
        assert answered(tmp_path) == [] and len(received(tmp_path, "userInput/cancel")) == 1


async def test_a_hosts_question_is_a_permission_whose_options_are_the_answers_otherwise(tmp_path: Path) -> None:
    async with muse_agent(tmp_path, capable=False, turn="question") as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        result = await agent.conn.prompt(session_id=session.session_id, prompt=text("go"))
    assert result.stop_reason == "end_turn"
    assert agent.frames.problems == []
    [(tool_call, options)] = agent.client.permission_requests
    assert tool_call.title == "Which file?"
    assert [(o.name, o.kind) for o in options] == [("a.py", "allow_once"), ("Decline", "reject_once")]
    assert agent_texts(agent, session.session_id) == ["You chose a.py."]
    assert [a["answers"] for a in answered(tmp_path)] == [[{"questionId": "q1", "selectedLabel": "a.py"}]]
    assert_legacy_clean(agent)
