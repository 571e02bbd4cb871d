"""`session/load` of a Codex session whose turn spawned a child thread (issue 28, item 3: a child
session the client can load), through `acp-agent --provider codex` with the real `codex
app-server` 0.163 on the fake Responses API.

A first agent process runs a prompt whose model spawns a child (`spawn_agent`, then
`wait_agent`; the child runs a command and reports, as in test_codex_subagents_e2e.py); a second
agent process on the same CODEX_HOME (a fresh app-server, which never ran the child) loads the
parent. A client of child sessions gets the child where its spawn was, before the load answers:
its announcement, its stored transcript under its id, its end; a client that declares neither
gets the replay it always got.
"""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

import pytest

from tests.codex.e2e_support import BUBBLEWRAP_PREFIX, CodexAgent, codex_agent, text, workspace, write_codex_home
from tests.codex.test_codex_subagents_e2e import AIR, CHILD, SCRIPT, _child_thread, _said
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(90)]

COMMAND = "echo sub-marker > marker.txt"


async def _loaded(tmp_path: Path, *, lose_child: bool = False, **client: Any) -> tuple[CodexAgent, str, str]:
    """The delegating session, run by one agent process, loaded by a second one for `client`
    (`lose_child`: the child's rollout is gone before the load)."""
    work = workspace(tmp_path)
    with FakeResponsesAPI(SCRIPT, subagents=CHILD) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=False) as first:
            session = await first.conn.new_session(cwd=work)
            outcome = await first.conn.prompt(session_id=session.session_id, prompt=text("Delegate"))
        assert outcome.stop_reason == "end_turn" and first.frames.problems == []
        child = _child_thread(api)
        if lose_child:
            [rollout] = glob.glob(str(home / "sessions" / "*" / "*" / "*" / f"rollout-*-{child}.jsonl"))
            Path(rollout).unlink()
        async with codex_agent(home, tmp_path, capable=False, log_name="second", **client) as second:
            await second.conn.load_session(cwd=work, session_id=session.session_id)
    assert second.frames.problems == []
    return second, session.session_id, child


def _indexed(agent: CodexAgent) -> list[tuple[int, str, dict[str, Any]]]:
    return [(index, frame["params"]["sessionId"], frame["params"]["update"])
            for index, frame in enumerate(agent.frames.incoming) if frame.get("method") == "session/update"]


def _answer_at(agent: CodexAgent) -> int:
    [load_id] = [frame["id"] for frame in agent.frames.outgoing if frame.get("method") == "session/load"]
    [answer_at] = [i for i, frame in enumerate(agent.frames.incoming)
                   if frame.get("id") == load_id and "method" not in frame]
    return answer_at


def _user_said(updates: list[dict[str, Any]]) -> str:
    return "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "user_message_chunk")


async def test_an_air_client_gets_the_child_replayed_where_it_was_spawned(tmp_path: Path) -> None:
    agent, parent, child = await _loaded(tmp_path, meta=AIR)
    updates = _indexed(agent)
    [(spawned_at, on, spawned)] = [(i, sid, u) for i, sid, u in updates if u["sessionUpdate"] == "subagent_spawned"]
    assert on == parent
    assert spawned == {"sessionUpdate": "subagent_spawned", "subagentSessionId": child,
                       "name": f"Agent {child[-8:]}", "task": "Count the files", "capabilities": {}}
    [(ended_at, on, ended)] = [(i, sid, u) for i, sid, u in updates if u["sessionUpdate"] == "subagent_state_update"]
    assert on == parent
    assert ended == {"sessionUpdate": "subagent_state_update", "subagentSessionId": child, "state": "completed"}
    of_child = [(i, u) for i, sid, u in updates if sid == child]
    assert of_child and all(spawned_at < i < ended_at for i, _ in of_child)
    child_updates = [u for _, u in of_child]
    assert _user_said(child_updates) == "Count the files"
    [call] = [u for u in child_updates if u["sessionUpdate"] == "tool_call"]
    assert call["title"] == COMMAND and call["status"] == "completed"
    assert _said(child_updates) == "child report"
    # in its place: after the parent's prompt, before the parent's answer; all before the load answers
    [asked_at] = [i for i, sid, u in updates if sid == parent and u["sessionUpdate"] == "user_message_chunk"]
    answered = [i for i, sid, u in updates if sid == parent and u["sessionUpdate"] == "agent_message_chunk"]
    assert asked_at < spawned_at and ended_at < min(answered)
    assert _said([u for _, sid, u in updates if sid == parent]) == "parent done"
    assert max(i for i, _, _ in updates) < _answer_at(agent)
    assert {sid for _, sid, _ in updates} == {parent, child}


async def test_a_client_of_acp_subagents_gets_the_child_replayed_as_subagent_updates(tmp_path: Path) -> None:
    agent, parent, child = await _loaded(tmp_path, subagents=True)
    updates = _indexed(agent)
    announced = [(i, u) for i, sid, u in updates if sid == parent and u["sessionUpdate"] == "subagent_update"]
    assert [u for _, u in announced] == [
        {"sessionUpdate": "subagent_update", "sessionId": child, "title": f"Agent {child[-8:]}",
         "state": {"state": "running"}},
        {"sessionUpdate": "subagent_update", "sessionId": child, "state": {"state": "idle", "stopReason": "end_turn"}},
    ]
    of_child = [(i, u) for i, sid, u in updates if sid == child]
    assert of_child and all(announced[0][0] < i < announced[1][0] for i, _ in of_child)
    assert [u["title"] for _, u in of_child if u["sessionUpdate"] == "tool_call"] == [COMMAND]
    assert _said([u for _, u in of_child]) == "child report"
    assert max(i for i, _, _ in updates) < _answer_at(agent)


async def test_a_client_that_declares_neither_gets_the_replay_it_always_got(tmp_path: Path) -> None:
    agent, parent, child = await _loaded(tmp_path)
    updates = _indexed(agent)
    assert {sid for _, sid, _ in updates} == {parent}
    assert child not in str(agent.frames.incoming)
    shown = [u for _, _, u in updates if u["sessionUpdate"] != "available_commands_update"
             and not _said([u]).startswith(f"Config warning: {BUBBLEWRAP_PREFIX}")]
    assert [(u["sessionUpdate"], u["content"]["text"]) for u in shown] == [
        ("user_message_chunk", "Delegate"), ("agent_message_chunk", "parent done")]


async def test_a_child_whose_thread_cannot_be_read_replays_as_spawned_and_disconnected(tmp_path: Path) -> None:
    agent, parent, child = await _loaded(tmp_path, lose_child=True, meta=AIR)
    updates = _indexed(agent)
    assert [(sid, u["sessionUpdate"]) for _, sid, u in updates if u["sessionUpdate"].startswith("subagent")] == [
        (parent, "subagent_spawned"), (parent, "subagent_state_update")]
    [ended] = [u for _, _, u in updates if u["sessionUpdate"] == "subagent_state_update"]
    assert ended == {"sessionUpdate": "subagent_state_update", "subagentSessionId": child, "state": "disconnected"}
    assert not [u for _, sid, u in updates if sid == child]
    assert _said([u for _, sid, u in updates if sid == parent]) == "parent done"


async def test_a_session_loaded_again_in_the_same_process_replays_its_ended_child(tmp_path: Path) -> None:
    """A load of a session this agent process still has open (its child ended live) replays the
    child again: the replay is the client's whole view of the session."""
    work = workspace(tmp_path)
    with FakeResponsesAPI(SCRIPT, subagents=CHILD) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=False, meta=AIR) as agent:
            session = await agent.conn.new_session(cwd=work)
            await agent.conn.prompt(session_id=session.session_id, prompt=text("Delegate"))
            live = len(agent.frames.incoming)
            await agent.conn.load_session(cwd=work, session_id=session.session_id)
        child = _child_thread(api)
    replayed = [frame["params"]["update"] for frame in agent.frames.incoming[live:]
                if frame.get("method") == "session/update"]
    kinds = [u["sessionUpdate"] for u in replayed]
    assert kinds.count("subagent_spawned") == 1 and kinds.count("subagent_state_update") == 1
    assert [u["subagentSessionId"] for u in replayed if u["sessionUpdate"] == "subagent_spawned"] == [child]
    assert agent.frames.problems == []
