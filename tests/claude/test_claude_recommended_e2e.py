"""AIR's `recommendedValue` for Claude through `acp-agent --provider claude` (the real bundled CLI
on the fake API), as claude-agent-acp shows it: a declaring client sees concrete values (the
model the CLI's default runs, the `medium` effort, which the session then runs); every other
client keeps the "default" entries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from tests.claude.e2e_support import claude_agent, text
from tests.claude.test_claude_idle_e2e import cli_of
from tests.claude.test_claude_settings_e2e import effort_of, option
from tests.e2e.processes import argv_of
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]


def air_client(*capabilities: str) -> dict[str, Any]:
    return {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure", *capabilities]}}}


def recommends(found: Any) -> Any:
    meta = found.field_meta or {}
    return meta.get("jetbrains", {}).get("air", {}).get("recommendedValue")


async def test_a_declaring_client_is_shown_and_runs_concrete_values(tmp_path: Path) -> None:
    with FakeAnthropicAPI([{"reply": "one"}, {"reply": "two"}]) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=air_client("recommendedValue")) as agent:
            advertised = agent.frames.incoming[0]["result"]["_meta"]["jetbrains"]["air"]["capabilities"]
            session = await agent.conn.new_session(cwd=str(tmp_path))
            sid = session.session_id
            await agent.conn.prompt(session_id=sid, prompt=text("first"))
            switched = await agent.conn.set_config_option(session_id=sid, config_id="model", value="sonnet")
            await agent.conn.prompt(session_id=sid, prompt=text("second"))
            with pytest.raises(RequestError) as refused:
                await agent.conn.set_config_option(session_id=sid, config_id="effort", value="default")
    assert "recommendedValue" in advertised
    model, effort = option(session.config_options, "model"), option(session.config_options, "effort")
    assert "default" not in [o.value for o in model.options] and "opus" in [o.value for o in model.options]
    assert (model.current_value, recommends(model)) == ("opus", "opus")  # what the CLI's default runs
    assert [o.value for o in effort.options] == ["low", "medium", "high", "xhigh", "max"]
    assert (effort.current_value, recommends(effort)) == ("medium", "medium")
    assert [effort_of(r.body) for r in api.turn_requests] == ["medium", "medium"]  # what it is shown
    assert option(switched.config_options, "model").current_value == "sonnet"
    assert option(switched.config_options, "effort").current_value == "medium"
    assert refused.value.code == -32602
    assert agent.frames.problems == []


async def test_a_client_that_does_not_declare_it_keeps_the_default_entries(tmp_path: Path) -> None:
    with FakeAnthropicAPI([{"reply": "one"}]) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=air_client()) as agent:
            advertised = agent.frames.incoming[0]["result"]["_meta"]["jetbrains"]["air"]["capabilities"]
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("first"))
            argv = argv_of(cli_of(agent.process.pid, session.session_id))
    assert "recommendedValue" in advertised  # (what the agent serves; this client did not declare it)
    model, effort = option(session.config_options, "model"), option(session.config_options, "effort")
    assert model.options[0].value == "default" and model.current_value == "default"
    assert effort.options[0].value == "default" and effort.current_value == "default"
    assert recommends(model) is None and recommends(effort) is None
    assert b"--effort" not in argv  # no level of the session's own: the CLI's settings decide
    assert agent.frames.problems == []
