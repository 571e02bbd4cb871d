"""ACP v2 for one connection: the v1 agent behind a translating surface.

A client whose `initialize` asks for protocol version 2 is answered 2 (`acp_agent.initialization`),
and the agent installs a `V2Surface` for the connection: its method table takes v2 requests and
calls the agent's v1 handlers (`acp_agent.wire.v2` translates each request and answer), and its
`V2Client` stands between the sessions' `Outbox` and the connection, so every session update and
request to the client goes out in v2 form. As claude-agent-acp's `dist/v2/agent.js`. What differs
from v1, and what the surface keeps per session for it:

- `session/prompt` answers `{messageId}` once the prompt is accepted (after its `user_message`);
  the turn runs on, reported as `state_update` (`running`, `requires_action` while the client is
  asked something, `idle` with the v1 answer's stop reason and usage, or with the error).
- Chunks need a `messageId`: where the provider gave none, one per run of chunks of one kind
  (`MessageIds`).
- The session's modes are its `mode` config option (kept from the setup answers and updates).
- `tool_call/cancel` cancels the turn that runs the tool call (the core has no tool call that
  outlives its turn).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio

from acp_agent.wire import v2 as wire
from acp_agent.wire.acp import MethodNames as M
from acp_agent.wire.rpc import INTERNAL_ERROR, INVALID_PARAMS, Connection, Methods, Reply, RequestHandler, RpcError

if TYPE_CHECKING:
    from acp_agent.agent_base import AgentBase

log = logging.getLogger(__name__)

AUTH_LOGIN = "auth/login"
AUTH_LOGOUT = "auth/logout"
TOOL_CALL_CANCEL = "tool_call/cancel"
ELICITATION_CREATE = "elicitation/create"
V1_ONLY = frozenset({M.AUTHENTICATE, M.LOGOUT, M.SESSION_LOAD, M.SESSION_SET_MODE, M.SESSION_STEERING})
"""v1 methods a v2 client does not get: their v2 counterparts are translated, steering is not
served on v2 (as cacp)."""
ASKS = frozenset({M.REQUEST_PERMISSION, ELICITATION_CREATE})
"""Requests to the client during which the session `requires_action`."""


class MessageIds:
    """A `messageId` for each chunk that has none: the chunks of one kind in a row (nothing else
    of the session between them) are one message; a given id is kept as it is."""

    def __init__(self) -> None:
        self._open: dict[str, tuple[str, str]] = {}

    def chunk(self, session_id: str, kind: str, given: Any) -> str:
        if isinstance(given, str) and given:
            self._open.pop(session_id, None)
            return given
        open_kind, message_id = self._open.get(session_id, ("", ""))
        if open_kind != kind:
            message_id = uuid.uuid4().hex
            self._open[session_id] = (kind, message_id)
        return message_id

    def other(self, session_id: str) -> None:
        """Something other than an id-less chunk: the message being streamed is over."""
        self._open.pop(session_id, None)

    def forget(self, session_id: str) -> None:
        self._open.pop(session_id, None)


class V2Surface:
    """The v2 methods over the agent's v1 ones, and what translating them needs per session."""

    def __init__(self, agent: AgentBase) -> None:
        self._agent = agent
        self._v1 = Methods(requests={}, notifications={})
        self._client: V2Client | None = None
        self.ids = MessageIds()
        self.modes: dict[str, Mapping[str, Any] | None] = {}
        self.options: dict[str, list[Mapping[str, Any]]] = {}
        self.running_tools: dict[str, set[str]] = {}
        """Per session, the tool calls reported and not finished (`tool_call/cancel`)."""
        self.replays: dict[str, set[str]] = {}
        """Sessions replaying their history (`session/resume` from the start), with the messages
        cleared so far."""
        self.asks: dict[str, int] = {}
        self.prompts: dict[str, int] = {}
        """Per session, the accepted prompts whose turn has not ended (a queued one runs next)."""
        self.accepted: dict[str, list[_Accepted]] = {}
        """Per session, the prompts answered whose turn has not yet joined the session's line: a
        `session/cancel` cancels them as it cancels the prompts queued in the line."""

    # -- wiring ----------------------------------------------------------------------------

    def methods(self, v1: Methods) -> Methods:
        """The v2 table: v1's methods a v2 client has unchanged, the others translated."""
        self._v1 = v1
        requests: dict[str, RequestHandler] = {
            method: handler for method, handler in v1.requests.items() if method not in V1_ONLY}
        requests.update({
            AUTH_LOGIN: self._passing(M.AUTHENTICATE),
            AUTH_LOGOUT: self._passing(M.LOGOUT),
            M.SESSION_NEW: self.new_session,
            M.SESSION_PROMPT: self.prompt,
            M.SESSION_SET_CONFIG_OPTION: self.set_config_option,
            TOOL_CALL_CANCEL: self.cancel_tool_call,
        })
        if M.SESSION_RESUME in v1.requests or M.SESSION_LOAD in v1.requests:
            requests[M.SESSION_RESUME] = self.resume_session
        if M.SESSION_FORK in v1.requests:
            requests[M.SESSION_FORK] = self.fork_session
        if M.SESSION_CLOSE in v1.requests:
            requests[M.SESSION_CLOSE] = self.close_session
        notifications = {**v1.notifications, M.SESSION_CANCEL: self.cancel}
        return Methods(requests=requests, notifications=notifications, ordered=v1.ordered)

    def client(self, connection: Connection) -> V2Client:
        """The connection as the sessions write to it: in v2 form."""
        if self._client is None or self._client.connection is not connection:
            self._client = V2Client(connection, self)
        return self._client

    def _passing(self, method: str) -> RequestHandler:
        async def handler(params: Any) -> Any:
            return await self._v1.requests[method](params)
        return handler

    async def _send(self, session_id: str, update: dict[str, Any], *, wait: bool = False) -> bool:
        """A v2 update of the surface's own (already in v2 form)."""
        connection = self._client.connection if self._client is not None else self._agent.connection
        if connection is None:
            return False
        return await connection.notify(M.SESSION_UPDATE, {"sessionId": session_id, "update": update},
                                       wait_written=wait)

    def _remember(self, session_id: Any, result: Any) -> None:
        if isinstance(session_id, str) and isinstance(result, Mapping):
            modes = result.get("modes")
            self.modes[session_id] = modes if isinstance(modes, Mapping) else None
            self.options[session_id] = list(result.get("configOptions") or [])

    def config_options(self, session_id: str) -> list[dict[str, Any]]:
        return wire.v2_config_options(self.options.get(session_id, []), self.modes.get(session_id))

    def _forget(self, session_id: str) -> None:
        for table in (self.modes, self.options, self.running_tools, self.replays, self.asks, self.prompts,
                      self.accepted):
            table.pop(session_id, None)
        self.ids.forget(session_id)

    # -- session setup ---------------------------------------------------------------------

    async def new_session(self, params: Any) -> Any:
        return await self._setup(M.SESSION_NEW, wire.v1_new_session(_params(params)))

    async def fork_session(self, params: Any) -> Any:
        return await self._setup(M.SESSION_FORK, wire.v1_new_session(_params(params)))

    async def _setup(self, method: str, request: dict[str, Any]) -> Any:
        answer = await self._v1.requests[method](request)
        result, on_written = (answer.result, answer.on_written) if isinstance(answer, Reply) else (answer, None)
        session_id = result.get("sessionId") if isinstance(result, Mapping) else None
        self._remember(session_id, result)
        translated = wire.v2_setup(result, self.modes.get(session_id) if isinstance(session_id, str) else None)
        return Reply(translated, on_written) if on_written is not None else translated

    async def resume_session(self, params: Any) -> Any:
        """`session/resume`: v1's resume, or its load with `replayFrom: {type: "start"}`; the
        session's current state goes out after the replay, before the answer (v2 asks it)."""
        request = _params(params)
        method, v1_request = wire.v1_restore(request)
        handler = self._v1.requests.get(method)
        if handler is None:
            what = "replay a session's history" if method == M.SESSION_LOAD else "resume a session without replay"
            raise RpcError(INVALID_PARAMS, f"The {self._agent.provider.title} provider cannot {what}",
                           {"field": "replayFrom"})
        session_id = request.get("sessionId")
        replaying = session_id if method == M.SESSION_LOAD and isinstance(session_id, str) else None
        if replaying is not None:
            self.replays[replaying] = set()
        try:
            result = await handler(v1_request)
        finally:
            if replaying is not None:
                self.replays.pop(replaying, None)
        self._remember(session_id, result)
        if isinstance(session_id, str):
            self.ids.forget(session_id)
            await self._send(session_id, wire.state_update("idle"))  # a session with a prompt running is refused
        return wire.v2_setup(result, self.modes.get(session_id) if isinstance(session_id, str) else None)

    async def close_session(self, params: Any) -> Any:
        result = await self._v1.requests[M.SESSION_CLOSE](params)
        session_id = _params(params).get("sessionId")
        if isinstance(session_id, str):
            self._forget(session_id)
        return result

    async def set_config_option(self, params: Any) -> Any:
        """A `session/set_config_option` of `mode` sets the session mode (v1 `session/set_mode`,
        whose `current_mode_update` goes out as a `config_option_update`); any other option is
        v1's, and v2 asks a `config_option_update` before the answer for it too (cacp)."""
        request = _params(params)
        session_id = request.get("sessionId")
        v1_request = wire.v1_set_config_option(request)
        if not isinstance(session_id, str):
            raise RpcError(INVALID_PARAMS, "Invalid params: sessionId must be a string", {"field": "sessionId"})
        modes = self.modes.get(session_id)
        if request.get("configId") == wire.MODE_CONFIG_ID and wire.serves_mode_option(
                self.options.get(session_id, []), modes):
            if request.get("type") != "id":
                raise RpcError(INVALID_PARAMS, "The mode takes a value of type \"id\"", {"field": "type"})
            await self._v1.requests[M.SESSION_SET_MODE](
                {"sessionId": session_id, "modeId": v1_request["value"]})
        else:
            result = await self._v1.requests[M.SESSION_SET_CONFIG_OPTION](v1_request)
            self.options[session_id] = list(_params(result).get("configOptions") or [])
            await self._send(session_id, {"sessionUpdate": "config_option_update",
                                          "configOptions": self.config_options(session_id)})
        return {"configOptions": self.config_options(session_id)}

    # -- prompts ---------------------------------------------------------------------------

    async def prompt(self, params: Any) -> Any:
        """Accepted (its session open, its content valid): the `user_message`, then the answer
        `{messageId}`; the turn starts once that answer is written (`_turn`)."""
        from acp_agent.wire import acp

        request = wire.v1_prompt(_params(params))
        session_id = self._agent._parse(request, acp.PromptRequest).session_id
        await self._agent._opened(session_id)
        message_id = uuid.uuid4().hex
        await self._send(session_id, {"sessionUpdate": "user_message", "messageId": message_id,
                                      "content": request["prompt"]})
        accepted = _Accepted()
        self.accepted.setdefault(session_id, []).append(accepted)

        def start(written: bool) -> None:
            group = self._agent._task_group
            if written and group is not None:
                group.start_soon(self._turn, session_id, request, accepted)
            else:
                self._started(session_id, accepted)
        return Reply({"messageId": message_id}, start)

    def _started(self, session_id: str, accepted: _Accepted) -> None:
        waiting = self.accepted.get(session_id, [])
        if accepted in waiting:
            waiting.remove(accepted)

    async def cancel(self, params: Any) -> None:
        """`session/cancel`: v1's, and the prompts accepted whose turn has not started yet."""
        session_id = params.get("sessionId") if isinstance(params, Mapping) else None
        for accepted in self.accepted.get(session_id, []) if isinstance(session_id, str) else []:
            accepted.cancelled = True
        await self._v1.notifications[M.SESSION_CANCEL](params)

    async def _turn(self, session_id: str, request: dict[str, Any], accepted: _Accepted) -> None:
        """The v1 prompt, its answer as the `idle` that ends the turn. The v1 answer's
        `on_written` (the next prompt's start, a failure record's commit) is told whether that
        `idle` was written."""
        on_written: Callable[[bool], None] | None = None
        written = False
        self._started(session_id, accepted)
        if accepted.cancelled:
            await self._send(session_id, wire.idle_update({"stopReason": "cancelled"}))
            return
        self.prompts[session_id] = self.prompts.get(session_id, 0) + 1
        try:
            if self.prompts[session_id] == 1:
                await self._send(session_id, wire.state_update("running"))
            try:
                answer = await self._v1.requests[M.SESSION_PROMPT](request)
            except RpcError as exc:
                on_written = exc.on_written
                update = wire.error_update(exc)
            except Exception:
                log.exception("session/prompt failed")
                update = wire.error_update(RpcError(INTERNAL_ERROR, "Internal error while handling session/prompt"))
            else:
                if isinstance(answer, Reply):
                    answer, on_written = answer.result, answer.on_written
                update = wire.idle_update(_params(answer))
            self.running_tools.pop(session_id, None)
            written = await self._send(session_id, update, wait=True)
            if self.prompts.get(session_id, 1) > 1:  # the next prompt's turn runs once this one released it
                await self._send(session_id, wire.state_update("running"))
        finally:
            self.prompts[session_id] = self.prompts.get(session_id, 1) - 1
            if on_written is not None:
                on_written(written)

    async def cancel_tool_call(self, params: Any) -> Any:
        """`tool_call/cancel`: a tool call of the session's running turn cancels that turn (as
        `session/cancel`); any other is -32602, as cacp answers a tool call it cannot cancel."""
        request = _params(params)
        session_id, tool_call_id = request.get("sessionId"), request.get("toolCallId")
        if not isinstance(session_id, str) or not isinstance(tool_call_id, str):
            raise RpcError(INVALID_PARAMS, "Invalid params: sessionId and toolCallId must be strings",
                           {"field": "toolCallId"})
        session = await self._agent._opened(session_id)
        if session.turn is None or tool_call_id not in self.running_tools.get(session_id, set()):
            raise RpcError(INVALID_PARAMS, f"Tool call {tool_call_id[:80]} is not running, so it cannot be cancelled.",
                           {"sessionId": session_id, "toolCallId": tool_call_id})
        await self._v1.notifications[M.SESSION_CANCEL]({"sessionId": session_id})
        return {}

    # -- outgoing --------------------------------------------------------------------------

    def updates(self, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The v2 `session/update` params for one v1 `session/update`'s (none, one or two)."""
        session_id = str(params.get("sessionId"))
        update = _params(params.get("update"))
        kind = str(update.get("sessionUpdate"))
        out: list[dict[str, Any]] = []
        if kind in wire.CHUNKS:
            message_id = self.ids.chunk(session_id, kind, update.get("messageId"))
            update = {**update, "messageId": message_id}
            cleared = self.replays.get(session_id)
            if cleared is not None and f"{kind} {message_id}" not in cleared:
                cleared.add(f"{kind} {message_id}")
                out.append(wire.empty_message(kind, message_id))
            out.append(update)
        else:
            self.ids.other(session_id)
            if kind in ("tool_call", "tool_call_update"):
                track_tool(self.running_tools.setdefault(session_id, set()), update)
            if kind == "config_option_update":
                self.options[session_id] = list(update.get("configOptions") or [])
                translated = wire.v2_session_update(update, self.config_options(session_id))
            elif kind == "current_mode_update":
                translated = self._mode_changed(session_id, update)
            else:
                translated = wire.v2_session_update(update)
            if translated is not None:
                out.append(translated)
        return [{**params, "update": item} for item in out]

    def _mode_changed(self, session_id: str, update: Mapping[str, Any]) -> dict[str, Any] | None:
        modes = self.modes.get(session_id)
        if modes is None or not wire.serves_mode_option(self.options.get(session_id, []), modes):
            return None
        self.modes[session_id] = {**modes, "currentModeId": update.get("currentModeId")}
        return {"sessionUpdate": "config_option_update", "configOptions": self.config_options(session_id)}

    async def asking(self, session_id: Any, ask: Callable[[], Any]) -> Any:
        """A request to the client that waits for the user: `requires_action` while one is open,
        `running` again once none is, unless a cancel withdrew it (the turn's `idle` follows)."""
        if not isinstance(session_id, str):
            return await ask()
        self.asks[session_id] = self.asks.get(session_id, 0) + 1
        if self.asks[session_id] == 1:
            await self._send(session_id, wire.state_update("requires_action"))
        answered = False
        try:
            result = await ask()
            answered = True
            return result
        except RpcError:
            answered = True
            raise
        finally:
            left = self.asks.get(session_id, 1) - 1
            self.asks[session_id] = left
            if answered and left == 0:
                with anyio.CancelScope(shield=True):
                    await self._send(session_id, wire.state_update("running"))


class _Accepted:
    """A prompt answered `{messageId}` whose turn has not joined the session's line yet."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False


class V2Client:
    """The connection for the sessions of a v2 client: `notify` and `request` as `Connection`'s,
    their v1 frames written in v2 form (`V2Surface.updates`, `acp_agent.wire.v2`)."""

    def __init__(self, connection: Connection, surface: V2Surface) -> None:
        self.connection = connection
        self._surface = surface

    async def notify(self, method: str, params: Any, *, wait_written: bool = False) -> bool:
        if method != M.SESSION_UPDATE or not isinstance(params, Mapping):
            return await self.connection.notify(method, params, wait_written=wait_written)
        written = True
        for translated in self._surface.updates(params):
            written = await self.connection.notify(method, translated, wait_written=wait_written) and written
        return written

    async def request(self, method: str, params: Any, *, timeout_s: float | None = None) -> Any:
        if method not in ASKS:
            return await self.connection.request(method, params, timeout_s=timeout_s)
        session_id = _params(params).get("sessionId")
        if method == M.REQUEST_PERMISSION:
            v2_params = wire.v2_permission_request(_params(params))
            answer = await self._surface.asking(
                session_id, lambda: self.connection.request(method, v2_params, timeout_s=timeout_s))
            return wire.v1_permission_response(answer)
        return await self._surface.asking(
            session_id, lambda: self.connection.request(method, params, timeout_s=timeout_s))


def track_tool(running: set[str], update: Mapping[str, Any]) -> None:
    """Keep `running` (a session's tool calls that have not ended) up to date with one v1 update."""
    tool_call_id = update.get("toolCallId")
    if not isinstance(tool_call_id, str):
        return
    if update.get("status") in wire.FINAL_STATUSES:
        running.discard(tool_call_id)
    elif update.get("sessionUpdate") == "tool_call" or tool_call_id in running:
        running.add(tool_call_id)


def _params(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise RpcError(INVALID_PARAMS, "Invalid params: expected an object", {"field": "params"})
    return dict(value)
