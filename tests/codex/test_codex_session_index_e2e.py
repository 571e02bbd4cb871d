"""AIR's session index through `acp-agent --provider codex` on the real app-server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.codex.e2e_support import codex_agent, text, workspace, write_codex_home
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]
INDEX_META = {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure", "sessionIndex"]}}}


def air(row: dict[str, Any]) -> dict[str, Any]:
    return row["_meta"]["jetbrains"]["air"]


async def test_archive_filter_batch_get_rename_and_a_pushed_change(tmp_path: Path) -> None:
    with FakeResponsesAPI([{"reply": "one"}, {"reply": "two"}, {"reply": "three"}]) as api:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        async with codex_agent(home, tmp_path, capable=False, meta=INDEX_META) as agent:
            advertised = agent.initialized.field_meta["jetbrains"]["air"]["capabilities"]
            send = agent.conn._conn.send_request
            first = await agent.conn.new_session(cwd=cwd)
            await agent.conn.prompt(session_id=first.session_id, prompt=text("first"))
            second = await agent.conn.new_session(cwd=cwd)
            await agent.conn.prompt(session_id=second.session_id, prompt=text("second"))
            sub = await send("_session/list/subscribe", {"cwd": cwd})
            await send("_session/archive", {"sessionId": first.session_id})
            limited = await send("session/list", {"cwd": cwd, "_meta": {"jetbrains": {"air": {"list": {"limit": 1}}}}})
            archived = await send("session/list", {"cwd": cwd, "_meta": {"jetbrains": {"air": {
                "list": {"archived": "archived"}}}}})
            await send("_session/rename", {"sessionId": second.session_id, "title": "Renamed"})
            pushed = await agent.watched.wait_for(lambda f: f.get("method") == "_session/list/changes" and any(
                s.get("title") == "Renamed" for s in f["params"]["sessions"]))
            got = await send("_session/batch_get", {"sessionIds": [first.session_id, "nope"]})
            await send("_session/unarchive", {"sessionId": first.session_id})
            after = await send("session/list", {"cwd": cwd})
    assert "sessionIndex" in advertised and "sessionArchive" in advertised
    assert [s["sessionId"] for s in limited["sessions"]] == [second.session_id] and "nextCursor" not in limited
    assert [(s["sessionId"], air(s)["archived"]) for s in archived["sessions"]] == [(first.session_id, True)]
    assert pushed["params"]["subscriptionId"] == sub["subscriptionId"]
    assert [s["sessionId"] for s in got["sessions"]] == [first.session_id]
    assert {s["sessionId"] for s in after["sessions"]} == {first.session_id, second.session_id}
    # the schema log knows no `_session/*` method (AIR's, not ACP's): their frames are not checked
    assert [p for p in agent.frames.problems if not p.startswith(
        ("response to unknown request", "unexpected agent method _session/list/changes"))] == []


async def test_a_client_without_the_capability_gets_todays_list(tmp_path: Path) -> None:
    from acp import RequestError

    with FakeResponsesAPI([{"reply": "one"}]) as api:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        async with codex_agent(home, tmp_path, capable=True) as agent:
            advertised = agent.initialized.field_meta["jetbrains"]["air"]["capabilities"]
            session = await agent.conn.new_session(cwd=cwd)
            await agent.conn.prompt(session_id=session.session_id, prompt=text("first"))
            listed = await agent.conn._conn.send_request("session/list", {"cwd": cwd})
            with pytest.raises(RequestError) as refused:
                await agent.conn._conn.send_request("_session/archive", {"sessionId": session.session_id})
    assert "sessionIndex" not in advertised
    assert [s["sessionId"] for s in listed["sessions"]] == [session.session_id]
    assert "_meta" not in listed["sessions"][0]
    assert refused.value.code == -32601
