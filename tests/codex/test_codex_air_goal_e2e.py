"""AIR's `goal` and `codexHooks` through `acp-agent --provider codex` on the real app-server:
codex 0.163's thread goals (`thread/goal/set|clear`, `thread/goal/updated|cleared`), its goal
turns scripted on the fake Responses API (the model marks the goal done with codex's own
`update_goal` tool), and its `hooks/list`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.codex.e2e_support import codex_agent, model_text, workspace, write_codex_home
from tests.e2e.air_files import advertised, air_client
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]

DONE = {"function_call": {"name": "update_goal", "arguments": {"status": "complete"}}}
"""A goal turn's model call that ends the goal (else codex starts goal turns until it is done)."""


def goals(agent: Any, session_id: str) -> list[Any]:
    """The goal snapshots the session was sent, in order."""
    return [update["_meta"]["jetbrains"]["air"]["goal"] for update in agent.frames.updates(session_id)
            if update["sessionUpdate"] == "session_info_update"
            and "goal" in update.get("_meta", {}).get("jetbrains", {}).get("air", {})]


def shape(goal: Any) -> Any:
    return goal if goal is None else (goal["objective"], goal["status"])


def extension_problems(agent: Any) -> list[str]:
    """The schema log knows no `_session/*` or `_codex/*` method (AIR's, not ACP's)."""
    return [p for p in agent.frames.problems if not p.startswith("response to unknown request")]


async def test_goal_set_pause_resume_clear_and_the_snapshots(tmp_path: Path) -> None:
    script = [DONE, {"reply": "haiku written"}, DONE, {"reply": "resumed and done"}]
    with FakeResponsesAPI(script) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=False, meta=air_client("sessionFailure", "goal")) as agent:
            send = agent.conn._conn.send_request
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            sid = session.session_id
            assert await send("_session/goal", {"sessionId": sid, "action": "set",
                                                "objective": "  write a haiku "}) == {}
            await agent.watched.wait_for(lambda f: json.dumps(f).count('"complete"') > 0 and sid in json.dumps(f))
            assert await send("_session/goal", {"sessionId": sid, "action": "pause"}) == {}
            await agent.watched.wait_for(lambda f: '"paused"' in json.dumps(f))
            assert await send("_session/goal", {"sessionId": sid, "action": "resume"}) == {}
            resumed = len(goals(agent, sid))
            assert await send("_session/goal", {"sessionId": sid, "action": "clear"}) == {}
            await agent.watched.wait_for(lambda f: '"goal": null' in json.dumps(f))
            turns = len(api.turn_requests)
    meta = agent.initialized.field_meta["jetbrains"]["air"]
    assert "goal" in advertised(agent.initialized) and "codexHooks" in advertised(agent.initialized)
    assert meta["goal"] == {"version": 1, "controlMethod": "_session/goal",
                            "actions": ["set", "pause", "resume", "clear"]}
    seen = goals(agent, sid)
    # codex-acp 2.6.0 on this fake (set, then clear) sends the same snapshots: active, complete, null
    assert [shape(goal) for goal in seen] == [
        ("write a haiku", "active"), ("write a haiku", "complete"), ("write a haiku", "paused"),
        ("write a haiku", "active"), ("write a haiku", "complete"), None]
    assert resumed == 5  # the resumed goal's turn ran (and ended it) before `resume` answered
    first = seen[0]
    assert set(first) == {"objective", "status", "tokenBudget", "tokensUsed", "timeUsedSeconds", "createdAt",
                          "updatedAt", "controlMethod"}
    assert first["controlMethod"] == "_session/goal" and first["tokenBudget"] is None
    assert first["createdAt"] % 1000 == 0 and first["createdAt"] > 1_000_000_000_000  # codex's seconds, in ms
    assert model_text(agent, sid) == "haiku writtenresumed and done"  # the goal turns' answers
    assert turns == 4  # two goal turns of two model requests each, none after the goal was done
    assert "update_goal" in api.turn_requests[0].tool_names
    assert extension_problems(agent) == []


async def test_goal_params_are_checked(tmp_path: Path) -> None:
    from acp import RequestError

    with FakeResponsesAPI([]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=False, meta=air_client("sessionFailure", "goal")) as agent:
            send = agent.conn._conn.send_request
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            errors = []
            for params in ({"sessionId": session.session_id, "action": "set"},
                           {"sessionId": session.session_id, "action": "set", "objective": "   "},
                           {"sessionId": session.session_id, "action": "stop"},
                           {"action": "clear"},
                           {"sessionId": session.session_id, "action": "set", "objective": "x" * 4001},
                           {"sessionId": "no-such-session", "action": "clear"}):
                with pytest.raises(RequestError) as caught:
                    await send("_session/goal", params)
                errors.append((caught.value.code, str(caught.value)))
    assert [code for code, _ in errors] == [-32602, -32602, -32602, -32602, -32602, -32002]
    assert 'requires a non-empty objective' in errors[0][1] and 'requires a non-empty objective' in errors[1][1]
    assert '"set", "pause", "resume", "clear"' in errors[2][1]
    assert "sessionId" in errors[3][1] and "4000" in errors[4][1]
    assert api.turn_requests == []


async def test_codex_hooks_list_and_trust(tmp_path: Path) -> None:
    from acp import RequestError

    with FakeResponsesAPI([]) as api:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        meta = air_client("sessionFailure", "codexHooks")
        async with codex_agent(home, tmp_path, capable=False, meta=meta) as agent:
            send = agent.conn._conn.send_request
            listed = await send("_codex/hooks/list", {"cwd": cwd})
            errors = []
            for method, params in (("_codex/hooks/list", {"cwd": "relative"}),
                                   ("_codex/hooks/trust", {"cwd": cwd, "hooks": []}),
                                   ("_codex/hooks/trust", {"cwd": cwd, "hooks": [{"key": "k"}]}),
                                   ("_codex/hooks/trust", {"cwd": cwd, "hooks": [{"key": "k", "currentHash": "h"}]})):
                with pytest.raises(RequestError) as caught:
                    await send(method, params)
                errors.append((caught.value.code, str(caught.value)))
    assert listed == {"cwd": cwd, "hooks": [], "warnings": [], "errors": []}
    assert [code for code, _ in errors] == [-32602, -32602, -32602, -32602]
    assert "absolute cwd" in errors[0][1] and "{key, currentHash}" in errors[1][1]
    assert "changed before trust was recorded" in errors[3][1]  # a hook codex does not list
    assert extension_problems(agent) == []


async def test_a_session_flags_hook_is_listed_and_trusted(tmp_path: Path) -> None:
    """A hook of codex-acp's `CODEX_CONFIG` (app-server's `-c hooks=...`) is listed untrusted,
    trusted in the user's config.toml (`config/batchWrite`), then listed trusted."""
    hooks = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}
    with FakeResponsesAPI([]) as api:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        meta = air_client("sessionFailure", "codexHooks")
        async with codex_agent(home, tmp_path, capable=False, meta=meta,
                               env={"CODEX_CONFIG": json.dumps({"hooks": hooks})}) as agent:
            send = agent.conn._conn.send_request
            before = await send("_codex/hooks/list", {"cwd": cwd})
            [hook] = before["hooks"]
            trusted = await send("_codex/hooks/trust", {"cwd": cwd, "hooks": [
                {"key": hook["key"], "currentHash": hook["currentHash"]}]})
            after = await send("_codex/hooks/list", {"cwd": cwd})
    assert (hook["source"], hook["trustStatus"], hook["command"]) == ("sessionFlags", "untrusted", "true")
    assert trusted == {"trusted": True}
    assert [h["trustStatus"] for h in after["hooks"]] == ["trusted"]
    assert hook["currentHash"] in (home / "config.toml").read_text()
    assert extension_problems(agent) == []


async def test_a_client_without_goal_or_hooks_gets_method_not_found_and_todays_frames(tmp_path: Path) -> None:
    from acp import RequestError

    with FakeResponsesAPI([{"reply": "hello"}]) as api:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        async with codex_agent(home, tmp_path, capable=True) as agent:
            send = agent.conn._conn.send_request
            session = await agent.conn.new_session(cwd=cwd)
            codes = []
            for method, params in (("_session/goal", {"sessionId": session.session_id, "action": "set",
                                                      "objective": "x"}),
                                   ("_codex/hooks/list", {"cwd": cwd}),
                                   ("_codex/hooks/trust", {"cwd": cwd, "hooks": [{"key": "k", "currentHash": "h"}]})):
                with pytest.raises(RequestError) as caught:
                    await send(method, params)
                codes.append(caught.value.code)
            commands = await agent.watched.wait_for(lambda f: "available_commands_update" in json.dumps(f))
    assert codes == [-32601, -32601, -32601]
    assert "goal" in advertised(agent.initialized)  # advertised to every AIR client, served to declarers
    assert "/goal" not in json.dumps(commands) and '"goal"' not in json.dumps(commands)
    assert goals(agent, session.session_id) == []
    assert api.turn_requests == []
