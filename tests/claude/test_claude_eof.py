"""Requests in flight when stdin reaches EOF, with the real Claude Code CLI against the fake API."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.claude.e2e_support import claude_env
from tests.e2e.processes import children, gone
from tests.e2e.test_rpc_e2e import INITIALIZE, raw_agent
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(90)]


async def test_a_prompt_and_a_list_sent_just_before_eof_are_answered_and_the_cli_is_gone(tmp_path: Path) -> None:
    with FakeAnthropicAPI([{"reply": "answered after EOF"}]) as api:
        async with raw_agent(tmp_path, provider="claude", extra_env=claude_env(api, tmp_path)) as client:
            await client.send(1, "initialize", INITIALIZE)
            await client.send(2, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
            with anyio.fail_after(60):
                session_id = (await client.answer(2))["result"]["sessionId"]
            clis = children(client.process.pid)
            assert clis, "no Claude CLI runs for the session"
            await client.send(3, "session/prompt", {"sessionId": session_id,
                                                    "prompt": [{"type": "text", "text": "hi"}]})
            await client.send(4, "session/list", {})
            await client.close_stdin()
            with anyio.fail_after(30):
                await client.stdout_closed.wait()
                code = await client.process.wait()
    assert code == 0
    answers = {frame["id"]: frame for frame in client.frames if "id" in frame and "method" not in frame}
    assert answers[3]["result"]["stopReason"] == "end_turn"
    texts = [frame["params"]["update"]["content"]["text"] for frame in client.frames
             if frame.get("method") == "session/update"
             and frame["params"]["update"].get("sessionUpdate") == "agent_message_chunk"]
    assert "".join(texts) == "answered after EOF"
    assert isinstance(answers[4]["result"]["sessions"], list)  # listed while the turn ran: may be empty
    assert all(gone(pid) for pid in clis), "a Claude CLI outlived the agent"
