"""The Claude CLI's output as the transport reads it: gathered before each read after the first
(`GATHER_S`), so deltas the CLI writes one by one come in one read, each message still handed
over once and in order."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from acp_agent_claude.transport import GATHER_S, ClaudeCLI
from tests.streams import Pipe, held_pauses

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(20)]


class CLIProcess:
    """What the transport reads of a CLI process: its stdout (no stdin or stderr here)."""

    def __init__(self, stdout: Pipe) -> None:
        self.stdout, self.stdin, self.stderr = stdout, None, None
        self.pid, self.returncode = 0, None


def delta(text: str) -> bytes:
    event = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
    return json.dumps({"type": "stream_event", "event": event}).encode() + b"\n"


async def no_request(request: dict[str, Any]) -> dict[str, Any]:
    raise AssertionError("no control request expected")


async def test_deltas_written_one_by_one_while_the_transport_gathers_come_in_one_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pauses, gate = held_pauses(monkeypatch)
    pipe = Pipe()
    cli = ClaudeCLI(CLIProcess(pipe), no_request)  # type: ignore[arg-type]
    async with anyio.create_task_group() as group:
        group.start_soon(cli.run)
        pipe.write(delta("first"))
        assert (await cli.receive())["event"]["delta"]["text"] == "first"
        for text in ("one", " two", " three"):
            await anyio.wait_all_tasks_blocked()  # the reader waits: gathering
            pipe.write(delta(text))
        gate.set()
        texts = [(await cli.receive())["event"]["delta"]["text"] for _ in range(3)]
        group.cancel_scope.cancel()
    assert texts == ["one", " two", " three"]
    assert pipe.reads == 2 and set(pauses) == {GATHER_S}  # without gathering: a read per delta
