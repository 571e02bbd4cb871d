"""Subagents as child sessions, through `acp-agent --provider claude` with the real bundled CLI and
the fake Anthropic API: the model calls the Agent tool, the subagent's own requests get their own
scripted answers (`for_prompt`), and the client sees AIR's draft (`nativeSubagentSessions`:
`subagent_spawned`, the child's updates under its id, `subagent_state_update`), ACP's unstable
`subagent_update` (client `subagents`), or, declaring neither, the Agent tool call as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.claude.e2e_support import claude_agent, text
from tests.e2e.harness import AgentProcess
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]

AIR_SUBAGENTS = {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure", "nativeSubagentSessions"]}}}
SUB_CALL = "`echo sub-marker > marker.txt`"
SCRIPT: list[dict[str, Any]] = [
    {"tool_use": {"name": "Agent", "input": {"description": "Look around", "prompt": "find files",
                                             "subagent_type": "general-purpose", "run_in_background": False}}},
    # (the main loop waits for a foreground subagent, so the order is fixed)
    {"for_prompt": "find files", "tool_use": {"name": "Bash", "input": {"command": "echo sub-marker > marker.txt"}}},
    {"reply": "subagent report"},
    {"reply": "main answer"},
]


async def _delegate(tmp_path: Path, **client: Any) -> tuple[AgentProcess, str, Any]:
    with FakeAnthropicAPI(SCRIPT) as api:
        async with claude_agent(api, tmp_path, **client) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("Delegate"))
    assert result.stop_reason == "end_turn"
    assert agent.frames.problems == []
    return agent, session.session_id, result


def _agent_ids(tmp_path: Path) -> list[str]:
    """The subagents whose transcripts the CLI kept (`subagents/agent-<id>.jsonl`)."""
    found = (tmp_path / "claude-config" / "projects").glob("*/*/subagents/agent-*.jsonl")
    return [path.name.removeprefix("agent-").removesuffix(".jsonl") for path in found]


def _advertised(agent: AgentProcess) -> list[str]:
    [answer] = [frame["result"] for frame in agent.frames.incoming if "protocolVersion" in (frame.get("result") or {})]
    air: dict[str, Any] = (answer.get("_meta") or {}).get("jetbrains", {}).get("air", {})
    return list(air.get("capabilities", []))


def _session_of(agent: AgentProcess, index: int) -> str:
    return str(agent.frames.incoming[index]["params"]["sessionId"])


def _indexed(agent: AgentProcess) -> list[tuple[int, str, dict[str, Any]]]:
    return [(index, frame["params"]["sessionId"], frame["params"]["update"])
            for index, frame in enumerate(agent.frames.incoming) if frame.get("method") == "session/update"]


async def test_an_air_client_gets_the_subagent_as_a_child_session(tmp_path: Path) -> None:
    agent, parent, _ = await _delegate(tmp_path, capable=False, meta=AIR_SUBAGENTS)
    assert "nativeSubagentSessions" in _advertised(agent)
    [child] = _agent_ids(tmp_path)
    updates = _indexed(agent)
    [(spawned_at, on, spawned)] = [(i, sid, u) for i, sid, u in updates if u["sessionUpdate"] == "subagent_spawned"]
    assert on == parent
    assert spawned == {"sessionUpdate": "subagent_spawned", "subagentSessionId": child, "name": "Look around",
                       "task": "find files", "prompt": "find files", "capabilities": {}}
    [(ended_at, on, ended)] = [(i, sid, u) for i, sid, u in updates if u["sessionUpdate"] == "subagent_state_update"]
    assert on == parent
    assert ended == {"sessionUpdate": "subagent_state_update", "subagentSessionId": child, "state": "completed"}
    of_child = [(i, u) for i, sid, u in updates if sid == child]
    assert of_child and all(spawned_at < i < ended_at for i, _ in of_child)
    [call] = [u for _, u in of_child if u["sessionUpdate"] == "tool_call"]
    assert call["title"] == SUB_CALL
    assert [u.get("status") for _, u in of_child if u.get("toolCallId") == call["toolCallId"]][-1] == "completed"
    said = "".join(u["content"]["text"] for _, u in of_child if u["sessionUpdate"] == "agent_message_chunk")
    assert said == "subagent report"
    # the parent: no Agent call (the child stands for it), none of the child's work, its own answer
    of_parent = [u for _, sid, u in updates if sid == parent]
    assert not [u for u in of_parent if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
    assert "".join(u["content"]["text"] for u in of_parent if u["sessionUpdate"] == "agent_message_chunk") == \
        "main answer"
    assert {sid for _, sid, _ in updates} == {parent, child}
    # the subagent's permission request is the child's, naming the child's own call
    [asked] = [frame["params"] for frame in agent.frames.incoming if frame.get("method") == "session/request_permission"]
    assert (asked["sessionId"], asked["toolCall"]["toolCallId"]) == (child, call["toolCallId"])


async def test_an_air_client_without_the_capability_gets_the_agent_call(tmp_path: Path) -> None:
    """Today's frames: the Agent call in the parent, the subagent's calls marked with it, its text
    on it, no child session."""
    agent, parent, _ = await _delegate(tmp_path, capable=True)
    assert "nativeSubagentSessions" in _advertised(agent)  # the agent serves it; the client did not ask
    updates = _indexed(agent)
    assert {sid for _, sid, _ in updates} == {parent}
    kinds = {u["sessionUpdate"] for _, _, u in updates}
    assert not kinds & {"subagent_spawned", "subagent_state_update", "subagent_update"}
    [launch] = [u for _, _, u in updates if u["sessionUpdate"] == "tool_call" and u["title"] == "Look around"]
    [sub_call] = [u for _, _, u in updates if u["sessionUpdate"] == "tool_call" and u["title"] == SUB_CALL]
    assert sub_call["_meta"]["claudeCode"]["parentToolUseId"] == launch["toolCallId"]
    on_launch = [u for _, _, u in updates if u["sessionUpdate"] == "tool_call_update"
                 and u["toolCallId"] == launch["toolCallId"]]
    assert any("subagent report" in str(u.get("content")) for u in on_launch)
    assert on_launch[-1]["status"] == "completed"
    [asked] = [frame["params"] for frame in agent.frames.incoming if frame.get("method") == "session/request_permission"]
    assert (asked["sessionId"], asked["toolCall"]["toolCallId"]) == (parent, sub_call["toolCallId"])


async def test_a_client_of_neither_gets_no_air_capability(tmp_path: Path) -> None:
    agent, parent, _ = await _delegate(tmp_path, capable=False)
    assert _advertised(agent) == []
    updates = _indexed(agent)
    assert {sid for _, sid, _ in updates} == {parent}
    assert [u["title"] for _, _, u in updates if u["sessionUpdate"] == "tool_call"] == ["Look around",
                                                                                      SUB_CALL]


async def test_a_subagents_client_gets_subagent_update(tmp_path: Path) -> None:
    """ACP's unstable `subagent_update`: the child announced running on its parent, its updates
    under its id, its end an idle `end_turn`; the Agent call stays the parent's."""
    agent, parent, _ = await _delegate(tmp_path, capable=False, subagents=True)
    [child] = _agent_ids(tmp_path)
    updates = _indexed(agent)
    announced = [(i, sid, u) for i, sid, u in updates if u["sessionUpdate"] == "subagent_update"]
    assert [(sid, u) for _, sid, u in announced] == [
        (parent, {"sessionUpdate": "subagent_update", "sessionId": child, "title": "Look around",
                  "description": "general-purpose", "state": {"state": "running"}}),
        (parent, {"sessionUpdate": "subagent_update", "sessionId": child,
                  "state": {"state": "idle", "stopReason": "end_turn"}}),
    ]
    of_child = [(i, u) for i, sid, u in updates if sid == child]
    assert of_child and all(announced[0][0] < i < announced[1][0] for i, _ in of_child)
    assert "".join(u["content"]["text"] for _, u in of_child if u["sessionUpdate"] == "agent_message_chunk") == \
        "subagent report"
    parent_calls = [u["title"] for _, sid, u in updates if sid == parent and u["sessionUpdate"] == "tool_call"]
    assert parent_calls == ["Look around"]


async def _load(tmp_path: Path, **client: Any) -> tuple[AgentProcess, str, str]:
    """A session with a subagent, then `session/load` of it by a fresh agent for `client`."""
    with FakeAnthropicAPI(SCRIPT) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("Delegate"))
        async with claude_agent(api, tmp_path, **client) as reloaded:
            await reloaded.conn.load_session(cwd=str(tmp_path), session_id=session.session_id)
    assert reloaded.frames.problems == []
    [child] = _agent_ids(tmp_path)
    return reloaded, session.session_id, child


async def test_a_load_replays_the_subagent_as_its_child_session(tmp_path: Path) -> None:
    """AIR's draft on `session/load`: the child announced where its launch was, its own
    transcript under its id (its prompt, its call, its answer), its end, before the answer."""
    agent, parent, child = await _load(tmp_path, capable=False, meta=AIR_SUBAGENTS)
    updates = _indexed(agent)
    [(spawned_at, on, spawned)] = [(i, sid, u) for i, sid, u in updates if u["sessionUpdate"] == "subagent_spawned"]
    assert on == parent
    assert spawned == {"sessionUpdate": "subagent_spawned", "subagentSessionId": child, "name": "Look around",
                       "task": "Look around", "capabilities": {}}
    [(ended_at, _, ended)] = [(i, sid, u) for i, sid, u in updates if u["sessionUpdate"] == "subagent_state_update"]
    assert ended["state"] == "completed"
    of_child = [(i, u) for i, sid, u in updates if sid == child]
    assert of_child and all(spawned_at < i < ended_at for i, _ in of_child)
    kinds = [u["sessionUpdate"] for _, u in of_child]
    assert kinds[0] == "user_message_chunk" and of_child[0][1]["content"]["text"] == "find files"
    assert [u["title"] for _, u in of_child if u["sessionUpdate"] == "tool_call"] == [SUB_CALL]
    assert "".join(u["content"]["text"] for _, u in of_child if u["sessionUpdate"] == "agent_message_chunk") == \
        "subagent report"
    of_parent = [u for _, sid, u in updates if sid == parent]
    assert not [u for u in of_parent if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
    [load_id] = [frame["id"] for frame in agent.frames.outgoing if frame.get("method") == "session/load"]
    [answer_at] = [i for i, frame in enumerate(agent.frames.incoming) if frame.get("id") == load_id
                   and "method" not in frame]
    assert ended_at < answer_at


async def test_a_load_for_a_client_without_child_sessions_is_as_before(tmp_path: Path) -> None:
    agent, parent, _ = await _load(tmp_path, capable=True)
    updates = _indexed(agent)
    assert {sid for _, sid, _ in updates} == {parent}
    assert [u["title"] for _, _, u in updates if u["sessionUpdate"] == "tool_call"] == ["Look around"]


async def test_a_cancelled_turn_ends_its_running_subagent(tmp_path: Path) -> None:
    """The subagent's own request hangs; `session/cancel` ends the turn, and the AIR client learns
    the child ended `cancelled`, once, before the prompt's answer."""
    from tests.claude.e2e_support import wait_for_requests
    from tests.e2e.cancel_support import cancel_prompt

    script = [SCRIPT[0], {"for_prompt": "find files", "hang_after_events": 1, "reply": "never"}]
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=AIR_SUBAGENTS) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            outcome = await cancel_prompt(agent, session.session_id, "Delegate", "session/cancel",
                                          lambda: wait_for_requests(api, 2))
            api.release()
    assert outcome.stop_reason == "cancelled"
    assert agent.frames.problems == []
    updates = _indexed(agent)
    [spawned] = [u for _, _, u in updates if u["sessionUpdate"] == "subagent_spawned"]
    [(ended_at, on, ended)] = [(i, sid, u) for i, sid, u in updates if u["sessionUpdate"] == "subagent_state_update"]
    assert (on, ended["subagentSessionId"], ended["state"]) == (session.session_id, spawned["subagentSessionId"],
                                                               "cancelled")
    [prompt_id] = [frame["id"] for frame in agent.frames.outgoing if frame.get("method") == "session/prompt"]
    [answer_at] = [i for i, frame in enumerate(agent.frames.incoming) if frame.get("id") == prompt_id
                   and "method" not in frame]
    assert ended_at < answer_at
