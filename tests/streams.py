"""Byte-stream test doubles shared by the core's and the providers' reader tests."""

from __future__ import annotations

import anyio
import anyio.abc
import pytest


class Pipe(anyio.abc.ByteReceiveStream):
    """A pipe's read end: a read takes everything written so far, or waits for the next write."""

    def __init__(self) -> None:
        self.pending = bytearray()
        self.reads = 0
        self._written = anyio.Event()

    def write(self, data: bytes) -> None:
        self.pending += data
        self._written.set()

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while not self.pending:
            self._written = anyio.Event()
            await self._written.wait()
        self.reads += 1
        data, self.pending = bytes(self.pending[:max_bytes]), self.pending[max_bytes:]
        return data

    async def aclose(self) -> None:
        self.pending.clear()


def held_pauses(monkeypatch: pytest.MonkeyPatch) -> tuple[list[float], anyio.Event]:
    """`anyio.sleep` replaced by a pause that records its length and lasts until the returned
    event is set: a test writes what a backend writes meanwhile, then lets the reader go on."""
    pauses: list[float] = []
    gate = anyio.Event()

    async def pause(delay: float) -> None:
        pauses.append(delay)
        await gate.wait()

    monkeypatch.setattr(anyio, "sleep", pause)
    return pauses, gate
