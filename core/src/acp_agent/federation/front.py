"""The front of every provider: one connection, one `Agent` per provider behind it.

Each agent is the one `acp-agent --provider NAME` runs, so a session behaves, fails and is
classified exactly as there; the front only chooses which agent answers. `initialize` and
sign-in are merged (`signin`), so is `session/list` (`listing`, with one cursor); `session/new` opens
with the default provider, and the session's `provider` option (or another provider's model)
moves it before its first prompt, under the same session id; every other session method goes to
the session's provider (`directory`: also for a session of an earlier process, else each provider
is asked in turn). A provider whose backend no session uses is never started.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
from attrs import define, field

from acp_agent.failures.scrub import ScrubbingSendStream
from acp_agent.federation import options as shown_options
from acp_agent.federation.directory import KnownModels, Placement, SessionDirectory
from acp_agent.federation.gateways import MergedGateways
from acp_agent.federation.index import MergedIndex
from acp_agent.federation.link import ProviderLink
from acp_agent.federation.listing import MergedList
from acp_agent.federation.signin import SignIn
from acp_agent.sessions.prompt_runner import InputWatch
from acp_agent.wire.acp import MethodNames as M
from acp_agent.wire.convert import clip
from acp_agent.wire.rpc import INVALID_PARAMS, METHOD_NOT_FOUND, Connection, Methods, Reply, RpcError, result_of

if TYPE_CHECKING:
    from acp_agent.agent import Agent

log = logging.getLogger(__name__)

RESOURCE_NOT_FOUND = -32002


@define(eq=False)
class OpenSession:
    """A session the front opened or reopened in this process."""

    provider: str
    backend_id: str
    new_params: dict[str, Any] | None
    """What `session/new` asked (None: reopened; it has history, so its provider is fixed)."""
    options: list[Any] = field(factory=list)
    """Its provider agent's config options, as last answered or sent."""
    modes: Any = None
    prompted: bool = False
    lock: anyio.Lock = field(factory=anyio.Lock)
    """Held while the session moves; a prompt waits for the move."""

    @property
    def fixed(self) -> bool:
        return self.prompted or self.new_params is None

    def observe(self, update: Mapping[str, Any]) -> bool:
        """Follow the mode and options an update of its provider sets; True if its options did."""
        kind = update.get("sessionUpdate")
        if kind == "current_mode_update" and isinstance(self.modes, Mapping):
            self.modes = {**self.modes, "currentModeId": update.get("currentModeId")}
        if kind == "config_option_update" and isinstance(update.get("configOptions"), list):
            self.options = list(update["configOptions"])
            return True
        return False


class Front:
    """Serves one client for every provider in `agents` (in the documented order)."""

    def __init__(self, agents: Mapping[str, Agent], *, default: str | None,
                 directory: SessionDirectory, models: KnownModels, agent_version: str) -> None:
        self.agents = dict(agents)
        self.order = list(agents)
        self.titles = {name: agent.provider.title for name, agent in agents.items()}
        self.default = default
        self.directory = directory
        self.models = models
        self.sessions: dict[str, OpenSession] = {}
        self.links: dict[str, ProviderLink] = {}
        self._tables = {name: agent.methods() for name, agent in agents.items()}
        self.connection: Connection | None = None
        self.signin = SignIn(agents, agent_version, lambda: self.connection)
        self.listing = MergedList(self._serving(M.SESSION_LIST), self._call, directory)
        self.index = MergedIndex(self._serving(M.SESSION_BATCH_GET), self._call, directory)
        self.gateways = MergedGateways(agents, self._serving(M.PROVIDERS_LIST), self._call, default=default)
        self._input: InputWatch | None = None

    def _serving(self, method: str) -> list[str]:
        return [name for name in self.order if method in self._tables[name].requests]

    # --- serving ------------------------------------------------------------------------------

    def methods(self) -> Methods:
        requests: dict[str, Callable[[Any], Awaitable[Any]]] = {}
        for table in self._tables.values():
            for method in table.requests:
                requests[method] = _bound(self.routed, method)
        requests.update({
            **self.signin.methods(), **self.index.methods(), **self.gateways.methods(),
            M.SESSION_NEW: self.new_session,
            M.SESSION_LIST: self.listing.page,
            M.SESSION_LOAD: _bound(self.reopen, M.SESSION_LOAD),
            M.SESSION_RESUME: _bound(self.reopen, M.SESSION_RESUME),
            M.SESSION_FORK: self.fork_session,
            M.SESSION_CLOSE: _bound(self.end, M.SESSION_CLOSE),
            M.SESSION_DELETE: _bound(self.end, M.SESSION_DELETE),
            M.SESSION_PROMPT: self.prompt,
            M.SESSION_SET_CONFIG_OPTION: self.set_config_option,
            M.SESSION_SET_MODE: self.set_mode,
        })
        requests = {method: handler for method, handler in requests.items()
                    if method in _FRONT_ONLY or self._serving(method)}
        return Methods(requests=requests, notifications={M.SESSION_CANCEL: self.cancel})

    async def serve(self, receive: anyio.abc.ByteReceiveStream, send: anyio.abc.ByteSendStream,
                    *, max_line_bytes: int | None = None) -> None:
        """Serve the connection until EOF (or cancellation), then close every agent's sessions
        and backend, side by side."""
        from acp_agent.agent import EOF_GRACE_S

        first = next(iter(self.agents.values()))
        self._input = InputWatch(receive, *(agent.turns for agent in self.agents.values()))
        self.connection = Connection(self._input, ScrubbingSendStream(send, first.settings.redact),
                                     self.methods())
        if max_line_bytes:
            self.connection.max_line_bytes = max_line_bytes
        self.connection.eof_grace_s = EOF_GRACE_S
        self.connection.end_when_output_fails = True
        for name, agent in self.agents.items():
            self.links[name] = ProviderLink(self.connection, self._observed, self.signin.changed,
                                           partial(self.index.changes, name))
            agent.shared_client = self.links[name]
        async with anyio.create_task_group() as task_group:
            for agent in self.agents.values():
                agent.start_beside(task_group, early=False)  # a backend starts with its first use
            try:
                await self.connection.serve()
            finally:
                with anyio.CancelScope(shield=True):
                    async with anyio.create_task_group() as closing:
                        for agent in self.agents.values():
                            closing.start_soon(agent.shutdown)
                task_group.cancel_scope.cancel()

    def stop(self) -> None:
        """Exit as asked (a signal), as `Agent.stop` does, for every provider."""
        for agent in self.agents.values():
            agent.turns.stop()
        if self._input is not None:
            self._input.end()

    # --- sessions ------------------------------------------------------------------------------

    async def new_session(self, params: Any) -> Any:
        provider = self.default or await self.signin.first_with_credentials()
        reply = await self._call(provider, M.SESSION_NEW, params)
        session_id = result_of(reply)["sessionId"]
        return self._opened(session_id, provider, session_id, reply, new_params=dict(params))

    def _opened(self, session_id: str, provider: str, backend_id: str, reply: Any, *,
                new_params: dict[str, Any] | None = None, record: bool = True) -> Any:
        """The answer of a session `provider` opened, with the options the front shows."""
        answer = result_of(reply) or {}
        self.sessions[session_id] = session = OpenSession(
            provider, backend_id, new_params, list(answer.get("configOptions") or ()), answer.get("modes"))
        if record:
            self.directory.record(session_id, Placement(provider, backend_id))
        self._learn_models(provider, session.options)
        return _rewrapped(reply, {**answer, "configOptions": self._shown(session_id)})

    async def reopen(self, method: str, params: Any) -> Any:
        """`session/load` or `session/resume`, by the session's provider; it keeps that provider."""
        session_id = _session_id(params)
        reply, provider, backend_id = await self._routed(method, params)
        return self._opened(session_id, provider, backend_id, reply, record=False)

    async def fork_session(self, params: Any) -> Any:
        reply, provider, _ = await self._routed(M.SESSION_FORK, params)
        forked = result_of(reply)["sessionId"]
        return self._opened(forked, provider, forked, reply)

    async def end(self, method: str, params: Any) -> Any:
        """`session/close` or `session/delete` by the session's provider; a deleted one is forgotten."""
        session_id = _session_id(params)
        answer, provider, backend_id = await self._routed(method, params)
        self.sessions.pop(session_id, None)
        if method == M.SESSION_DELETE:
            self.directory.forget(session_id)
            self.links[provider].forget(backend_id)
        return answer

    async def prompt(self, params: Any) -> Any:
        """The first prompt fixes the session's provider (its option says so from now on)."""
        session_id = _session_id(params)
        session = self.sessions.get(session_id)
        if session is not None and not session.prompted:
            async with session.lock:  # after a move under way
                session.prompted = True
            if self.connection is not None:
                await self.connection.notify(M.SESSION_UPDATE, {"sessionId": session_id, "update": {
                    "sessionUpdate": "config_option_update", "configOptions": self._shown(session_id)}})
        return await self.routed(M.SESSION_PROMPT, params)

    async def set_mode(self, params: Any) -> Any:
        answer = await self.routed(M.SESSION_SET_MODE, params)
        session = self.sessions.get(_session_id(params))
        if session is not None:
            session.observe({"sessionUpdate": "current_mode_update", "currentModeId": params.get("modeId")})
        return answer

    async def set_config_option(self, params: Any) -> Any:
        """The `provider` option moves the session; another provider's model moves it and picks
        that model there; the `mode` option the front added is the session's mode; the rest is
        the provider's."""
        session_id = _session_id(params)
        config_id, value = params.get("configId"), params.get("value")
        session = self.sessions.get(session_id)
        if session is None:
            return await self.routed(M.SESSION_SET_CONFIG_OPTION, params)
        if config_id == shown_options.PROVIDER_OPTION:
            if not isinstance(value, str) or value not in self.agents:
                raise RpcError(INVALID_PARAMS, f"Unknown provider {clip(str(value))!r}: one of "
                               + ", ".join(self.order), {"field": "value"})
            announce = await self._move(session_id, session, value) if value != session.provider else None
            return _with_callback({"configOptions": self._shown(session_id)}, announce)
        own_ids = {option.get("id") for option in session.options if isinstance(option, Mapping)}
        if config_id == shown_options.MODE_OPTION and config_id not in own_ids:
            await self.set_mode({"sessionId": session_id, "modeId": value})
            return {"configOptions": self._shown(session_id)}
        foreign = shown_options.foreign_model(value, session.provider, self.titles)
        model_ids = {option.get("id") for option in session.options if shown_options.is_model_option(option)}
        announce = None
        if foreign is not None and config_id in model_ids:
            announce = await self._move(session_id, session, foreign[0])
            params = {**params, "value": foreign[1]}
        try:
            reply = await self.routed(M.SESSION_SET_CONFIG_OPTION, params)
        except BaseException:
            if announce is not None:
                announce(True)  # the move stands: the client learns of it from the error's options
            raise
        answer = result_of(reply)
        session.options = list(answer.get("configOptions") or session.options)
        return _with_callback(_rewrapped(reply, {**answer, "configOptions": self._shown(session_id)}), announce)

    async def _move(self, session_id: str, session: OpenSession, target: str) -> Callable[[bool], None] | None:
        """Open the session anew with `target` under its client id, then close what it leaves;
        returns what the new session's answer would have been told once written (its queued
        updates go out then)."""
        async with session.lock:
            if session.fixed:
                raise RpcError(INVALID_PARAMS, f"This session already has a conversation, so "
                               f"{self.titles[session.provider]} runs it for good: start a new session "
                               f"for {self.titles[target]}", {"field": "value"})
            assert session.new_params is not None
            link = self.links[target]
            try:
                with link.moving():
                    reply = await self._call(target, M.SESSION_NEW, session.new_params)
                    answer = result_of(reply)
                    backend_id = answer["sessionId"]
                    link.name(backend_id, session_id)
            finally:
                await link.release()
            left = (session.provider, session.backend_id)
            session.provider, session.backend_id = target, backend_id
            session.options, session.modes = list(answer.get("configOptions") or ()), answer.get("modes")
            self.directory.record(session_id, Placement(target, backend_id))
            self._learn_models(target, session.options)
            await self._retire(*left)
        log.info("session %s moved to %s before its first prompt", session_id, target)
        current = session.modes.get("currentModeId") if isinstance(session.modes, Mapping) else None
        if current is not None and self.connection is not None:
            await self.connection.notify(M.SESSION_UPDATE, {"sessionId": session_id, "update": {
                "sessionUpdate": "current_mode_update", "currentModeId": current}})
        return reply.on_written if isinstance(reply, Reply) else None

    async def _retire(self, provider: str, backend_id: str) -> None:
        """Close (and delete, where the provider can) a session left by a move: it has no prompt."""
        self.links[provider].forget(backend_id)
        for method in (M.SESSION_CLOSE, M.SESSION_DELETE):
            if method in self._tables[provider].requests:
                try:
                    reply = await self._call(provider, method, {"sessionId": backend_id})
                    if isinstance(reply, Reply):
                        reply.on_written(True)
                except RpcError as exc:
                    log.info("%s of the session left on %s: %s", method, provider, exc.message)

    async def cancel(self, params: Any) -> None:
        session_id = params.get("sessionId") if isinstance(params, Mapping) else None
        placement = self._placement(session_id) if isinstance(session_id, str) else None
        if placement is None:
            return
        handler = self._tables[placement.provider].notifications.get(M.SESSION_CANCEL)
        if handler is not None:
            await handler({**params, "sessionId": placement.backend_id})

    # --- routing -------------------------------------------------------------------------------

    async def routed(self, method: str, params: Any) -> Any:
        """A session method, answered by the session's provider."""
        return (await self._routed(method, params))[0]

    async def _routed(self, method: str, params: Any) -> tuple[Any, str, str]:
        session_id = params.get("sessionId") if isinstance(params, Mapping) else None
        if not isinstance(session_id, str):
            # Not a session's: the default provider answers (`acp-agent --provider` semantics).
            provider = self.default or self.order[0]
            return await self._call(provider, method, params), provider, ""
        placement = self._placement(session_id)
        if placement is not None:
            answer = await self._call(placement.provider, method, {**params, "sessionId": placement.backend_id})
            return answer, placement.provider, placement.backend_id
        for name in self._serving(method):  # a session of an earlier process, not opened by a front
            try:
                answer = await self._call(name, method, params)
            except RpcError as exc:
                if exc.code == RESOURCE_NOT_FOUND:
                    continue
                raise
            self.directory.record(session_id, Placement(name, session_id))
            return answer, name, session_id
        raise RpcError(RESOURCE_NOT_FOUND, f"Session not found: {clip(session_id)}", {"field": "sessionId"})

    def _placement(self, session_id: str) -> Placement | None:
        session = self.sessions.get(session_id)
        placement = Placement(session.provider, session.backend_id) if session is not None else \
            self.directory.find(session_id)
        if placement is not None and placement.provider not in self.agents:
            raise RpcError(INVALID_PARAMS, f"Session {clip(session_id)} belongs to the {placement.provider} "
                           "provider, which this agent does not serve", {"field": "sessionId"})
        if placement is not None:
            self.links[placement.provider].name(placement.backend_id, session_id)
        return placement

    async def _call(self, provider: str, method: str, params: Any) -> Any:
        """The provider agent's answer, as its handler gave it (a `Reply` too)."""
        handler = self._tables[provider].requests.get(method)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, f"{method} is not supported by the {self.titles[provider]} provider")
        return await handler(params)  # a Reply keeps its callback: the front passes it on

    # --- options -------------------------------------------------------------------------------

    def _shown(self, session_id: str) -> list[Any]:
        session = self.sessions[session_id]
        return shown_options.shown(session.options, provider=session.provider, titles=self.titles,
                                   fixed=session.fixed, modes=session.modes, models=self.models.all())

    def _observed(self, session_id: str, update: Mapping[str, Any]) -> Mapping[str, Any]:
        """An update an agent sends, as the client sees it (its options as the front shows them)."""
        session = self.sessions.get(session_id)
        if session is None or not session.observe(update):
            return update
        return {**update, "configOptions": self._shown(session_id)}

    def _learn_models(self, provider: str, options: Sequence[Any]) -> None:
        models = shown_options.models_of(options)
        if models:
            self.models.learn(provider, models)


_FRONT_ONLY = frozenset({M.INITIALIZE, M.AUTHENTICATE, M.LOGOUT, M.SESSION_NEW, M.SESSION_PROMPT,
                         M.SESSION_SET_CONFIG_OPTION})


def _bound(handler: Callable[[str, Any], Awaitable[Any]], method: str) -> Callable[[Any], Awaitable[Any]]:
    async def call(params: Any) -> Any:
        return await handler(method, params)

    return call


def _rewrapped(answer: Any, payload: Any) -> Any:
    """`payload` in place of `answer`'s, with its callback (if it had one)."""
    return Reply(payload, answer.on_written) if isinstance(answer, Reply) else payload


def _with_callback(answer: Any, callback: Callable[[bool], None] | None) -> Any:
    """`answer` whose write is also told to `callback`."""
    if callback is None:
        return answer
    if not isinstance(answer, Reply):
        return Reply(answer, callback)
    first = answer.on_written

    def both(written: bool) -> None:
        first(written)
        callback(written)

    return Reply(answer.result, both)


def _session_id(params: Any) -> str:
    session_id = params.get("sessionId") if isinstance(params, Mapping) else None
    if not isinstance(session_id, str):
        raise RpcError(INVALID_PARAMS, "Invalid params: sessionId: expected a string", {"field": "sessionId"})
    return session_id
