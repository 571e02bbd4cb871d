"""AIR's `goal` through `acp-agent --provider claude` on the real Claude Code CLI: its `/goal
<condition>` (a session Stop hook whose condition a side model call judges, answered by the fake
Anthropic API's `verdicts`) and `/goal clear`, their goal snapshots, and the CLI's `active_goal`
reports where it sends them (a remote session, `CLAUDE_CODE_REMOTE`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.claude.e2e_support import agent_texts, claude_agent, text
from tests.e2e.air_files import air_client
from tests.fakes.anthropic_api import FakeAnthropicAPI, is_hook_evaluation

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]

GOAL_CLIENT = air_client("sessionFailure", "goal")
ACTIVE = {"objective": "write a haiku", "status": "active", "controlMethod": "_session/goal"}
"""The snapshot of the goal `/goal write a haiku` sets, as claude-agent-acp publishes it."""


def goals(agent: Any, session_id: str) -> list[Any]:
    """The goal snapshots the session was sent, in order."""
    return [update["_meta"]["jetbrains"]["air"]["goal"] for update in agent.frames.updates(session_id)
            if update["sessionUpdate"] == "session_info_update"
            and "goal" in update.get("_meta", {}).get("jetbrains", {}).get("air", {})]


def initialized_air(agent: Any) -> dict[str, Any]:
    """`_meta.jetbrains.air` of the agent's `initialize` answer ({} when there is none)."""
    answer = agent.frames.incoming[0]["result"]
    return dict((answer.get("_meta") or {}).get("jetbrains", {}).get("air", {}))


def extension_problems(agent: Any) -> list[str]:
    """The schema log knows no `_session/*` method (AIR's, not ACP's)."""
    return [p for p in agent.frames.problems if not p.startswith("response to unknown request")]


def evaluations(api: FakeAnthropicAPI) -> list[str]:
    """The last user text of each hook evaluation (the condition it judged)."""
    return [r.last_user_text for r in api.side_requests if is_hook_evaluation(r.body)]


async def test_goal_set_runs_the_goal_turn_and_clear_ends_it(tmp_path: Path) -> None:
    with FakeAnthropicAPI([{"reply": "An old silent pond"}]) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=GOAL_CLIENT) as agent:
            send = agent.conn._conn.send_request
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            assert await send("_session/goal", {"sessionId": sid, "action": "set",
                                                "objective": "  write a haiku "}) == {}
            after_set = goals(agent, sid)
            turns = list(api.turn_requests)
            assert await send("_session/goal", {"sessionId": sid, "action": "clear"}) == {}
    meta = initialized_air(agent)
    assert "goal" in meta["capabilities"]
    assert meta["goal"] == {"version": 1, "controlMethod": "_session/goal", "actions": ["set", "clear"]}
    assert after_set == [ACTIVE]  # before `set` answered, when the goal's turn had ended
    assert goals(agent, sid) == [ACTIVE, None]  # claude-agent-acp 0.101.0 on this fake: the same
    # Claude Code ran its goal: the model was told the condition and the Stop hook judged it
    [turn] = turns
    assert 'Stop hook is now active with condition: "write a haiku"' in turn.last_user_text
    assert [e for e in evaluations(api) if "Condition: write a haiku" in e] != []
    assert "An old silent pond" in "".join(agent_texts(agent, sid))
    assert len(api.turn_requests) == 1  # `/goal clear` runs no model turn
    assert extension_problems(agent) == []


async def test_a_typed_goal_command_yields_the_snapshot(tmp_path: Path) -> None:
    """`/goal <condition>` in a prompt the client sends is the same command: its snapshot too."""
    with FakeAnthropicAPI([{"reply": "There once was a fake"}]) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=GOAL_CLIENT) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            outcome = await agent.conn.prompt(session_id=sid, prompt=text("/goal draft a limerick"))
            typed = goals(agent, sid)
            await agent.conn.prompt(session_id=sid, prompt=text("/goal stop"))
    assert outcome.stop_reason == "end_turn"
    assert typed == [{"objective": "draft a limerick", "status": "active", "controlMethod": "_session/goal"}]
    assert goals(agent, sid) == [typed[0], None]  # `stop` is one of Claude Code's words for clear
    assert extension_problems(agent) == []


async def test_a_remote_clis_goal_reports_reach_the_client(tmp_path: Path) -> None:
    """Claude Code reports its goal (`active_goal`) in a remote session: each failed evaluation
    (iterations, the evaluator's reason) and the goal's end once its condition holds."""
    script = [{"reply": "Thinking about ponds"}, {"reply": "An old silent pond"}]
    with FakeAnthropicAPI(script) as api:
        api.verdicts = [{"ok": False, "reason": "no haiku yet"}]
        async with claude_agent(api, tmp_path, capable=False, meta=GOAL_CLIENT,
                                extra={"CLAUDE_CODE_REMOTE": "1"}) as agent:
            send = agent.conn._conn.send_request
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            assert await send("_session/goal", {"sessionId": sid, "action": "set",
                                                "objective": "write a haiku"}) == {}
    seen = goals(agent, sid)
    # claude-agent-acp 0.101.0 on this fake (CLAUDE_CODE_REMOTE=1) sends these four snapshots too
    assert seen[0] == ACTIVE  # the command's, as soon as it is submitted
    reported = seen[1:-1]
    assert [(g["objective"], g["status"], g["iterations"], g["lastReason"]) for g in reported] == [
        ("write a haiku", "active", 0, None), ("write a haiku", "active", 1, "no haiku yet")]
    assert all(g["createdAt"] > 1_000_000_000_000 and g["controlMethod"] == "_session/goal" for g in reported)
    assert set(reported[0]) == {"objective", "status", "iterations", "lastReason", "createdAt", "controlMethod"}
    assert seen[-1] is None  # the second evaluation found the condition met: the goal is over
    assert len(evaluations(api)) == 2 and len(api.turn_requests) == 2
    assert extension_problems(agent) == []


async def test_goal_params_and_unknown_sessions_are_refused(tmp_path: Path) -> None:
    from acp import RequestError

    with FakeAnthropicAPI([]) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=GOAL_CLIENT) as agent:
            send = agent.conn._conn.send_request
            session = await agent.conn.new_session(cwd=str(tmp_path))
            errors = []
            for params in ({"sessionId": session.session_id, "action": "pause"},
                           {"sessionId": session.session_id, "action": "resume"},
                           {"sessionId": session.session_id, "action": "set", "objective": " "},
                           {"sessionId": "no-such-session", "action": "set", "objective": "x"}):
                with pytest.raises(RequestError) as caught:
                    await send("_session/goal", params)
                errors.append((caught.value.code, str(caught.value)))
    assert [code for code, _ in errors] == [-32602, -32602, -32602, -32002]
    assert '"set", "clear"' in errors[0][1] and '"set", "clear"' in errors[1][1]
    assert "requires a non-empty objective" in errors[2][1]
    assert api.turn_requests == [] and goals(agent, session.session_id) == []
    assert extension_problems(agent) == []


@pytest.mark.parametrize("meta", [air_client("sessionFailure"), None], ids=["air-without-goal", "plain-acp"])
async def test_a_client_without_goal_gets_method_not_found_and_todays_frames(
        tmp_path: Path, meta: dict[str, Any] | None) -> None:
    from acp import RequestError

    with FakeAnthropicAPI([{"reply": "There once was a fake"}]) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=meta) as agent:
            send = agent.conn._conn.send_request
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            with pytest.raises(RequestError) as caught:
                await send("_session/goal", {"sessionId": sid, "action": "set", "objective": "x"})
            outcome = await agent.conn.prompt(session_id=sid, prompt=text("/goal draft a limerick"))
    assert caught.value.code == -32601
    assert outcome.stop_reason == "end_turn"  # the command still runs, as Claude Code's own
    air = initialized_air(agent)
    assert "goal" not in air and "goal" not in air.get("capabilities", [])
    wire = json.dumps(agent.frames.updates(sid))
    assert goals(agent, sid) == [] and "_session/goal" not in wire and '"objective"' not in wire
    assert len(api.turn_requests) == 1  # `_session/goal` ran nothing
