"""Codex's plans for a client of the plan extensions (issue 28, item 7), through `acp-agent
--provider codex` with the real `codex app-server` on the fake Responses API.

codex's `update_plan` checklist (`turn/plan/updated`) stays ACP's stable `plan` for every v1
client, also one that declares the unstable `plan` capability: codex-acp 2.6.0 sends it so
(`updatePlan`; only its v2 surface makes it a `plan_update` of items). Codex's markdown plan items
come in codex's plan collaboration mode (the `collaboration_mode` option, sent with `turn/start`):
the model's `<proposed_plan>` block is a plan item (`item/plan/delta`, then `item/completed`) that a
`plan` client gets as `plan_update` (only the new text in `_meta.jetbrains.air.contentDelta` for a
client of AIR's `planContentDelta`) and another client as agent text once complete, as codex-acp's
`CodexPlanStream`. `planFile` (Claude's plan file) is not advertised for Codex.
"""

from __future__ import annotations

import json
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
    assert "planFile" not in advertised(agent)


PLAN = "# Fix the bug\n\n1. Read the code\n2. Fix it\n"
PLAN_REPLY = f"Here is my plan.\n\n<proposed_plan>\n{PLAN}</proposed_plan>\n"
"""A plan-mode answer as codex's plan-mode instructions ask for it: the block becomes a plan item."""
AIR_DELTA = {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure", "planContentDelta"]}}}


def advertised(agent: Any) -> list[str]:
    answer = agent.initialized.model_dump(by_alias=True, exclude_none=True)
    return list(answer.get("_meta", {}).get("jetbrains", {}).get("air", {}).get("capabilities", []))


def plan_mode_requested(request: Any) -> bool:
    """The model request carries codex's plan-mode developer instructions (the mode reached codex)."""
    return "# Plan Mode" in json.dumps(request.body.get("input"))


@pytest.mark.parametrize("client", [
    pytest.param({"capable": False, "meta": AIR_DELTA, "plan": True}, id="plan-delta"),
    pytest.param({"capable": False, "plan": True}, id="plan"),
    pytest.param({"capable": False}, id="legacy"),
])
async def test_a_plan_mode_plan_item_is_a_plan_update_or_text(tmp_path: Path, client: dict[str, Any]) -> None:
    work = workspace(tmp_path)
    with FakeResponsesAPI([{"reply": "not planned"}, {"reply": PLAN_REPLY}]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, **client) as agent:
            session = await agent.conn.new_session(cwd=work)
            sid = session.session_id
            offered = {o.id: o for o in session.config_options or []}
            await agent.conn.prompt(session_id=sid, prompt=text("no plan mode yet"))
            changed = await agent.conn.set_config_option(session_id=sid, config_id="collaboration_mode", value="plan")
            outcome = await agent.conn.prompt(session_id=sid, prompt=text("make a plan"))
        requests = api.turn_requests
    assert outcome.stop_reason == "end_turn"
    assert agent.frames.problems == []
    mode = offered["collaboration_mode"]
    assert (mode.current_value, [v.value for v in mode.options]) == ("default", ["default", "plan"])
    assert next(o for o in changed.config_options if o.id == "collaboration_mode").current_value == "plan"
    assert [plan_mode_requested(r) for r in requests] == [False, True]
    updates = agent.frames.updates(sid)
    plans = [u for u in updates if u["sessionUpdate"] == "plan_update"]
    texts = [u for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    said = "".join(u["content"]["text"] for u in texts if u.get("messageId"))  # not app-server's notices
    if "plan" not in client:
        assert plans == [] and "planContentDelta" not in advertised(agent)
        assert said == f"not plannedHere is my plan.\n\n{PLAN}"  # the plan as text, once complete
        assert texts[-1]["content"]["text"] == PLAN and texts[-1]["messageId"].endswith("-plan")
        return
    assert said == "not plannedHere is my plan.\n\n"  # the plan is not text too
    assert len(plans) > 1 and len({u["plan"]["planId"] for u in plans}) == 1
    assert plans[0]["plan"]["planId"].endswith("-plan") and plans[0]["plan"]["type"] == "markdown"
    if "meta" in client:
        assert "planContentDelta" in advertised(agent)
        # the first update holds the plan so far, each later one only its new text
        assert all(u["plan"]["content"] == "" for u in plans[1:])
        deltas = [u["_meta"]["jetbrains"]["air"]["contentDelta"] for u in plans[1:]]
        assert plans[0]["plan"]["content"] + "".join(deltas) == PLAN and all(deltas)
    else:
        assert all("_meta" not in u for u in plans)
        contents = [u["plan"]["content"] for u in plans]
        assert contents[-1] == PLAN and all(PLAN.startswith(c) for c in contents)
        assert len(set(contents)) == len(contents)  # the whole plan, each time it grew


async def test_plan_mode_is_kept_when_another_process_loads_the_session(tmp_path: Path) -> None:
    work = workspace(tmp_path)
    with FakeResponsesAPI([{"reply": PLAN_REPLY}, {"reply": PLAN_REPLY}]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=work)
            sid = session.session_id
            await agent.conn.set_config_option(session_id=sid, config_id="collaboration_mode", value="plan")
            await agent.conn.prompt(session_id=sid, prompt=text("make a plan"))
        async with codex_agent(home, tmp_path, capable=False, plan=True, log_name="second") as second:
            loaded = await second.conn.load_session(cwd=work, session_id=sid)
            replayed = [u for u in second.frames.updates(sid) if u["sessionUpdate"] == "plan_update"]
            await second.conn.prompt(session_id=sid, prompt=text("plan again"))
        requests = api.turn_requests
    assert agent.frames.problems == [] and second.frames.problems == []
    assert next(o for o in loaded.config_options or [] if o.id == "collaboration_mode").current_value == "plan"
    assert [plan_mode_requested(r) for r in requests] == [True, True]
    # the stored plan item replays as the plan (a `plan` client)
    assert [u["plan"]["content"] for u in replayed] == [PLAN]
