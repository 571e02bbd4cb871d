"""Claude sessions the agent holds open, and a CLI that is missing: the real CLI, through `acp-agent`."""

from __future__ import annotations

from pathlib import Path

import acp
import pytest

from acp_agent_claude.classify import INSTALL_RECOVERY
from tests.claude.e2e_support import agent_texts, claude_agent, text
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(90)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])


@BOTH
@pytest.mark.parametrize("how", ["resume", "load"])
async def test_a_live_session_never_prompted_can_be_resumed_or_loaded(tmp_path: Path, capable: bool,
                                                                      how: str) -> None:
    """The CLI writes its transcript on the first prompt; a session the agent holds is still there."""
    with FakeAnthropicAPI([{"reply": "Answer after reopening."}]) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            if how == "resume":
                await agent.conn.resume_session(cwd=str(tmp_path), session_id=session.session_id)
            else:
                await agent.conn.load_session(cwd=str(tmp_path), session_id=session.session_id)
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("Hello"))
            texts = agent_texts(agent, session.session_id)
    assert result.stop_reason == "end_turn"
    assert "".join(texts) == "Answer after reopening."
    assert agent.frames.problems == []


@BOTH
async def test_a_missing_cli_says_where_it_looked_and_what_to_do(tmp_path: Path, capable: bool) -> None:
    missing = tmp_path / "no-such-dir" / "claude"
    with FakeAnthropicAPI([]) as api:
        async with claude_agent(api, tmp_path, capable=capable, extra={"ACP_AGENT_CLAUDE_CLI": str(missing)}) as agent:
            with pytest.raises(acp.RequestError) as caught:
                await agent.conn.new_session(cwd=str(tmp_path))
    assert caught.value.code == -32603
    assert caught.value.data["failure"] == {
        "kind": "cliNotFound", "source": "adapter", "retryable": False, "outcome": "failed",
        "recovery": INSTALL_RECOVERY, "phase": "initializing", "execution": "notSubmitted"}
    assert str(caught.value) == (f"Claude Code could not be started: the Claude Code CLI was not found at {missing}. "
                                 "No model turn was submitted. Reinstall acp-agent-claude (its claude-agent-sdk "
                                 "bundles the CLI) or set ACP_AGENT_CLAUDE_CLI to a Claude Code CLI, then start a "
                                 "new session.")
    assert agent.frames.problems == []


async def test_a_cli_that_is_not_executable_says_so(tmp_path: Path) -> None:
    cli = tmp_path / "claude"
    cli.write_text("not a program\n")
    with FakeAnthropicAPI([]) as api:
        async with claude_agent(api, tmp_path, capable=False, extra={"ACP_AGENT_CLAUDE_CLI": str(cli)}) as agent:
            with pytest.raises(acp.RequestError) as caught:
                await agent.conn.new_session(cwd=str(tmp_path))
    assert caught.value.data["failure"]["kind"] == "cliStartFailed"
    assert str(caught.value) == (f"Claude Code could not be started: the Claude Code CLI at {cli} is not executable. "
                                 f"No model turn was submitted. {INSTALL_RECOVERY}")


async def test_reopening_a_never_prompted_session_in_another_directory_moves_it_there(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    with FakeAnthropicAPI([{"reply": "From the other directory."}]) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.resume_session(cwd=str(other), session_id=session.session_id)
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("Hello"))
            texts = agent_texts(agent, session.session_id)
            listed = await agent.conn.list_sessions(cwd=str(other))
    assert result.stop_reason == "end_turn"
    assert "".join(texts) == "From the other directory."
    assert session.session_id in [info.session_id for info in listed.sessions]
    assert agent.frames.problems == []
