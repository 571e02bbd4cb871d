"""A Claude turn: the user message submitted to the session's CLI, its lines folded into events
(`TurnFold`) until the result that ends it, messages steered into it, its interrupt, the
locally answered commands (`/mcp`, `/status`), and the title asked for after it. A turn that
started subagents in the background is held past its result until they end, unless the client
takes them after the answer (`holding`). What the CLI writes between prompts is `between`'s.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.abc
import attrs

from acp_agent.provider import (
    AgentMessageChunk,
    ChildGone,
    ContentBlock,
    Event,
    FailureObservation,
    Phase,
    PhaseDeadlineExceeded,
    SessionFailure,
    SessionTitle,
    TextContent,
    TurnChannel,
    TurnEnd,
    bound,
)
from acp_agent_claude import classify, commands, content, holding, settings, subagents, titles
from acp_agent_claude.between import INTERRUPT_BUDGET_S, BetweenPrompts
from acp_agent_claude.clis import LiveCLIs
from acp_agent_claude.fold import TurnFold
from acp_agent_claude.session import MODES, PROVIDER, ClaudeSession
from acp_agent_claude.transport import ClaudeCLI, ControlError

log = logging.getLogger(__name__)


class _NotSubmitted(Exception):
    """Writing the user message to the CLI failed: the CLI is gone and nothing was submitted."""


class Turns:
    """Runs the sessions' turns on the CLIs `clis` keeps; the title requests run in `task_group`."""

    def __init__(self, clis: LiveCLIs, task_group: anyio.abc.TaskGroup) -> None:
        self._clis = clis
        self._tg = task_group
        self.between = BetweenPrompts(lambda: clis.context, task_group, self._fold)

    def _fold(self, session: ClaudeSession) -> TurnFold:
        fold = TurnFold(cwd=session.cwd, observe=bound(self._clis.context.hooks, PROVIDER), tasks=session.tasks,
                        children=session.children, window=session.window, bash_tasks=session.bash_tasks,
                        mcp=classify.McpWatch(tuple(session.mcp_servers), session.mcp_reported))
        previous = session.fold
        if previous is not None and session.children.background:
            # a subagent still running in the background: its calls end in this fold (a prompt, between prompts)
            fold.tools, fold.inputs, fold.answered_tools = previous.tools, previous.inputs, previous.answered_tools
            fold.subagent_tools, fold.subagent_texts = previous.subagent_tools, previous.subagent_texts
        return fold

    def _user_message(self, session: ClaudeSession, prompt: Sequence[ContentBlock], message_id: str) -> dict[str, Any]:
        return {"type": "user", "message": {"role": "user", "content": content.prompt_blocks(prompt)},
                "parent_tool_use_id": None, "session_id": session.session_id, "uuid": message_id}

    async def run(self, session: ClaudeSession, prompt: Sequence[ContentBlock],
                  turn: TurnChannel) -> TurnEnd | FailureObservation:
        """One prompt on the session (whose lock the caller holds): its CLI made ready (replaced
        if it died, revived if released, renewed for new credentials), then the turn. The CLI
        is read between prompts before and after (`BetweenPrompts.listen`)."""
        await self.between.quiet(session)
        try:
            return await self._run(session, prompt, turn)
        finally:
            self.between.listen(session)

    async def _run(self, session: ClaudeSession, prompt: Sequence[ContentBlock],
                   turn: TurnChannel) -> TurnEnd | FailureObservation:
        if session.live and session.cli is not None and not session.cli.alive:
            await self._lost_while_idle(session, turn)
        if session.renew:
            # New credentials (a sign-in, a key stored meanwhile): a CLI with them takes over
            # the session, resuming its transcript, as a released session comes back.
            session.renew = False
            if session.live and not session.released:
                self._clis.release(session, "new credentials")
        await self._clis.ensure(session, turn)
        local = commands.local_command(prompt)
        if local is not None:
            answer = await self._mcp(session) if local == commands.MCP else self._status(session)
            await turn.emit(AgentMessageChunk(TextContent(answer)))
            return TurnEnd("end_turn")
        session.fold, session.turn = self._fold(session), turn
        session.queued_behind = False
        session.children.spawned.clear()  # the subagents this turn starts in the background
        session.steers.clear()
        session.steer_running = session.turn_over = False
        try:
            try:
                return await self._submit(session, prompt, turn)
            except _NotSubmitted:
                # The CLI had died before our message reached it: replace it and submit for the first time.
                await self._lost_while_idle(session, turn)
                await self._clis.ensure(session, turn)
                session.fold = self._fold(session)
                try:
                    return await self._submit(session, prompt, turn)
                except _NotSubmitted:
                    session.dead = True
                    return attrs.evolve(classify.lost_while_idle(), execution="notSubmitted",
                                        phase=Phase.SUBMITTING.value)
        finally:
            session.turn = None
            session.turn_over = True
            session.hold = None
            if session.steers:
                # A steered message the CLI never started (the turn was cancelled or cut
                # off): it could still run and answer into the next prompt. Replaced first.
                session.dead = True
            session.last_used = time.monotonic()

    async def _submit(self, session: ClaudeSession, prompt: Sequence[ContentBlock],
                      turn: TurnChannel) -> TurnEnd | FailureObservation:
        fold, cli, clock = session.fold, session.cli, self._clis.context.clock
        assert fold is not None and cli is not None
        try:
            async with clock.phase(Phase.SUBMITTING, label="claude"):
                fold.prompts.add(turn.turn_id)
                try:
                    await cli.write(self._user_message(session, prompt, turn.turn_id))
                except ChildGone:
                    log.info("claude CLI took no input")
                    raise _NotSubmitted from None
                session.prompted = True
                for event in session.goals.submitted(prompt, turn.turn_id):
                    await turn.emit(event)
                first = await cli.receive()
                while _idle_line(first):  # the end of what ran before: no answer to this prompt yet
                    await self._handle(session, fold, first, turn)
                    first = await cli.receive()
            await self._handle(session, fold, first, turn)
            if not self._turn_ended(session, fold, turn):
                async with clock.phase(Phase.RUNNING, label="claude"):
                    while not self._turn_ended(session, fold, turn):
                        message = await holding.next_line(session, fold, cli)
                        if message is None:
                            break  # a held turn, cancelled or handed over to the next prompt
                        await self._handle(session, fold, message, turn)
        except anyio.EndOfStream:
            pass
        except PhaseDeadlineExceeded as exc:
            turn.record_failure(exc.observation)
            self._clis.abandon(session)
            raise
        except BaseException:
            # Cut off before the turn's result (the cancel grace ran out, shutdown, or an error
            # while handling a line): the CLI may still be on this turn and its stream would hand
            # the rest to the next prompt. The CLI is replaced before the next prompt instead.
            if fold.outcome is None:
                session.dead = True
            raise
        if fold.outcome is None:
            self._clis.abandon(session)
            return fold.finish_without_result()
        return fold.outcome

    async def _handle(self, session: ClaudeSession, fold: TurnFold, message: dict[str, Any], turn: TurnChannel) -> None:
        steered = message.get("command_uuid")
        if message.get("type") == "command_lifecycle" and steered == turn.turn_id:
            state = message.get("state")
            if state == "cancelled" and session.queued_behind and fold.outcome is None:
                fold.outcome = TurnEnd("cancelled" if fold.cancel_requested else "end_turn")  # never started
            if state == "started" and session.own_turn is not None:  # the CLI's own turn is over
                session.own_turn = None
                await self.between.publish(session, session.bash_tasks.own_turn_ended(failed=False))
            session.queued_behind = state == "queued"
            return
        if session.queued_behind or session.own_turn is not None:
            await self.between.outside(session, message)  # the CLI's own turn, before this prompt's
            return
        if message.get("type") == "command_lifecycle" and isinstance(steered, str) and steered in session.steers:
            # The CLI took up (or dropped) a steered message; a started one owes a result.
            if message.get("state") in ("started", "cancelled", "completed"):
                session.steers.discard(steered)
                session.steer_running = session.steer_running or message.get("state") == "started"
        elif message.get("type") == "result":
            if session.hold is not None:
                session.hold.results += 1
            if not subagents.autonomous(message, fold.prompts):
                session.steer_running = False
        for event in [*session.goals.line(message), *fold.feed(message)]:
            await turn.emit(event)

    @staticmethod
    def _turn_ended(session: ClaudeSession, fold: TurnFold, turn: TurnChannel) -> bool:
        """Whether the turn is over: its result is in and no steered message is queued or running
        (the aborted cycle's result comes before the steer's own). A cancel ends it at once. A
        turn that started subagents in the background is held past its result (`holding`)."""
        hold = session.hold
        if hold is not None:
            return holding.held_ended(session, fold, hold)
        if not fold.finished:
            return False
        if (session.steers or session.steer_running) and not fold.cancel_requested:
            fold.outcome = None  # the aborted cycle's result: the turn goes on with the steer
            return False
        session.turn_over = True  # (a held turn takes no steer either)
        return not holding.hold_at_result(session, fold, turn)

    async def steer(self, session: ClaudeSession, prompt: Sequence[ContentBlock], turn: TurnChannel) -> bool:
        """A user message into the running turn: priority `now` (the CLI aborts the current cycle
        and runs it next), `later` while a permission request or question is open (so the answer
        is not thrown away). Its output streams into `turn`, which ends with the result after it.
        False when the turn is already over."""
        if (session.turn is not turn or session.turn_over or session.cli is None or session.dead
                or session.fold is None or session.cancelling()):
            return False
        steer_id = str(uuid.uuid4())
        message = {**self._user_message(session, prompt, steer_id), "priority": "later" if session.asking else "now"}
        session.steers.add(steer_id)  # before the write: the turn must not end without it
        session.fold.prompts.add(steer_id)
        try:
            async with self._clis.context.clock.phase(Phase.SUBMITTING, label="claude steer"):
                await session.cli.write(message)
        except ChildGone:
            session.steers.discard(steer_id)
            log.info("claude CLI took no steered input")
            return False
        for event in session.goals.submitted(prompt, steer_id):
            await turn.emit(event)
        return True

    @staticmethod
    async def cancel(session: ClaudeSession) -> None:
        if session.fold is None or session.turn is None:
            return
        session.fold.cancel_requested = True
        if session.hold is not None:
            holding.hand_over(session)  # held for background subagents: cancelled now, they go on
            return
        if session.cli is not None and not session.dead:
            try:
                await session.cli.request("interrupt", timeout_s=INTERRUPT_BUDGET_S)
            except (ChildGone, ControlError) as exc:
                log.info("claude interrupt failed: %s", type(exc).__name__)

    @staticmethod
    async def _lost_while_idle(session: ClaudeSession, turn: TurnChannel) -> None:
        log.warning("claude CLI of session %s exited between turns", session.session_id)
        session.dead = True
        await turn.emit(SessionFailure(classify.lost_while_idle()))

    @staticmethod
    async def _mcp(session: ClaudeSession) -> str:
        """`/mcp`, which the CLI answers only with a count in stream-json: its servers' states."""
        assert session.cli is not None
        try:
            status = await session.cli.request("mcp_status")
        except (ChildGone, ControlError) as exc:
            log.info("claude mcp_status failed: %s", type(exc).__name__)
            return "The MCP servers' state is not available."
        finally:
            session.last_used = time.monotonic()
        return commands.mcp_text(status)

    @staticmethod
    def _status(session: ClaudeSession) -> str:
        """`/status`: what the session runs with, from the agent's state and the CLI's report."""
        info = settings.model_info(session.models, session.model)
        model = str(session.model or "default")
        if info is not None:
            name = str(info.get("displayName") or info.get("value"))
            resolved = info.get("resolvedModel")
            model = f"{name} ({resolved})" if isinstance(resolved, str) and resolved else name
        mode = next((name for mode_id, name, _ in MODES if mode_id == session.mode), session.mode)
        fast = session.fast if settings.supports_fast_mode(session.models, session.model) else None
        return commands.status_text(version=session.version, session_id=session.session_id, cwd=session.cwd,
                                    directories=session.add_dirs, model=model, mode=mode, effort=session.effort,
                                    fast=fast, account=session.account)

    async def rename(self, session: ClaudeSession, title: str) -> None:
        """The title the user chose, through the session's CLI (`rename_session` from the host,
        which it stores as a user rename)."""
        assert session.cli is not None
        async with self._clis.context.clock.phase(Phase.PREPARING, label="claude rename"):
            await session.cli.request("rename_session", title=title, source="host", session_id=session.session_id)
        session.last_used = time.monotonic()

    async def ask_title(self, session: ClaudeSession, prompt: Sequence[ContentBlock], turn: TurnChannel) -> None:
        """A new session's first ended turn publishes its prompt as the title; until the CLI has
        named the session, each ended turn asks it for a title in the background. Not before the
        turn: the CLI stores the title at once, and a transcript holding only a title is one
        `--resume` cannot open."""
        if session.chosen_title is not None and session.prompted and session.live:
            title, session.chosen_title, session.renamed = session.chosen_title, None, True
            try:  # the user's title, set before the CLI kept a transcript
                await self.rename(session, title)
            except (ChildGone, ControlError) as exc:
                log.info("claude CLI did not rename the session: %s", type(exc).__name__)
        if session.untitled and (shown := titles.provisional(prompt)):
            session.untitled = False
            await turn.emit(SessionTitle(shown))  # the core makes it one short line
        text = titles.description(prompt)
        if session.titled or not text or session.cli is None or session.dead:
            return
        session.titled = True

        async def emit(event: Event) -> None:
            if not session.renamed:  # the title the user chose stays
                await turn.emit(event)

        async def ask(cli: ClaudeCLI) -> None:
            session.titled = await titles.publish(cli, text, emit)

        self._tg.start_soon(ask, session.cli)


def _idle_line(message: dict[str, Any]) -> bool:
    """The CLI's `session_state_changed` to `idle`."""
    return (message.get("type") == "system" and message.get("subtype") == "session_state_changed"
            and message.get("state") == "idle")
