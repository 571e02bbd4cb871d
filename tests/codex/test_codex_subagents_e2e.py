"""Codex's child threads as child sessions (issue 28, item 3), through `acp-agent --provider codex`
with the real `codex app-server` 0.163 on the fake Responses API.

codex 0.163's multi-agent tools (`features.multi_agent`, stable and on by default) are the
namespace `multi_agent_v1`; the fake scripts the model's `spawn_agent`, then a `wait_agent` for
the child it started, and the child thread's own model requests (`x-openai-subagent:
collab_spawn`) get their own steps: a command in the workspace, then its report. app-server
reports the spawn as a `collabAgentToolCall` item of the parent thread (`receiverThreadIds`) and
the child's work as notifications of the child thread. A client of AIR's `nativeSubagentSessions`
gets `subagent_spawned` on the parent, the child's updates under its thread id and
`subagent_state_update` at its end; one of ACP's unstable `subagents: {}` gets `subagent_update`;
one that declares neither gets the frames it always got (the parent's own: the child unseen).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.codex.e2e_support import BUBBLEWRAP_PREFIX, CodexAgent, codex_agent, text, workspace, write_codex_home
from tests.fakes.responses_api import AGENT_ID, FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(90)]

AIR = {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure", "nativeSubagentSessions"]}}}
TOOLS = "multi_agent_v1"
SCRIPT: list[dict[str, Any]] = [
    {"function_call": {"name": "spawn_agent", "namespace": TOOLS, "arguments": {"message": "Count the files"}}},
    {"function_call": {"name": "wait_agent", "namespace": TOOLS,
                       "arguments": {"targets": [AGENT_ID], "timeout_ms": 60000}}},
    {"reply": "parent done"},
]
CHILD: list[dict[str, Any]] = [{"shell": ["bash", "-lc", "echo sub-marker > marker.txt"]}, {"reply": "child report"}]


async def _delegate(tmp_path: Path, **client: Any) -> tuple[CodexAgent, str, FakeResponsesAPI]:
    work = workspace(tmp_path)
    with FakeResponsesAPI(SCRIPT, subagents=CHILD) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, **client) as agent:
            session = await agent.conn.new_session(cwd=work)
            outcome = await agent.conn.prompt(session_id=session.session_id, prompt=text("Delegate"))
    assert outcome.stop_reason == "end_turn"
    assert agent.frames.problems == []
    assert len(api.subagent_requests) == 2  # the child ran: its command, then its report
    assert (Path(work) / "marker.txt").read_text() == "sub-marker\n"
    return agent, session.session_id, api


def _indexed(agent: CodexAgent) -> list[tuple[int, str, dict[str, Any]]]:
    return [(index, frame["params"]["sessionId"], frame["params"]["update"])
            for index, frame in enumerate(agent.frames.incoming) if frame.get("method") == "session/update"]


def _advertised(agent: CodexAgent) -> list[str]:
    answer = agent.initialized.model_dump(by_alias=True, exclude_none=True)
    return list(answer.get("_meta", {}).get("jetbrains", {}).get("air", {}).get("capabilities", []))


def _child_thread(api: FakeResponsesAPI) -> str:
    """The child thread's id, as codex sent it with the child's model requests."""
    [thread] = {request.headers["thread-id"] for request in api.subagent_requests}
    return thread


def _said(updates: list[dict[str, Any]]) -> str:
    return "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")


async def test_an_air_client_gets_the_child_thread_as_a_child_session(tmp_path: Path) -> None:
    agent, parent, api = await _delegate(tmp_path, capable=False, meta=AIR)
    assert "nativeSubagentSessions" in _advertised(agent)
    child = _child_thread(api)
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
    [call] = [u for _, u in of_child if u["sessionUpdate"] == "tool_call"]
    assert call["title"] == "echo sub-marker > marker.txt"
    assert [u.get("status") for _, u in of_child if u.get("toolCallId") == call["toolCallId"]][-1] == "completed"
    assert _said([u for _, u in of_child]) == "child report"
    assert {sid for _, sid, _ in updates} == {parent, child}
    assert _said([u for _, sid, u in updates if sid == parent]).endswith("parent done")


async def test_a_client_of_acp_subagents_gets_subagent_updates(tmp_path: Path) -> None:
    agent, parent, api = await _delegate(tmp_path, capable=False, subagents=True)
    assert "nativeSubagentSessions" not in _advertised(agent)  # (not a client of AIR)
    child = _child_thread(api)
    updates = _indexed(agent)
    announced = [(i, u) for i, sid, u in updates if sid == parent and u["sessionUpdate"] == "subagent_update"]
    assert [u for _, u in announced] == [
        {"sessionUpdate": "subagent_update", "sessionId": child, "title": f"Agent {child[-8:]}",
         "state": {"state": "running"}},
        {"sessionUpdate": "subagent_update", "sessionId": child, "state": {"state": "idle", "stopReason": "end_turn"}},
    ]
    of_child = [(i, u) for i, sid, u in updates if sid == child]
    assert of_child and all(announced[0][0] < i < announced[1][0] for i, _ in of_child)
    assert [u["title"] for _, u in of_child if u["sessionUpdate"] == "tool_call"] == ["echo sub-marker > marker.txt"]
    assert _said([u for _, u in of_child]) == "child report"


async def test_a_client_that_declares_neither_gets_the_frames_it_always_got(tmp_path: Path) -> None:
    agent, parent, api = await _delegate(tmp_path, capable=False)
    child = _child_thread(api)
    updates = _indexed(agent)
    assert {sid for _, sid, _ in updates} == {parent}
    assert not [u for _, _, u in updates if u["sessionUpdate"].startswith("subagent")]
    assert child not in str(agent.frames.incoming)
    shown = [u for _, _, u in updates if not _said([u]).startswith(f"Config warning: {BUBBLEWRAP_PREFIX}")]
    assert [u["sessionUpdate"] for u in shown] == ["available_commands_update", "usage_update", "usage_update",
                                                   "agent_message_chunk", "agent_message_chunk", "usage_update"]
    assert _said(shown) == "parent done"


async def test_a_child_that_works_on_after_the_prompt_ends_in_its_session(tmp_path: Path) -> None:
    """The model does not wait for its child: the prompt ends while the child's answer is held
    open, and the child's end reaches the client outside any prompt, on the parent session."""
    work = workspace(tmp_path)
    script = [SCRIPT[0], {"reply": "parent done"}]
    with FakeResponsesAPI(script, subagents=[{"reply": "late report", "hold": True}]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=False, meta=AIR) as agent:
            session = await agent.conn.new_session(cwd=work)
            outcome = await agent.conn.prompt(session_id=session.session_id, prompt=text("Delegate"))
            assert outcome.stop_reason == "end_turn"
            answered = len(agent.frames.incoming)
            assert not [u for _, _, u in _indexed(agent) if u["sessionUpdate"] == "subagent_state_update"]
            await anyio.to_thread.run_sync(lambda: api.held.wait(30))
            api.release()
            await agent.watched.wait_for(lambda frame: (frame.get("params") or {}).get("update", {}).get(
                "sessionUpdate") == "subagent_state_update")
    assert agent.frames.problems == []
    child = _child_thread(api)
    updates = _indexed(agent)
    [(spawned_at, _, _)] = [(i, sid, u) for i, sid, u in updates if u["sessionUpdate"] == "subagent_spawned"]
    [(ended_at, on, ended)] = [(i, sid, u) for i, sid, u in updates if u["sessionUpdate"] == "subagent_state_update"]
    assert on == session.session_id and ended_at >= answered  # (after the answer, frame `answered`)
    assert ended == {"sessionUpdate": "subagent_state_update", "subagentSessionId": child, "state": "completed"}
    of_child = [(i, u) for i, sid, u in updates if sid == child]
    assert all(spawned_at < i < ended_at for i, _ in of_child)
    assert _said([u for _, u in of_child]) == "late report"


async def test_a_multi_agent_v2_child_is_named_by_its_agent_path(tmp_path: Path) -> None:
    """codex's `multi_agent_v2` (tool namespace `collaboration`, `spawn_agent {message,
    task_name}`) reports its child as `subAgentActivity` items with the child's agent path
    (`/root/file_counter`): the child is named from it, as codex-acp names it."""
    work = workspace(tmp_path)
    script = [{"function_call": {"name": "spawn_agent", "namespace": "collaboration",
                                 "arguments": {"message": "Count the files", "task_name": "file_counter"}}},
              {"function_call": {"name": "wait_agent", "namespace": "collaboration",
                                 "arguments": {"timeout_ms": 60000}}},
              {"reply": "parent done"}]
    with FakeResponsesAPI(script, subagents=[{"reply": "v2 report"}]) as api:
        home = write_codex_home(api, tmp_path)
        config = home / "config.toml"
        config.write_text(config.read_text().replace("[features]\n", "[features]\nmulti_agent_v2 = true\n"))
        async with codex_agent(home, tmp_path, capable=False, meta=AIR) as agent:
            session = await agent.conn.new_session(cwd=work)
            outcome = await agent.conn.prompt(session_id=session.session_id, prompt=text("Delegate"))
            await agent.watched.wait_for(lambda frame: (frame.get("params") or {}).get("update", {}).get(
                "sessionUpdate") == "subagent_state_update")
    assert outcome.stop_reason == "end_turn"
    assert agent.frames.problems == []
    child = _child_thread(api)
    updates = _indexed(agent)
    [spawned] = [u for _, sid, u in updates if sid == session.session_id and u["sessionUpdate"] == "subagent_spawned"]
    assert spawned == {"sessionUpdate": "subagent_spawned", "subagentSessionId": child, "name": "File counter",
                       "task": "Delegated task for File counter", "capabilities": {}}
    assert _said([u for _, sid, u in updates if sid == child]) == "v2 report"
    [ended] = [u for _, _, u in updates if u["sessionUpdate"] == "subagent_state_update"]
    assert ended["state"] == "completed"


@pytest.mark.parametrize("client", [pytest.param({"meta": AIR}, id="air"), pytest.param({}, id="neither")])
async def test_a_childs_approval_is_asked_in_its_session_and_not_of_a_client_that_never_saw_it(
        tmp_path: Path, client: dict[str, Any]) -> None:
    """The child's command needs approval (Workspace access: the user decides). A client of child
    sessions is asked in the child's session; one that is not shown the child is not asked about
    a call it never saw, and the command is declined, as before."""
    work = workspace(tmp_path)
    marker = Path(work) / "approved.txt"
    child = [{"shell": ["bash", "-lc", f"echo approved > {marker}"], "justification": "Allow the marker?"},
             {"reply": "child report"}]
    with FakeResponsesAPI(SCRIPT, subagents=child) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=False, **client) as agent:
            agent.client.permission = lambda options: "accept"
            session = await agent.conn.new_session(cwd=work)
            await agent.conn.set_session_mode(session_id=session.session_id, mode_id="auto")
            outcome = await agent.conn.prompt(session_id=session.session_id, prompt=text("Delegate"))
    assert outcome.stop_reason == "end_turn"
    assert agent.frames.problems == []
    thread = _child_thread(api)
    asked = [frame["params"] for frame in agent.frames.incoming if frame.get("method") == "session/request_permission"]
    if client:
        [request] = asked
        assert request["sessionId"] == thread and request["toolCall"]["title"] == f"echo approved > {marker}"
        assert marker.read_text() == "approved\n"
    else:
        assert asked == [] and not marker.exists()
        assert thread not in str(agent.frames.incoming)


async def test_a_cancelled_prompt_ends_its_running_child_cancelled(tmp_path: Path) -> None:
    """The prompt is cancelled while its child's answer is held open (the parent waits for it):
    a client of AIR's draft gets the child ended `cancelled`, once, before the prompt's answer."""
    work = workspace(tmp_path)
    with FakeResponsesAPI(SCRIPT, subagents=[{"reply": "never done", "hold": True}]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=False, meta=AIR) as agent:
            session = await agent.conn.new_session(cwd=work)
            async with anyio.create_task_group() as group:
                answers: list[Any] = []

                async def prompt() -> None:
                    answers.append(await agent.conn.prompt(session_id=session.session_id, prompt=text("Delegate")))

                group.start_soon(prompt)
                await agent.watched.wait_for(lambda frame: (frame.get("params") or {}).get("update", {}).get(
                    "sessionUpdate") == "subagent_spawned")
                await anyio.to_thread.run_sync(lambda: api.held.wait(30))
                await agent.conn.cancel(session_id=session.session_id)
            api.release()
    [outcome] = answers
    assert outcome.stop_reason == "cancelled"
    assert agent.frames.problems == []
    child = _child_thread(api)
    ended = [u for _, _, u in _indexed(agent) if u["sessionUpdate"] == "subagent_state_update"]
    assert ended == [{"sessionUpdate": "subagent_state_update", "subagentSessionId": child, "state": "cancelled"}]
