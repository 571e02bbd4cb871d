"""Idle Claude sessions: a bounded number of live CLIs (least recently used released first, and
after an idle timeout); a released session comes back on its next prompt or mode/model change
with its settings, MCP servers and history. The real CLI against the fake API, through `acp-agent`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from acp import schema

from tests.claude.e2e_support import agent_texts, claude_agent, text
from tests.e2e.processes import argv_of, children, wait_ended
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(120)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])


def cli_of(agent_pid: int, session_id: str) -> int:
    """The live CLI of a session (its --session-id or --resume argument names it)."""
    found = [pid for pid in children(agent_pid)
             if any(part.endswith(session_id.encode()) for part in argv_of(pid))]
    assert len(found) == 1, (session_id, found)
    return found[0]


def has_cli(agent_pid: int, session_id: str) -> bool:
    return any(any(part.endswith(session_id.encode()) for part in argv_of(pid)) for pid in children(agent_pid))


def flag(argv: list[bytes], name: str) -> str:
    return os.fsdecode(argv[argv.index(name.encode()) + 1])


def user_texts(body: dict[str, Any] | None) -> list[str]:
    texts = []
    for message in (body or {}).get("messages") or []:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        texts += [f"{message['role']}: {block['text']}" for block in blocks
                  if message.get("role") in ("user", "assistant") and block.get("type") == "text"
                  and not block["text"].startswith("<system-reminder>")]
    return texts


@BOTH
async def test_the_least_recently_used_cli_is_released_and_comes_back_with_history_and_settings(
        tmp_path: Path, capable: bool) -> None:
    mcp = [schema.McpServerStdio(name="editor-tools", command="/bin/true", args=[], env=[])]
    script = [{"reply": "Noted: the word is heron."}, {"reply": "Second session here."},
              {"reply": "The word was heron."}]
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=capable,
                                extra={"ACP_AGENT_CLAUDE_MAX_LIVE_CLIS": "1"}) as agent:
            pid = agent.process.pid
            first = await agent.conn.new_session(cwd=str(tmp_path), mcp_servers=mcp)
            await agent.conn.set_session_mode(session_id=first.session_id, mode_id="acceptEdits")
            await agent.conn.prompt(session_id=first.session_id, prompt=text("Remember the word heron."))
            before = argv_of(cli_of(pid, first.session_id))
            released = cli_of(pid, first.session_id)
            second = await agent.conn.new_session(cwd=str(tmp_path))
            await wait_ended([released], within_s=30)  # the first session's CLI went: one live CLI
            assert not has_cli(pid, first.session_id) and has_cli(pid, second.session_id)
            await agent.conn.prompt(session_id=second.session_id, prompt=text("Hello"))
            second_cli = cli_of(pid, second.session_id)
            result = await agent.conn.prompt(session_id=first.session_id, prompt=text("Which word?"))
            after = argv_of(cli_of(pid, first.session_id))
            config = json.loads(Path(flag(after, "--mcp-config")).read_text())
            await wait_ended([second_cli], within_s=30)  # the bound holds for the session used second too
            texts = agent_texts(agent, first.session_id)
    assert result.stop_reason == "end_turn"
    assert "".join(texts).endswith("The word was heron.")
    # the revived CLI resumed the transcript: the API saw the first exchange again
    assert user_texts(api.turn_requests[-1].body)[:3] == [
        "user: Remember the word heron.", "assistant: Noted: the word is heron.", "user: Which word?"]
    assert f"--resume={first.session_id}".encode() in after
    assert f"--session-id={first.session_id}".encode() in before
    assert flag(after, "--permission-mode") == "acceptEdits"
    assert list(config["mcpServers"]) == ["editor-tools"]
    assert agent.frames.problems == []


@BOTH
async def test_a_released_session_that_never_had_a_prompt_comes_back_under_its_id(tmp_path: Path,
                                                                                   capable: bool) -> None:
    with FakeAnthropicAPI([{"reply": "Fresh start."}]) as api:
        async with claude_agent(api, tmp_path, capable=capable,
                                extra={"ACP_AGENT_CLAUDE_MAX_LIVE_CLIS": "1"}) as agent:
            pid = agent.process.pid
            first = await agent.conn.new_session(cwd=str(tmp_path))
            released = cli_of(pid, first.session_id)
            await agent.conn.new_session(cwd=str(tmp_path))
            await wait_ended([released], within_s=30)
            # a mode change brings it back (verified by the CLI), then a prompt runs on it
            await agent.conn.set_session_mode(session_id=first.session_id, mode_id="plan")
            revived = argv_of(cli_of(pid, first.session_id))
            result = await agent.conn.prompt(session_id=first.session_id, prompt=text("Hi"))
            texts = agent_texts(agent, first.session_id)
    assert result.stop_reason == "end_turn"
    assert "".join(texts) == "Fresh start."
    assert f"--session-id={first.session_id}".encode() in revived
    assert flag(revived, "--permission-mode") == "plan"
    assert agent.frames.problems == []


@BOTH
async def test_an_idle_cli_is_released_after_the_idle_timeout_and_comes_back(tmp_path: Path,
                                                                            capable: bool) -> None:
    with FakeAnthropicAPI([{"reply": "One."}, {"reply": "Two."}]) as api:
        async with claude_agent(api, tmp_path, capable=capable,
                                extra={"ACP_AGENT_CLAUDE_IDLE_RELEASE_MS": "2000"}) as agent:
            pid = agent.process.pid
            session = await agent.conn.new_session(cwd=str(tmp_path))
            cli = cli_of(pid, session.session_id)
            await agent.conn.prompt(session_id=session.session_id, prompt=text("First"))
            await wait_ended([cli], within_s=30)
            result = await agent.conn.prompt(session_id=session.session_id, prompt=text("Second"))
            texts = agent_texts(agent, session.session_id)
    assert result.stop_reason == "end_turn"
    assert "".join(texts) == "One.Two."
    assert user_texts(api.turn_requests[-1].body)[:3] == ["user: First", "assistant: One.", "user: Second"]
    assert agent.frames.problems == []
