"""The Codex sessions as app-server threads: opened (new, load, fork), resumed on a new
app-server (or started afresh there when they have no rollout yet), deleted, listed and closed.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any

import anyio

from acp_agent.provider import (
    AvailableCommandsUpdate,
    ConnectionClosed,
    McpServer,
    MessageNotFound,
    Phase,
    PhaseClock,
    PhaseFailed,
    RpcError,
    RuntimeContext,
    RuntimeReplaced,
    SessionChannel,
    SessionListing,
    SessionModeState,
    SessionNotFound,
    SessionRouter,
    SessionStart,
    SessionTitle,
    additional_directories,
    custom_instructions,
    fork_at,
    gateway_route,
    takes_subagents,
)
from acp_agent_codex import codex_home, commands, items, settings, threads, titles
from acp_agent_codex.appserver import AppServer
from acp_agent_codex.child_history import ChildHistory
from acp_agent_codex.classify import rpc_error_observation, transport_lost
from acp_agent_codex.gateway import SLOT, route_config
from acp_agent_codex.modes import DEFAULT_MODE, MODES, mode_of, policy_params, user_config_sets_policy
from acp_agent_codex.subagents import Children
from acp_agent_codex.supervisor import Supervisor
from acp_agent_codex.threads import RESUME_BYTES, ThreadState, mcp_config, rollout_size, session_info

log = logging.getLogger(__name__)
PROVIDER = "codex"


def thread_config(mcp_servers: Sequence[McpServer], channel: SessionChannel) -> dict[str, Any]:
    """A thread's config overrides: the request's MCP servers and the client's gateway as the
    session is opened (`gateway`); the session keeps them for its life, on every app-server."""
    return {**mcp_config(mcp_servers), **route_config(gateway_route(channel, SLOT))}


class Sessions:
    """Opens and closes the sessions of `table` (the runtime's, by session id) on the app-server
    `servers` keeps; `router` tells them when that app-server was replaced."""

    def __init__(self, servers: Supervisor, table: dict[str, ThreadState], router: SessionRouter,
                 children: Children) -> None:
        self._servers = servers
        self._children = children
        self._table = table
        self._router = router
        self.clock: PhaseClock = servers.clock
        self._opening = 0
        self._default_policy = not user_config_sets_policy(servers.context.environ)
        self._titles = titles.enabled(servers.context.environ)
        self._codex_ids: dict[str, str] = {}
        """The app-server thread of a session started afresh (`_start_afresh`), kept after it is
        closed so a load in this process finds its turns; `_session_ids` is its inverse."""
        self._session_ids: dict[str, str] = {}

    @property
    def context(self) -> RuntimeContext:
        return self._servers.context

    @property
    def opening(self) -> bool:
        """A thread is being created or read right now (its start-up warnings are kept for it)."""
        return self._opening > 0

    @contextlib.contextmanager
    def _announcing(self) -> Iterator[None]:
        self._opening += 1
        try:
            yield
        finally:
            self._opening -= 1

    async def ready(self) -> AppServer:
        """The running app-server, started (again) under the initializing phase when needed; the
        sessions of a replaced one resume on the new one (`RuntimeReplaced`)."""
        server, replaced = await self._servers.ready(
            idle=lambda: not any(thread.active is not None for thread in self._table.values()))
        if replaced:
            for thread in list(self._table.values()):
                await self._router.emit(thread.thread_id, RuntimeReplaced())
        return server

    def thread_of(self, codex_id: Any) -> ThreadState | None:
        """The session of an app-server thread (the `threadId` of a notification or a request)."""
        if not isinstance(codex_id, str):
            return None
        return self._table.get(self._session_ids.get(codex_id, codex_id))

    def _codex_id(self, session_id: str) -> str:
        """The app-server thread of a session, open or closed."""
        thread = self._table.get(session_id)
        return thread.codex_id if thread is not None else self._codex_ids.get(session_id, session_id)

    def _thread(self, server: AppServer, thread_id: str, cwd: str, config: dict[str, Any], result: Mapping[str, Any],
                roots: tuple[str, ...], **fields: Any) -> ThreadState:
        choices = settings.opened(server.models or [], result)
        return ThreadState(thread_id, cwd, config, server.generation, mode_of(result), choices, roots=roots, **fields)

    @staticmethod
    def _setup(server: AppServer, thread: ThreadState) -> SessionStart:
        return SessionStart(
            thread.thread_id,
            modes=SessionModeState(current_mode_id=thread.mode, available_modes=list(MODES)),
            config_options=settings.options(thread.choices, list(server.models or [])),
        )

    async def _opened(self, server: AppServer, thread: ThreadState, channel: SessionChannel) -> SessionStart:
        await channel.emit(AvailableCommandsUpdate(list(commands.COMMANDS)))
        return self._setup(server, thread)

    def _policy(self, mode: str) -> dict[str, str] | None:
        """The thread fields of `mode`; None when the user's config.toml chooses the policy."""
        return policy_params(mode) if self._default_policy else None

    # -- opening ------------------------------------------------------------------------------------

    async def new(self, cwd: str, mcp_servers: Sequence[McpServer], channel: SessionChannel) -> SessionStart:
        server = await self.ready()
        config = thread_config(mcp_servers, channel)
        roots, instructions = additional_directories(channel), custom_instructions(channel)
        result = await self._start_thread(server, cwd, config, roots, DEFAULT_MODE, instructions)
        thread_id = result["thread"]["id"]
        thread = self._thread(server, thread_id, cwd, config, result, roots, titled=not self._titles, ran=False,
                              instructions=instructions)
        self._table[thread_id] = thread
        return await self._opened(server, thread, channel)

    async def _start_thread(self, server: AppServer, cwd: str, config: Mapping[str, Any],
                            roots: Sequence[str], mode: str, instructions: str | None) -> Any:
        """`thread/start` under the preparing phase; its result once app-server announced the thread.
        `instructions`: AIR's `customInstructions`, as the thread's `developerInstructions`."""
        params: dict[str, Any] = {"cwd": cwd, **(self._policy(mode) or {})}
        if instructions:
            params["developerInstructions"] = instructions
        if config:
            params["config"] = dict(config)
        if roots:
            params["runtimeWorkspaceRoots"] = [cwd, *roots]
        with self._announcing():
            async with self.clock.phase(Phase.PREPARING, label="thread/start"):
                result = await threads.call_in(server, "thread/start", params, Phase.PREPARING)
                thread_id = result["thread"]["id"]
                # thread/started follows the response, after the thread's own start-up notices.
                await server.started_threads.setdefault(thread_id, anyio.Event()).wait()
                if not server.alive:
                    raise PhaseFailed(transport_lost(Phase.PREPARING.value, submitted=False))
                await self._servers.models(server)
        return result

    async def rejoin(self, server: AppServer, thread: ThreadState) -> None:
        """The session on `server` before its prompt: its thread resumed there when it ran on an
        older app-server (its settings go with its next turn)."""
        if thread.generation == server.generation:
            return
        try:
            async with self.clock.phase(Phase.PREPARING, label="thread/resume"):
                await self._resume(server, thread.codex_id, thread.cwd, thread.mcp_config, Phase.PREPARING,
                                   thread.mode, thread.roots, thread.instructions)
        except SessionNotFound:
            if thread.ran:
                raise SessionNotFound(thread.thread_id) from None
            await self._start_afresh(server, thread)  # no rollout to resume: nothing to lose
        thread.generation = server.generation
        thread.mode_dirty = thread.mode_explicit
        thread.choices.dirty = set(thread.choices.explicit)

    async def _start_afresh(self, server: AppServer, thread: ThreadState) -> None:
        """A session whose thread never ran a turn, on a new app-server: app-server keeps no
        rollout before a thread's first turn (`thread/resume` finds none), so a new thread with the
        session's cwd, roots, MCP servers and mode takes its place under the same session id (its
        settings go with its next turn). Nothing is lost: it had no history."""
        result = await self._start_thread(server, thread.cwd, thread.mcp_config, thread.roots, thread.mode,
                                          thread.instructions)
        codex_id = result["thread"]["id"]
        log.info("session %s had no turn yet: started afresh as thread %s", thread.thread_id, codex_id)
        self._session_ids.pop(thread.codex_id, None)
        thread.codex_id = self._codex_ids[thread.thread_id] = codex_id
        self._session_ids[codex_id] = thread.thread_id
        thread.generation = server.generation
        thread.mode_dirty = thread.mode_explicit
        thread.choices.dirty = set(thread.choices.explicit)

    async def _resume(self, server: AppServer, session_id: str, cwd: str, config: Mapping[str, Any],
                      phase: Phase, mode: str = DEFAULT_MODE, roots: Sequence[str] = (),
                      instructions: str | None = None) -> Mapping[str, Any]:
        params = threads.open_params(session_id, cwd, config, roots, self._policy(mode), instructions)
        result = await threads.call_in(server, "thread/resume", params, phase, missing=session_id)
        return result if isinstance(result, Mapping) else {}

    async def load(self, session_id: str, cwd: str, mcp_servers: Sequence[McpServer], channel: SessionChannel,
                   *, replay: bool) -> SessionStart:
        server = await self.ready()
        config = thread_config(mcp_servers, channel)
        roots, instructions = additional_directories(channel), custom_instructions(channel)
        previous = self._table.get(session_id)
        codex_id = self._codex_id(session_id)
        size = await anyio.to_thread.run_sync(rollout_size, codex_home(self.context.environ), codex_id)
        result: Mapping[str, Any] | None
        with self._announcing():
            # thread/resume reads the whole rollout before it answers: its budget grows with it
            async with self.clock.phase(Phase.READING, label="thread/resume", scale=size / RESUME_BYTES):
                try:
                    result = await self._resume(server, codex_id, cwd, config, Phase.READING, roots=roots,
                                                instructions=instructions)
                except SessionNotFound:
                    if previous is None or (previous.ran and previous.generation != server.generation):
                        raise SessionNotFound(session_id) from None
                    result = None
                else:
                    await self._servers.models(server)
            if result is None:
                # A thread that never ran a turn has no rollout to resume: it is reopened as it is
                # (the cwd and MCP servers it was started with stay its own), started afresh if its
                # app-server was replaced.
                assert previous is not None
                log.info("thread %s has no rollout yet; reopening it as it is", codex_id)
                if previous.generation != server.generation:
                    await self._start_afresh(server, previous)
                return await self._opened(server, previous, channel)
            thread = self._thread(server, session_id, cwd, config, result, roots, codex_id=codex_id,
                                  instructions=instructions)
            if replay:
                await replay_turns(server, self.clock, self.context, codex_id, channel)
        self._table[session_id] = thread
        named = result.get("thread")
        info = session_info(named) if isinstance(named, Mapping) else None
        if info is not None and isinstance(named, Mapping) and threads.text_of(named.get("name")):
            # the thread's name, as codex-acp publishes it on load (an unnamed one keeps none)
            updated = info.updated_at if isinstance(info.updated_at, str) else None
            await channel.emit(SessionTitle(named["name"], updated))
        return await self._opened(server, thread, channel)

    async def fork(self, session_id: str, cwd: str, mcp_servers: Sequence[McpServer],
                   channel: SessionChannel) -> SessionStart:
        """`thread/fork`: a new thread with the source's turns, in `cwd`, in the source's mode (the
        core re-applies what the user chose for the source). A thread this app-server holds that
        never ran a turn has nothing to copy (no rollout): its fork is a new thread."""
        server = await self.ready()
        source = self._table.get(session_id)
        mode = source.mode if source is not None else DEFAULT_MODE
        config = thread_config(mcp_servers, channel)
        roots, instructions = additional_directories(channel), custom_instructions(channel)
        params = threads.open_params(self._codex_id(session_id), cwd, config, roots, self._policy(mode),
                                     instructions)
        at = fork_at(channel)
        if at is not None:
            params["lastTurnId"] = await self._turn_holding(server, session_id, source, at)
        with self._announcing():
            async with self.clock.phase(Phase.FORKING, label="thread/fork"):
                try:
                    result = await server.call("thread/fork", params)
                except ConnectionClosed:
                    raise PhaseFailed(threads.possibly_applied(transport_lost(Phase.FORKING.value,
                                                                              submitted=False))) from None
                except RpcError as exc:
                    if not threads.not_found(exc):
                        raise PhaseFailed(rpc_error_observation(exc.code, exc.message, Phase.FORKING.value)) from None
                    if source is None or (source.ran and source.generation != server.generation):
                        raise SessionNotFound(session_id) from None
                    result = None
                if result is not None:
                    await self._servers.models(server)
        if result is None:
            log.info("thread %s has no rollout yet; its fork is a new thread", session_id)
            forked = self._table[(await self.new(cwd, mcp_servers, channel)).session_id]
        else:
            forked = self._thread(server, result["thread"]["id"], cwd, config, result, roots,
                                  instructions=instructions)
            self._table[forked.thread_id] = forked
            await channel.emit(AvailableCommandsUpdate(list(commands.COMMANDS)))
        return self._setup(server, forked)

    async def _turn_holding(self, server: AppServer, session_id: str, source: ThreadState | None,
                            message_id: str) -> str:
        """The turn a fork at `message_id` keeps the history through (app-server forks whole
        turns: `thread/fork.lastTurnId`, as codex-acp's SessionFork does)."""
        if source is not None and not source.ran:
            raise MessageNotFound(message_id)
        async with self.clock.phase(Phase.READING, label="thread/turns/list"):
            turn_id = await threads.turn_holding(server, self._codex_id(session_id), message_id)
        if turn_id is None:
            raise MessageNotFound(message_id)
        return turn_id

    # -- the rest of a session's life ---------------------------------------------------------------

    async def delete(self, session_id: str) -> None:
        """`thread/archive`, as codex-acp does: the thread leaves `thread/list` (and `session/list`)."""
        await self._on_thread("thread/archive", session_id)
        self._session_ids.pop(self._codex_ids.pop(session_id, ""), None)

    async def archive(self, session_id: str, archived: bool) -> None:
        """`thread/archive` or `thread/unarchive` (AIR's session index): app-server keeps the state."""
        await self._on_thread("thread/archive" if archived else "thread/unarchive", session_id)

    async def rename(self, session_id: str, title: str) -> str:
        """`thread/name/set`: app-server stores the name (`thread/list` shows it) and announces it
        with `thread/name/updated`."""
        await self._on_thread("thread/name/set", session_id, name=title)
        return title

    async def _on_thread(self, method: str, session_id: str, **params: Any) -> None:
        """`method` on the session's app-server thread (-32002 for a thread app-server lacks)."""
        server = await self.ready()
        async with self.clock.phase(Phase.PREPARING, label=method):
            await threads.call_in(server, method, {"threadId": self._codex_id(session_id), **params},
                                  Phase.PREPARING, missing=session_id)

    async def listing(self, cwd: str | None, cursor: str | None, *, archived: bool = False) -> SessionListing:
        """A `thread/list` page (of the archived threads with `archived`)."""
        server = await self.ready()
        params = threads.list_params(cwd, cursor)
        if archived:
            params["archived"] = True
        async with self.clock.phase(Phase.READING, label="thread/list"):
            result = await threads.call_in(server, "thread/list", params, Phase.READING)
        return threads.listing(result)

    async def close(self, session_id: str) -> None:
        """The session leaves the table; app-server stops sending its thread's notifications (one
        that does not answer within the grace is frozen, and is replaced, as for a cancel)."""
        thread = self._table.pop(session_id, None)
        if thread is not None:
            self._children.forget(thread.codex_id)
        server = self._servers.server
        if thread is None or server is None or not server.alive or server.generation != thread.generation:
            return
        await self._servers.within_grace(server, "thread/unsubscribe", self._servers.ask(
            server, "thread/unsubscribe", {"threadId": thread.codex_id}))


async def replay_turns(server: AppServer, clock: PhaseClock, context: RuntimeContext, session_id: str,
                       channel: SessionChannel) -> None:
    """Send a thread's stored turns on page by page, as they come: each page within the read
    budget of the one before (a deadline on progress: a long thread is never cut off). A client of
    child sessions gets each spawned child thread's history in its place (`child_history`)."""
    recogniser = functools.partial(context.hooks.recognise_history, PROVIDER)
    children = ChildHistory(server, clock, context.redact, session_id) if takes_subagents(channel) else None
    pages = clock.paced(Phase.READING, threads.pages(server, session_id), label="thread/turns/list")
    async with aclosing(pages):
        async for turns, last in pages:
            replayed = (await children.page(turns, last, recogniser) if children is not None
                        else items.history_events(turns, context.redact, recogniser, last=last))
            for event in replayed:
                await channel.emit(event)
