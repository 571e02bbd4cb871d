"""The wire through the real `acp-agent` subprocess, raw stdio: input that used to end the process,
and requests still in flight when stdin reaches EOF."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from tests.e2e.harness import agent_executable

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(60)]

INITIALIZE = {"protocolVersion": 1, "clientCapabilities": {}}


class RawClient:
    """Writes raw lines to the agent's stdin; every line it writes to stdout is kept."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        self.frames: list[dict[str, Any]] = []
        self.stdout_closed = anyio.Event()
        self._changed = anyio.Event()

    async def read_stdout(self) -> None:
        assert self.process.stdout is not None
        partial = b""
        async for chunk in self.process.stdout:
            *lines, partial = (partial + chunk).split(b"\n")
            self.frames.extend(json.loads(line) for line in lines if line.strip())
            self._changed.set()
        assert partial == b""
        self.stdout_closed.set()
        self._changed.set()

    async def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(data)

    async def send(self, request_id: Any, method: str, params: Any) -> None:
        await self.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode()
                         + b"\n")

    async def answer(self, request_id: Any) -> dict[str, Any]:
        while True:
            for frame in self.frames:
                if frame.get("id") == request_id and "method" not in frame:
                    return frame
            if self.stdout_closed.is_set():
                raise AssertionError(f"stdout closed without an answer to {request_id!r}")
            self._changed = anyio.Event()
            await self._changed.wait()

    async def close_stdin(self) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.aclose()


@asynccontextmanager
async def raw_agent(tmp_path: Path, script: dict[str, Any] | None = None, *, provider: str = "scripted",
                    extra_env: dict[str, str] | None = None) -> AsyncIterator[RawClient]:
    """`acp-agent --provider NAME` on raw pipes (`script`: the scripted provider's script)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("ACP_AGENT_")}
    if script is not None:
        script_path = tmp_path / "script.json"
        script_path.write_text(json.dumps(script))
        env["ACP_AGENT_SCRIPTED_SCRIPT"] = str(script_path)
    env.update(extra_env or {})
    env = {key: value for key, value in env.items() if value != ""}
    with open(tmp_path / "agent.stderr", "wb") as stderr:
        process = await anyio.open_process(
            [agent_executable(), "--provider", provider, "--log-file", str(tmp_path / "agent.log"),
             "--log-level", "debug"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
            env=env, cwd=str(tmp_path))
    async with process, anyio.create_task_group() as tg:
        client = RawClient(process)
        tg.start_soon(client.read_stdout)
        try:
            yield client
        finally:
            if process.returncode is None:
                with anyio.move_on_after(10, shield=True):
                    await client.close_stdin()
                    await process.wait()
                if process.returncode is None:
                    process.kill()
            tg.cancel_scope.cancel()


async def test_hostile_lines_are_answered_and_the_agent_keeps_serving(tmp_path: Path) -> None:
    hostile = [
        b"[" * 100_000,
        b"[" * 1000,
        b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":[1]}}',
        b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":{"id":1}}}',
        b'{"jsonrpc":"2.0","id":"\\ud800","method":"no/such"}',
        b'{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":NaN}}',
    ]
    async with raw_agent(tmp_path, {}) as client:
        for line in hostile:
            await client.write(line + b"\n")
        await client.send("after", "initialize", INITIALIZE)
        with anyio.fail_after(20):
            answer = await client.answer("after")
        assert answer["result"]["protocolVersion"] == 1
        assert client.process.returncode is None
        await client.send("new", "session/new", {"cwd": str(tmp_path), "mcpServers": []})
        with anyio.fail_after(20):
            assert "sessionId" in (await client.answer("new"))["result"]
        await client.close_stdin()
        with anyio.fail_after(20):
            code = await client.process.wait()
            await client.stdout_closed.wait()
    assert code == 0
    errors = [(frame["id"], frame["error"]["code"]) for frame in client.frames if "error" in frame]
    assert errors == [(None, -32700), (None, -32700), ("\ud800", -32601), (None, -32700)]
    assert "nesting too deep" in client.frames[0]["error"]["message"]
    assert "Traceback" not in (tmp_path / "agent.stderr").read_text(errors="replace")


async def test_requests_piped_before_eof_are_all_answered(tmp_path: Path) -> None:
    async with raw_agent(tmp_path, {}) as client:
        await client.write(b"".join(json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}).encode()
                                    + b"\n" for n, method, params in [
            (1, "initialize", INITIALIZE),
            (2, "session/new", {"cwd": str(tmp_path), "mcpServers": []}),
            (3, "session/list", {}),
        ]))
        await client.close_stdin()
        with anyio.fail_after(20):
            await client.stdout_closed.wait()
            code = await client.process.wait()
    assert code == 0
    answers = {frame["id"]: frame for frame in client.frames}
    assert sorted(answers) == [1, 2, 3]
    assert answers[1]["result"]["protocolVersion"] == 1
    session_id = answers[2]["result"]["sessionId"]
    assert [s["sessionId"] for s in answers[3]["result"]["sessions"]] == [session_id]


async def test_a_request_that_cannot_finish_after_eof_is_answered_cancelled(tmp_path: Path) -> None:
    async with raw_agent(tmp_path, {"hang_new_session": True}) as client:
        await client.send(1, "initialize", INITIALIZE)
        await client.send(2, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
        with anyio.fail_after(20):
            await client.answer(1)
        await client.close_stdin()
        with anyio.fail_after(20):
            await client.stdout_closed.wait()
            code = await client.process.wait()
    assert code == 0
    assert [frame for frame in client.frames if frame["id"] == 2] == [
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32800, "message": "Request cancelled"}}]
