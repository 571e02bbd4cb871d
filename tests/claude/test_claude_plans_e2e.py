"""Claude Code's plan mode for clients that declare the plan extensions (issue 28, item 7): the
plan that ExitPlanMode reviews is a file Claude wrote under its `plans/` directory. A client of
AIR's `planFile` sees the review's `rawInput` name that file (`planFilePath`, no plan text) and,
once approved, a call of its own with a blank path; a client of ACP's unstable `plan` gets the
approved plan as a markdown `plan_update` (claude-agent-acp's `exit-plan.js`: `planId`
`plan-mode`, joined to the review's call id for AIR). A `session/load` replays them so. A client
that declares neither sees the frames it always saw.

Real Claude Code CLI against the fake Anthropic API, which scripts the model: it writes the plan
to the plan file the plan-mode instructions name, then calls ExitPlanMode.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.claude.e2e_support import claude_agent, text
from tests.e2e.harness import AgentProcess
from tests.fakes.anthropic_api import PLAN_FILE, FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(150)]

PLAN = "# Plan\n\n1. Write the code\n2. Test it\n"
WRITE_PLAN = {"tool_use": {"name": "Write", "id": "toolu_write1", "input": {"file_path": PLAN_FILE, "content": PLAN}}}
EXIT_PLAN = {"tool_use": {"name": "ExitPlanMode", "id": "toolu_plan1", "input": {}}}
PLAN_FILE_AIR = {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure", "planFile"]}}}


async def plan_turn(tmp_path: Path, choice: str, **client: Any) -> tuple[AgentProcess, str, Any]:
    """One plan-mode turn: the model writes its plan file and asks to leave plan mode; the user
    picks `choice`. Returns the agent, the session id and the initialize answer."""
    with FakeAnthropicAPI([WRITE_PLAN, EXIT_PLAN, {"reply": "done"}]) as api:
        async with claude_agent(api, tmp_path, **client) as agent:
            agent.client.permission = lambda options: choice
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.set_session_mode(session_id=session.session_id, mode_id="plan")
            await agent.conn.prompt(session_id=session.session_id, prompt=text("plan it"))
    assert agent.frames.problems == []
    [answer] = [f["result"] for f in agent.frames.incoming if f.get("id") == 0 and "result" in f
                and "protocolVersion" in f["result"]]
    return agent, session.session_id, answer


def plan_frames(agent: AgentProcess, sid: str) -> list[dict[str, Any]]:
    """The review's tool call reports, the clear call and the plan updates, in order."""
    return [u for u in agent.frames.updates(sid)
            if str(u.get("toolCallId", "")).startswith("toolu_plan1") or u["sessionUpdate"] in ("plan", "plan_update")]


def plan_file(tmp_path: Path) -> str:
    [path] = (tmp_path / "claude-config" / "plans").glob("*.md")
    return str(path)


def air_capabilities(answer: dict[str, Any]) -> list[str]:
    return list(answer.get("_meta", {}).get("jetbrains", {}).get("air", {}).get("capabilities", []))


async def test_a_plan_file_client_reads_the_plan_from_its_file_and_gets_the_approved_plan(tmp_path: Path) -> None:
    agent, sid, answer = await plan_turn(tmp_path, "exit-plan-accept-edits", capable=False, meta=PLAN_FILE_AIR,
                                         plan=True)
    assert "planFile" in air_capabilities(answer)
    path = plan_file(tmp_path)
    frames = plan_frames(agent, sid)
    call = frames[0]
    assert call["sessionUpdate"] == "tool_call"
    assert call["rawInput"] == {"planFilePath": path}  # the file, not the plan's text
    results = [u for u in frames if u.get("toolCallId") == "toolu_plan1" and u.get("status") == "completed"]
    assert results and results[-1]["rawInput"] == {"planFilePath": path}
    [(asked, _options)] = agent.client.permission_requests
    assert asked.raw_input == {"planFilePath": path}  # asked to approve the file's plan
    clear, update = frames[-2:]
    assert clear == {"sessionUpdate": "tool_call", "toolCallId": "toolu_plan1:plan-file-clear",
                     "title": "Exited Plan Mode", "kind": "switch_mode", "status": "completed",
                     "rawInput": {"planFilePath": ""}, "content": []}
    assert update == {"sessionUpdate": "plan_update",
                      "plan": {"type": "markdown", "planId": "plan-mode:toolu_plan1", "content": PLAN.strip()}}


async def test_a_plan_client_outside_air_gets_the_session_plan(tmp_path: Path) -> None:
    agent, sid, answer = await plan_turn(tmp_path, "exit-plan-default", capable=False, plan=True)
    assert "_meta" not in answer or "jetbrains" not in answer["_meta"]
    frames = plan_frames(agent, sid)
    assert frames[0]["rawInput"] == {"plan": PLAN, "planFilePath": plan_file(tmp_path)}
    assert [u for u in frames if u["sessionUpdate"] == "plan_update"] == [
        {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "plan-mode", "content": PLAN.strip()}}]
    assert not any(u.get("toolCallId") == "toolu_plan1:plan-file-clear" for u in frames)


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_a_client_of_neither_sees_the_review_as_before(tmp_path: Path, capable: bool) -> None:
    agent, sid, answer = await plan_turn(tmp_path, "exit-plan-accept-edits", capable=capable)
    if capable:
        assert "planFile" in air_capabilities(answer)  # offered; this client did not take it
    frames = plan_frames(agent, sid)
    path = plan_file(tmp_path)
    assert frames[0]["rawInput"] == {"plan": PLAN, "planFilePath": path}
    [(asked, _options)] = agent.client.permission_requests
    assert asked.raw_input == {"plan": PLAN, "planFilePath": path}
    assert {u["sessionUpdate"] for u in frames} == {"tool_call", "tool_call_update"}
    assert {u["toolCallId"] for u in frames} == {"toolu_plan1"}
    assert all("rawInput" not in u for u in frames[1:])
    assert frames[-1]["status"] == "completed"
    assert frames[-1]["rawOutput"] == {"plan": PLAN, "isAgent": False, "filePath": path}


async def test_a_plan_kept_in_review_is_neither_released_nor_published(tmp_path: Path) -> None:
    agent, sid, _ = await plan_turn(tmp_path, "reject", capable=False, meta=PLAN_FILE_AIR, plan=True)
    frames = plan_frames(agent, sid)
    path = plan_file(tmp_path)
    assert frames[0]["rawInput"] == {"planFilePath": path}
    assert [u["sessionUpdate"] for u in frames if u["sessionUpdate"] != "tool_call_update"] == ["tool_call"]
    assert frames[-1]["status"] == "failed"
    assert frames[-1]["rawInput"] == {"planFilePath": path}


@pytest.mark.parametrize("declares", [True, False], ids=["plan-file-and-plan", "neither"])
async def test_a_load_replays_the_review_as_it_showed_live(tmp_path: Path, declares: bool) -> None:
    client: dict[str, Any] = {"capable": False, "meta": PLAN_FILE_AIR, "plan": True} if declares else {"capable": False}
    with FakeAnthropicAPI([WRITE_PLAN, EXIT_PLAN, {"reply": "done"}]) as api:
        async with claude_agent(api, tmp_path, **client) as agent:
            agent.client.permission = lambda options: "exit-plan-default"
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.set_session_mode(session_id=session.session_id, mode_id="plan")
            await agent.conn.prompt(session_id=session.session_id, prompt=text("plan it"))
        async with claude_agent(api, tmp_path, **client) as reloaded:
            await reloaded.conn.load_session(cwd=str(tmp_path), session_id=session.session_id)
    assert agent.frames.problems == [] and reloaded.frames.problems == []
    path = plan_file(tmp_path)
    replayed = plan_frames(reloaded, session.session_id)
    live = [u for u in plan_frames(agent, session.session_id) if u.get("status") != "in_progress"]
    if declares:
        assert replayed[0]["rawInput"] == {"planFilePath": path}
        assert replayed[-2]["toolCallId"] == "toolu_plan1:plan-file-clear"
        assert replayed[-1] == live[-1] == {
            "sessionUpdate": "plan_update",
            "plan": {"type": "markdown", "planId": "plan-mode:toolu_plan1", "content": PLAN.strip()}}
        assert [u["sessionUpdate"] for u in replayed] == [u["sessionUpdate"] for u in live]
    else:
        assert replayed[0]["rawInput"] == {"plan": PLAN, "planFilePath": path}
        assert {u["toolCallId"] for u in replayed} == {"toolu_plan1"}
        assert [u["sessionUpdate"] for u in replayed] == ["tool_call", "tool_call_update"]
        assert "rawInput" not in replayed[-1]
