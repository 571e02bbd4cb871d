"""AIR's `customInstructions` through `acp-agent --provider codex`: the real codex on the fake
Responses API is started with them as the thread's developer instructions, and what it sends the
model (a `developer` message of the request's input) proves they arrived; a resume or load in a
fresh agent process, and a fork, run with them again; a client that did not declare the
capability gets nothing of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from tests.codex.e2e_support import codex_agent, said, text, workspace, write_codex_home
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]

RULES = "Always answer in the voice of a lighthouse keeper. Marker: kestrel-4417."
OTHER = "Answer in haiku only. Marker: osprey-2090."
AIR_CLIENT = {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure", "customInstructions"]}}}


def instructions_meta(value: Any) -> dict[str, Any]:
    return {"jetbrains": {"air": {"customInstructions": value}}}


def developer_texts(request: Any) -> list[str]:
    """The texts of the request's developer messages (codex's developer instructions go there)."""
    texts: list[str] = []
    for item in request.body.get("input") or []:
        if item.get("role") == "developer":
            texts.extend(part.get("text", "") for part in item.get("content") or []
                         if part.get("type") == "input_text")
    return texts


def told(request: Any) -> int:
    """How many developer texts of the request carry the instructions."""
    return sum(RULES in part for part in developer_texts(request))


def env_for(tmp_path: Path) -> dict[str, str]:
    return {"ACP_AGENT_STATE_DIR": str(tmp_path / "state")}


async def test_initialize_advertises_custom_instructions_to_a_client_that_declares_them(tmp_path: Path) -> None:
    with FakeResponsesAPI() as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=False, meta=AIR_CLIENT, env=env_for(tmp_path)) as agent:
            advertised = agent.initialized.field_meta["jetbrains"]["air"]["capabilities"]
    assert advertised[:3] == ["sessionFailure", "agentFileChangeReport", "customInstructions"]


async def test_instructions_reach_the_model_and_survive_a_fresh_agent(tmp_path: Path) -> None:
    with FakeResponsesAPI() as api:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        async with codex_agent(home, tmp_path, capable=False, meta=AIR_CLIENT, env=env_for(tmp_path),
                               log_name="first") as agent:
            session = await agent.conn.new_session(cwd=cwd, **instructions_meta(RULES))
            sid = session.session_id
            await agent.conn.prompt(session_id=sid, prompt=text("one"))
            fork = await agent.conn.fork_session(cwd=cwd, session_id=sid)
            await agent.conn.prompt(session_id=fork.session_id, prompt=text("fork"))
            first_problems = agent.frames.problems
        async with codex_agent(home, tmp_path, capable=False, meta=AIR_CLIENT, env=env_for(tmp_path),
                               log_name="second") as agent:
            # others named on resume are not taken: the thread keeps its first ones in its history
            await agent.conn.resume_session(cwd=cwd, session_id=sid, **instructions_meta(OTHER))
            await agent.conn.prompt(session_id=sid, prompt=text("resumed"))
            second_problems = agent.frames.problems
        async with codex_agent(home, tmp_path, capable=False, meta=AIR_CLIENT, env=env_for(tmp_path),
                               log_name="third") as agent:
            await agent.conn.load_session(cwd=cwd, session_id=sid)
            await agent.conn.prompt(session_id=sid, prompt=text("loaded"))
            third_problems = agent.frames.problems
        requests = api.turn_requests
    assert [said(r)[-1] for r in requests] == ["one", "fork", "resumed", "loaded"]
    assert [told(r) for r in requests] == [1, 1, 1, 1]
    assert not any("osprey" in part for r in requests for part in developer_texts(r))
    assert first_problems == second_problems == third_problems == []


async def test_a_client_without_the_capability_sends_nothing_to_the_model(tmp_path: Path) -> None:
    with FakeResponsesAPI() as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=True, env=env_for(tmp_path)) as agent:
            advertised = agent.initialized.field_meta["jetbrains"]["air"]["capabilities"]
            session = await agent.conn.new_session(cwd=workspace(tmp_path), **instructions_meta(RULES))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("hi"))
            problems = agent.frames.problems
        [request] = api.turn_requests
    assert "customInstructions" not in advertised
    assert told(request) == 0
    assert problems == []


@pytest.mark.parametrize("value", [42, ["x"], "x" * (64 * 1024 + 1)], ids=["number", "array", "oversized"])
async def test_invalid_instructions_are_invalid_params(tmp_path: Path, value: Any) -> None:
    with FakeResponsesAPI() as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=False, meta=AIR_CLIENT, env=env_for(tmp_path)) as agent:
            with pytest.raises(RequestError) as caught:
                await agent.conn.new_session(cwd=workspace(tmp_path), **instructions_meta(value))
    assert caught.value.code == -32602
    assert caught.value.data["field"] == "_meta.jetbrains.air.customInstructions"
    assert api.turn_requests == []
