"""AIR's `agentFileChangeReport` through `acp-agent --provider muse` on the fake MSP host: an edit
that completed is reported, one that failed is not, a cancelled turn's report is unavailable. MSP
tool calls carry no diff, so Muse serves no `diffPatch`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.air_files import DECLARED, air_client, report_index, report_request, reports
from tests.muse.e2e_support import hooked, muse_agent, text

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "not-declared"])
async def test_a_completed_edit_is_reported_and_a_failed_one_is_not(tmp_path: Path, declared: bool) -> None:
    work = tmp_path / "work"
    work.mkdir()
    capabilities = DECLARED if declared else ["sessionFailure"]
    async with muse_agent(tmp_path, capable=False, meta=air_client(*capabilities)) as agent:
        initialized = agent.frames.incoming[0]["result"]
        session = await agent.conn.new_session(cwd=str(work))
        outcome = await agent.conn.prompt(session_id=session.session_id, prompt=text("turn:edit now"),
                                          jetbrains=report_request("m-1"))
    assert outcome.stop_reason == "end_turn"
    assert initialized["_meta"]["jetbrains"]["air"]["capabilities"] == [
        "sessionFailure", "agentFileChangeReport", "recommendedValue", "rawInputRendering"]
    assert agent.frames.problems == []
    if not declared:
        assert "agentFileChangeReport" not in json.dumps(agent.frames.updates())
        return
    assert reports(agent, session.session_id) == [{
        "version": 1, "requestId": "m-1", "status": "reported", "paths": [f"{os.path.realpath(work)}/notes.md"],
        "declaredComplete": False, "truncated": False}]
    first, answer = report_index(agent)
    assert first < answer


async def test_a_cancelled_turn_reports_unavailable(tmp_path: Path) -> None:
    working = anyio.Event()
    async with muse_agent(tmp_path, capable=False, meta=air_client(*DECLARED)) as agent:
        def on_update(session_id: str, update: Any) -> None:
            if getattr(update, "session_update", None) == "agent_message_chunk":
                working.set()

        hooked(agent).update_hook = on_update
        session = await agent.conn.new_session(cwd=str(tmp_path))
        outcomes: list[Any] = []
        async with anyio.create_task_group() as group:
            async def run(words: str, request_id: str) -> None:
                outcomes.append(await agent.conn.prompt(session_id=session.session_id, prompt=text(words),
                                                        jetbrains=report_request(request_id)))

            group.start_soon(run, "turn:wait x", "m-2")
            await working.wait()
            group.start_soon(run, "queued behind it", "m-3")  # waits in the session's line, never runs
            await agent.conn.list_sessions()  # answered once it is in line (as test_prompt_queue_e2e)
            await agent.conn.cancel(session_id=session.session_id)
    assert [outcome.stop_reason for outcome in outcomes] == ["cancelled", "cancelled"]
    assert sorted(reports(agent, session.session_id), key=lambda report: report["requestId"]) == [
        {"version": 1, "requestId": request_id, "status": "unavailable", "reason": "cancelled"}
        for request_id in ("m-2", "m-3")]
    assert agent.frames.problems == []


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "not-declared"])
async def test_config_options_name_the_hosts_recommended_values(tmp_path: Path, declared: bool) -> None:
    """`recommendedValue`: model/list's `isDefault` model and the model's `defaultReasoningEffort`."""
    capabilities = ["sessionFailure", "recommendedValue"] if declared else ["sessionFailure"]
    async with muse_agent(tmp_path, capable=False, meta=air_client(*capabilities)) as agent:
        session = await agent.conn.new_session(cwd=str(tmp_path))
        await agent.conn.set_config_option(session_id=session.session_id, config_id="model", value="muse-small")
    answers = [frame["result"] for frame in agent.frames.incoming if isinstance(frame.get("result"), dict)
               and "configOptions" in frame["result"]]
    assert agent.frames.problems == []
    shown = [{option["id"]: option.get("_meta") for option in answer["configOptions"]} for answer in answers]
    if not declared:
        assert shown == [{"model": None}, {"model": None, "reasoning_effort": None}]
        return
    recommends = {"jetbrains": {"air": {"version": 1, "recommendedValue": "muse-large"}}}
    assert shown == [{"model": recommends},
                     {"model": recommends,
                      "reasoning_effort": {"jetbrains": {"air": {"version": 1, "recommendedValue": "low"}}}}]
