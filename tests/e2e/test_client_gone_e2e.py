"""A client that closes the agent's stdout but keeps its stdin open is gone: the agent ends as at EOF.

The agent's next write fails (EPIPE); from then on nothing it does can reach anyone. It stops
reading, stops its backends (the real Claude Code CLI, on the loopback fake API) and exits, as
it does at stdin EOF, while the client still holds stdin open.
"""

from __future__ import annotations

import json
import os
import subprocess
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.claude.e2e_support import claude_env
from tests.e2e.harness import PipeFrames, agent_executable, reaped
from tests.e2e.processes import gone, live_descendants, pidfds
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(90)]

EXIT_WITHIN_S = 15.0
"""The agent and its backends end this soon after the failed write (at EOF it is about 1 s)."""


def send(process: subprocess.Popen[bytes], request_id: int, method: str, params: Any) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                                    "params": params}).encode() + b"\n")
    process.stdin.flush()


@pytest.mark.parametrize("provider", ["scripted", pytest.param("claude", marks=pytest.mark.real_backend)])
async def test_a_closed_stdout_ends_the_agent_and_its_backends(tmp_path: Path, provider: str) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("ACP_AGENT_")}
    with ExitStack() as stack:
        if provider == "claude":
            api = stack.enter_context(FakeAnthropicAPI([]))
            env.update(claude_env(api, tmp_path))
        env = {key: value for key, value in env.items() if value != ""}
        stderr = stack.enter_context(open(tmp_path / "agent.stderr", "wb"))
        process = stack.enter_context(reaped(subprocess.Popen(
            [agent_executable(), "--provider", provider, "--log-file", str(tmp_path / "agent.log"),
             "--log-level", "debug"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
            env=env, cwd=str(tmp_path))))
        assert process.stdout is not None
        frames = PipeFrames(process.stdout.fileno())
        send(process, 1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert "result" in frames.answer(1)
        send(process, 2, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
        assert "sessionId" in frames.answer(2)["result"]
        backends = live_descendants(process.pid)
        if provider == "claude":
            assert backends, "the Claude CLI runs for the session"
        watched = pidfds([process.pid, *backends], stack)

        process.stdout.close()  # the client stops reading, for good; its end of stdin stays open
        send(process, 3, "session/new", {"cwd": str(tmp_path), "mcpServers": []})  # a write is due

        with anyio.fail_after(EXIT_WITHIN_S):
            for descriptor in watched:
                await anyio.wait_readable(descriptor)
        code = process.wait(timeout=5)
        left = [pid for pid in backends if not gone(pid)]
        assert process.stdin is not None and not process.stdin.closed
    assert code == 0
    assert left == []
    log = (tmp_path / "agent.log").read_text(errors="replace")
    assert "output stream failed" in log
    assert "Traceback" not in (tmp_path / "agent.stderr").read_text(errors="replace")


TURN_GONE_WITHIN_S = 5.0
"""With a turn running: the cancel grace of a client gone at EOF (1 s), not the 10 s a client that
is still there gets for `session/cancel`."""


async def test_a_closed_stdout_during_a_turn_ends_it_as_eof_does(tmp_path: Path) -> None:
    """A turn whose backend ignores the cancel: the agent waits the short grace of a client that
    is gone, then ends it and exits."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [[{"text": "working"}, {"hang_submit": True}]]}))
    env = {key: value for key, value in os.environ.items() if not key.startswith("ACP_AGENT_")}
    env["ACP_AGENT_SCRIPTED_SCRIPT"] = str(script)
    with ExitStack() as stack:
        stderr = stack.enter_context(open(tmp_path / "agent.stderr", "wb"))
        process = stack.enter_context(reaped(subprocess.Popen(
            [agent_executable(), "--provider", "scripted", "--log-file", str(tmp_path / "agent.log")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env, cwd=str(tmp_path))))
        assert process.stdout is not None
        frames = PipeFrames(process.stdout.fileno())
        send(process, 1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        frames.answer(1)
        send(process, 2, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
        session_id = frames.answer(2)["result"]["sessionId"]
        send(process, 3, "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]})
        while frames.next().get("params", {}).get("update", {}).get("content", {}).get("text") != "working":
            pass
        (agent,) = pidfds([process.pid], stack)

        process.stdout.close()
        send(process, 4, "session/new", {"cwd": str(tmp_path), "mcpServers": []})

        with anyio.fail_after(TURN_GONE_WITHIN_S):
            await anyio.wait_readable(agent)
        assert process.wait(timeout=5) == 0
