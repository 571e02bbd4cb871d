"""Codex's plans for a client of the plan extensions (issue 28, item 7), through `acp-agent
--provider codex` with the real `codex app-server` on the fake Responses API.

codex's `update_plan` checklist (`turn/plan/updated`) stays ACP's stable `plan` for every v1
client, also one that declares the unstable `plan` capability: codex-acp 2.6.0 sends it so
(`updatePlan`; only its v2 surface makes it a `plan_update` of items). Codex's markdown plan items
(`item/plan/delta`, what `CodexPlanStream` turns into `plan_update` and AIR's `planContentDelta`)
come only in codex's plan collaboration mode, which acp-agent does not offer: `planContentDelta`
and `planFile` are not advertised for Codex.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.codex.e2e_support import codex_agent, text, workspace, write_codex_home
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(90)]

STEPS = [{"step": "Read the code", "status": "completed"}, {"step": "Fix the bug", "status": "in_progress"},
         {"step": "Run the tests", "status": "pending"}]
PLAN_AIR = {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure", "planFile", "planContentDelta"]}}}


@pytest.mark.parametrize("client", [
    pytest.param({"capable": False, "meta": PLAN_AIR, "plan": True}, id="plan-air"),
    pytest.param({"capable": False, "plan": True}, id="plan"),
    pytest.param({"capable": False}, id="legacy"),
])
async def test_the_update_plan_checklist_stays_the_stable_plan(tmp_path: Path, client: dict[str, Any]) -> None:
    work = workspace(tmp_path)
    with FakeResponsesAPI([{"plan": STEPS, "explanation": "three steps"}, {"reply": "planned"}]) as api:
        home = write_codex_home(api, tmp_path)
        with open(home / "config.toml", "a") as config:  # codex offers update_plan only so
            config.write("\n[tools.update_plan]\nenabled = true\n")
        async with codex_agent(home, tmp_path, **client) as agent:
            session = await agent.conn.new_session(cwd=work)
            outcome = await agent.conn.prompt(session_id=session.session_id, prompt=text("make a plan"))
    assert outcome.stop_reason == "end_turn"
    assert agent.frames.problems == []
    updates = agent.frames.updates(session.session_id)
    plans = [u for u in updates if u["sessionUpdate"] in ("plan", "plan_update")]
    assert plans and {u["sessionUpdate"] for u in plans} == {"plan"}
    assert [(e["content"], e["status"]) for e in plans[-1]["entries"]] == [
        ("Read the code", "completed"), ("Fix the bug", "in_progress"), ("Run the tests", "pending")]
    answer = agent.initialized.model_dump(by_alias=True, exclude_none=True)
    advertised = answer.get("_meta", {}).get("jetbrains", {}).get("air", {}).get("capabilities", [])
    assert "planFile" not in advertised and "planContentDelta" not in advertised
