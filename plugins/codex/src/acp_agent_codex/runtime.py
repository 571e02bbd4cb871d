"""The Codex runtime: one `codex app-server` per agent process, spoken to with the core's JSON-RPC layer.

Sessions are app-server threads and prompts are turns. The runtime holds the session table,
answers the provider contract and routes app-server's notifications; its parts hold the rest:
`supervisor` the app-server process (started again after it dies: the sessions that lived in it
are resumed on their next prompt, and `RuntimeReplaced` ends their transport-loss incidents),
`sessions` opening and closing threads, `turns` a prompt's turn, `approvals` app-server's own
requests. Every wait on the backend runs in its phase (`initializing`, `preparing`,
`submitting`, `running`, `reading`).

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
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc

from acp_agent.provider import (
    ConfigOption,
    ContentBlock,
    McpServer,
    Methods,
    Notice,
    Phase,
    PhaseFailed,
    ProviderRuntime,
    RpcError,
    RuntimeContext,
    SessionChannel,
    SessionListing,
    SessionStart,
    SessionTable,
    TurnChannel,
    TurnEnd,
)
from acp_agent_codex import approvals, find_codex, settings
from acp_agent_codex.appserver import GLOBAL_NOTICES, NOTIFICATIONS, AppServer
from acp_agent_codex.classify import notice_for, rpc_error_observation, spawn_failed
from acp_agent_codex.modes import MODES, mode_of, user_config_sets_policy
from acp_agent_codex.sessions import Sessions
from acp_agent_codex.subagents import Children
from acp_agent_codex.supervisor import Supervisor
from acp_agent_codex.threads import Barrier, ThreadState, call_in, mcp_config, rollout_size, session_info
from acp_agent_codex.turns import Turns


class CodexRuntime(ProviderRuntime):
    """Drives one app-server process (restarted when it dies) for every session of the agent."""

    def __init__(self, context: RuntimeContext, task_group: anyio.abc.TaskGroup, binary: str,
                 early: AppServer | None = None) -> None:
        self._threads: SessionTable[ThreadState] = SessionTable()
        self._router = context.router
        self._router.serve(self._outside)
        self._servers = Supervisor(context, task_group, binary, early, self._methods, self._lost)
        self.children = Children()
        self.sessions = Sessions(self._servers, self._threads, self._router, self.children)
        self.turns = Turns(self._servers, self.sessions, self._router, task_group, self.children)

    @property
    def context(self) -> RuntimeContext:
        return self._servers.context

    # -- the app-server process -------------------------------------------------------------

    def _lost(self, server: AppServer) -> None:
        """The app-server died: its turns fail (transport lost), its waiters wake up."""
        server.alive = False
        for event in server.started_threads.values():
            event.set()
        for thread in self._threads.values():
            active = thread.active
            if active is not None and active.generation == server.generation:
                active.queue.fail()  # never waits: the reader that fills the queue has ended

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
        collector = self.turns.title_threads.get(thread_id) if isinstance(thread_id, str) else None
        if collector is not None:
            collector.feed(method, params)
            return
        if method in GLOBAL_NOTICES or (method == "warning" and not isinstance(thread_id, str)):
            notice = notice_for(method, params)
            if notice is not None:
                # Into a running prompt if there is one, else kept for the next session.
                await self._router.notice(notice, lambda event: notice)
            return
        own = self.sessions.thread_of(thread_id)
        thread = own or self.sessions.thread_of(self.children.root_of(thread_id))  # (a child thread's: its session's)
        if thread is None:
            if method == "warning" and self.sessions.opening:
                notice = notice_for(method, params)
                if notice is not None:
                    self._router.keep_notice(notice)  # a thread being created right now
            return
        self.children.spawned(method, params)  # here, in wire order: before the children's own notifications
        if own is not None and method == "thread/tokenUsage/updated" and isinstance(params.get("tokenUsage"), Mapping):
            thread.usage = params["tokenUsage"]
        if own is not None and method == "thread/name/updated":
            thread.titled = True  # named (by us, or by another client of this app-server)
        active = thread.active
        if active is not None and active.generation != server.generation:
            await self.turns.outside(thread, method, params)  # a prompt of an app-server now gone
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
            await self.turns.outside(thread, *item)

    async def _on_approval(self, server: AppServer, method: str, params: Mapping[str, Any]) -> Any:
        """An approval request (or a question) of a thread's running turn on this app-server."""
        thread_id = params.get("threadId")
        thread = self.sessions.thread_of(thread_id) or self.sessions.thread_of(self.children.root_of(thread_id))
        active = thread.active if thread is not None else None
        if active is not None and active.generation != server.generation:
            active = None  # a prompt of an app-server now gone
        # (a child thread's: asked in its session's running prompt, about the child's own item)
        return await approvals.answer(active, method, params, self.children.items_of(thread_id))

    # -- sessions -----------------------------------------------------------------------------------

    async def new_session(self, cwd: str, mcp_servers: Sequence[McpServer], channel: SessionChannel) -> SessionStart:
        return await self.sessions.new(cwd, mcp_servers, channel)

    async def load_session(self, session_id: str, cwd: str, mcp_servers: Sequence[McpServer], channel: SessionChannel,
                           *, replay: bool) -> SessionStart:
        return await self.sessions.load(session_id, cwd, mcp_servers, channel, replay=replay)

    async def fork_session(self, session_id: str, cwd: str, mcp_servers: Sequence[McpServer],
                           channel: SessionChannel) -> SessionStart:
        return await self.sessions.fork(session_id, cwd, mcp_servers, channel)

    async def delete_session(self, session_id: str) -> None:
        await self.sessions.delete(session_id)

    async def set_title(self, session_id: str, title: str) -> str:
        return await self.sessions.rename(session_id, title)

    async def list_sessions(self, cwd: str | None, cursor: str | None) -> SessionListing:
        return await self.sessions.listing(cwd, cursor)

    async def archive_session(self, session_id: str, archived: bool) -> None:
        await self.sessions.archive(session_id, archived)

    async def list_archived_sessions(self, cwd: str | None, cursor: str | None) -> SessionListing:
        return await self.sessions.listing(cwd, cursor, archived=True)

    async def close_session(self, session_id: str) -> None:
        await self.sessions.close(session_id)

    # -- hooks (AIR's codexHooks, as codex-acp's CodexHookTrust) ----------------------------------

    async def list_hooks(self, cwd: str) -> Mapping[str, Any]:
        """`hooks/list` for `cwd`: the hooks of this session's flags, the ones a client trusts."""
        server = await self.sessions.ready()
        async with self.context.clock.phase(Phase.READING, label="hooks/list"):
            result = await call_in(server, "hooks/list", {"cwds": [cwd]}, Phase.READING)
        data = result.get("data") if isinstance(result, Mapping) else None
        entry = data[0] if isinstance(data, list) and data and isinstance(data[0], Mapping) else None
        if entry is None:
            raise PhaseFailed(rpc_error_observation(-32603, "Codex could not list hooks for the requested directory",
                                                    Phase.READING.value))
        hooks = entry.get("hooks")
        return {**entry, "hooks": [hook for hook in hooks if isinstance(hook, Mapping)
                                   and hook.get("source") == "sessionFlags"] if isinstance(hooks, list) else []}

    async def trust_hooks(self, cwd: str, hooks: Sequence[Mapping[str, str]]) -> bool:
        """Each requested hook, still listed with that hash, is trusted in the user's config
        (`config/batchWrite` of `hooks.state.<key>.trusted_hash`, reloaded into the threads);
        True when the listing then shows every one trusted."""
        def listed(current: Sequence[Any], wanted: Mapping[str, str]) -> Mapping[str, Any] | None:
            return next((hook for hook in current if hook.get("key") == wanted["key"]
                         and hook.get("currentHash") == wanted["currentHash"]), None)

        current = (await self.list_hooks(cwd))["hooks"]
        edits = []
        for wanted in hooks:
            hook = listed(current, wanted)
            if hook is None:
                raise RpcError(-32602, "A Codex hook changed before trust was recorded", {"field": "hooks"})
            if hook.get("trustStatus") != "trusted":
                edits.append({"keyPath": f"hooks.state.{json.dumps(hook['key'])}.trusted_hash",
                              "value": hook["currentHash"], "mergeStrategy": "replace"})
        if edits:
            server = await self.sessions.ready()
            async with self.context.clock.phase(Phase.SUBMITTING, label="config/batchWrite"):
                await call_in(server, "config/batchWrite", {"edits": edits, "reloadUserConfig": True},
                              Phase.SUBMITTING)
        verified = (await self.list_hooks(cwd))["hooks"]
        return all((hook := listed(verified, wanted)) is not None and hook.get("trustStatus") == "trusted"
                   for wanted in hooks)

    async def renew_environment(self, environ: Mapping[str, str]) -> bool:
        """A new app-server (with `environ`) takes over at the next prompt that finds no turn
        running, and each thread resumes on it."""
        self._servers.renew_environment(environ)
        return True

    async def set_mode(self, session_id: str, mode_id: str) -> None:
        thread = self._threads[session_id]
        thread.mode = mode_id
        thread.mode_dirty = thread.mode_explicit = True

    async def set_config_option(self, session_id: str, config_id: str, value: str) -> Sequence[ConfigOption]:
        thread = self._threads[session_id]
        models = self._servers.known_models()
        settings.choose(thread.choices, models, config_id, value)  # an offered option and value
        return settings.options(thread.choices, models)

    # -- turns ---------------------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: Sequence[ContentBlock], turn: TurnChannel) -> TurnEnd:
        return await self.turns.prompt(self._threads[session_id], prompt, turn)

    async def steer(self, session_id: str, prompt: Sequence[ContentBlock], turn: TurnChannel) -> bool:
        thread = self._threads.get(session_id)
        return thread is not None and await self.turns.steer(thread, prompt, turn)

    async def cancel(self, session_id: str) -> None:
        thread = self._threads.get(session_id)
        if thread is not None:
            await self.turns.cancel(thread)


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
