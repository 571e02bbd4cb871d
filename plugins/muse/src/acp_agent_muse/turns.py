"""A session's turns on its host: `turn/start` (`submitting` until the acknowledgement), the
session's view notifications folded by a `TurnTranslator` until `turn/completed` (`running`),
`turn/steer` into the running turn and `turn/cancel` of it.

The notifications wait in a bounded queue (`acp_agent.sessions.queue`): while it is full the
host's reader waits, so a client that stops reading stalls the host rather than growing the
agent's memory; the prompt never waits for a host answer while it should drain that queue
(cancels, approvals and questions run in their own tasks)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final

import anyio
import anyio.abc
import attrs

from acp_agent.provider import (
    ConnectionClosed,
    ContentBlock,
    FailureObservation,
    Phase,
    PhaseDeadlineExceeded,
    PhaseFailed,
    RpcError,
    TurnChannel,
    TurnEnd,
    TurnFailed,
    TurnQueue,
    bound,
)
from acp_agent_muse import approvals, items
from acp_agent_muse.classify import HOST_TITLE, SESSION_NOT_LOADED_CODE, host_lost, request_error_observation
from acp_agent_muse.host import MuseHost
from acp_agent_muse.hosts import LiveHosts
from acp_agent_muse.sessions import ActiveTurn, MuseSession, QueueItem
from acp_agent_muse.translate import TurnTranslator

log = logging.getLogger(__name__)

COMMAND_REJECTED_CODE: Final = -32030
"""MSP `commandRejected`: for `turn/steer`, the turn it names is not the running one."""
CANCEL_TIMEOUT_S: Final = 10.0
PROVIDER: Final = "muse"


def _submit_failed(exc: RpcError) -> TurnFailed:
    return TurnFailed(request_error_observation(exc.code, exc.message, exc.data, Phase.SUBMITTING.value))


class Turns:
    """The turns of the sessions whose hosts `hosts` keeps; `queue_items` bounds each turn's
    queue of host notifications. Cancels run in `task_group`."""

    def __init__(self, hosts: LiveHosts, task_group: anyio.abc.TaskGroup, queue_items: int) -> None:
        self._hosts = hosts
        self._tg = task_group
        self._queue_items = queue_items

    async def prompt(self, state: MuseSession, prompt: Sequence[ContentBlock], turn: TurnChannel) -> TurnEnd:
        router = self._hosts.context.router
        async with self._hosts.using(state):
            host = await self._hosts.ensure(state)
            active = ActiveTurn(channel=turn, host=host, queue=TurnQueue[QueueItem](self._queue_items))
            state.active = active
            router.start_turn(state.session_id, active.queue)
            try:
                return await self._run(state, host, active, prompt)
            except anyio.get_cancelled_exc_class():
                # Cut off before the host said the turn is over (the cancel grace ran out, or
                # shutdown): the host would queue every later turn behind it. Stop that host; the
                # session is resumed in a new one for the next prompt.
                log.warning("the turn of session %s did not end in time; stopping its host", state.session_id)
                await self._hosts.stop(active.host)
                raise
            finally:
                state.active = None
                active.known.set()
                await router.end_turn(state.session_id, active.queue)

    async def _submit(self, state: MuseSession, host: MuseHost, prompt: Sequence[ContentBlock]) -> Mapping[str, Any]:
        params: dict[str, Any] = {"sessionId": state.session_id, "input": items.prompt_input(prompt)}
        if state.effort is not None:
            params["reasoningEffort"] = state.effort
        if state.roots:
            params["workspaceRoots"] = [state.cwd, *state.roots]
        try:
            async with self._hosts.context.clock.phase(Phase.SUBMITTING, label="turn/start"):
                return await host.command("turn/start", params)
        except ConnectionClosed:
            raise TurnFailed(host_lost(Phase.SUBMITTING.value, submitted=True)) from None
        except PhaseDeadlineExceeded:
            # The acknowledgement never came: stop that host (and whatever it may be running); the
            # session is resumed in a new one for the next prompt. The deadline stays the cause.
            await self._hosts.stop(host)
            raise

    async def _run(self, state: MuseSession, host: MuseHost, active: ActiveTurn,
                   prompt: Sequence[ContentBlock]) -> TurnEnd:
        try:
            ack = await self._submit(state, host, prompt)
        except RpcError as exc:
            if exc.code != SESSION_NOT_LOADED_CODE:
                raise _submit_failed(exc) from None
            # The host unloaded the session (nothing was admitted): resume it and submit once more.
            state.needs_resume = True
            active.host = host = await self._hosts.ensure(state)
            try:
                ack = await self._submit(state, host, prompt)
            except RpcError as again:
                raise _submit_failed(again) from None
        turn_id = ack.get("turnId")
        if not isinstance(turn_id, str) or not turn_id:
            observation = request_error_observation(-32603, f"{HOST_TITLE} acknowledged the turn without a turn id.",
                                                    None, Phase.SUBMITTING.value)
            raise TurnFailed(attrs.evolve(observation, execution="possiblySubmitted", outcome="unknown"))
        translator = TurnTranslator(turn_id, classify=bound(self._hosts.context.hooks, PROVIDER), window=state.window,
                                    used=state.used)
        active.translator = translator
        active.acknowledged(turn_id)
        if active.cancel_requested:
            self._tg.start_soon(self._send_cancel, state, active)
        try:
            async with (self._hosts.context.clock.phase(Phase.RUNNING, label="turn"),
                        anyio.create_task_group() as questions):
                end = await active.consume(functools.partial(approvals.take, state, active, questions),
                                           functools.partial(self._gone, active))
                questions.cancel_scope.cancel()
        finally:
            state.window, state.used = translator.window, translator.used
        return active.outcome(end)

    @staticmethod
    def _gone(active: ActiveTurn) -> TurnEnd | FailureObservation:
        """The turn's queue ended: its host is gone."""
        if active.cancel_requested and active.host.stop_requested:
            return TurnEnd("cancelled")  # we stopped the host of a cancelled turn (close, logout)
        return host_lost(Phase.RUNNING.value, submitted=True)

    async def _send_cancel(self, state: MuseSession, active: ActiveTurn) -> None:
        if active.cancel_sent or active.turn_id is None or not active.host.alive:
            return
        active.cancel_sent = True
        with anyio.move_on_after(CANCEL_TIMEOUT_S):
            try:
                await active.host.command("turn/cancel", {"sessionId": state.session_id, "turnId": active.turn_id})
            except (RpcError, ConnectionClosed) as exc:
                log.info("turn/cancel failed: %s", type(exc).__name__)

    async def steer(self, state: MuseSession, prompt: Sequence[ContentBlock], turn: TurnChannel) -> bool:
        """MSP `turn/steer` naming the running turn (`expectedTurnId`): the host puts the input into
        it. `-32030 commandRejected` (that turn is no longer the running one) means the turn is over."""
        active = state.active
        if active is None or active.channel is not turn or active.cancel_requested:
            return False
        async with self._hosts.context.clock.phase(Phase.SUBMITTING, label="turn/steer"):
            await active.known.wait()  # turn/start acknowledged
            if active.turn_id is None or state.active is not active or not active.host.alive:
                return False
            params = {"sessionId": state.session_id, "expectedTurnId": active.turn_id,
                      "input": items.prompt_input(prompt)}
            try:
                await active.host.command("turn/steer", params)
            except ConnectionClosed:
                raise PhaseFailed(host_lost(Phase.SUBMITTING.value, submitted=True)) from None
            except RpcError as exc:
                if state.active is not active or exc.code == COMMAND_REJECTED_CODE:
                    log.info("turn/steer found the turn over (%d)", exc.code)
                    return False
                raise PhaseFailed(request_error_observation(exc.code, exc.message, exc.data,
                                                            Phase.SUBMITTING.value)) from None
        return True

    def cancel(self, state: MuseSession) -> None:
        active = state.active
        if active is not None:
            active.cancel_requested = True
            # In the background: the turn's own `turn/completed` (or its host's end) says when it is over.
            self._tg.start_soon(self._send_cancel, state, active)
