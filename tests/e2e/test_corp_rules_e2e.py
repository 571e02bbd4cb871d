"""A plugin that implements only the failure hooks changes how the real Claude CLI's failures are
classified, titled and replayed: `acp-agent-corp-rules` (tests/corp_rules, installed like any
plugin) recognises its gateway's CORP-GATEWAY-DENIED refusals for every provider."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp
import pytest
from acp_agent_corp_rules import MARKER, NATIVE_KIND, TITLE

from tests.claude.e2e_support import API_KEY, agent_texts, claude_agent, text
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]

DENIAL = f"{MARKER}: claude models are not on the allow list of cost centre 4711"


async def prompt_outcome(agent: Any, session_id: str) -> Any:
    try:
        return await agent.conn.prompt(session_id=session_id, prompt=text("Say hello."))
    except acp.RequestError as exc:
        return exc


def assert_clean(agent: Any, *, capable: bool) -> None:
    assert agent.frames.problems == []
    wire = agent.frames.text()
    if not capable:
        assert "sessionFailure" not in wire
    assert API_KEY not in wire
    assert API_KEY not in agent.log_text()


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_the_gateways_denial_is_classified_by_the_plugin_live_and_on_load(tmp_path: Path,
                                                                              capable: bool) -> None:
    with FakeAnthropicAPI([{"status": 403, "error_type": "permission_error", "message": DENIAL}]) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            live = await prompt_outcome(agent, session.session_id)
        # A fresh agent loads the stored transcript: the history hook recognises the stored denial.
        async with claude_agent(api, tmp_path, capable=capable) as reloaded:
            await reloaded.conn.load_session(cwd=str(tmp_path), session_id=session.session_id)
    if capable:
        assert live.stop_reason == "end_turn"
        record = live.field_meta["jetbrains"]["air"]["sessionFailure"]
        # Claude's own classification would be auth_required ("access", ["login"]) with the CLI's text.
        assert (record["category"], record["actions"], record["severity"]) == ("access", ["retry"], "error")
        assert record["title"] == TITLE
        [replayed] = reloaded.frames.failure_records()
        assert (replayed["id"], replayed["title"], replayed["actions"]) == (record["id"], record["title"],
                                                                              record["actions"])
        assert not any(MARKER in chunk for chunk in agent_texts(reloaded, session.session_id))
    else:
        assert isinstance(live, acp.RequestError)
        assert live.code == -32603  # access_denied; Claude's own answer (auth_required) would be -32000
        assert str(live).startswith(TITLE)
        assert live.data["failure"]["kind"] == NATIVE_KIND
        assert live.data["corpGateway"] == "denied"
        assert "errorKind" not in live.data
        # a client without the extension sees the stored text in place, as before
        assert any(MARKER in chunk for chunk in agent_texts(reloaded, session.session_id))
    assert_clean(agent, capable=capable)
    assert_clean(reloaded, capable=capable)


@pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])
async def test_the_gateways_denial_is_classified_by_the_plugin_in_a_real_codex_turn(tmp_path: Path,
                                                                                   capable: bool) -> None:
    """The same plugin, untouched, for another provider: the real `codex app-server` reports the
    gateway's refusal (a response that failed with the gateway's text) as its turn's error."""
    from tests.codex.e2e_support import codex_agent, workspace, write_codex_home
    from tests.fakes.responses_api import FakeResponsesAPI

    with FakeResponsesAPI([{"failed": {"code": "invalid_prompt", "message": DENIAL}}]) as api:
        home = write_codex_home(api, tmp_path, retries=0)
        async with codex_agent(home, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            live = await prompt_outcome(agent, session.session_id)
    if capable:
        record = live.field_meta["jetbrains"]["air"]["sessionFailure"]
        assert (record["category"], record["actions"], record["title"]) == ("access", ["retry"], TITLE)
    else:
        assert isinstance(live, acp.RequestError) and live.code == -32603
        assert str(live).startswith(TITLE)
        assert (live.data["failure"]["kind"], live.data["corpGateway"]) == (NATIVE_KIND, "denied")
    assert agent.frames.problems == []
