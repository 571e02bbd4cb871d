"""The Codex runtime: one `codex app-server` per agent process, spoken to with the core's JSON-RPC layer.

Sessions are app-server threads and prompts are turns. The first start takes the app-server
started (and already handshaken) when the runtime opened (`acp_agent_codex.appserver`); the
process is started again after it dies (the sessions that lived in it are resumed on their next prompt, and `RuntimeReplaced` ends
their transport-loss incidents). Every wait on the backend runs in its
phase (`initializing`, `preparing`, `submitting`, `running`, `reading`).

Notifications arrive on the reader task, in wire order. Those of a thread with a prompt running
are queued to that prompt, which folds them through a `TurnTranslator` in order (the queue is
bounded: while it is full the reader waits, so a client that stops reading stalls app-server
rather than growing the agent's memory; no task that drains a queue ever waits for an app-server
answer meanwhile, see `acp_agent.sessions.queue`); those outside a
prompt become session-scoped events (notices, `SessionFailure`s), delivered at once through the
session's channel (kept from its creation or load). Process-wide
notices sent at start-up (`configWarning`, `deprecationNotice`) go to the session whose creation
(or prompt) comes next, so they reach the client as soon as a session exists.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing, asynccontextmanager
from typing import Any, Final

import anyio
import anyio.abc
from attrs import evolve

from acp_agent.provider import (
    DEFAULT_MAX_ITEMS,
    AvailableCommandsUpdate,
    ConfigOption,
    ConnectionClosed,
    ContentBlock,
    FailureObservation,
    McpServer,
    Methods,
    Notice,
    Phase,
    PhaseFailed,
    ProviderRuntime,
    RpcError,
    RuntimeContext,
    RuntimeReplaced,
    SessionChannel,
    SessionFailure,
    SessionListing,
    SessionModeState,
    SessionNotFound,
    SessionStart,
    SessionTitle,
    TurnChannel,
    TurnEnd,
    TurnFailed,
    TurnQueue,
    additional_directories,
    agent_text,
    bound,
)
from acp_agent_codex import approvals, codex_home, commands, find_codex, items, modes, settings, threads, titles
from acp_agent_codex.appserver import (
    GLOBAL_NOTICES,
    NOTIFICATIONS,
    AppServer,
)
from acp_agent_codex.classify import (
    classify_error,
    notice_for,
    rpc_error_observation,
    spawn_failed,
    transport_lost,
)
from acp_agent_codex.modes import DEFAULT_MODE, MODES, mode_of, policy_params, user_config_sets_policy
from acp_agent_codex.supervisor import Supervisor
from acp_agent_codex.threads import (
    RESUME_BYTES,
    ActiveTurn,
    Barrier,
    QueueItem,
    ThreadState,
    mcp_config,
    rollout_size,
    session_info,
)
from acp_agent_codex.translate import TurnTranslator, turn_id_of

log = logging.getLogger(__name__)
PROVIDER = "codex"

TURN_QUEUE_ITEMS = DEFAULT_MAX_ITEMS
"""How many app-server notifications a running prompt holds before the reader waits (backpressure)."""
INTERRUPT_TIMEOUT_S: Final = 10.0
RESPONSIVE_S: Final = 2.0
"""How long app-server may take to answer a request that needs no work (`turn/interrupt`,
`thread/loaded/list`) when a cancel, a close or a missed deadline asks it to: one that does not
is frozen, and is replaced (killed with its process group; the sessions resume on a new one)."""


class CodexRuntime(ProviderRuntime):
    """Drives one app-server process (restarted when it dies) for every session of the agent."""

    def __init__(self, context: RuntimeContext, task_group: anyio.abc.TaskGroup, binary: str,
                 early: AppServer | None = None) -> None:
        self.context = context
        self.clock = context.clock
        self._tg = task_group
        self._servers = Supervisor(self.clock, task_group, binary, early, self._methods, self._lost)
        self._threads: dict[str, ThreadState] = {}
        self._router = context.router
        self._router.serve(self._outside)
        self._opening = 0
        self._default_policy = not user_config_sets_policy(context.environ)
        self._kept: dict[str, settings.Choices] = {}
        """What the user chose per session, kept after it is closed so a resume runs with it again."""
        self._kept_modes: dict[str, str] = {}
        """The mode the user chose for a session, for its resume or load in this process."""
        self._codex_ids: dict[str, str] = {}
        """The app-server thread of a session started afresh (`_start_afresh`), kept after it is
        closed so a load in this process finds its turns; `_session_ids` is its inverse."""
        self._session_ids: dict[str, str] = {}
        self._titles = titles.enabled(context.environ)
        self._title_threads: dict[str, titles.Collector] = {}
        """The ephemeral threads asking for a session's title, by thread id."""

    # -- the app-server process -------------------------------------------------------------

    async def _ready(self) -> AppServer:
        """The running app-server, started (again) under the initializing phase when needed; the
        sessions of a replaced one resume on the new one (`RuntimeReplaced`)."""
        server, replaced = await self._servers.ready(
            self.context.environ, idle=lambda: not any(thread.active is not None for thread in self._threads.values()))
        if replaced:
            for thread in list(self._threads.values()):
                await self._router.emit(thread.thread_id, RuntimeReplaced())
        return server

    def _lost(self, server: AppServer) -> None:
        """The app-server died: its turns fail (transport lost), its waiters wake up."""
        server.alive = False
        for event in server.started_threads.values():
            event.set()
        for thread in self._threads.values():
            active = thread.active
            if active is not None and active.generation == server.generation:
                active.queue.fail()  # never waits: the reader that fills the queue has ended

    async def _interrupt_or_replace(self, server: AppServer, thread_id: str, turn_id: str | None) -> None:
        """Interrupt the turn (not acknowledged yet: it is interrupted once it is, and app-server is
        asked for nothing instead); an app-server that does not answer within RESPONSIVE_S is
        frozen and is replaced."""
        with anyio.move_on_after(RESPONSIVE_S) as waited:
            if turn_id is not None:
                await self._interrupt_turn(server, thread_id, turn_id)
            elif server.alive:
                try:
                    await server.call("thread/loaded/list", {})
                except (RpcError, ConnectionClosed) as exc:  # an error is an answer too
                    log.info("thread/loaded/list failed: %s", type(exc).__name__)
        if waited.cancelled_caught:
            method = "turn/interrupt" if turn_id is not None else "thread/loaded/list"
            self._replace(server, f"{method} unanswered for {RESPONSIVE_S:g} s")

    def _replace(self, server: AppServer, why: str) -> None:
        self._servers.replace(server, why)

    async def aclose(self) -> None:
        await self._servers.aclose()

    def _methods(self, server: AppServer) -> Methods:
        notifications: dict[str, Callable[[Any], Awaitable[None]]] = {}
        for method in NOTIFICATIONS:
            notifications[method] = self._notification_handler(server, method)
        requests: dict[str, Callable[[Any], Awaitable[Any]]] = {
            method: self._approval_handler(server, method) for method in approvals.REQUESTS
        }
        return Methods(requests=requests, notifications=notifications, ordered=frozenset(notifications))

    def _notification_handler(self, server: AppServer, method: str) -> Callable[[Any], Awaitable[None]]:
        async def handle(params: Any) -> None:
            await self._on_notification(server, method, params if isinstance(params, Mapping) else {})

        return handle

    def _approval_handler(self, server: AppServer, method: str) -> Callable[[Any], Awaitable[Any]]:
        async def handle(params: Any) -> Any:
            return await self._on_approval(server, method, params if isinstance(params, Mapping) else {})

        return handle

    # -- routing ----------------------------------------------------------------------------------

    async def _on_notification(self, server: AppServer, method: str, params: Mapping[str, Any]) -> None:
        if method == "thread/started":
            thread = params.get("thread")
            thread_id = thread.get("id") if isinstance(thread, Mapping) else None
            if isinstance(thread_id, str):
                server.started_threads.setdefault(thread_id, anyio.Event()).set()
            return
        thread_id = params.get("threadId")
        collector = self._title_threads.get(thread_id) if isinstance(thread_id, str) else None
        if collector is not None:
            collector.feed(method, params)
            return
        if method in GLOBAL_NOTICES or (method == "warning" and not isinstance(thread_id, str)):
            notice = notice_for(method, params)
            if notice is not None:
                # Into a running prompt if there is one, else kept for the next session.
                await self._router.notice(notice, lambda event: notice)
            return
        thread = self._thread_of(thread_id)
        if thread is None:
            if method == "warning" and self._opening:
                notice = notice_for(method, params)
                if notice is not None:
                    self._router.keep_notice(notice)  # a thread being created right now
            return
        if method == "thread/tokenUsage/updated" and isinstance(params.get("tokenUsage"), Mapping):
            thread.usage = params["tokenUsage"]
        if method == "thread/name/updated":
            thread.titled = True  # named (by us, or by another client of this app-server)
        active = thread.active
        if active is not None and active.generation != server.generation:
            await self._outside_turn(thread, method, params)  # a prompt of an app-server now gone
        else:
            # Into the prompt's queue (the reader waits while it is full: a stalled client stalls
            # app-server instead of growing our memory), else outside any prompt, in order.
            await self._router.deliver(thread.thread_id, (method, params))

    async def _outside(self, thread_id: str, item: Any) -> None:
        """An item no running prompt takes (anymore)."""
        thread = self._threads.get(thread_id)
        if isinstance(item, Barrier):
            item.reached.set()
        elif thread is None:
            return
        elif isinstance(item, Notice):
            await self._router.emit(thread.thread_id, item)
        else:
            await self._outside_turn(thread, *item)

    async def _outside_turn(self, thread: ThreadState, method: str, params: Mapping[str, Any]) -> None:
        """A thread's notification that belongs to no running prompt of ours."""
        if method == "turn/started" and thread.orphaned:
            turn_id = turn_id_of(method, params)
            server = self._servers.server
            if turn_id is not None and server is not None:
                thread.orphaned = False
                log.info("interrupting turn %s of thread %s: its prompt already ended", turn_id, thread.thread_id)
                self._tg.start_soon(self._interrupt_turn, server, thread.codex_id, turn_id)
            return
        if method == "error":
            result = classify_error(params)
            if isinstance(result, FailureObservation):
                result = self.context.hooks.classify_failure(PROVIDER, params) or result
                await self._router.emit(thread.thread_id, SessionFailure(result))
        elif method == "warning":
            notice = notice_for(method, params)
            if notice is not None:
                await self._router.emit(thread.thread_id, notice)
        elif method == "thread/name/updated":
            await self._router.emit(thread.thread_id, items.session_title(params))
        else:
            log.debug("dropped %s outside a prompt of thread %s", method, thread.thread_id)

    # -- sessions -----------------------------------------------------------------------------------

    def _thread_of(self, codex_id: Any) -> ThreadState | None:
        """The session of an app-server thread (the `threadId` of a notification or a request)."""
        if not isinstance(codex_id, str):
            return None
        return self._threads.get(self._session_ids.get(codex_id, codex_id))

    def _codex_id(self, session_id: str) -> str:
        """The app-server thread of a session, open or closed."""
        thread = self._threads.get(session_id)
        return thread.codex_id if thread is not None else self._codex_ids.get(session_id, session_id)

    def _thread(self, session_id: str) -> ThreadState:
        thread = self._threads.get(session_id)
        if thread is None:
            raise SessionNotFound(session_id)
        return thread

    async def _models(self, server: AppServer) -> list[Mapping[str, Any]]:
        if server.models is None:
            await server.listed.wait()  # asked with the handshake, as app-server started
            result = server.model_list
            if result is None:
                try:
                    result = await server.call("model/list", {})
                except RpcError as exc:
                    log.info("model/list failed: %s", exc.message)
                    result = {}
            server.models = settings.visible_models(result)
        return server.models

    def _known_models(self) -> list[Mapping[str, Any]]:
        server = self._servers.server
        return list(server.models or []) if server is not None else []

    def _choices(self, server: AppServer, thread_id: str, result: Mapping[str, Any]) -> settings.Choices:
        return threads.choices_with(server.models or [], result, self._kept.get(thread_id))

    def _setup(self, server: AppServer | None, thread: ThreadState) -> SessionStart:
        return SessionStart(
            thread.thread_id,
            modes=SessionModeState(current_mode_id=thread.mode, available_modes=list(MODES)),
            config_options=settings.options(thread.choices, list(server.models or []) if server else []),
        )

    async def new_session(self, cwd: str, mcp_servers: Sequence[McpServer], channel: SessionChannel) -> SessionStart:
        server = await self._ready()
        config = mcp_config(mcp_servers)
        roots = additional_directories(channel)
        result = await self._start_thread(server, cwd, config, roots, DEFAULT_MODE)
        thread_id = result["thread"]["id"]
        thread = ThreadState(thread_id, cwd, config, server.generation, mode_of(result),
                             self._choices(server, thread_id, result), roots=roots, titled=not self._titles,
                             ran=False)
        self._threads[thread_id] = thread
        await channel.emit(AvailableCommandsUpdate(list(commands.COMMANDS)))
        return self._setup(server, thread)

    async def _start_thread(self, server: AppServer, cwd: str, config: Mapping[str, Any],
                            roots: Sequence[str], mode: str) -> Any:
        """`thread/start` under the preparing phase; its result once app-server announced the thread."""
        params: dict[str, Any] = {"cwd": cwd}
        if self._default_policy:
            params.update(policy_params(mode))
        if config:
            params["config"] = dict(config)
        if roots:
            params["runtimeWorkspaceRoots"] = [cwd, *roots]
        self._opening += 1
        try:
            async with self.clock.phase(Phase.PREPARING, label="thread/start"):
                result = await threads.call_in(server, "thread/start", params, Phase.PREPARING)
                thread_id = result["thread"]["id"]
                # thread/started follows the response, after the thread's own start-up notices.
                await server.started_threads.setdefault(thread_id, anyio.Event()).wait()
                if not server.alive:
                    raise PhaseFailed(transport_lost(Phase.PREPARING.value, submitted=False))
                await self._models(server)
        finally:
            self._opening -= 1
        return result

    async def _start_afresh(self, server: AppServer, thread: ThreadState) -> None:
        """A session whose thread never ran a turn, on a new app-server: app-server keeps no
        rollout before a thread's first turn (`thread/resume` finds none), so a new thread with the
        session's cwd, roots, MCP servers and mode takes its place under the same session id (its
        settings go with its next turn). Nothing is lost: it had no history."""
        result = await self._start_thread(server, thread.cwd, thread.mcp_config, thread.roots, thread.mode)
        codex_id = result["thread"]["id"]
        log.info("session %s had no turn yet: started afresh as thread %s", thread.thread_id, codex_id)
        self._session_ids.pop(thread.codex_id, None)
        thread.codex_id = self._codex_ids[thread.thread_id] = codex_id
        self._session_ids[codex_id] = thread.thread_id
        thread.generation = server.generation
        thread.mode_dirty = thread.mode_explicit
        thread.choices.dirty = set(thread.choices.explicit)

    async def _resume(self, server: AppServer, session_id: str, cwd: str, config: Mapping[str, Any],
                      phase: Phase, mode: str = DEFAULT_MODE, roots: Sequence[str] = ()) -> Mapping[str, Any]:
        params = threads.open_params(session_id, cwd, config, roots, self._policy(mode))
        result = await threads.call_in(server, "thread/resume", params, phase, missing=session_id)
        return result if isinstance(result, Mapping) else {}

    def _policy(self, mode: str) -> dict[str, str] | None:
        """The thread fields of `mode`; None when the user's config.toml chooses the policy."""
        return policy_params(mode) if self._default_policy else None

    async def load_session(self, session_id: str, cwd: str, mcp_servers: Sequence[McpServer], channel: SessionChannel,
                           *, replay: bool) -> SessionStart:
        server = await self._ready()
        config = mcp_config(mcp_servers)
        previous = self._threads.get(session_id)
        codex_id = self._codex_id(session_id)
        size = await anyio.to_thread.run_sync(rollout_size, codex_home(self.context.environ), codex_id)
        reopened: ThreadState | None = None
        self._opening += 1
        try:
            # thread/resume reads the whole rollout before it answers: its budget grows with it
            async with self.clock.phase(Phase.READING, label="thread/resume", scale=size / RESUME_BYTES):
                try:
                    result = await self._resume(server, codex_id, cwd, config, Phase.READING,
                                                self._kept_modes.get(session_id, DEFAULT_MODE),
                                                roots=additional_directories(channel))
                except SessionNotFound:
                    if previous is None or (previous.ran and previous.generation != server.generation):
                        raise SessionNotFound(session_id) from None
                    reopened = previous
                else:
                    await self._models(server)
        finally:
            self._opening -= 1
        if reopened is not None:
            # A thread that never ran a turn has no rollout to resume: it is reopened as it is (the
            # cwd and MCP servers it was started with stay its own), started afresh if its
            # app-server was replaced.
            log.info("thread %s has no rollout yet; reopening it as it is", codex_id)
            if reopened.generation != server.generation:
                await self._start_afresh(server, reopened)
            await channel.emit(AvailableCommandsUpdate(list(commands.COMMANDS)))
            return self._setup(server, reopened)
        thread = ThreadState(session_id, cwd, config, server.generation, mode_of(result),
                             self._choices(server, session_id, result), roots=additional_directories(channel),
                             codex_id=codex_id)
        kept_mode = self._kept_modes.get(session_id)
        if kept_mode is not None:  # sent with its next turn too (a config.toml policy sent none above)
            thread.mode, thread.mode_dirty, thread.mode_explicit = kept_mode, True, True
        if replay:
            await self._replay(server, codex_id, channel)
        self._threads[session_id] = thread
        named = result.get("thread")
        info = session_info(named) if isinstance(named, Mapping) else None
        if info is not None and isinstance(named, Mapping) and threads.text_of(named.get("name")):
            # the thread's name, as codex-acp publishes it on load (an unnamed one keeps none)
            updated = info.updated_at if isinstance(info.updated_at, str) else None
            await channel.emit(SessionTitle(named["name"], updated))
        await channel.emit(AvailableCommandsUpdate(list(commands.COMMANDS)))
        return self._setup(server, thread)

    async def _replay(self, server: AppServer, session_id: str, channel: SessionChannel) -> None:
        """Send the stored turns on page by page, as they come: each page within the read budget
        of the one before (a deadline on progress: a long thread is never cut off)."""
        recogniser = functools.partial(self.context.hooks.recognise_history, PROVIDER)
        pages = self.clock.paced(Phase.READING, threads.pages(server, session_id), label="thread/turns/list")
        self._opening += 1
        try:
            async with aclosing(pages):
                async for turns, last in pages:
                    for event in items.history_events(turns, self.context.redact, recogniser, last=last):
                        await channel.emit(event)
        finally:
            self._opening -= 1

    async def fork_session(self, session_id: str, cwd: str, mcp_servers: Sequence[McpServer],
                           channel: SessionChannel) -> SessionStart:
        """`thread/fork`: a new thread with the source's turns, in `cwd`, with the source's mode and
        settings. A thread this app-server holds that never ran a turn has nothing to copy (no
        rollout): its fork is a new thread."""
        server = await self._ready()
        source = self._threads.get(session_id)
        mode = source.mode if source is not None else DEFAULT_MODE
        config = mcp_config(mcp_servers)
        roots = additional_directories(channel)
        params = threads.open_params(self._codex_id(session_id), cwd, config, roots, self._policy(mode))
        self._opening += 1
        try:
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
                    await self._models(server)
        finally:
            self._opening -= 1
        if result is None:
            log.info("thread %s has no rollout yet; its fork is a new thread", session_id)
            started = await self.new_session(cwd, mcp_servers, channel)
            forked = self._threads[started.session_id]
        else:
            thread_id = result["thread"]["id"]
            forked = ThreadState(thread_id, cwd, config, server.generation, mode_of(result),
                                 self._choices(server, thread_id, result), roots=roots)
            self._threads[thread_id] = forked
            await channel.emit(AvailableCommandsUpdate(list(commands.COMMANDS)))
        if source is not None:
            self._inherit(server, source, forked)
        return self._setup(server, forked)

    def _inherit(self, server: AppServer, source: ThreadState, forked: ThreadState) -> None:
        """What the user chose for the source session goes on with its fork (sent with its first turn)."""
        threads.inherit(server.models or [], source, forked)
        if source.mode_explicit:
            self._kept_modes[forked.thread_id] = source.mode
        if forked.choices.explicit:
            self._kept[forked.thread_id] = forked.choices

    async def delete_session(self, session_id: str) -> None:
        """`thread/archive`, as codex-acp does: the thread leaves `thread/list` (and `session/list`)."""
        server = await self._ready()
        async with self.clock.phase(Phase.PREPARING, label="thread/archive"):
            await threads.call_in(server, "thread/archive", {"threadId": self._codex_id(session_id)},
                                  Phase.PREPARING, missing=session_id)
        self._kept.pop(session_id, None)
        self._kept_modes.pop(session_id, None)
        self._session_ids.pop(self._codex_ids.pop(session_id, ""), None)

    async def list_sessions(self, cwd: str | None, cursor: str | None) -> SessionListing:
        server = await self._ready()
        async with self.clock.phase(Phase.READING, label="thread/list"):
            result = await threads.call_in(server, "thread/list", threads.list_params(cwd, cursor), Phase.READING)
        return threads.listing(result)

    async def close_session(self, session_id: str) -> None:
        thread = self._threads.pop(session_id, None)
        server = self._servers.server
        if thread is None or server is None or not server.alive or server.generation != thread.generation:
            return
        # As for a cancel: an app-server that does not answer within the grace is frozen (replaced).
        with anyio.move_on_after(RESPONSIVE_S) as waited:
            try:
                await server.call("thread/unsubscribe", {"threadId": thread.codex_id})
            except (RpcError, ConnectionClosed) as exc:
                log.info("thread/unsubscribe failed: %s", type(exc).__name__)
        if waited.cancelled_caught:
            self._replace(server, f"thread/unsubscribe unanswered for {RESPONSIVE_S:g} s")

    async def renew_environment(self, environ: Mapping[str, str]) -> bool:
        """app-server keeps the environment it started with: a new one (with `environ`) takes
        over at the next prompt that finds no turn running, and each thread resumes on it."""
        self.context = evolve(self.context, environ=dict(environ))
        self._servers.renew = True
        return True

    async def set_mode(self, session_id: str, mode_id: str) -> None:
        thread = self._thread(session_id)
        thread.mode = mode_id
        thread.mode_dirty = thread.mode_explicit = True
        self._kept_modes[session_id] = mode_id

    async def set_config_option(self, session_id: str, config_id: str, value: str) -> Sequence[ConfigOption]:
        thread = self._thread(session_id)
        models = self._known_models()
        settings.choose(thread.choices, models, config_id, value)  # an offered option and value
        self._kept[session_id] = thread.choices
        return settings.options(thread.choices, models)

    # -- turns ---------------------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: Sequence[ContentBlock], turn: TurnChannel) -> TurnEnd:
        thread = self._thread(session_id)
        server = await self._ready()
        if thread.generation != server.generation:
            try:
                async with self.clock.phase(Phase.PREPARING, label="thread/resume"):
                    await self._resume(server, thread.codex_id, thread.cwd, thread.mcp_config, Phase.PREPARING,
                                       thread.mode, thread.roots)
            except SessionNotFound:
                if thread.ran:
                    raise SessionNotFound(session_id) from None
                await self._start_afresh(server, thread)  # no rollout to resume: nothing to lose
            thread.generation = server.generation
            thread.mode_dirty = thread.mode_explicit
            thread.choices.dirty = set(thread.choices.explicit)
        command = commands.parse(prompt)
        if command is not None and (command.name in commands.LOCAL or commands.usage_problem(command)):
            await turn.emit(agent_text(await commands.answer(self.clock, server, thread, self._known_models(), command)))
            return TurnEnd("end_turn")
        active = ActiveTurn(channel=turn, generation=server.generation,
                            queue=TurnQueue[QueueItem](TURN_QUEUE_ITEMS),
                            translator=TurnTranslator(classify=bound(self.context.hooks, PROVIDER)))
        thread.active = active
        self._router.start_turn(thread.thread_id, active.queue)
        try:
            end = await self._run_turn(server, thread, active, prompt, command)
            if command is None and end.stop_reason == "end_turn":
                await self._title_after_first_turn(server, thread, prompt, turn)
            return end
        except TurnFailed:
            raise  # app-server ended the turn (or never started it): nothing to stop
        except BaseException:
            # The prompt ended before its turn did (the cancel grace ran out, a deadline, shutdown,
            # an error in the agent): app-server may still run it, and the next turn/start would
            # meet it. Stop it, once the queue is closed: a reader waiting for room could not read
            # the interrupt's answer.
            with anyio.CancelScope(shield=True):
                if active.turn_id is None:
                    thread.orphaned = True
                await self._end_turn(thread, active)
                await self._interrupt_or_replace(server, thread.codex_id, active.turn_id)
            raise
        finally:
            await self._end_turn(thread, active)

    def _turn_params(self, thread: ThreadState, prompt: Sequence[ContentBlock]) -> dict[str, Any]:
        params: dict[str, Any] = {"threadId": thread.codex_id, "input": items.prompt_input(prompt)}
        if thread.mode_dirty:
            params.update(modes.turn_policy(thread.mode))
        params.update(settings.turn_overrides(thread.choices, self._known_models()))
        return params

    async def _run_turn(self, server: AppServer, thread: ThreadState, active: ActiveTurn,
                        prompt: Sequence[ContentBlock], command: commands.Command | None = None) -> TurnEnd:
        turn = active.channel
        if command is None:
            method, params = "turn/start", self._turn_params(thread, prompt)
        else:
            method, params = commands.request(command, thread.codex_id)
        try:
            async with self.clock.phase(Phase.SUBMITTING, label=method):
                result = await server.call(method, params)
        except ConnectionClosed:
            if active.cancel_requested:
                return TurnEnd("cancelled")  # app-server did not answer the cancel: it was replaced
            observation = transport_lost(Phase.SUBMITTING.value, submitted=True)
            turn.record_failure(observation)
            raise TurnFailed(observation) from None
        except RpcError as exc:
            raise TurnFailed(rpc_error_observation(exc.code, exc.message, Phase.SUBMITTING.value)) from None
        thread.ran = True
        if command is None:  # a command's request carries no settings: the next turn/start does
            thread.mode_dirty = False
            thread.choices.dirty.clear()
        codex_turn = result.get("turn") if isinstance(result, Mapping) else None
        turn_id = codex_turn.get("id") if isinstance(codex_turn, Mapping) else None
        active.acknowledged(turn_id if isinstance(turn_id, str) else None)
        if active.turn_id is not None:
            # Codex stores this id with the turn: a replayed failure then keeps the live incident id.
            turn.adopt_turn_id(active.turn_id)
        if active.cancel_requested:
            # In the background: waiting here for the answer, with the queue full and the reader
            # waiting for room, would wait for ever.
            self._tg.start_soon(self._interrupt, server, thread, active)
        return await active.run(self.clock, functools.partial(self._take, thread, active),
                                functools.partial(self._gone, active))

    @staticmethod
    def _gone(active: ActiveTurn) -> TurnEnd | FailureObservation:
        """The turn's queue ended: app-server is gone (or was replaced under a cancel)."""
        if active.cancel_requested:
            return TurnEnd("cancelled")  # app-server did not stop the turn: it was replaced
        return transport_lost(Phase.RUNNING.value, submitted=True)

    async def _take(self, thread: ThreadState, active: ActiveTurn,
                    entry: QueueItem) -> tuple[str, Mapping[str, Any]] | None:
        """A queued entry: a barrier or a notice is the runtime's; another turn's notification
        belongs to no prompt; the rest is the translator's."""
        if isinstance(entry, Barrier):
            entry.reached.set()
            return None
        if isinstance(entry, Notice):
            await active.channel.emit(entry)
            return None
        method, params = entry
        turn_id = turn_id_of(method, params)
        if active.turn_id is None and method == "turn/started" and turn_id is not None:
            active.turn_id = turn_id
            active.known.set()
        if turn_id is not None and turn_id != active.turn_id:
            await self._outside_turn(thread, method, params)
            return None
        return entry

    async def _end_turn(self, thread: ThreadState, active: ActiveTurn) -> None:
        """What was queued to a prompt that has ended now belongs to no prompt (runs once)."""
        active.known.set()
        if active.queue.closed:
            return
        if thread.active is active:
            thread.active = None
        with anyio.CancelScope(shield=True):
            await self._router.end_turn(thread.thread_id, active.queue)

    async def _title_after_first_turn(self, server: AppServer, thread: ThreadState, prompt: Sequence[ContentBlock],
                                      turn: TurnChannel) -> None:
        """After a new session's first completed turn, as codex-acp: the prompt as its title at
        once, then the model's title, generated in the background."""
        text = titles.source(prompt)
        if thread.titled or not text:
            return
        thread.titled = True
        await turn.emit(SessionTitle(text))  # the core makes it one short line
        model = titles.model(server.models or [], thread.choices.model)
        codex_id = thread.codex_id
        self._tg.start_soon(titles.generate, server, codex_id, thread.cwd, text, model, self._title_threads,
                            lambda: self._thread_of(codex_id) is not None)

    async def _interrupt(self, server: AppServer, thread: ThreadState, active: ActiveTurn) -> None:
        if active.turn_id is not None:
            await self._interrupt_turn(server, thread.codex_id, active.turn_id)

    async def _interrupt_turn(self, server: AppServer, thread_id: str, turn_id: str) -> None:
        if not server.alive:
            return
        with anyio.move_on_after(INTERRUPT_TIMEOUT_S):
            try:
                await server.call("turn/interrupt", {"threadId": thread_id, "turnId": turn_id})
            except (RpcError, ConnectionClosed) as exc:
                log.info("turn/interrupt failed: %s", type(exc).__name__)

    async def steer(self, session_id: str, prompt: Sequence[ContentBlock], turn: TurnChannel) -> bool:
        """app-server's `turn/steer`: the input joins the running turn (`expectedTurnId` makes
        app-server refuse it if that turn is over, and then the core treats the session as idle)."""
        thread = self._threads.get(session_id)
        active = thread.active if thread is not None else None
        if thread is None or active is None or active.channel is not turn or active.cancel_requested:
            return False
        server = await self._ready()
        async with self.clock.phase(Phase.SUBMITTING, label="turn/steer"):
            await active.known.wait()  # turn/start answered (or turn/started read)
            turn_id = active.turn_id
            if turn_id is None or thread.active is not active or server.generation != active.generation:
                return False
            params = {"threadId": thread.codex_id, "expectedTurnId": turn_id,
                      "input": items.prompt_input(prompt)}
            try:
                await server.call("turn/steer", params)
            except ConnectionClosed:
                raise PhaseFailed(transport_lost(Phase.SUBMITTING.value, submitted=True)) from None
            except RpcError as exc:
                # codex 0.163: "no active turn to steer", "expected active turn id `…`"
                message = exc.message.lower()
                if thread.active is not active or "no active turn" in message or "expected active turn" in message:
                    log.info("turn/steer found the turn over (%d)", exc.code)
                    return False
                raise PhaseFailed(rpc_error_observation(exc.code, exc.message, Phase.SUBMITTING.value)) from None
        return True

    async def cancel(self, session_id: str) -> None:
        thread = self._threads.get(session_id)
        active = thread.active if thread is not None else None
        if thread is None or active is None:
            return
        active.cancel_requested = True
        server = self._servers.server
        if server is None or server.generation != active.generation:
            return
        await self._interrupt_or_replace(server, thread.codex_id, active.turn_id)

    async def _on_approval(self, server: AppServer, method: str, params: Mapping[str, Any]) -> Any:
        """An approval request (or a question) of a thread's running turn on this app-server."""
        thread = self._thread_of(params.get("threadId"))
        active = thread.active if thread is not None else None
        if active is not None and active.generation != server.generation:
            active = None  # a prompt of an app-server now gone
        return await approvals.answer(active, method, params)


@asynccontextmanager
async def open_codex_runtime(context: RuntimeContext, task_group: anyio.abc.TaskGroup | None = None,
                             early: AppServer | None = None) -> AsyncIterator[CodexRuntime]:
    """The runtime for one agent process (in `task_group`, else its own); its first app-server is
    `early` (started as the runtime opened: `acp_agent_codex.open_runtime`), else one
    started on first use."""
    binary = find_codex(context.environ)
    if binary is None:
        raise PhaseFailed(spawn_failed(Phase.INITIALIZING.value, "was not found (none bundled, ACP_AGENT_CODEX_BIN unset)"))
    async with contextlib.AsyncExitStack() as stack:
        if task_group is None:
            task_group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(task_group.cancel_scope.cancel)
        runtime = CodexRuntime(context, task_group, binary, early)
        try:
            yield runtime
        finally:
            await runtime.aclose()


__all__ = ["MODES", "CodexRuntime", "mcp_config", "mode_of", "open_codex_runtime", "rollout_size", "session_info",
           "user_config_sets_policy"]
