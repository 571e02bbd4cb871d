"""The agent's exit at stdin EOF with idle Claude sessions: at once, and no CLI left behind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.claude.e2e_support import claude_env
from tests.claude.test_claude_phases import standin, standin_pids
from tests.e2e.processes import children, gone
from tests.e2e.test_rpc_e2e import raw_agent
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(90)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["capable", "legacy"])

EXIT_BOUND_S = 4.0
"""How long the agent may take to exit after EOF with CLIs that ignore it and SIGTERM: it kills
idle ones after a short grace; before, it waited 7 s (the orderly close) for each."""


def initialize(capable: bool) -> dict[str, Any]:
    meta = {"_meta": {"jetbrains.air": {"version": 1, "capabilities": ["sessionFailure"]}}} if capable else {}
    return {"protocolVersion": 1, "clientCapabilities": meta}


@BOTH
async def test_eof_with_idle_sessions_exits_and_leaves_no_cli(tmp_path: Path, capable: bool) -> None:
    """Three sessions, one of them prompted: when the agent has exited, every CLI is gone too."""
    with FakeAnthropicAPI([{"reply": "ok"}]) as api:
        async with raw_agent(tmp_path, provider="claude", extra_env=claude_env(api, tmp_path)) as client:
            await client.send(1, "initialize", initialize(capable))
            await client.answer(1)
            sessions = []
            for request_id in (2, 3, 4):
                await client.send(request_id, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
                with anyio.fail_after(60):
                    sessions.append((await client.answer(request_id))["result"]["sessionId"])
            await client.send(5, "session/prompt", {"sessionId": sessions[0],
                                                    "prompt": [{"type": "text", "text": "hi"}]})
            with anyio.fail_after(60):
                assert (await client.answer(5))["result"]["stopReason"] == "end_turn"
            clis = children(client.process.pid)
            assert len(clis) == 3
            await client.close_stdin()
            with anyio.fail_after(30):
                code = await client.process.wait()
            left = [pid for pid in clis if not gone(pid)]  # at the moment the agent exited
    assert code == 0
    assert left == []


@BOTH
async def test_eof_kills_idle_clis_that_ignore_it_instead_of_waiting(tmp_path: Path, capable: bool) -> None:
    """Stand-in CLIs (and a helper each started) that ignore EOF and SIGTERM: the agent exits well
    before the orderly stop would have ended them, and leaves none of them behind."""
    env = {**standin(tmp_path, ""), "STANDIN_STUBBORN": "1", "STANDIN_CHILD": "1"}
    async with raw_agent(tmp_path, provider="claude", extra_env=env) as client:
        await client.send(1, "initialize", initialize(capable))
        await client.answer(1)
        for request_id in (2, 3):
            await client.send(request_id, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
            with anyio.fail_after(30):
                assert "result" in await client.answer(request_id)
        pids = standin_pids(tmp_path)
        assert len(pids) == 4
        await client.close_stdin()
        with anyio.fail_after(EXIT_BOUND_S):
            code = await client.process.wait()
        left = [pid for pid in pids if not gone(pid)]
    assert code == 0
    assert left == []
