"""`codex app-server` spawned the moment the runtime opens, before the runtime module is imported.

The core opens the Codex runtime when the agent starts (`ProviderSpec.start_early`). Spawning
app-server is all that happens then: the process boots on its own core while the agent imports
and answers `initialize`, and the runtime module (`acp_agent_codex.runtime`, ~20 ms of imports)
loads with the first request that needs it, which adopts the running process and only pays its
`initialize` handshake and `thread/start`. The spawned process is owned here (stopped when the
runtime closes, parent-death signal as every backend); should the spawn fail, nothing is
reported here: the runtime starts app-server itself on the request path and answers with that
attempt's error, exactly as without the early start.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from acp_agent import prestart
from acp_agent.acp import ConfigOption, ContentBlock, McpServer
from acp_agent.events import TurnEnd
from acp_agent.process import ChildProcess, adopt_child, open_child
from acp_agent.provider import (
    ProviderRuntime,
    RuntimeContext,
    SessionChannel,
    SessionListing,
    SessionStart,
    TurnChannel,
)
from acp_agent_codex.prestart import child_environment

if TYPE_CHECKING:
    from acp_agent_codex.runtime import CodexRuntime

log = logging.getLogger(__name__)

APP_SERVER_NAME = "codex app-server"


class EarlyChild:
    """An app-server spawned ahead of need, handed to the first runtime start that wants one."""

    def __init__(self) -> None:
        self._child: ChildProcess | None = None

    def take(self) -> ChildProcess | None:
        """The spawned process if it is still running (once): the runtime adopts it."""
        child, self._child = self._child, None
        if child is not None and child.returncode is not None:
            log.info("the early %s (pid %d) exited before it was used", APP_SERVER_NAME, child.pid)
            return None
        return child

    async def hold(self, argv: Sequence[str], env: Mapping[str, str], stop: anyio.Event, *,
                   task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Spawn and own the process until `stop` (then it is stopped, if the runtime has not)."""
        claimed = prestart.take("codex", argv, env)  # started by the command line, if it matches
        try:
            async with (adopt_child(claimed, name=APP_SERVER_NAME) if claimed is not None
                        else open_child(argv, env=env, name=APP_SERVER_NAME)) as child:
                self._child = child
                task_status.started()
                await stop.wait()
        except OSError as exc:  # the runtime meets (and reports) this again when it starts app-server
            log.info("%s was not started early: %s", APP_SERVER_NAME, type(exc).__name__)
            task_status.started()
        finally:
            self._child = None


class EarlyCodexRuntime(ProviderRuntime):
    """Holds the early app-server; the real runtime is opened by the first call that needs it."""

    def __init__(self, context: RuntimeContext, task_group: anyio.abc.TaskGroup, early: EarlyChild) -> None:
        self._context = context
        self._tg = task_group
        self._early = early
        self._real: CodexRuntime | None = None
        self._lock = anyio.Lock()
        self._stop = anyio.Event()
        self._closed = anyio.Event()

    async def _host(self, *, task_status: anyio.abc.TaskStatus[CodexRuntime]) -> None:
        from acp_agent_codex.runtime import open_codex_runtime

        try:
            async with open_codex_runtime(self._context, early=self._early) as runtime:
                task_status.started(runtime)
                await self._stop.wait()
        finally:
            self._closed.set()

    async def runtime(self) -> CodexRuntime:
        async with self._lock:
            if self._real is None:
                self._real = await self._tg.start(self._host)
            return self._real

    async def aclose(self) -> None:
        """Close the real runtime (it stops its app-server) and wait for it, shielded."""
        self._stop.set()
        if self._real is not None:
            with anyio.CancelScope(shield=True):
                await self._closed.wait()

    async def new_session(self, cwd: str, mcp_servers: Sequence[McpServer], channel: SessionChannel) -> SessionStart:
        return await (await self.runtime()).new_session(cwd, mcp_servers, channel)

    async def prompt(self, session_id: str, prompt: Sequence[ContentBlock], turn: TurnChannel) -> TurnEnd:
        return await (await self.runtime()).prompt(session_id, prompt, turn)

    async def cancel(self, session_id: str) -> None:
        if self._real is not None:  # no runtime yet: no session, nothing to cancel
            await self._real.cancel(session_id)

    async def load_session(self, session_id: str, cwd: str, mcp_servers: Sequence[McpServer],
                           channel: SessionChannel, *, replay: bool) -> SessionStart:
        return await (await self.runtime()).load_session(session_id, cwd, mcp_servers, channel, replay=replay)

    async def list_sessions(self, cwd: str | None, cursor: str | None) -> SessionListing:
        return await (await self.runtime()).list_sessions(cwd, cursor)

    async def steer(self, session_id: str, prompt: Sequence[ContentBlock], turn: TurnChannel) -> bool:
        return self._real is not None and await self._real.steer(session_id, prompt, turn)

    async def fork_session(self, session_id: str, cwd: str, mcp_servers: Sequence[McpServer],
                           channel: SessionChannel) -> SessionStart:
        return await (await self.runtime()).fork_session(session_id, cwd, mcp_servers, channel)

    async def delete_session(self, session_id: str) -> None:
        await (await self.runtime()).delete_session(session_id)

    async def close_session(self, session_id: str) -> None:
        if self._real is not None:  # no runtime yet: no session to close
            await self._real.close_session(session_id)

    async def set_mode(self, session_id: str, mode_id: str) -> None:
        await (await self.runtime()).set_mode(session_id, mode_id)

    async def renew_environment(self, environ: Mapping[str, str]) -> bool:
        return await (await self.runtime()).renew_environment(environ)

    async def set_config_option(self, session_id: str, config_id: str, value: str) -> Sequence[ConfigOption]:
        return await (await self.runtime()).set_config_option(session_id, config_id, value)


@asynccontextmanager
async def open_early_runtime(context: RuntimeContext, binary: str | None) -> AsyncIterator[ProviderRuntime]:
    """Spawn app-server now (when there is a binary) and yield the runtime that adopts it."""
    early = EarlyChild()
    stop = anyio.Event()
    async with anyio.create_task_group() as task_group:
        if binary is not None:
            await task_group.start(early.hold, [binary, "app-server"], child_environment(context.environ), stop)
        runtime = EarlyCodexRuntime(context, task_group, early)
        try:
            yield runtime
        finally:
            await runtime.aclose()  # the real runtime stops its app-server before the early holder
            stop.set()
