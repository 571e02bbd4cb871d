"""AIR's `asyncTasks` through `acp-agent --provider claude`, with the real bundled CLI and the fake
Anthropic API: the model runs a Bash command with `run_in_background: true`; the CLI reports it
as a task (`task_started`, `task_updated`, `task_notification`, the last two after the prompt's
answer) and then starts a turn of its own to tell the model. A client that declares `asyncTasks`
gets claude-agent-acp's `async_task_*` updates and can stop a task (`_session/async_task/stop`);
every client gets the CLI's own turn as session updates between prompts, so the next prompt's
answer is its own."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import RequestError

from tests.claude.e2e_support import claude_agent, text, wait_for_requests
from tests.e2e.harness import AgentProcess
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]

AIR_TASKS = {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure", "asyncTasks"]}}}
DESCRIPTION = "Wait then say done"
SUMMARY = f'Background command "{DESCRIPTION}" completed (exit code 0)'
TASK_UPDATES = ("async_task_spawned", "async_task_progress", "async_task_state_update")


def _script(command: str) -> list[dict[str, Any]]:
    return [{"tool_use": {"name": "Bash", "id": "toolu_bg1",
                          "input": {"command": command, "run_in_background": True, "description": DESCRIPTION}}},
            {"reply": "started it"},
            {"reply": "the task finished"},  # the CLI's own turn, after the command ended
            {"reply": "second answer"}]


def _updates(agent: AgentProcess, session_id: str) -> list[dict[str, Any]]:
    return agent.frames.updates(session_id)


async def _until(agent: AgentProcess, wanted: Callable[[], bool], timeout_s: float = 30) -> None:
    """Wait (bounded) until the frames the agent sent satisfy `wanted`."""
    seen = anyio.Event()
    agent.frames.on_frame = lambda: seen.set() if wanted() else None
    try:
        with anyio.fail_after(timeout_s):
            if not wanted():
                await seen.wait()
    finally:
        agent.frames.on_frame = None


def _advertised(agent: AgentProcess) -> list[str]:
    [answer] = [frame["result"] for frame in agent.frames.incoming if "protocolVersion" in (frame.get("result") or {})]
    return list((answer.get("_meta") or {}).get("jetbrains", {}).get("air", {}).get("capabilities", []))


def _tasks(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [u for u in updates if u["sessionUpdate"] in TASK_UPDATES]


def _bash_result(updates: list[dict[str, Any]]) -> dict[str, Any]:
    [result] = [u for u in updates if u["sessionUpdate"] == "tool_call_update"
                and u.get("toolCallId") == "toolu_bg1" and u.get("status") == "completed"]
    return result


def _said(updates: list[dict[str, Any]]) -> str:
    return "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")


def _own_turn_over(agent: AgentProcess, session_id: str) -> bool:
    return _said(agent.frames.updates(session_id)).endswith("the task finished")


async def test_a_client_of_async_tasks_gets_the_background_command_and_the_clis_own_turn(tmp_path: Path) -> None:
    with FakeAnthropicAPI(_script("sleep 0.5; echo done")) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=AIR_TASKS) as agent:
            assert "asyncTasks" in _advertised(agent)
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            result = await agent.conn.prompt(session_id=sid, prompt=text("Run it in the background"))
            answered = len(_updates(agent, sid))
            await _until(agent, lambda: any(u.get("state") == "completed" and u["asyncTaskId"].startswith(
                "autonomous-turn-") for u in _tasks(_updates(agent, sid))))
            between = len(_updates(agent, sid))
            second = await agent.conn.prompt(session_id=sid, prompt=text("And now?"))
    assert result.stop_reason == "end_turn" and second.stop_reason == "end_turn"
    updates = _updates(agent, sid)
    spawned, progress, ended, own, own_ended = _tasks(updates)
    task_id = spawned["asyncTaskId"]
    assert spawned == {"sessionUpdate": "async_task_spawned", "asyncTaskId": task_id, "name": DESCRIPTION,
                       "taskType": "shell", "description": DESCRIPTION, "showInTranscript": True,
                       "canStop": True, "toolCallId": "toolu_bg1"}
    assert progress == {"sessionUpdate": "async_task_progress", "asyncTaskId": task_id,
                        "outputFilePath": progress["outputFilePath"]}
    assert progress["outputFilePath"].startswith("/") and progress["outputFilePath"].endswith(
        f"/tasks/{task_id}.output")
    # the call's result says it went on in the background (claude-agent-acp's marker)
    marked = _bash_result(updates)
    assert marked["_meta"]["jetbrains"]["air"] == {"version": 1, "asyncTasks": {"backgrounded": True}}
    assert updates.index(spawned) < updates.index(progress) < updates.index(marked) < answered
    # after the prompt's answer: the command's end, then the CLI's own turn as a task of its own
    assert ended == {"sessionUpdate": "async_task_state_update", "asyncTaskId": task_id, "state": "completed"}
    assert own == {"sessionUpdate": "async_task_spawned", "asyncTaskId": own["asyncTaskId"],
                   "name": "Claude is working", "taskType": "turn", "description": SUMMARY,
                   "showInTranscript": False, "canStop": True}
    assert own_ended == {"sessionUpdate": "async_task_state_update", "asyncTaskId": own["asyncTaskId"],
                         "state": "completed"}
    assert answered <= updates.index(ended) < updates.index(own) < updates.index(own_ended) < between
    assert _said(updates[updates.index(own):updates.index(own_ended)]) == "the task finished"
    # the next prompt gets its own answer, not the CLI's turn before it
    assert _said(updates[between:]) == "second answer"
    assert agent.frames.problems == []


async def test_a_client_without_async_tasks_gets_no_task_updates_and_its_own_answers(tmp_path: Path) -> None:
    with FakeAnthropicAPI(_script("sleep 0.5; echo done")) as api:
        async with claude_agent(api, tmp_path, capable=True) as agent:
            assert "asyncTasks" not in _advertised(agent)
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            await agent.conn.prompt(session_id=sid, prompt=text("Run it in the background"))
            await _until(agent, lambda: _own_turn_over(agent, sid))
            between = len(_updates(agent, sid))
            await agent.conn.prompt(session_id=sid, prompt=text("And now?"))
            with pytest.raises(RequestError) as refused:
                await agent.conn._conn.send_request("_session/async_task/stop",
                                                    {"sessionId": sid, "asyncTaskId": "anything"})
    updates = _updates(agent, sid)
    assert _tasks(updates) == []
    assert "jetbrains" not in _bash_result(updates).get("_meta", {})
    assert _said(updates[between:]) == "second answer"
    assert refused.value.code == -32601
    assert agent.frames.problems == []


async def test_the_client_stops_a_background_command(tmp_path: Path) -> None:
    with FakeAnthropicAPI(_script("sleep 60; echo never")) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=AIR_TASKS, session={"notices": {}}) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            await agent.conn.prompt(session_id=sid, prompt=text("Run it in the background"))
            [spawned] = [u for u in _tasks(_updates(agent, sid)) if u["sessionUpdate"] == "async_task_spawned"]
            task_id = spawned["asyncTaskId"]
            stop = agent.conn._conn.send_request
            invalid = [{"sessionId": sid}, {"sessionId": "no-such-session", "asyncTaskId": task_id},
                       {"sessionId": sid, "asyncTaskId": "no-such-task"}]
            codes = []
            for params in invalid:
                with pytest.raises(RequestError) as refused:
                    await stop("_session/async_task/stop", params)
                codes.append((refused.value.code, (refused.value.data or {}).get("field")))
            assert await stop("_session/async_task/stop", {"sessionId": sid, "asyncTaskId": task_id}) == {
                "stopped": True}
            assert await stop("_session/async_task/stop", {"sessionId": sid, "asyncTaskId": task_id}) == {
                "stopped": False}
            second = await agent.conn.prompt(session_id=sid, prompt=text("And now?"))
    assert codes == [(-32602, "asyncTaskId"), (-32602, "sessionId"), (-32602, "asyncTaskId")]
    updates = _updates(agent, sid)
    states = [u for u in _tasks(updates) if u["sessionUpdate"] == "async_task_state_update"]
    assert states == [{"sessionUpdate": "async_task_state_update", "asyncTaskId": task_id, "state": "stopped"}]
    notices = [u for u in updates if u["sessionUpdate"] == "notice"]
    assert notices == [{"sessionUpdate": "notice", "severity": "info", "title": "Task stopped by user",
                        "description": f"{DESCRIPTION}."}]
    assert second.stop_reason == "end_turn"
    assert agent.frames.problems == []


async def test_a_prompt_sent_while_the_clis_own_turn_runs_gets_its_own_answer(tmp_path: Path) -> None:
    """The prompt reaches the CLI while its own turn (held 2 s at the fake) runs: the CLI queues
    it behind that turn (`command_lifecycle queued`), whose lines are not the prompt's."""
    script = _script("sleep 0.5; echo done")
    script[2] = {**script[2], "delay_first_byte_s": 2}
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=AIR_TASKS) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            await agent.conn.prompt(session_id=sid, prompt=text("Run it in the background"))
            await _until(agent, lambda: any(u.get("state") == "completed" for u in _tasks(_updates(agent, sid))))
            second = await agent.conn.prompt(session_id=sid, prompt=text("And now?"))
    assert second.stop_reason == "end_turn"
    updates = _updates(agent, sid)
    own, own_ended = [u for u in _tasks(updates) if u["asyncTaskId"].startswith("autonomous-turn-")]
    assert own_ended["state"] == "completed"
    assert _said(updates[updates.index(own):updates.index(own_ended)]) == "the task finished"
    assert _said(updates[updates.index(own_ended):]) == "second answer"
    assert agent.frames.problems == []


async def test_the_client_stops_the_clis_own_turn(tmp_path: Path) -> None:
    """The CLI's own turn (its answer held at the fake) is a task the client can stop: the CLI is
    interrupted, the task ends `stopped`, and the next prompt is answered as usual."""
    script = _script("sleep 0.5; echo done")
    script[2] = {**script[2], "hang_after_events": 2}
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=AIR_TASKS) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            await agent.conn.prompt(session_id=sid, prompt=text("Run it in the background"))

            def own() -> list[dict[str, Any]]:
                return [u for u in _tasks(_updates(agent, sid)) if u["asyncTaskId"].startswith("autonomous-turn-")]

            await _until(agent, lambda: bool(own()))
            # the turn's answer is held at the fake: its request came (before it, the interrupt can
            # keep the CLI from sending it, and the next prompt's request takes the held answer)
            await wait_for_requests(api, 3)
            stopped = await agent.conn._conn.send_request(
                "_session/async_task/stop", {"sessionId": sid, "asyncTaskId": own()[0]["asyncTaskId"]})
            await _until(agent, lambda: len(own()) == 2)
            second = await agent.conn.prompt(session_id=sid, prompt=text("And now?"))
    assert stopped == {"stopped": True}
    assert own()[1] == {"sessionUpdate": "async_task_state_update", "asyncTaskId": own()[0]["asyncTaskId"],
                        "state": "stopped"}
    assert second.stop_reason == "end_turn"
    assert _said(_updates(agent, sid)).endswith("second answer")
    assert [(request.step or {}).get("reply") for request in api.turn_requests[2:]] == ["the task finished",
                                                                                        "second answer"]
    assert agent.frames.problems == []


async def test_the_clis_own_turn_asks_its_permission_requests_on_the_session(tmp_path: Path) -> None:
    """The CLI's own turn runs a command that needs the user's permission: no prompt is open, so
    the request is asked on the session (as the reader between prompts asks for a background
    subagent's); allowed, the command runs and the turn goes on."""
    script = _script("sleep 0.5; echo done")
    script[2:3] = [{"tool_use": {"name": "Bash", "id": "toolu_own1",
                                 "input": {"command": "echo own-marker > own.txt", "description": "Mark"}}},
                   {"reply": "the task finished"}]
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=AIR_TASKS) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            await agent.conn.prompt(session_id=sid, prompt=text("Run it in the background"))
            answered = len(agent.frames.incoming)
            await _until(agent, lambda: _own_turn_over(agent, sid))
            second = await agent.conn.prompt(session_id=sid, prompt=text("And now?"))
    assert second.stop_reason == "end_turn"
    assert (tmp_path / "own.txt").read_text().strip() == "own-marker"
    [(asked_at, asked)] = [(i, frame["params"]) for i, frame in enumerate(agent.frames.incoming)
                           if frame.get("method") == "session/request_permission"]
    assert asked_at > answered and asked["sessionId"] == sid and asked["toolCall"]["toolCallId"] == "toolu_own1"
    assert _said(_updates(agent, sid)).endswith("the task finishedsecond answer")
    assert agent.frames.problems == []
