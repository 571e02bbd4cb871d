"""A Codex prompt as an app-server turn: submitted (`turn/start`, or a command's request),
consumed from its queue through a `TurnTranslator`, steered (`turn/steer`), interrupted, and
titled after a new session's first turn; and what a thread says outside any prompt of ours.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any, Final

import anyio
import anyio.abc

from acp_agent.provider import (
    DEFAULT_MAX_ITEMS,
    ConnectionClosed,
    ContentBlock,
    FailureObservation,
    Notice,
    Phase,
    PhaseFailed,
    RpcError,
    SessionFailure,
    SessionRouter,
    SessionTitle,
    TurnChannel,
    TurnEnd,
    TurnFailed,
    TurnQueue,
    agent_text,
    bound,
)
from acp_agent_codex import commands, items, modes, settings, titles
from acp_agent_codex.appserver import AppServer
from acp_agent_codex.classify import classify_error, notice_for, rpc_error_observation, transport_lost
from acp_agent_codex.sessions import PROVIDER, Sessions
from acp_agent_codex.subagents import Children
from acp_agent_codex.supervisor import Supervisor
from acp_agent_codex.threads import ActiveTurn, Barrier, QueueItem, ThreadState
from acp_agent_codex.translate import TurnTranslator, turn_id_of

log = logging.getLogger(__name__)

TURN_QUEUE_ITEMS = DEFAULT_MAX_ITEMS
"""How many app-server notifications a running prompt holds before the reader waits (backpressure)."""
INTERRUPT_TIMEOUT_S: Final = 10.0


class Turns:
    """Runs the prompts of the sessions `sessions` opens on the app-server `servers` keeps;
    `router` hands each turn its notifications; interrupts and titles run in `task_group`."""

    def __init__(self, servers: Supervisor, sessions: Sessions, router: SessionRouter,
                 task_group: anyio.abc.TaskGroup, children: Children) -> None:
        self._servers = servers
        self._children = children
        self._sessions = sessions
        self._router = router
        self._tg = task_group
        self.title_threads: MutableMapping[str, titles.Collector] = {}
        """The ephemeral threads asking for a session's title, by thread id."""

    async def prompt(self, thread: ThreadState, prompt: Sequence[ContentBlock], turn: TurnChannel) -> TurnEnd:
        server = await self._sessions.ready()
        await self._sessions.rejoin(server, thread)
        command = commands.parse(prompt)
        if command is not None and commands.local(command):
            answer = await commands.answer(self._servers.clock, server, thread, self._servers.known_models(), command)
            if answer:
                await turn.emit(agent_text(answer))
            return TurnEnd("end_turn")
        active = ActiveTurn(channel=turn, generation=server.generation,
                            queue=TurnQueue[QueueItem](TURN_QUEUE_ITEMS),
                            translator=TurnTranslator(classify=bound(self._servers.context.hooks, PROVIDER),
                                                      usage_at_start=thread.usage))
        thread.active = active
        self._router.start_turn(thread.thread_id, active.queue)
        try:
            end = await self._run(server, thread, active, prompt, command)
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
                await self._end(thread, active)
                await self._interrupt_or_replace(server, thread.codex_id, active.turn_id)
            raise
        finally:
            await self._end(thread, active)

    def _params(self, thread: ThreadState, prompt: Sequence[ContentBlock]) -> dict[str, Any]:
        params: dict[str, Any] = {"threadId": thread.codex_id, "input": items.prompt_input(prompt)}
        if thread.mode_dirty:
            params.update(modes.turn_policy(thread.mode))
        params.update(settings.turn_overrides(thread.choices, self._servers.known_models()))
        return params

    async def _run(self, server: AppServer, thread: ThreadState, active: ActiveTurn,
                   prompt: Sequence[ContentBlock], command: commands.Command | None) -> TurnEnd:
        turn = active.channel
        if command is None:
            method, params = "turn/start", self._params(thread, prompt)
        else:
            method, params = commands.request(command, thread.codex_id)
        try:
            async with self._servers.clock.phase(Phase.SUBMITTING, label=method):
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
        return await active.run(self._servers.clock, functools.partial(self._take, thread, active),
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
        for event in self._children.fold(method, params):  # a child thread's, or a collab call's
            await active.channel.emit(event)
        if self._children.is_child(params):
            return None
        turn_id = turn_id_of(method, params)
        if active.turn_id is None and method == "turn/started" and turn_id is not None:
            active.turn_id = turn_id
            active.known.set()
        if turn_id is not None and turn_id != active.turn_id:
            await self.outside(thread, method, params)
            return None
        return entry

    async def _end(self, thread: ThreadState, active: ActiveTurn) -> None:
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
        self._tg.start_soon(titles.generate, server, codex_id, thread.cwd, text, model, self.title_threads,
                            lambda: self._sessions.thread_of(codex_id) is not None)

    async def outside(self, thread: ThreadState, method: str, params: Mapping[str, Any]) -> None:
        """A thread's notification that belongs to no running prompt of ours (or one of its
        child threads', which may work on after the prompt that spawned them)."""
        for event in self._children.fold(method, params):
            await self._router.emit(thread.thread_id, event)
        if self._children.is_child(params):
            return
        if method == "turn/started" and thread.orphaned:
            turn_id = turn_id_of(method, params)
            server = self._servers.server
            if turn_id is not None and server is not None:
                thread.orphaned = False
                log.info("interrupting turn %s of thread %s: its prompt already ended", turn_id, thread.thread_id)
                self._tg.start_soon(self.interrupt_turn, server, thread.codex_id, turn_id)
            return
        if method == "error":
            result = classify_error(params)
            if isinstance(result, FailureObservation):
                result = self._servers.context.hooks.classify_failure(PROVIDER, params) or result
                await self._router.emit(thread.thread_id, SessionFailure(result))
        elif method in ("warning", "model/rerouted"):
            notice = notice_for(method, params)
            if notice is not None:
                await self._router.emit(thread.thread_id, notice)
        elif method == "thread/name/updated":
            await self._router.emit(thread.thread_id, items.session_title(params))
        elif method in ("thread/goal/updated", "thread/goal/cleared"):
            goal = items.goal_snapshot(method, params)
            if goal is not None:
                await self._router.emit(thread.thread_id, goal)
        else:
            log.debug("dropped %s outside a prompt of thread %s", method, thread.thread_id)

    # -- steering and stopping ----------------------------------------------------------------------

    async def steer(self, thread: ThreadState, prompt: Sequence[ContentBlock], turn: TurnChannel) -> bool:
        """app-server's `turn/steer`: the input joins the running turn (`expectedTurnId` makes
        app-server refuse it if that turn is over, and then the core treats the session as idle)."""
        active = thread.active
        if active is None or active.channel is not turn or active.cancel_requested:
            return False
        server = await self._sessions.ready()
        async with self._servers.clock.phase(Phase.SUBMITTING, label="turn/steer"):
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

    async def cancel(self, thread: ThreadState) -> None:
        active = thread.active
        if active is None:
            return
        active.cancel_requested = True
        server = self._servers.server
        if server is None or server.generation != active.generation:
            return
        await self._interrupt_or_replace(server, thread.codex_id, active.turn_id)

    async def _interrupt_or_replace(self, server: AppServer, thread_id: str, turn_id: str | None) -> None:
        """Interrupt the turn (not acknowledged yet: it is interrupted once it is, and app-server is
        asked for nothing instead); an app-server that does not answer within the grace is frozen
        and is replaced."""
        if turn_id is not None:
            await self._servers.within_grace(server, "turn/interrupt", self.interrupt_turn(server, thread_id, turn_id))
        elif server.alive:
            await self._servers.within_grace(server, "thread/loaded/list",
                                             self._servers.ask(server, "thread/loaded/list", {}))

    async def _interrupt(self, server: AppServer, thread: ThreadState, active: ActiveTurn) -> None:
        if active.turn_id is not None:  # acknowledged, or read from its turn/started meanwhile
            await self.interrupt_turn(server, thread.codex_id, active.turn_id)

    async def interrupt_turn(self, server: AppServer, thread_id: str, turn_id: str) -> None:
        if not server.alive:
            return
        with anyio.move_on_after(INTERRUPT_TIMEOUT_S):
            await self._servers.ask(server, "turn/interrupt", {"threadId": thread_id, "turnId": turn_id})
