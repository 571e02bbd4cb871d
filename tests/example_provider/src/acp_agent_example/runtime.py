"""The example runtime: one echo-model child per agent, one turn at a time, read as fast as it is emitted."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from acp_agent.provider import (
    ChildProcess,
    ContentBlock,
    FailureKind,
    FailureObservation,
    Phase,
    PhaseFailed,
    ProviderRuntime,
    RuntimeContext,
    SessionChannel,
    SessionNotFound,
    SessionStart,
    TextContent,
    TurnChannel,
    TurnEnd,
    TurnFailed,
    agent_text,
    executable_problem,
    open_child,
    program_unavailable,
)

MODEL_VAR = "EXAMPLE_MODEL_PYTHON"
"""The interpreter that runs the echo model (default: this one)."""

LOST = FailureObservation(FailureKind.TRANSPORT_LOST, "modelExited", "The echo model stopped.",
                          source="adapter", execution="possiblySubmitted", retryable=True)


class ExampleRuntime(ProviderRuntime):
    def __init__(self, model: ChildProcess, context: RuntimeContext) -> None:
        self.model = model
        self.context = context
        self.lines = BufferedByteReceiveStream(model.stdout)
        self.sessions: set[str] = set()
        self.turn_lock = anyio.Lock()  # the model runs one turn at a time
        self.write_lock = anyio.Lock()  # prompt and cancel both write to its stdin

    async def send(self, message: dict[str, Any]) -> None:
        async with self.write_lock:
            await self.model.stdin.send(json.dumps(message).encode() + b"\n")

    async def receive(self) -> dict[str, Any]:
        try:
            line = await self.lines.receive_until(b"\n", 1 << 20)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError):
            raise TurnFailed(LOST) from None
        message: dict[str, Any] = json.loads(line)
        return message

    async def new_session(self, cwd: str, mcp_servers: Sequence[Any], channel: SessionChannel) -> SessionStart:
        session_id = f"example-{uuid.uuid4().hex[:12]}"
        self.sessions.add(session_id)
        return SessionStart(session_id)

    async def prompt(self, session_id: str, prompt: Sequence[ContentBlock], turn: TurnChannel) -> TurnEnd:
        if session_id not in self.sessions:
            raise SessionNotFound(session_id)
        text = " ".join(block.text for block in prompt if isinstance(block, TextContent))
        async with self.turn_lock:
            async with self.context.clock.phase(Phase.SUBMITTING):
                await self.send({"text": text})
                acknowledged = await self.receive()
            turn.adopt_turn_id(acknowledged["turn"])
            try:
                return await self._run(turn)
            except anyio.get_cancelled_exc_class():
                # Cut off past the cancel grace: leave the model clean for the next prompt.
                with anyio.move_on_after(2, shield=True) as scope:
                    while "done" not in await self.receive():
                        pass
                if scope.cancelled_caught:
                    await self.model.stop()
                raise

    async def _run(self, turn: TurnChannel) -> TurnEnd:
        while True:
            message = await self.receive()  # one line, then its emit: the client's pace reaches the model
            if "delta" in message:
                await turn.emit(agent_text(message["delta"]))
            elif "error" in message:
                observation = FailureObservation(FailureKind.OVERLOADED, message["error"], message["message"],
                                                 execution="possiblySubmitted", retryable=True)
                raise TurnFailed(observation)  # the core records it and answers the prompt with it
            elif "done" in message:
                return TurnEnd("cancelled" if message["done"] == "cancelled" else "end_turn")

    async def cancel(self, session_id: str) -> None:
        await self.send({"cancel": True})  # the running prompt then reads {"done": "cancelled"}

    async def close_session(self, session_id: str) -> None:
        self.sessions.discard(session_id)


@asynccontextmanager
async def open_example_runtime(context: RuntimeContext) -> AsyncIterator[ExampleRuntime]:
    python = context.environ.get(MODEL_VAR, sys.executable)
    argv = [python, "-m", "acp_agent_example.model"]
    async with context.clock.phase(Phase.INITIALIZING):
        problem = executable_problem(python, context.environ)
        if problem is not None:
            raise PhaseFailed(program_unavailable("Example", "echo model's Python", problem,
                                                  recovery=f"Set {MODEL_VAR} to a Python 3 interpreter.",
                                                  native_kinds=("modelNotFound", "modelNotRunnable")))
    async with open_child(argv, env=context.environ, name="echo model") as model:
        yield ExampleRuntime(model, context)
