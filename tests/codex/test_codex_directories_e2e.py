"""`additionalDirectories` widen a Codex session's workspace (app-server's runtime workspace roots).

What codex tells the model (the fake Responses API's request: `<workspace_roots>` and the
permission profile's writable entries) proves the roots reached the running thread.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from tests.codex.e2e_support import codex_agent, text, workspace, write_codex_home
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(90)]


def roots_told(request: Any, directory: str) -> tuple[bool, bool]:
    """Whether the request's latest environment context (earlier turns' stay in the history) names
    `directory` as a workspace root, and as writable."""
    body = json.dumps(request.body.get("input"))
    latest = body[body.rindex("<workspace_roots>"):]
    latest = latest[:latest.index("</filesystem>")]
    return f"<root>{directory}</root>" in latest, f'<entry access=\\"write\\"><path>{directory}</path>' in latest


def extra_dir(tmp_path: Path, name: str = "extra") -> str:
    path = tmp_path / name
    path.mkdir()
    return str(path)


async def test_initialize_advertises_additional_directories(tmp_path: Path) -> None:
    with FakeResponsesAPI() as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=False) as agent:
            caps = agent.initialized.agent_capabilities.session_capabilities
    assert caps.additional_directories is not None


@pytest.mark.parametrize("uses", [True, False], ids=["with-directories", "without"])
async def test_new_session_directories_are_workspace_roots(tmp_path: Path, uses: bool) -> None:
    with FakeResponsesAPI() as api:
        home = write_codex_home(api, tmp_path)
        extra = extra_dir(tmp_path)
        async with codex_agent(home, tmp_path, capable=True) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path),
                                                   additional_directories=[extra] if uses else None)
            await agent.conn.prompt(session_id=session.session_id, prompt=text("hi"))
        [request] = api.turn_requests
    assert roots_told(request, extra) == (uses, uses)
    assert agent.frames.problems == []


async def test_resume_and_fork_take_the_requests_list(tmp_path: Path) -> None:
    with FakeResponsesAPI() as api:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        first, second = extra_dir(tmp_path, "first"), extra_dir(tmp_path, "second")
        async with codex_agent(home, tmp_path, capable=True) as agent:
            session = await agent.conn.new_session(cwd=cwd, additional_directories=[first])
            sid = session.session_id
            await agent.conn.prompt(session_id=sid, prompt=text("one"))
            fork = await agent.conn.fork_session(cwd=cwd, session_id=sid, additional_directories=[second])
            await agent.conn.prompt(session_id=fork.session_id, prompt=text("fork"))
            await agent.conn.close_session(session_id=sid)
            await agent.conn.resume_session(cwd=cwd, session_id=sid)  # none named: only cwd
            await agent.conn.prompt(session_id=sid, prompt=text("resumed"))
        requests = api.turn_requests
    assert [roots_told(r, first)[0] for r in requests] == [True, False, False]
    assert [roots_told(r, second)[0] for r in requests] == [False, True, False]
    assert agent.frames.problems == []


async def test_a_relative_or_missing_directory_is_invalid_params(tmp_path: Path) -> None:
    with FakeResponsesAPI() as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=True) as agent:
            errors = []
            for bad in ("relative/dir", str(tmp_path / "missing")):
                with pytest.raises(RequestError) as caught:
                    await agent.conn.new_session(cwd=workspace(tmp_path), additional_directories=[bad])
                errors.append(caught.value)
    assert [(e.code, e.data) for e in errors] == [(-32602, {"field": "additionalDirectories"})] * 2
    assert api.turn_requests == []
