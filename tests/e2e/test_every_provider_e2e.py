"""`acp-agent` without `--provider`: one agent process for every installed provider.

The real Claude Code CLI on the fake Anthropic API, the real codex on the fake Responses API and
the fake MSP host for Muse, all behind one `acp-agent`, for a client of the failure extension and
one without it: sessions of two providers prompted side by side, a session moved from Claude to
Codex before its first prompt (same session id), the merged list, each session loaded in a fresh
agent process, sign-in methods of every provider, and a failure of each classified as with
`--provider`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest

from tests.claude.e2e_support import API_KEY, claude_env
from tests.codex.e2e_support import WatchedFrames, codex_env, write_codex_home
from tests.e2e.harness import AgentProcess, spawn_agent
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.fakes.responses_api import FakeResponsesAPI
from tests.muse.e2e_support import muse_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(150)]
CLIENTS = [pytest.param(True, id="capable"), pytest.param(False, id="legacy")]


def every_env(claude: FakeAnthropicAPI, codex: FakeResponsesAPI, tmp_path: Path) -> dict[str, str]:
    """One environment in which each provider's backend reaches its own fake."""
    return {**muse_env(tmp_path), **claude_env(claude, tmp_path), **codex_env(write_codex_home(codex, tmp_path)),
            "ACP_AGENT_STATE_DIR": str(tmp_path / "state")}


@asynccontextmanager
async def every_agent(env: dict[str, str], tmp_path: Path, *, capable: bool, name: str = "agent",
                      args: tuple[str, ...] = ("--default-provider", "claude"),
                      meta: dict[str, Any] | None = None) -> AsyncIterator[AgentProcess]:
    directory = tmp_path / name
    directory.mkdir(exist_ok=True)
    async with spawn_agent(None, directory, env, args) as agent:
        agent.frames.incoming = WatchedFrames(agent.frames.incoming)
        agent.initialized = await agent.initialize(capable=capable, meta=meta)  # type: ignore[attr-defined]
        yield agent


def text(value: str) -> list[Any]:
    return [acp.text_block(value)]


def option(options: Any, option_id: str) -> dict[str, Any]:
    dumped = [o.model_dump(by_alias=True, exclude_none=True) if hasattr(o, "model_dump") else o for o in options]
    return next(o.get("root", o) for o in dumped if o.get("root", o)["id"] == option_id)


def said(agent: AgentProcess, session_id: str) -> str:
    return "".join(u["content"]["text"] for u in agent.frames.updates(session_id)
                   if u["sessionUpdate"] == "agent_message_chunk" and u["content"].get("type") == "text")


def assert_clean(agent: AgentProcess, *, capable: bool) -> None:
    assert agent.frames.problems == []
    if not capable:
        assert "sessionFailure" not in agent.frames.text()
    assert API_KEY not in agent.frames.text()


async def new_session(agent: AgentProcess, cwd: Path) -> Any:
    return await agent.conn.new_session(cwd=str(cwd))


async def set_option(agent: AgentProcess, session_id: str, config_id: str, value: str) -> Any:
    return await agent.conn._conn.send_request("session/set_config_option", {
        "sessionId": session_id, "configId": config_id, "value": value})


@pytest.mark.parametrize("capable", CLIENTS)
async def test_two_providers_side_by_side_a_move_the_merged_list_and_loads_in_a_fresh_agent(
        tmp_path: Path, capable: bool) -> None:
    work = tmp_path / "work"
    work.mkdir()
    claude_script = [{"reply": "Claude answers."}]
    codex_script = [{"reply": "Codex answers."}]
    with FakeAnthropicAPI(claude_script) as claude, FakeResponsesAPI(codex_script) as codex:
        env = every_env(claude, codex, tmp_path)
        async with every_agent(env, tmp_path, capable=capable) as agent:
            initialized = agent.initialized  # type: ignore[attr-defined]
            methods = [method.root.id if hasattr(method, "root") else method.id
                       for method in initialized.auth_methods]
            assert {method.split(":")[0] for method in methods} >= {"claude", "codex", "muse"}
            assert initialized.agent_info.name == "acp-agent"

            first = await new_session(agent, work)
            second = await new_session(agent, work)
            provider = option(first.config_options, "provider")
            assert provider["currentValue"] == "claude"
            assert {choice["value"] for choice in provider["options"]} >= {"claude", "codex", "muse"}
            models = option(first.config_options, "model")
            assert all(choice["name"].endswith(" · Claude Code") for choice in models["options"]
                       if ":" not in choice["value"])

            moved = await set_option(agent, second.session_id, "provider", "codex")
            assert option(moved["configOptions"], "provider")["currentValue"] == "codex"
            assert any(choice["name"].endswith(" · Codex")
                       for choice in option(moved["configOptions"], "model")["options"])
            def codex_commands(frame: dict[str, Any]) -> bool:  # Codex's own, under the client's id
                params = frame.get("params") or {}
                update = params.get("update") or {}
                return params.get("sessionId") == second.session_id and any(
                    command["name"] == "review" for command in update.get("availableCommands") or ())

            await agent.frames.incoming.wait_for(codex_commands)  # type: ignore[attr-defined]
            updates = agent.frames.updates(second.session_id)
            modes = [u["currentModeId"] for u in updates if u["sessionUpdate"] == "current_mode_update"]
            assert modes and modes[-1] == option(moved["configOptions"], "mode")["currentValue"]

            async with anyio.create_task_group() as group:  # two providers' turns side by side
                answers: dict[str, Any] = {}

                async def prompt(session_id: str, words: str) -> None:
                    answers[session_id] = await agent.conn.prompt(session_id=session_id, prompt=text(words))

                group.start_soon(prompt, first.session_id, "Hello Claude")
                group.start_soon(prompt, second.session_id, "Hello Codex")
            assert answers[first.session_id].stop_reason == answers[second.session_id].stop_reason == "end_turn"
            assert said(agent, first.session_id) == "Claude answers."
            assert "Codex answers." in said(agent, second.session_id)
            assert len(claude.requests) >= 1 and len(codex.turn_requests) == 1

            with pytest.raises(acp.RequestError) as fixed:
                await set_option(agent, first.session_id, "provider", "codex")
            assert fixed.value.code == -32602
            assert "runs it for good" in str(fixed.value)

            listed = await agent.conn.list_sessions(cwd=str(work))
            rows = {row.session_id: row.field_meta["acp-agent"]["provider"] for row in listed.sessions}
            assert rows[first.session_id] == "claude" and rows[second.session_id] == "codex"
            assert len([sid for sid in rows if sid in (first.session_id, second.session_id)]) == 2
        assert_clean(agent, capable=capable)

        async with every_agent(env, tmp_path, capable=capable, name="fresh") as fresh:
            await fresh.conn.load_session(cwd=str(work), session_id=first.session_id)
            await fresh.conn.load_session(cwd=str(work), session_id=second.session_id)
            replayed_claude = json.dumps(fresh.frames.updates(first.session_id))
            replayed_codex = json.dumps(fresh.frames.updates(second.session_id))
            assert "Claude answers." in replayed_claude and "Hello Claude" in replayed_claude
            assert "Codex answers." in replayed_codex and "Hello Codex" in replayed_codex
            again = await fresh.conn.prompt(session_id=second.session_id, prompt=text("Once more"))
            assert again.stop_reason == "end_turn"
        assert_clean(fresh, capable=capable)


@pytest.mark.parametrize("capable", CLIENTS)
async def test_a_failure_of_each_provider_is_classified_by_its_own_rules(tmp_path: Path, capable: bool) -> None:
    work = tmp_path / "work"
    work.mkdir()
    claude_script = [{"status": 429, "error_type": "rate_limit_error", "message": "slow down", "times": 2}]
    with FakeAnthropicAPI(claude_script) as claude, FakeResponsesAPI([{"status": 429}] * 2) as codex:
        env = {**every_env(claude, codex, tmp_path), "CLAUDE_CODE_MAX_RETRIES": "1"}
        env["CODEX_HOME"] = str(write_codex_home(codex, tmp_path, retries=1))
        async with every_agent(env, tmp_path, capable=capable) as agent:
            on_claude = await new_session(agent, work)
            on_codex = await new_session(agent, work)
            await set_option(agent, on_codex.session_id, "provider", "codex")
            outcomes = {}
            for session in (on_claude, on_codex):
                try:
                    outcomes[session.session_id] = await agent.conn.prompt(session_id=session.session_id,
                                                                           prompt=text("go"))
                except acp.RequestError as error:
                    outcomes[session.session_id] = error
    for session, native in ((on_claude, "rate_limit"), (on_codex, "responseTooManyFailedAttempts")):
        outcome = outcomes[session.session_id]
        if capable:
            record = outcome.field_meta["jetbrains"]["air"]["sessionFailure"]
            assert (record["category"], record["actions"]) == ("limit", ["retry"])
        else:
            assert isinstance(outcome, acp.RequestError) and outcome.code == -32603
            assert outcome.data["failure"]["kind"] == native
    assert_clean(agent, capable=capable)


@pytest.mark.parametrize("capable", CLIENTS)
async def test_a_muse_session_and_sign_in_per_provider(tmp_path: Path, capable: bool) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with FakeAnthropicAPI([]) as claude, FakeResponsesAPI([]) as codex:
        env = every_env(claude, codex, tmp_path)
        async with every_agent(env, tmp_path, capable=capable, args=("--default-provider", "muse")) as agent:
            session = await new_session(agent, work)
            assert option(session.config_options, "provider")["currentValue"] == "muse"
            answer = await agent.conn.prompt(session_id=session.session_id, prompt=text("hello muse"))
            assert answer.stop_reason == "end_turn"
            assert said(agent, session.session_id)
            with pytest.raises(acp.RequestError) as unknown:
                await agent.conn.authenticate(method_id="nobody:login")
            assert unknown.value.code == -32602
            status = await agent.conn._conn.send_request("auth/status", {})
            labels = [account["label"] for account in status.get("accounts", [])]
            assert any(label.startswith("Claude Code: ") for label in labels)
            assert any(label.startswith("Muse Code: ") for label in labels)
        assert claude.requests == [] and codex.turn_requests == []  # nobody used their backends
    assert_clean(agent, capable=capable)


@pytest.mark.parametrize("capable", CLIENTS)
async def test_a_backend_that_cannot_start_fails_only_its_own_sessions(tmp_path: Path, capable: bool) -> None:
    work = tmp_path / "work"
    work.mkdir()
    broken = tmp_path / "codex-that-exits"
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    with FakeAnthropicAPI([{"reply": "Still here."}]) as claude, FakeResponsesAPI([]) as codex:
        env = {**every_env(claude, codex, tmp_path), "ACP_AGENT_CODEX_BIN": str(broken)}
        async with every_agent(env, tmp_path, capable=capable) as agent:
            session = await new_session(agent, work)
            with pytest.raises(acp.RequestError) as failed:
                await set_option(agent, session.session_id, "provider", "codex")
            assert failed.value.data["failure"]["phase"] == "initializing"
            answer = await agent.conn.prompt(session_id=session.session_id, prompt=text("still Claude?"))
            assert answer.stop_reason == "end_turn"
            assert said(agent, session.session_id) == "Still here."
            signed_in = await agent.conn.authenticate(method_id="claude:claude")
            assert signed_in is not None
    assert_clean(agent, capable=capable)


async def test_another_providers_model_moves_a_new_session_there_with_that_model(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with FakeAnthropicAPI([]) as claude, FakeResponsesAPI([{"reply": "On the chosen model."}]) as codex:
        env = every_env(claude, codex, tmp_path)
        async with every_agent(env, tmp_path, capable=True) as agent:
            scout = await new_session(agent, work)  # opening a Codex session once teaches its models
            await set_option(agent, scout.session_id, "provider", "codex")
            session = await new_session(agent, work)
            offered = option(session.config_options, "model")["options"]
            chosen = next(choice for choice in offered if choice["value"].startswith("codex:"))
            assert chosen["name"].endswith(" · Codex")
            answer = await set_option(agent, session.session_id, "model", chosen["value"])
            assert option(answer["configOptions"], "provider")["currentValue"] == "codex"
            model = chosen["value"].removeprefix("codex:")
            assert option(answer["configOptions"], "model")["currentValue"] == model
            await agent.conn.prompt(session_id=session.session_id, prompt=text("which model?"))
            assert said(agent, session.session_id).endswith("On the chosen model.")
            assert (codex.turn_requests[0].body or {}).get("model") == model
            with pytest.raises(acp.RequestError) as unknown:
                await set_option(agent, session.session_id, "provider", "nobody")
            assert unknown.value.code == -32602
    assert claude.requests == []
    assert_clean(agent, capable=True)


async def test_a_session_of_a_single_provider_run_is_found_by_a_fresh_agent_of_every_provider(
        tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with FakeAnthropicAPI([]) as claude, FakeResponsesAPI([{"reply": "Made by --provider codex."}]) as codex:
        env = every_env(claude, codex, tmp_path)
        single_dir = tmp_path / "single"
        single_dir.mkdir()
        async with spawn_agent("codex", single_dir, env) as single:
            await single.initialize(capable=False)
            made = await single.conn.new_session(cwd=str(work))
            await single.conn.prompt(session_id=made.session_id, prompt=text("remember me"))
        async with every_agent(env, tmp_path, capable=False, name="every") as agent:
            await agent.conn.load_session(cwd=str(work), session_id=made.session_id)
            assert "Made by --provider codex." in json.dumps(agent.frames.updates(made.session_id))
            with pytest.raises(acp.RequestError) as missing:
                await agent.conn.load_session(cwd=str(work), session_id="no-such-session")
            assert missing.value.code == -32002
            signed_out = await agent.conn._conn.send_request(
                "logout", {"_meta": {"acp-agent": {"provider": "muse"}}})
            assert isinstance(signed_out, dict)
            with pytest.raises(acp.RequestError) as nobody:
                await agent.conn._conn.send_request("logout", {"_meta": {"acp-agent": {"provider": "nobody"}}})
            assert nobody.value.code == -32602
    assert_clean(agent, capable=False)


async def test_the_air_session_index_spans_providers(tmp_path: Path) -> None:
    """AIR's index through the front: one list, `_session/batch_get` of ids of two providers (one
    session moved, so its provider knows it by another id), one subscription that tells a rename
    on Codex under the client's session id."""
    work = tmp_path / "work"
    work.mkdir()
    meta = {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure", "sessionIndex"]}}}
    with FakeAnthropicAPI([{"reply": "Claude answers."}]) as claude, \
            FakeResponsesAPI([{"reply": "Codex answers."}]) as codex:
        env = every_env(claude, codex, tmp_path)
        async with every_agent(env, tmp_path, capable=False, meta=meta) as agent:
            advertised = agent.initialized.field_meta["jetbrains"]["air"]["capabilities"]  # type: ignore[attr-defined]
            send = agent.conn._conn.send_request
            first = await new_session(agent, work)
            second = await new_session(agent, work)
            await set_option(agent, second.session_id, "provider", "codex")
            await agent.conn.prompt(session_id=first.session_id, prompt=text("hello Claude"))
            await agent.conn.prompt(session_id=second.session_id, prompt=text("hello Codex"))
            one = await send("session/list", {"cwd": str(work), "_meta": {"jetbrains": {"air": {"list": {"limit": 1}}}}})
            listed = await send("session/list", {"cwd": str(work)})
            got = await send("_session/batch_get", {"sessionIds": [second.session_id, "nope", first.session_id]})
            subscribed = await send("_session/list/subscribe", {"cwd": str(work)})
            await send("_session/rename", {"sessionId": second.session_id, "title": "Renamed"})
            frames = agent.frames.incoming
            assert isinstance(frames, WatchedFrames)
            pushed = await frames.wait_for(lambda f: f.get("method") == "_session/list/changes" and any(
                s.get("title") == "Renamed" for s in f["params"]["sessions"]))
            assert await send("_session/list/unsubscribe", {"subscriptionId": subscribed["subscriptionId"]}) == {}
    assert "sessionIndex" in advertised
    assert len(one["sessions"]) == 1 and "nextCursor" in one
    rows = {row["sessionId"]: row["_meta"] for row in listed["sessions"]}
    assert {i: m["acp-agent"]["provider"] for i, m in rows.items()} == {
        first.session_id: "claude", second.session_id: "codex"}
    assert all(m["jetbrains"]["air"]["archived"] is False for m in rows.values())
    assert [row["sessionId"] for row in got["sessions"]] == [second.session_id, first.session_id]
    assert pushed["params"]["subscriptionId"] == subscribed["subscriptionId"]
    assert [s["sessionId"] for s in pushed["params"]["sessions"] if s.get("title") == "Renamed"] == [
        second.session_id]
    assert [p for p in agent.frames.problems if not p.startswith(
        ("response to unknown request", "unexpected agent method _session/list/changes"))] == []


async def test_air_goal_through_the_front_reaches_each_providers_session(tmp_path: Path) -> None:
    """`_session/goal` through the front: on a session moved to Codex (its thread known by
    another id) and on a Claude session; each one's snapshots come under the client's id."""
    meta = {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure", "goal"]}}}
    done = {"function_call": {"name": "update_goal", "arguments": {"status": "complete"}}}

    def goals(agent: AgentProcess, session_id: str) -> list[Any]:
        return [u["_meta"]["jetbrains"]["air"]["goal"] for u in agent.frames.updates(session_id)
                if u["sessionUpdate"] == "session_info_update" and "goal" in u.get("_meta", {}).get(
                    "jetbrains", {}).get("air", {})]

    with FakeAnthropicAPI([{"reply": "A haiku from Claude"}]) as claude, \
            FakeResponsesAPI([done, {"reply": "A haiku from Codex"}]) as codex:
        env = every_env(claude, codex, tmp_path)
        async with every_agent(env, tmp_path, capable=False, meta=meta) as agent:
            send = agent.conn._conn.send_request
            on_claude = await new_session(agent, tmp_path)
            on_codex = await new_session(agent, tmp_path)
            await set_option(agent, on_codex.session_id, "provider", "codex")
            codex_set = await send("_session/goal", {"sessionId": on_codex.session_id, "action": "set",
                                                     "objective": "a haiku"})
            claude_set = await send("_session/goal", {"sessionId": on_claude.session_id, "action": "set",
                                                      "objective": "a haiku"})
            claude_clear = await send("_session/goal", {"sessionId": on_claude.session_id, "action": "clear"})
    assert codex_set == claude_set == claude_clear == {}
    assert [(g["objective"], g["status"]) for g in goals(agent, on_codex.session_id)] == [
        ("a haiku", "active"), ("a haiku", "complete")]
    assert goals(agent, on_claude.session_id) == [
        {"objective": "a haiku", "status": "active", "controlMethod": "_session/goal"}, None]
    assert "A haiku from Codex" in said(agent, on_codex.session_id)
    assert "A haiku from Claude" in said(agent, on_claude.session_id)
    assert [p for p in agent.frames.problems if not p.startswith("response to unknown request")] == []
