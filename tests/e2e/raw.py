"""`acp-agent` as a subprocess spoken to in raw JSON lines, for inputs an SDK client cannot send.

The SDK client validates what it sends (a numeric `cwd`, a string `protocolVersion` never leave
it); these tests need the agent to see exactly the bytes a careless or hostile client writes.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from tests.e2e.harness import agent_executable

ANSWER_DEADLINE_S = 20.0


class RawAgent:
    """Writes requests as lines; reads stdout lines until the answer with the same id arrives."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        self.frames: list[dict[str, Any]] = []
        self._buffer = b""
        self._next_id = 0

    async def send(self, message: Mapping[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(json.dumps(message).encode() + b"\n")

    async def ask(self, method: str, params: Any = None, *, deadline_s: float = ANSWER_DEADLINE_S) -> dict[str, Any]:
        """Send a request and return its whole answer frame (`result` or `error`)."""
        self._next_id += 1
        request_id = f"raw-{self._next_id}"
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        with anyio.fail_after(deadline_s):
            while True:
                frame = await self._frame()
                if frame.get("id") == request_id and "method" not in frame:
                    return frame

    async def _frame(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        while b"\n" not in self._buffer:
            self._buffer += await self.process.stdout.receive()
        line, self._buffer = self._buffer.split(b"\n", 1)
        frame: dict[str, Any] = json.loads(line)
        self.frames.append(frame)
        return frame


@asynccontextmanager
async def raw_agent(provider: str, tmp_path: Path, env: Mapping[str, str] | None = None) -> AsyncIterator[RawAgent]:
    """Start `acp-agent --provider NAME` (log in tmp_path); close stdin and wait for it on exit."""
    full_env = {key: value for key, value in os.environ.items() if not key.startswith("ACP_AGENT_")}
    full_env.update(env or {})
    full_env = {key: value for key, value in full_env.items() if value != ""}
    command = [agent_executable(), "--provider", provider, "--log-file", str(tmp_path / f"raw-{provider}.log"),
               "--log-level", "debug"]
    with open(tmp_path / f"raw-{provider}.stderr", "wb") as stderr:
        process = await anyio.open_process(command, env=full_env, cwd=str(tmp_path), stderr=stderr)
        try:
            yield RawAgent(process)
        finally:
            with anyio.CancelScope(shield=True):
                assert process.stdin is not None
                await process.stdin.aclose()
                with anyio.move_on_after(10):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()
