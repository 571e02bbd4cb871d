"""`session/fork` and `session/delete` through `acp-agent --provider codex`, against the real app-server."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError

from tests.codex.e2e_support import codex_agent, model_text, said, text, workspace, write_codex_home
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(90)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])


@BOTH
async def test_initialize_advertises_fork_and_delete(tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI() as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            caps = agent.initialized.agent_capabilities.session_capabilities
    assert caps.fork is not None and caps.delete is not None


@BOTH
async def test_a_fork_carries_the_history_and_goes_its_own_way(tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI([{"reply": "first answer"}, {"reply": "fork answer"}, {"reply": "source answer"}]) as api:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            source = await agent.conn.new_session(cwd=cwd)
            await agent.conn.set_config_option(session_id=source.session_id, config_id="reasoning_effort",
                                               value="high")
            await agent.conn.prompt(session_id=source.session_id, prompt=text("remember the word apple"))
            fork = await agent.conn.fork_session(cwd=cwd, session_id=source.session_id)
            await agent.conn.prompt(session_id=fork.session_id, prompt=text("in the fork"))
            await agent.conn.prompt(session_id=source.session_id, prompt=text("in the source"))
            fork_text = model_text(agent, fork.session_id)
            listed = await agent.conn.list_sessions(cwd=cwd)
        requests = api.turn_requests
    assert fork.session_id != source.session_id
    assert fork_text == "fork answer"
    assert said(requests[1]) == ["remember the word apple", "in the fork"]
    assert said(requests[2]) == ["remember the word apple", "in the source"]
    # the fork runs with the source's chosen effort
    assert [r.body["reasoning"]["effort"] for r in requests] == ["high", "high", "high"]
    effort = next(o for o in fork.config_options or [] if o.id == "reasoning_effort")
    assert effort.current_value == "high"
    assert {source.session_id, fork.session_id} <= {s.session_id for s in listed.sessions}
    assert agent.frames.problems == []


async def test_forking_an_unknown_session_is_not_found(tmp_path: Path) -> None:
    with FakeResponsesAPI() as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=True) as agent:
            with pytest.raises(RequestError) as missing:
                await agent.conn.fork_session(cwd=workspace(tmp_path),
                                              session_id="019a0000-0000-7000-8000-000000000000")
    assert missing.value.code == -32002
    assert agent.frames.problems == []


@BOTH
async def test_a_deleted_session_leaves_the_list(tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI([{"reply": "kept"}, {"reply": "gone"}]) as api:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            kept = await agent.conn.new_session(cwd=cwd)
            await agent.conn.prompt(session_id=kept.session_id, prompt=text("keep me"))
            doomed = await agent.conn.new_session(cwd=cwd)
            await agent.conn.prompt(session_id=doomed.session_id, prompt=text("delete me"))
            before = await agent.conn.list_sessions(cwd=cwd)
            answer = await agent.conn._conn.send_request("session/delete", {"sessionId": doomed.session_id})
            after = await agent.conn.list_sessions(cwd=cwd)
            with pytest.raises(RequestError) as closed:
                await agent.conn.prompt(session_id=doomed.session_id, prompt=text("still there?"))
            with pytest.raises(RequestError) as unknown:
                await agent.conn._conn.send_request("session/delete",
                                                    {"sessionId": "019a0000-0000-7000-8000-000000000000"})
        # another agent process does not list it either
        async with codex_agent(home, tmp_path, capable=capable, log_name="second") as second:
            later = await second.conn.list_sessions(cwd=cwd)
    assert answer == {}
    assert {s.session_id for s in before.sessions} == {kept.session_id, doomed.session_id}
    assert [s.session_id for s in after.sessions] == [kept.session_id]
    assert [s.session_id for s in later.sessions] == [kept.session_id]
    assert closed.value.code == -32002 and unknown.value.code == -32002
    assert agent.frames.problems == [] and second.frames.problems == []


async def test_deleting_a_session_that_never_ran_a_turn_succeeds(tmp_path: Path) -> None:
    """Codex stores a thread at its first turn: a new session has nothing stored, and is gone after."""
    with FakeResponsesAPI() as api:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        async with codex_agent(home, tmp_path, capable=True) as agent:
            session = await agent.conn.new_session(cwd=cwd)
            answer = await agent.conn._conn.send_request("session/delete", {"sessionId": session.session_id})
            with pytest.raises(RequestError) as closed:
                await agent.conn.prompt(session_id=session.session_id, prompt=text("still there?"))
            listed = await agent.conn.list_sessions(cwd=cwd)
    assert answer == {}
    assert closed.value.code == -32002
    assert listed.sessions == []
    assert api.turn_requests == []
    assert agent.frames.problems == []


async def test_forking_a_session_that_never_ran_a_turn_gives_a_new_empty_one(tmp_path: Path) -> None:
    with FakeResponsesAPI([{"reply": "fresh"}]) as api:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        async with codex_agent(home, tmp_path, capable=True) as agent:
            source = await agent.conn.new_session(cwd=cwd)
            await agent.conn.set_config_option(session_id=source.session_id, config_id="fast-mode", value="on")
            fork = await agent.conn.fork_session(cwd=cwd, session_id=source.session_id)
            await agent.conn.prompt(session_id=fork.session_id, prompt=text("in the fork"))
        [request] = api.turn_requests
    assert fork.session_id != source.session_id
    assert said(request) == ["in the fork"]
    assert request.body.get("service_tier") == "priority"  # the source's choice goes on
    assert agent.frames.problems == []
