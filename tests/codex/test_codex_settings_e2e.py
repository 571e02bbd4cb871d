"""Codex reasoning effort and fast mode as session config options, through `acp-agent --provider codex`.

The real codex app-server; what it sends the fake Responses API (`reasoning.effort`,
`service_tier`) proves an option reached the running backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.codex.e2e_support import codex_agent, text, turn_metadata, workspace, write_codex_home
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(90)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])


def sent(request: Any) -> tuple[str | None, str | None]:
    """The reasoning effort and service tier codex asked the model API for."""
    reasoning = request.body.get("reasoning") or {}
    return reasoning.get("effort"), request.body.get("service_tier")


def option(options: Any, config_id: str) -> Any:
    return next(o for o in options if o.id == config_id)


@BOTH
async def test_effort_and_fast_mode_reach_the_model_api(tmp_path: Path, capable: bool) -> None:
    with FakeResponsesAPI() as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            sid = session.session_id
            offered = session.config_options or []
            await agent.conn.prompt(session_id=sid, prompt=text("default settings"))
            await agent.conn.set_config_option(session_id=sid, config_id="reasoning_effort", value="high")
            changed = await agent.conn.set_config_option(session_id=sid, config_id="fast-mode", value="on")
            await agent.conn.prompt(session_id=sid, prompt=text("high and fast"))
            await agent.conn.prompt(session_id=sid, prompt=text("still high and fast"))
            await agent.conn.set_config_option(session_id=sid, config_id="fast-mode", value="off")
            await agent.conn.prompt(session_id=sid, prompt=text("fast off"))
        requests = api.turn_requests
    assert [o.id for o in offered] == ["collaboration_mode", "model", "reasoning_effort", "fast-mode"]
    effort = option(offered, "reasoning_effort")
    # gpt-5.5 as codex 0.163.0's model/list describes it
    assert (effort.current_value, [v.value for v in effort.options]) == ("medium", ["low", "medium", "high", "xhigh"])
    assert effort.category == "thought_level"
    assert all(v.description for v in effort.options)
    fast = option(offered, "fast-mode")
    assert (fast.current_value, [v.value for v in fast.options]) == ("off", ["off", "on"])
    assert "speed" in (fast.description or "")
    assert (option(changed.config_options, "reasoning_effort").current_value,
            option(changed.config_options, "fast-mode").current_value) == ("high", "on")
    assert [sent(r) for r in requests] == [
        ("medium", None), ("high", "priority"), ("high", "priority"), ("high", None)]
    assert agent.frames.problems == []


@pytest.mark.parametrize("how", ["resume", "load"])
async def test_choices_are_kept_when_a_closed_session_is_reopened(tmp_path: Path, how: str) -> None:
    with FakeResponsesAPI() as api:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        async with codex_agent(home, tmp_path, capable=True) as agent:
            session = await agent.conn.new_session(cwd=cwd)
            sid = session.session_id
            await agent.conn.set_config_option(session_id=sid, config_id="reasoning_effort", value="low")
            await agent.conn.set_config_option(session_id=sid, config_id="fast-mode", value="on")
            await agent.conn.prompt(session_id=sid, prompt=text("low and fast"))
            await agent.conn.close_session(session_id=sid)
            if how == "resume":
                reopened = await agent.conn.resume_session(cwd=cwd, session_id=sid)
            else:
                reopened = await agent.conn.load_session(cwd=cwd, session_id=sid)
            await agent.conn.prompt(session_id=sid, prompt=text("after reopening"))
        # A new agent process: app-server's own record of the thread still says low.
        async with codex_agent(home, tmp_path, capable=False, log_name="second") as second:
            loaded = await second.conn.load_session(cwd=cwd, session_id=sid)
            await second.conn.prompt(session_id=sid, prompt=text("another process"))
        requests = api.turn_requests
    assert (option(reopened.config_options, "reasoning_effort").current_value,
            option(reopened.config_options, "fast-mode").current_value) == ("low", "on")
    assert option(loaded.config_options, "reasoning_effort").current_value == "low"
    assert [sent(r) for r in requests] == [("low", "priority"), ("low", "priority"), ("low", None)]
    assert agent.frames.problems == [] and second.frames.problems == []


async def test_a_model_without_the_chosen_effort_falls_back_to_its_default(tmp_path: Path) -> None:
    with FakeResponsesAPI() as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=True) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            sid = session.session_id
            models = [v.value for v in option(session.config_options, "model").options]
            # a model that offers "max", then one (gpt-5.5) that does not
            other = "gpt-6.1-sol"
            assert other in models
            await agent.conn.set_config_option(session_id=sid, config_id="model", value=other)
            await agent.conn.set_config_option(session_id=sid, config_id="reasoning_effort", value="max")
            await agent.conn.prompt(session_id=sid, prompt=text("max"))
            back = await agent.conn.set_config_option(session_id=sid, config_id="model", value="gpt-5.5")
            await agent.conn.prompt(session_id=sid, prompt=text("back"))
        requests = api.turn_requests
    assert option(back.config_options, "reasoning_effort").current_value == "medium"
    assert [(r.body["model"], sent(r)[0]) for r in requests] == [(other, "max"), ("gpt-5.5", "medium")]
    assert agent.frames.problems == []


@BOTH
async def test_auto_review_mode_routes_approvals_to_codexs_reviewer(tmp_path: Path, capable: bool) -> None:
    """codex-acp's default mode: app-server's `approvalsReviewer: auto_review`, which codex reports
    in each model request's turn metadata."""
    with FakeResponsesAPI() as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            sid = session.session_id
            await agent.conn.set_session_mode(session_id=sid, mode_id="auto")  # (the default is auto-review)
            await agent.conn.prompt(session_id=sid, prompt=text("auto"))
            await agent.conn.set_session_mode(session_id=sid, mode_id="auto-review")
            await agent.conn.prompt(session_id=sid, prompt=text("auto review"))
            await agent.conn.set_session_mode(session_id=sid, mode_id="auto")
            await agent.conn.prompt(session_id=sid, prompt=text("auto again"))
        requests = api.turn_requests
    assert session.modes is not None
    review = next(m for m in session.modes.available_modes if m.id == "auto-review")
    assert review.name == "Auto review" and "reviewer" in (review.description or "")
    flags = [(turn_metadata(r).get("sandbox_mode"), turn_metadata(r).get("auto_review_enabled")) for r in requests]
    assert flags == [("workspace-write", False), ("workspace-write", True), ("workspace-write", False)]
    assert agent.frames.problems == []


@BOTH
@pytest.mark.parametrize("verdict", ["allow", "deny"])
async def test_sessions_start_in_auto_review_and_the_reviewer_decides(tmp_path: Path, capable: bool,
                                                                      verdict: str) -> None:
    """codex-acp's default mode: thread/start asks for `approvalsReviewer: auto_review` (app-server
    reports it back, hence the mode), and a command that needs approval goes to codex's reviewer (a
    request to the model API), never to the user."""
    marker = tmp_path / "work" / "reviewed.txt"
    step = {"shell": ["bash", "-lc", f"echo reviewed > {marker}"], "justification": "Write the marker?"}
    with FakeResponsesAPI([step, {"reply": "done"}], review=verdict) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            done = await agent.conn.prompt(session_id=session.session_id, prompt=text("write it"))
        requests = api.turn_requests
        reviews = api.reviews
    assert session.modes is not None and session.modes.current_mode_id == "auto-review"
    assert done.stop_reason == "end_turn"
    assert agent.client.permission_requests == []
    assert len(reviews) >= 1 and "reviewed.txt" in str((reviews[0].body or {}).get("input"))
    assert turn_metadata(requests[0]).get("auto_review_enabled") is True
    assert marker.exists() is (verdict == "allow")
    assert agent.frames.problems == []


async def test_a_users_config_policy_keeps_codex_from_auto_review(tmp_path: Path) -> None:
    """The user's config.toml chooses approvals: the agent sends no policy and no reviewer."""
    with FakeResponsesAPI([{"reply": "ok"}]) as api:
        home = write_codex_home(api, tmp_path, policy='approval_policy = "on-request"\n')
        async with codex_agent(home, tmp_path, capable=True) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("hi"))
        requests = api.turn_requests
    assert session.modes is not None and session.modes.current_mode_id != "auto-review"
    assert turn_metadata(requests[0]).get("auto_review_enabled") is False
    assert agent.frames.problems == []


@BOTH
@pytest.mark.parametrize("how", ["resume", "load"])
async def test_mode_and_model_are_kept_when_a_closed_session_is_reopened(tmp_path: Path, capable: bool,
                                                                         how: str) -> None:
    """The mode and model chosen for a session come back with its resume or load in the same
    agent: advertised again and sent with the next turn."""
    with FakeResponsesAPI() as api:
        home = write_codex_home(api, tmp_path)
        cwd = workspace(tmp_path)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=cwd)
            sid = session.session_id
            await agent.conn.set_session_mode(session_id=sid, mode_id="read-only")
            await agent.conn.set_config_option(session_id=sid, config_id="model", value="gpt-6.1-sol")
            await agent.conn.prompt(session_id=sid, prompt=text("first"))
            await agent.conn.close_session(session_id=sid)
            if how == "resume":
                reopened = await agent.conn.resume_session(cwd=cwd, session_id=sid)
            else:
                reopened = await agent.conn.load_session(cwd=cwd, session_id=sid)
            await agent.conn.prompt(session_id=sid, prompt=text("after reopening"))
        requests = api.turn_requests
    assert reopened.modes is not None and reopened.modes.current_mode_id == "read-only"
    assert option(reopened.config_options, "model").current_value == "gpt-6.1-sol"
    assert [(r.body["model"], turn_metadata(r).get("sandbox_mode")) for r in requests] == [
        ("gpt-6.1-sol", "read-only"), ("gpt-6.1-sol", "read-only")]
    assert agent.frames.problems == []


async def test_fast_mode_is_a_switch_for_a_client_that_renders_boolean_options(tmp_path: Path) -> None:
    """`session.configOptions.boolean`: fast mode is `{id: "fast", type: "boolean"}` (as
    claude-agent-acp names it) and is set with `{type: "boolean", value: true}`; the real codex
    then asks the model API for the priority tier. A select value for it is refused."""
    with FakeResponsesAPI() as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=False, session={"configOptions": {"boolean": {}}}) as agent:
            created = await agent.conn._conn.send_request("session/new", {"cwd": workspace(tmp_path), "mcpServers": []})
            sid = created["sessionId"]
            changed = await agent.conn._conn.send_request("session/set_config_option", {
                "sessionId": sid, "configId": "fast", "type": "boolean", "value": True})
            await agent.conn.prompt(session_id=sid, prompt=text("fast"))
            with pytest.raises(Exception) as wrong:
                await agent.conn._conn.send_request("session/set_config_option", {
                    "sessionId": sid, "configId": "fast", "type": "boolean", "value": "on"})
        requests = api.turn_requests
    [fast] = [o for o in created["configOptions"] if o["id"] == "fast"]
    assert (fast["type"], fast["currentValue"]) == ("boolean", False) and "options" not in fast
    assert not [o for o in created["configOptions"] if o["id"] == "fast-mode"]
    [now] = [o for o in changed["configOptions"] if o["id"] == "fast"]
    assert now["currentValue"] is True
    assert [sent(r)[1] for r in requests] == ["priority"]
    assert getattr(wrong.value, "code", None) == -32602
    assert agent.frames.problems == []
