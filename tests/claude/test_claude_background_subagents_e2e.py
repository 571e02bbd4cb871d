"""A subagent started in the background (the Agent tool with `run_in_background: true`), through
`acp-agent --provider claude` with the real bundled CLI and the fake Anthropic API.

The main loop's result comes while the subagent still runs (its request is held until the test
releases it); when it ends the CLI runs a model cycle of its own on the notification ("after
notification"). A client without AIR's `backgroundSubagents` gets the whole of it inside the
prompt's turn, before the answer; a client with it is answered at the main result and gets the
subagent's child session, its end and the CLI's own cycle after the answer. Either way the next
prompt is answered with its own answer.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.claude.e2e_support import claude_agent, text, wait_for_requests
from tests.e2e.harness import AgentProcess
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]

NATIVE = ["sessionFailure", "nativeSubagentSessions"]
BACKGROUND = [*NATIVE, "backgroundSubagents"]
SCRIPT: list[dict[str, Any]] = [
    {"tool_use": {"name": "Agent", "input": {"description": "Look around", "prompt": "find files",
                                             "subagent_type": "general-purpose", "run_in_background": True}}},
    {"for_prompt": "find files", "hang_after_events": 3, "reply": "subagent report"},  # until released
    {"reply": "main answer"},
    {"reply": "after notification"},  # the CLI's own cycle on the subagent's notification
    {"echo": True},  # the next prompt
]


def _air(capabilities: list[str]) -> dict[str, Any]:
    return {"jetbrains": {"air": {"version": 1, "capabilities": capabilities}}}


async def _until(agent: AgentProcess, wanted: Callable[[], bool], deadline_s: float = 30.0) -> None:
    """Wait (woken by each session update) until `wanted()` holds for the frames received."""
    arrived = anyio.Event()

    def hook(session_id: str, update: Any) -> None:
        nonlocal arrived
        arrived.set()

    agent.client.update_hook = hook
    with anyio.fail_after(deadline_s):
        while not wanted():
            await arrived.wait()
            arrived = anyio.Event()


def _updates(agent: AgentProcess) -> list[tuple[int, str, dict[str, Any]]]:
    return [(index, frame["params"]["sessionId"], frame["params"]["update"])
            for index, frame in enumerate(agent.frames.incoming) if frame.get("method") == "session/update"]


def _answers(agent: AgentProcess) -> list[int]:
    """Where the `session/prompt` answers are among the frames received, in order."""
    ids = [frame["id"] for frame in agent.frames.outgoing if frame.get("method") == "session/prompt"]
    return [index for index, frame in enumerate(agent.frames.incoming) if frame.get("id") in ids
            and "method" not in frame]


def _said(updates: list[tuple[int, str, dict[str, Any]]], session_id: str, after: int = -1,
          before: int | None = None) -> str:
    return "".join(u["content"]["text"] for i, sid, u in updates if sid == session_id
                   and u["sessionUpdate"] == "agent_message_chunk" and after < i and (before is None or i < before))


def _advertised(agent: AgentProcess) -> list[str]:
    [answer] = [frame["result"] for frame in agent.frames.incoming if "protocolVersion" in (frame.get("result") or {})]
    return list((answer.get("_meta") or {}).get("jetbrains", {}).get("air", {}).get("capabilities", []))


async def _held(tmp_path: Path, **client: Any) -> tuple[AgentProcess, str]:
    """The first prompt, whose answer waits for the subagent (released once the main loop's answer
    is in), then a second prompt."""
    with FakeAnthropicAPI(SCRIPT) as api:
        async with claude_agent(api, tmp_path, capable=False, **client) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            results: list[Any] = []

            async def first() -> None:
                results.append(await agent.conn.prompt(session_id=session.session_id, prompt=text("Delegate")))

            async with anyio.create_task_group() as tg:
                tg.start_soon(first)
                await wait_for_requests(api, 2, finished=True)  # the Agent call and "main answer"
                api.release()
            second = await agent.conn.prompt(session_id=session.session_id, prompt=text("Again"))
    assert [r.stop_reason for r in [*results, second]] == ["end_turn", "end_turn"]
    assert agent.frames.problems == []
    return agent, session.session_id


async def test_a_plain_client_gets_the_background_subagent_before_the_answer(tmp_path: Path) -> None:
    """Regression: the first answer came at the main loop's result, and the subagent's report, its
    end and the CLI's own cycle then waited in the CLI's output for the next prompt, whose answer
    was that cycle's ("after notification") instead of its own."""
    agent, parent = await _held(tmp_path)
    assert _advertised(agent) == []
    updates = _updates(agent)
    first_answer, second_answer = _answers(agent)
    assert {sid for _, sid, _ in updates} == {parent}
    [launch] = [u for _, _, u in updates if u["sessionUpdate"] == "tool_call" and u["title"] == "Look around"]
    on_launch = [(i, u) for i, _, u in updates if u.get("toolCallId") == launch["toolCallId"]]
    assert any("subagent report" in str(u.get("content")) for _, u in on_launch)
    assert all(i < first_answer for i, _ in on_launch)
    assert _said(updates, parent, before=first_answer) == "main answerafter notification"
    assert _said(updates, parent, after=first_answer) == "echo: Again"
    assert all(i < second_answer for i, _, _ in updates)


async def test_a_child_session_client_gets_the_subagent_s_end_before_the_answer(tmp_path: Path) -> None:
    """`nativeSubagentSessions` without `backgroundSubagents`: the child, its report and its end,
    and the CLI's own cycle, all before the prompt's answer."""
    agent, parent = await _held(tmp_path, meta=_air(NATIVE))
    assert "backgroundSubagents" not in _advertised(agent)
    updates = _updates(agent)
    first_answer, _ = _answers(agent)
    [(spawned_at, _, spawned)] = [(i, sid, u) for i, sid, u in updates if u["sessionUpdate"] == "subagent_spawned"]
    child = spawned["subagentSessionId"]
    [(ended_at, on, ended)] = [(i, sid, u) for i, sid, u in updates if u["sessionUpdate"] == "subagent_state_update"]
    assert (on, ended) == (parent, {"sessionUpdate": "subagent_state_update", "subagentSessionId": child,
                                    "state": "completed"})
    assert spawned_at < ended_at < first_answer
    assert _said(updates, child) == "subagent report"
    assert _said(updates, parent, before=first_answer) == "main answerafter notification"
    assert _said(updates, parent, after=first_answer) == "echo: Again"


async def test_a_background_subagents_client_is_answered_at_the_result(tmp_path: Path) -> None:
    """`backgroundSubagents`: the prompt is answered at the main loop's result while the subagent
    still runs; its child session streams after the answer and ends with `subagent_state_update`,
    then the CLI's own cycle streams on the parent; the next prompt gets its own answer."""
    with FakeAnthropicAPI(SCRIPT) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=_air(BACKGROUND)) as agent:
            assert "backgroundSubagents" in _advertised(agent)
            session = await agent.conn.new_session(cwd=str(tmp_path))
            parent = session.session_id
            with anyio.fail_after(30):  # the subagent's request is still held by the fake
                first = await agent.conn.prompt(session_id=parent, prompt=text("Delegate"))
            assert first.stop_reason == "end_turn"
            [first_answer] = _answers(agent)
            spawned = [u for _, _, u in _updates(agent) if u["sessionUpdate"] == "subagent_spawned"]
            assert len(spawned) == 1
            child = spawned[0]["subagentSessionId"]
            assert not [u for _, sid, u in _updates(agent) if sid == child]  # nothing of it yet
            api.release()
            await _until(agent, lambda: _said(_updates(agent), parent, after=first_answer) == "after notification")
            second = await agent.conn.prompt(session_id=parent, prompt=text("Again"))
    assert second.stop_reason == "end_turn"
    assert agent.frames.problems == []
    updates = _updates(agent)
    [(ended_at, on, ended)] = [(i, sid, u) for i, sid, u in updates if u["sessionUpdate"] == "subagent_state_update"]
    assert (on, ended["subagentSessionId"], ended["state"]) == (parent, child, "completed")
    of_child = [i for i, sid, _ in updates if sid == child]
    assert of_child and all(first_answer < i < ended_at for i in of_child)
    assert _said(updates, child) == "subagent report"
    assert _said(updates, parent, before=first_answer) == "main answer"
    _, second_answer = _answers(agent)
    assert _said(updates, parent, after=ended_at, before=second_answer) == "after notificationecho: Again"


ASKING: list[dict[str, Any]] = [
    SCRIPT[0],
    {"for_prompt": "find files", "hang_after_events": 3,
     "tool_use": {"name": "Bash", "input": {"command": "echo sub-marker > marker.txt"}}},
    {"reply": "main answer"},
    {"reply": "subagent report"},  # the subagent's answer once its command ran
    {"reply": "after notification"},
]


async def test_a_background_subagent_asks_on_its_child_session_after_the_answer(tmp_path: Path) -> None:
    """`backgroundSubagents`: the subagent's permission request comes after the prompt's answer, on
    the child session; allowed, its command runs and its call completes there."""
    with FakeAnthropicAPI(ASKING) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=_air(BACKGROUND)) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            parent = session.session_id
            with anyio.fail_after(30):
                await agent.conn.prompt(session_id=parent, prompt=text("Delegate"))
            [first_answer] = _answers(agent)
            api.release()
            await _until(agent, lambda: _said(_updates(agent), parent, after=first_answer) == "after notification")
    assert agent.frames.problems == []
    assert (tmp_path / "marker.txt").read_text().strip() == "sub-marker"
    updates = _updates(agent)
    [child] = [u["subagentSessionId"] for _, _, u in updates if u["sessionUpdate"] == "subagent_spawned"]
    [(asked_at, asked)] = [(i, frame["params"]) for i, frame in enumerate(agent.frames.incoming)
                           if frame.get("method") == "session/request_permission"]
    assert asked_at > first_answer and asked["sessionId"] == child
    call_id = asked["toolCall"]["toolCallId"]
    assert [u.get("status") for _, sid, u in updates if sid == child and u.get("toolCallId") == call_id][-1] == \
        "completed"
    assert _said(updates, child) == "subagent report"


async def test_a_cancel_answers_a_held_turn_and_the_next_prompt_gets_its_own_answer(tmp_path: Path) -> None:
    """A plain client's turn held for its background subagent: `session/cancel` answers it
    `cancelled` at once; the subagent goes on after the answer, and the next prompt (sent once the
    CLI's own cycle on its notification is over) is answered with its own answer."""
    with FakeAnthropicAPI(SCRIPT) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            parent = session.session_id
            results: list[Any] = []

            async def first() -> None:
                results.append(await agent.conn.prompt(session_id=parent, prompt=text("Delegate")))

            async with anyio.create_task_group() as tg:
                tg.start_soon(first)
                await wait_for_requests(api, 2, finished=True)
                # the main loop's result is in (its context usage): the turn is held
                await _until(agent, lambda: any(u["sessionUpdate"] == "usage_update" for _, _, u in _updates(agent)))
                await agent.conn.cancel(session_id=parent)
            assert [r.stop_reason for r in results] == ["cancelled"]
            [first_answer] = _answers(agent)
            api.release()
            await _until(agent, lambda: _said(_updates(agent), parent, after=first_answer) == "after notification")
            second = await agent.conn.prompt(session_id=parent, prompt=text("Again"))
    assert second.stop_reason == "end_turn"
    assert agent.frames.problems == []
    updates = _updates(agent)
    _, second_answer = _answers(agent)
    assert _said(updates, parent, after=first_answer, before=second_answer) == "after notificationecho: Again"


async def test_a_load_replays_the_background_subagent_as_its_child_session(tmp_path: Path) -> None:
    """`session/load` of a session whose subagent ran in the background: the child where its
    launch was, its own transcript under its id, its end, before the load's answer."""
    with FakeAnthropicAPI(SCRIPT) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=_air(BACKGROUND)) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("Delegate"))
            [first_answer] = _answers(agent)
            api.release()
            await _until(agent, lambda: _said(_updates(agent), session.session_id, after=first_answer)
                         == "after notification")
        async with claude_agent(api, tmp_path, capable=False, meta=_air(NATIVE)) as reloaded:
            await reloaded.conn.load_session(cwd=str(tmp_path), session_id=session.session_id)
    assert reloaded.frames.problems == []
    updates = _updates(reloaded)
    [(spawned_at, _, spawned)] = [(i, sid, u) for i, sid, u in updates if u["sessionUpdate"] == "subagent_spawned"]
    child = spawned["subagentSessionId"]
    [(ended_at, _, ended)] = [(i, sid, u) for i, sid, u in updates if u["sessionUpdate"] == "subagent_state_update"]
    assert (ended["subagentSessionId"], ended["state"]) == (child, "completed")
    of_child = [i for i, sid, _ in updates if sid == child]
    assert of_child and all(spawned_at < i < ended_at for i in of_child)
    assert _said(updates, child) == "subagent report"
    [load_id] = [frame["id"] for frame in reloaded.frames.outgoing if frame.get("method") == "session/load"]
    [answer_at] = [i for i, frame in enumerate(reloaded.frames.incoming) if frame.get("id") == load_id
                   and "method" not in frame]
    assert ended_at < answer_at


async def test_a_prompt_sent_while_a_turn_is_held_takes_it_over(tmp_path: Path) -> None:
    """A plain client's turn held for its background subagent: a second prompt sent meanwhile
    answers the first at once with its own outcome (as claude-agent-acp hands a held turn over),
    runs while the subagent still works, and gets its own answer; the subagent goes on after."""
    script = [*SCRIPT[:3], {"echo": True, "times": 2}]  # the second prompt, then the CLI's own cycle
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            parent = session.session_id
            results: list[Any] = []

            async def prompt(words: str) -> None:
                results.append(await agent.conn.prompt(session_id=parent, prompt=text(words)))

            with anyio.fail_after(60):  # the subagent's request is held by the fake throughout
                async with anyio.create_task_group() as tg:
                    tg.start_soon(prompt, "Delegate")
                    await wait_for_requests(api, 2, finished=True)
                    await _until(agent, lambda: any(u["sessionUpdate"] == "usage_update" for _, _, u in _updates(agent)))
                    await prompt("Again")
            assert [r.stop_reason for r in results] == ["end_turn", "end_turn"]
            first_answer, second_answer = _answers(agent)
            api.release()
            await wait_for_requests(api, 5, finished=True)  # the subagent's and the CLI's own cycle
            await _until(agent, lambda: _said(_updates(agent), parent, after=second_answer).startswith("echo: "))
    assert agent.frames.problems == []
    updates = _updates(agent)
    assert _said(updates, parent, before=first_answer) == "main answer"
    assert _said(updates, parent, after=first_answer, before=second_answer) == "echo: Again"


async def test_the_clis_own_cycle_after_the_answer_is_an_async_task(tmp_path: Path) -> None:
    """`backgroundSubagents` with `asyncTasks`: the one reader of the CLI between prompts takes the
    subagent's work and end after the answer, and the CLI's own cycle on its notification is the
    task "Claude is working" (as after a background command), its text inside that task."""
    with FakeAnthropicAPI(SCRIPT) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=_air([*BACKGROUND, "asyncTasks"])) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            parent = session.session_id
            with anyio.fail_after(30):
                await agent.conn.prompt(session_id=parent, prompt=text("Delegate"))
            [first_answer] = _answers(agent)
            api.release()
            await _until(agent, lambda: any(u.get("asyncTaskId", "").startswith("autonomous-turn-")
                                            and u["sessionUpdate"] == "async_task_state_update"
                                            for _, _, u in _updates(agent)))
            second = await agent.conn.prompt(session_id=parent, prompt=text("Again"))
    assert second.stop_reason == "end_turn"
    assert agent.frames.problems == []
    updates = _updates(agent)
    own = [(i, u) for i, _, u in updates if u.get("asyncTaskId", "").startswith("autonomous-turn-")]
    [(began, spawned), (ended_at, ended)] = own
    assert (spawned["sessionUpdate"], spawned["name"], spawned["taskType"]) == ("async_task_spawned",
                                                                               "Claude is working", "turn")
    assert ended["state"] == "completed"
    [(child_end, _, _)] = [(i, sid, u) for i, sid, u in updates if u["sessionUpdate"] == "subagent_state_update"]
    _, second_answer = _answers(agent)
    assert first_answer < child_end < ended_at < second_answer
    assert _said(updates, parent, after=began, before=ended_at) == "after notification"
    assert _said(updates, parent, after=ended_at) == "echo: Again"
