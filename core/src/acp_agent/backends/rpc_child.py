"""A backend process spoken to over JSON-RPC on its stdio, for the runtimes that have one.

Spawned (`open_child`) or adopted (`adopt_child`: started by the command line before the event
loop), the process lives in its own task (`serve`, `spawn` or `adopt`, run with a task group's
`start`); its `Connection` is served until the child's stdout ends or the owner asks it to stop.
Then the child is stopped in the core's one sequence (close stdin, SIGTERM, SIGKILL, reaped) and
what it left in its process group is killed. A child that ends without being asked to calls
`on_lost` once, before it is reaped, so its turns fail at once. `kill` is for a frozen one: the
signal a stopped process acts on.

A provider subclasses it for its vendor's handshake and methods: `methods` is the table the
connection starts with and `connected` starts what runs beside the reader (a handshake).
Requests carry no deadline of their own: every wait on the backend runs in its caller's phase.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, ClassVar, Self

import anyio
import anyio.abc
from attrs import define, field

from acp_agent.backends.process import ChildProcess, adopt_child, kill_process_group, open_child
from acp_agent.wire.rpc import Connection, Methods

if TYPE_CHECKING:
    from acp_agent.backends.process import EarlyProcess

log = logging.getLogger(__name__)

LostHandler = Callable[[Any], Awaitable[None]]
"""Called with the child that ended without being asked to."""


@define(eq=False, kw_only=True)
class RpcChild:
    """One backend process and the JSON-RPC connection to it."""

    name: str
    """What the log calls it (`codex app-server`)."""
    on_lost: LostHandler | None = None
    child: ChildProcess | None = field(default=None, init=False)
    connection: Connection = field(init=False)
    """Set once the process runs (`started`)."""
    alive: bool = field(default=True, init=False)
    """False once its output ended, or once its task began stopping it."""
    stop_requested: bool = field(default=False, init=False)
    started: bool = field(default=False, init=False)
    finished: anyio.Event = field(factory=anyio.Event, init=False)
    """Set when its output ended or it was asked to stop."""
    stopped: anyio.Event = field(factory=anyio.Event, init=False)
    """Set once the process is reaped (or never ran)."""
    _scope: anyio.CancelScope | None = field(default=None, init=False)

    require_version: ClassVar[bool] = True
    """False for a peer that omits `"jsonrpc": "2.0"` in what it sends."""

    @property
    def pid(self) -> int | None:
        return self.child.pid if self.child is not None else None

    def methods(self) -> Methods:
        """The handlers the connection starts with (none by default)."""
        return Methods(requests={}, notifications={})

    def connected(self, group: anyio.abc.TaskGroup) -> None:
        """Called once the connection exists, before anything is read; `group` lives as long as
        the connection is served (a handshake started in it ends with the child)."""

    async def spawn(self, argv: Sequence[str], env: Mapping[str, str] | None, cwd: str | None = None, *,
                    task_status: anyio.abc.TaskStatus[Self] = anyio.TASK_STATUS_IGNORED) -> None:
        """Start the program and serve it; raises OSError (before `started`) if it cannot run."""
        await self.serve(open_child(argv, env=env, cwd=cwd, name=self.name), task_status=task_status)

    async def adopt(self, spawned: EarlyProcess, *,
                    task_status: anyio.abc.TaskStatus[Self] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve a child the command line started before the event loop."""
        await self.serve(adopt_child(spawned, name=self.name), task_status=task_status)

    async def serve(self, opening: AbstractAsyncContextManager[ChildProcess], *,
                    task_status: anyio.abc.TaskStatus[Self] = anyio.TASK_STATUS_IGNORED) -> None:
        """Own the child `opening` yields until its output ends or it is asked to stop, then stop
        and reap it. Started (`task_status`) once the connection exists."""
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                async with opening as child:
                    self.child = child
                    self.connection = Connection(child.stdout, child.stdin, self.methods(),
                                                 request_timeout_s=math.inf,
                                                 require_version=self.require_version)
                    async with anyio.create_task_group() as group:
                        group.start_soon(self._read)
                        self.connected(group)
                        self.started = True
                        task_status.started(self)
                        await self.finished.wait()
                        if not self.stop_requested:
                            log.warning("%s (pid %d) exited or closed its output", self.name, child.pid)
                            if self.on_lost is not None:
                                await self.on_lost(self)  # awaited: what it emits comes first
                        group.cancel_scope.cancel()
        finally:
            self.alive = False
            if self.child is not None:
                kill_process_group(self.child.pid)
            self.stopped.set()

    async def _read(self) -> None:
        try:
            await self.connection.serve()
        finally:
            self.alive = False
            self.finished.set()

    async def call(self, method: str, params: Any) -> Any:
        """A request; its deadline is the caller's phase. Raises RpcError or ConnectionClosed."""
        return await self.connection.request(method, params, timeout_s=math.inf)

    def kill(self) -> None:
        """SIGKILL the process and its process group (it leads its own session) at once: the one
        signal a frozen (stopped) process acts on. Its task still reaps it."""
        child = self.child
        if child is None:
            return
        if child.returncode is None:
            try:
                child.process.kill()
            except ProcessLookupError:
                pass
        kill_process_group(child.pid)

    def request_stop(self) -> None:
        """Ask the child's task to stop it (without waiting); not a loss."""
        self.stop_requested = True
        self.finished.set()
        if not self.started and self._scope is not None:
            self._scope.cancel()  # still being spawned

    async def stop(self) -> None:
        """Stop the process (close stdin, then signals) and wait until it is reaped."""
        with anyio.CancelScope(shield=True):
            self.request_stop()
            if self.started:
                await self.stopped.wait()
