"""AIR's `customInstructions` through `acp-agent --provider claude`: the real Claude Code CLI on
the fake Anthropic API is started with them appended to its system prompt (claude-agent-sdk's
preset + append, claude-agent-acp's way), and the request's `system` blocks prove they reached
the model; a resume or load in a fresh agent process and a fork run with them again (the CLI
does not keep them: the core does); a client that did not declare the capability gets nothing
of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from tests.claude.e2e_support import claude_agent, text, wait_for_requests
from tests.fakes.anthropic_api import FakeAnthropicAPI, echo_text

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]

RULES = "Always answer in the voice of a lighthouse keeper. Marker: kestrel-4417."
OTHER = "Answer in haiku only. Marker: osprey-2090."
AIR_CLIENT = {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure", "customInstructions"]}}}


def instructions_meta(value: Any) -> dict[str, Any]:
    return {"jetbrains": {"air": {"customInstructions": value}}}


def system_text(request: Any) -> str:
    """The request's system prompt, its blocks joined."""
    system = (request.body or {}).get("system") or []
    if isinstance(system, str):
        return system
    return "\n".join(str(block.get("text", "")) for block in system if isinstance(block, dict))


def advertised(agent: Any) -> list[str]:
    """The AIR capabilities the agent's `initialize` answer lists."""
    answer = next(f["result"] for f in agent.frames.incoming if f.get("id") is not None and "result" in f
                  and "agentCapabilities" in f["result"])
    return list(answer["_meta"]["jetbrains"]["air"]["capabilities"])


def told(request: Any, rules: str = RULES) -> bool:
    return rules in system_text(request)


def work(tmp_path: Path) -> str:
    path = tmp_path / "work"
    path.mkdir(exist_ok=True)
    return str(path)


def state(tmp_path: Path) -> dict[str, str]:
    return {"ACP_AGENT_STATE_DIR": str(tmp_path / "state")}


async def test_instructions_reach_the_system_prompt_and_survive_a_fresh_agent(tmp_path: Path) -> None:
    with FakeAnthropicAPI() as api:
        cwd = work(tmp_path)
        async with claude_agent(api, tmp_path, capable=False, meta=AIR_CLIENT, extra=state(tmp_path)) as agent:
            session = await agent.conn.new_session(cwd=cwd, **instructions_meta(RULES))
            sid = session.session_id
            await agent.conn.prompt(session_id=sid, prompt=text("one"))
            fork = await agent.conn.fork_session(cwd=cwd, session_id=sid)
            await agent.conn.prompt(session_id=fork.session_id, prompt=text("fork"))
            await wait_for_requests(api, 2)
            first = (advertised(agent), len(api.turn_requests), agent.frames.problems)
        async with claude_agent(api, tmp_path, capable=False, meta=AIR_CLIENT, extra=state(tmp_path)) as agent:
            await agent.conn.resume_session(cwd=cwd, session_id=sid)
            await agent.conn.prompt(session_id=sid, prompt=text("resumed"))
            second = agent.frames.problems
        async with claude_agent(api, tmp_path, capable=False, meta=AIR_CLIENT, extra=state(tmp_path)) as agent:
            await agent.conn.load_session(cwd=cwd, session_id=sid)
            await agent.conn.prompt(session_id=sid, prompt=text("loaded"))
            third = agent.frames.problems
        requests = api.turn_requests
    assert (first[0][:3], first[1:]) == (["sessionFailure", "agentFileChangeReport", "customInstructions"], (2, []))
    assert [echo_text(request.body) for request in requests] == [f"echo: {said}" for said in ("one", "fork", "resumed", "loaded")]
    assert [told(request) for request in requests] == [True] * 4
    assert second == third == []


async def test_a_fresh_agent_keeps_them_after_compaction(tmp_path: Path) -> None:
    """The CLI keeps the system prompt of a session's first request in its transcript, but a
    compaction renders it anew from the command line: a fresh agent must start the CLI with the
    session's instructions again (kept by the core). A resume naming others does not change them
    (the backends keep the first ones in the history)."""
    with FakeAnthropicAPI() as api:
        cwd = work(tmp_path)
        async with claude_agent(api, tmp_path, capable=False, meta=AIR_CLIENT, extra=state(tmp_path)) as agent:
            session = await agent.conn.new_session(cwd=cwd, **instructions_meta(RULES))
            sid = session.session_id
            await agent.conn.prompt(session_id=sid, prompt=text("one"))
        async with claude_agent(api, tmp_path, capable=False, meta=AIR_CLIENT, extra=state(tmp_path)) as agent:
            await agent.conn.resume_session(cwd=cwd, session_id=sid, **instructions_meta(OTHER))
            await agent.conn.prompt(session_id=sid, prompt=text("two"))
            await agent.conn.prompt(session_id=sid, prompt=text("/compact"))
            await agent.conn.prompt(session_id=sid, prompt=text("three"))
            problems = agent.frames.problems
        requests = api.turn_requests
    assert [echo_text(r.body) for r in requests] == [f"echo: {said}" for said in ("one", "two", "three")]
    assert [(told(r), told(r, OTHER)) for r in requests] == [(True, False)] * 3
    assert problems == []


async def test_a_client_without_the_capability_sends_nothing_to_the_model(tmp_path: Path) -> None:
    with FakeAnthropicAPI() as api:
        async with claude_agent(api, tmp_path, capable=True, extra=state(tmp_path)) as agent:
            session = await agent.conn.new_session(cwd=work(tmp_path), **instructions_meta(RULES))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("hi"))
            problems, listed = agent.frames.problems, advertised(agent)
        [request] = api.turn_requests
    assert "customInstructions" not in listed
    assert not told(request)
    assert "Marker:" not in system_text(request)
    assert problems == []


@pytest.mark.parametrize("value", [42, {"text": "x"}, "x" * (64 * 1024 + 1), "\ud800"],
                         ids=["number", "object", "oversized", "lone-surrogate"])
async def test_invalid_instructions_are_invalid_params(tmp_path: Path, value: Any) -> None:
    with FakeAnthropicAPI() as api:
        async with claude_agent(api, tmp_path, capable=False, meta=AIR_CLIENT, extra=state(tmp_path)) as agent:
            with pytest.raises(RequestError) as caught:
                await agent.conn.new_session(cwd=work(tmp_path), **instructions_meta(value))
            sessions = await agent.conn.list_sessions(cwd=work(tmp_path))
    assert caught.value.code == -32602
    assert caught.value.data["field"] == "_meta.jetbrains.air.customInstructions"
    assert sessions.sessions == []
    assert api.turn_requests == []
