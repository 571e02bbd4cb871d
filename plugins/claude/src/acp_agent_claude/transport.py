"""One Claude Code CLI, driven directly over its stream-json control protocol.

The CLI reads NDJSON on stdin (user messages, `control_request`s such as `initialize`,
`interrupt`, `set_permission_mode`, `set_model`, and `control_response`s to its own requests) and
writes NDJSON on stdout (the conversation's messages, `control_response`s, and `control_request`s
such as `can_use_tool`). This is the protocol claude-agent-sdk speaks; speaking it here keeps the
SDK (and the `mcp` package it imports) off the path to a ready session, and gives the agent the
process itself: a parent-death signal, a process group of its own, and its stop.

The messages reach the runtime unchanged, as the dicts the CLI wrote: the fold and the failure
hooks see the backend's own JSON.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from acp_agent.provider import (
    EarlyProcess,
    LineReader,
    adopted_process,
    drain_stderr,
    kill_process_group,
    parent_death_argv,
    stop_process,
)

log = logging.getLogger(__name__)

MAX_LINE_BYTES = 64 * 1024 * 1024  # a transcript-sized tool result is one line; beyond this it is dropped
CONTROL_TIMEOUT_S = 60.0  # the SDK's bound on a control request that no phase deadline covers
MESSAGE_BUFFER = 256  # lines read ahead of the turn; beyond, the reader waits and the CLI blocks writing
GATHER_S = 0.001
"""Before each read of the CLI's output after the first, what it writes meanwhile gathers this long
(`LineReader`): it writes every streamed delta on its own, and a read per delta costs the agent
more than the delta's own work (bench/README.md has the figures). A line waits at most 1 ms more."""

Message = dict[str, Any]
RequestHandler = Callable[[Message], Awaitable[Message]]


class CLIGone(Exception):
    """The CLI's stdin or stdout is closed: it exited or is exiting."""


class ControlError(Exception):
    """The CLI answered a control request with an error (its text stays in the debug log)."""


class ClaudeCLI:
    """A running CLI: `run` reads its stdout (in the runtime's task group) until it closes.

    Conversation messages go to `messages` in order; control responses wake their `request`;
    the CLI's own control requests are answered by `on_request` in tasks of their own (a
    permission request waits for the user while the stream goes on).
    """

    def __init__(self, process: anyio.abc.Process, on_request: RequestHandler, *, name: str = "claude CLI") -> None:
        self.process = process
        self.name = name
        self.on_request = on_request  # rebound when a spare CLI is adopted by its session
        self.adopted = False  # started by the command line (`prestart`): its streams are closed here
        self._write_lock = anyio.Lock()
        self._pending: dict[str, list[Any]] = {}
        self._handlers: dict[str, anyio.CancelScope] = {}
        self._counter = 0
        self._send: MemoryObjectSendStream[Message]
        self.messages: MemoryObjectReceiveStream[Message]
        self._send, self.messages = anyio.create_memory_object_stream[Message](MESSAGE_BUFFER)
        self.closed = anyio.Event()  # stdout reached EOF: the CLI exited or is exiting
        self._reading = anyio.CancelScope()  # `stop` ends the reader, which may wait on a full buffer
        self.group = process.pid  # started in a session of its own: what it spawned dies with it

    @classmethod
    async def start(cls, argv: Sequence[str], *, env: Mapping[str, str], cwd: str,
                    on_request: RequestHandler) -> ClaudeCLI:
        """Spawn the CLI (from the event-loop thread, so the parent-death signal holds)."""
        process = await anyio.open_process(parent_death_argv(argv, env), env=dict(env), cwd=cwd,
                                           start_new_session=True)
        log.debug("started claude CLI (pid %d)", process.pid)
        return cls(process, on_request)

    @classmethod
    def adopt(cls, spawned: EarlyProcess, on_request: RequestHandler) -> ClaudeCLI:
        """A CLI the command line started before the event loop (`acp_agent_claude.prestart`)."""
        cli = cls(adopted_process(spawned), on_request)
        cli.adopted = True
        log.debug("adopted claude CLI (pid %d), started with the agent", spawned.pid)
        return cli

    @property
    def alive(self) -> bool:
        return not self.closed.is_set() and self.process.returncode is None

    # -- writing -----------------------------------------------------------------------------------

    async def write(self, message: Message) -> None:
        """One frame to the CLI's stdin; frames never interleave. Raises CLIGone if it is closed."""
        data = (json.dumps(message, ensure_ascii=False) + "\n").encode()
        async with self._write_lock:
            if self.process.stdin is None:
                raise CLIGone
            try:
                await self.process.stdin.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                raise CLIGone from None

    async def receive(self) -> Message:
        """The CLI's next conversation message; anyio.EndOfStream once its output ended. Takes
        what is already read without an event-loop pass (streamed deltas come in bursts)."""
        try:
            return self.messages.receive_nowait()
        except anyio.WouldBlock:
            return await self.messages.receive()

    async def send_user(self, message: Message) -> None:
        """A user message: a turn's prompt, or one sent into the running turn (the CLI queues it)."""
        await self.write(message)

    async def request(self, subtype: str, *, timeout_s: float = CONTROL_TIMEOUT_S, **fields: Any) -> Message:
        """A control request; its response's payload. ControlError if refused, CLIGone if the CLI went."""
        self._counter += 1
        request_id = f"req_{self._counter}_{os.urandom(4).hex()}"
        slot: list[Any] = [anyio.Event(), None]
        self._pending[request_id] = slot
        try:
            await self.write({"type": "control_request", "request_id": request_id,
                              "request": {"subtype": subtype, **fields}})
            with anyio.fail_after(timeout_s):
                await slot[0].wait()
        except TimeoutError:
            raise ControlError(f"no answer to {subtype}") from None
        finally:
            self._pending.pop(request_id, None)
        result = slot[1]
        if isinstance(result, BaseException):
            raise result
        payload = result.get("response") if isinstance(result, dict) else None
        return payload if isinstance(payload, dict) else {}

    # -- reading -----------------------------------------------------------------------------------

    async def run(self) -> None:
        """Read stdout until EOF, routing each frame; then fail what still waits on the CLI."""
        try:
            with self._reading:
                async with anyio.create_task_group() as task_group:
                    if self.process.stderr is not None:
                        task_group.start_soon(drain_stderr, self.process.stderr, "claude")
                    try:
                        await self._read(task_group)
                    finally:
                        task_group.cancel_scope.cancel()
        finally:
            self._send.close()
            self.closed.set()
            for slot in list(self._pending.values()):
                slot[1] = CLIGone()
                slot[0].set()
            if self.adopted:  # nothing reads them any more; their descriptors are ours to close
                with anyio.CancelScope(shield=True):
                    for stream in (self.process.stdout, self.process.stderr):
                        if stream is not None:
                            await stream.aclose()

    async def _read(self, task_group: anyio.abc.TaskGroup) -> None:
        assert self.process.stdout is not None
        reader = LineReader(self.process.stdout, MAX_LINE_BYTES, gather_s=GATHER_S)
        while True:
            line = await reader.next_line()
            if line is None:
                return
            if isinstance(line, int):
                log.warning("claude CLI wrote a line of %d bytes: dropped", line)
                continue
            try:  # decoded first: `json.loads` of bytes looks for a UTF-16 or -32 encoding per line
                message = json.loads(line.decode("utf-8", "surrogatepass"))
            except ValueError:
                log.debug("claude CLI wrote a line that is not JSON")
                continue
            if not isinstance(message, dict):
                continue
            kind = message.get("type")
            if kind == "control_response":
                self._resolve(message.get("response"))
            elif kind == "control_request":
                request_id = message.get("request_id")
                if isinstance(request_id, str) and isinstance(message.get("request"), dict):
                    scope = anyio.CancelScope()
                    self._handlers[request_id] = scope
                    task_group.start_soon(self._answer, request_id, message["request"], scope)
            elif kind == "control_cancel_request":
                cancelled = self._handlers.pop(str(message.get("request_id")), None)
                if cancelled is not None:
                    cancelled.cancel()
            else:
                try:
                    # without a checkpoint while there is room: a read of many lines is handed
                    # over at once instead of one event-loop pass per streamed delta
                    self._send.send_nowait(message)
                except anyio.WouldBlock:
                    try:
                        await self._send.send(message)
                    except anyio.BrokenResourceError:
                        return
                except anyio.BrokenResourceError:  # nobody reads this CLI's messages any more
                    return

    def _resolve(self, response: Any) -> None:
        if not isinstance(response, dict):
            return
        slot = self._pending.get(str(response.get("request_id")))
        if slot is None:
            return
        if response.get("subtype") == "error":
            log.debug("claude CLI refused a control request: %s", response.get("error"))
            slot[1] = ControlError("refused")
        else:
            slot[1] = response
        slot[0].set()

    async def _answer(self, request_id: str, request: Message, scope: anyio.CancelScope) -> None:
        """Answer one of the CLI's control requests; a request it cancelled gets no answer."""
        with scope:
            try:
                payload = await self.on_request(request)
                response: Message = {"subtype": "success", "request_id": request_id, "response": payload}
            except Exception as exc:
                log.info("claude control request %s failed: %s", request.get("subtype"), type(exc).__name__)
                response = {"subtype": "error", "request_id": request_id, "error": str(exc) or type(exc).__name__}
            finally:
                self._handlers.pop(request_id, None)
            try:
                await self.write({"type": "control_response", "response": response})
            except CLIGone:
                pass

    # -- stopping ----------------------------------------------------------------------------------

    async def stop(self, *, grace_s: float, term_s: float = 2.0) -> None:
        """Close stdin, wait `grace_s`, SIGTERM (its process group), wait `term_s`, SIGKILL;
        always reaped, then what the CLI left in its process group is killed. Shielded: safe to
        call more than once. Only the orderly stop (a grace to exit after EOF) warns when it still
        comes to SIGKILL; a stop without grace plans the kill (the agent's exit, a CLI that holds
        nothing)."""
        process = self.process
        began = time.monotonic()

        async def close_input() -> None:
            if process.stdin is not None:
                async with self._write_lock:
                    await process.stdin.aclose()

        def warn() -> None:
            if term_s > 0:
                log.log(logging.WARNING if grace_s > 0 else logging.DEBUG,
                        "claude CLI (pid %s) did not stop in time; killing it", process.pid)

        with anyio.CancelScope(shield=True):
            await stop_process(process, close_input, grace_s=grace_s, term_s=term_s, signal_process=self._signal,
                               on_kill=warn)
            kill_process_group(self.group)
            self._reading.cancel()
            log.debug("claude CLI (pid %s) stopped with %s after %.0f ms", process.pid, process.returncode,
                      (time.monotonic() - began) * 1000)

    def _signal(self, signum: signal.Signals) -> None:
        """SIGTERM to the CLI's process group (what it started hears it with it), SIGKILL to the
        CLI (the group is killed once it is reaped)."""
        try:
            if signum is signal.SIGTERM:
                os.killpg(self.group, signum)
            else:
                self.process.send_signal(signum)
        except (ProcessLookupError, PermissionError):
            if signum is signal.SIGTERM:  # no group of its own (a test's stand-in): the CLI alone
                try:
                    self.process.send_signal(signum)
                except ProcessLookupError:
                    pass

