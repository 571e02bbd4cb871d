"""A new Codex session gets a title after its first turn (issue 12, item 5).

codex 0.163 names a thread only when a client calls `thread/name/set`. As codex-acp does, the agent
then asks the model for a title in an ephemeral thread (structured output `{"title": ...}`), names
the thread, and codex's `thread/name/updated` echo becomes `session_info_update {title, updatedAt}`
(the prompt itself is the title until then).
Real codex against the fake Responses API, whose next step answers the title request.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.codex.e2e_support import codex_agent, text, workspace, write_codex_home
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(90)]
BOTH = pytest.mark.parametrize("capable", [pytest.param(True, id="capable"), pytest.param(False, id="legacy")])
TITLES_ON = {"ACP_AGENT_CODEX_TITLES": "1"}


def title_requests(api: FakeResponsesAPI) -> list[Any]:
    """The model requests asking for structured output: the title's."""
    return [r for r in api.requests if (((r.body or {}).get("text") or {}).get("format") or {}).get("type")
            == "json_schema"]


@BOTH
async def test_a_new_sessions_first_turn_gives_it_a_title(tmp_path: Path, capable: bool) -> None:
    script = [{"reply": "looking"}, {"reply": '{"title": "Fix the flaky login test"}'}, {"reply": "again"}]
    with FakeResponsesAPI(script) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable, env=TITLES_ON) as agent:
            cwd = workspace(tmp_path)
            session = await agent.conn.new_session(cwd=cwd)
            sid = session.session_id
            await agent.conn.prompt(session_id=sid, prompt=text("Please fix the flaky login test"))
            title = await agent.watched.wait_for(
                lambda f: ((f.get("params") or {}).get("update") or {}).get("title") == "Fix the flaky login test",
                timeout_s=30)
            await agent.conn.prompt(session_id=sid, prompt=text("and once more"))
            listed = await agent.conn.list_sessions(cwd=cwd)
    assert agent.frames.problems == []
    update = title["params"]["update"]
    assert update["title"] == "Fix the flaky login test"
    assert isinstance(update["updatedAt"], str) and update["updatedAt"].endswith("Z")
    # the prompt as a stand-in title at the first turn's end (as codex-acp), then the model's; once
    fallback, generated = [u for u in agent.frames.updates(sid) if "title" in u]
    assert fallback["title"] == "Please fix the flaky login test" and generated == update
    [asked] = title_requests(api)
    assert asked.body is not None and asked.body["model"] == "gpt-5.6-luna"  # offered by model/list
    assert asked.headers["thread-id"] != sid  # an ephemeral thread of its own
    assert "Please fix the flaky login test" in str(asked.body["input"])
    assert [s.title for s in listed.sessions if s.session_id == sid] == ["Fix the flaky login test"]
    if not capable:
        assert "sessionFailure" not in agent.frames.text()


async def test_a_loaded_session_and_titles_turned_off_get_no_generated_title(tmp_path: Path) -> None:
    """A loaded thread keeps whatever name it has (codex-acp generates none either), and
    `ACP_AGENT_CODEX_TITLES=0` turns generation off."""
    with FakeResponsesAPI([{"reply": "first"}, {"reply": "second"}]) as api:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        async with codex_agent(home, tmp_path, capable=False, env={"ACP_AGENT_CODEX_TITLES": "0"},
                               log_name="off") as first:
            session = await first.conn.new_session(cwd=cwd)
            await first.conn.prompt(session_id=session.session_id, prompt=text("Please fix the login test"))
        async with codex_agent(home, tmp_path, capable=False, env=TITLES_ON, log_name="loaded") as second:
            await second.conn.load_session(cwd=cwd, session_id=session.session_id)
            outcome = await second.conn.prompt(session_id=session.session_id, prompt=text("go on"))
            await second.conn.list_sessions(cwd=cwd)
    assert outcome.stop_reason == "end_turn"
    assert len(api.requests) == 2 and title_requests(api) == []
    for agent in (first, second):
        assert agent.frames.problems == []
        assert not any("title" in u for u in agent.frames.updates(session.session_id))


@BOTH
async def test_a_loaded_named_session_publishes_its_title(tmp_path: Path, capable: bool) -> None:
    """The thread's name (here the one the agent generated) is published when the session is
    loaded in another agent, with the thread's `updatedAt`, as codex-acp does; no new title."""
    with FakeResponsesAPI([{"reply": "looking"}, {"reply": '{"title": "Fix the login test"}'}]) as api:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        async with codex_agent(home, tmp_path, capable=capable, env=TITLES_ON, log_name="first") as first:
            session = await first.conn.new_session(cwd=cwd)
            await first.conn.prompt(session_id=session.session_id, prompt=text("Please fix the login test"))
            await first.watched.wait_for(
                lambda f: ((f.get("params") or {}).get("update") or {}).get("title") == "Fix the login test",
                timeout_s=30)
        async with codex_agent(home, tmp_path, capable=capable, env=TITLES_ON, log_name="second") as second:
            await second.conn.load_session(cwd=cwd, session_id=session.session_id)
    assert second.frames.problems == []
    [title] = [u for u in second.frames.updates(session.session_id) if "title" in u]
    assert title["title"] == "Fix the login test"
    assert isinstance(title["updatedAt"], str) and title["updatedAt"].endswith("Z")
    assert len(title_requests(api)) == 1
