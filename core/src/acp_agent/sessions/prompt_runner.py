"""Running a prompt: a turn starts, takes the provider's events, ends, and publishes its record.

`Agent` routes `session/prompt` and `session/cancel` here and gets back the prompt's answer; the
turn's data goes one way (start → events → end → record and auth status, via `Turn.finish`)
and never re-enters the agent. This module also owns each session's prompt line (admission)
and knows when the client's input ended, because both decide whether a queued prompt runs.
"""

from __future__ import annotations

import logging
import uuid
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from acp_agent.backends.contract import NotSupported, ProviderRuntime, TurnFailed
from acp_agent.backends.phases import PhaseDeadlineExceeded, PhaseFailed
from acp_agent.failures.protocol import FailureKind, FailureObservation

if TYPE_CHECKING:  # a session's machinery loads with the first session, not with the agent
    from acp_agent.sessions.admission import PromptLine
    from acp_agent.sessions.session import Session, Turn
    from acp_agent.wire import acp

log = logging.getLogger(__name__)


class TurnRunner:
    """Runs and cancels the turns of one connection's sessions against the provider runtime."""

    def __init__(self, provider_name: str, *, start_runtime: Callable[[], Awaitable[ProviderRuntime]],
                 running_runtime: Callable[[], ProviderRuntime | None], cancel_grace_s: float,
                 input_gone_cancel_grace_s: float) -> None:
        self.provider_name = provider_name
        self.start_runtime = start_runtime
        """The runtime a prompt runs on, started if it is not (and replaced if outdated)."""
        self.running_runtime = running_runtime
        """The runtime if one runs now: a cancel never starts one."""
        self.cancel_grace_s = cancel_grace_s
        self.input_gone_cancel_grace_s = input_gone_cancel_grace_s
        """With the client gone nobody waits for the answer, and shutdown closes every backend anyway."""
        self.input_ended = False
        self.stopping = False
        """The agent is exiting (a signal): no turn starts, the running ones are cut off."""
        self._lines: weakref.WeakKeyDictionary[Session, PromptLine] = weakref.WeakKeyDictionary()

    def line(self, session: Session) -> PromptLine:
        """The session's prompt line: one turn at a time, the next waits its turn."""
        line = self._lines.get(session)
        if line is None:
            from acp_agent.sessions.admission import PromptLine

            line = self._lines[session] = PromptLine()
        return line

    def input_gone(self) -> None:
        """The client closed its input: queued prompts will not run (nobody reads their turns)."""
        self.input_ended = True
        for line in list(self._lines.values()):
            line.drop_waiting()

    def stop(self) -> None:
        """The agent was told to exit (SIGTERM, SIGINT, SIGHUP): queued prompts will not run, and
        each running turn is cut off and answered with a worker-shutdown failure (DESIGN §4, §5:
        the agent ended it, not the user) before the connection closes."""
        self.stopping = True
        self.input_gone()
        for session in list(self._lines):
            turn = session.turn
            if turn is not None and not turn.backend_done:
                turn.record_failure(_shutdown_failure())
                if turn.run_scope is not None:
                    turn.run_scope.cancel()

    async def run(self, session: Session, prompt: Sequence[acp.ContentBlock],
                  file_report: str | None = None) -> Any:
        """One admitted prompt, start to answer: the response, or the turn's baseline error raised.
        `file_report`: the id of AIR's `agentFileChangeReportRequest`, answered before it."""
        turn = session.start_turn(str(uuid.uuid4()))
        if file_report is not None:
            from acp_agent.sessions.file_changes import ChangedFiles

            turn.file_changes = ChangedFiles(file_report)
        stop_reason: acp.StopReason = "end_turn"
        try:
            # What was kept for the session (or for whichever session came next) goes first.
            await session.open()
            async with anyio.create_task_group() as watch:
                watch.start_soon(self._stop_backend_if_abandoned, turn)
                stop_reason = await self._run_provider_turn(session, turn, prompt)
                turn.backend_done = True
                watch.cancel_scope.cancel()
        finally:
            turn.end()
        # The turn's text is complete: what was held of it (`Outbox.stream_text`) goes before the
        # answer, whichever it is (queued at once, so also when the request was cancelled).
        await session.outbox.flush_text(session.session_id)
        # A cancelled request is answered -32800 now that its turn is over (the watcher cancelled it).
        from anyio.lowlevel import checkpoint_if_cancelled  # not on the way to `initialize`

        await checkpoint_if_cancelled()
        if turn.cancel_requested and turn.failure is None:
            stop_reason = "cancelled"
        return await turn.finish(stop_reason)

    async def _run_provider_turn(self, session: Session, turn: Turn,
                                 prompt: Sequence[acp.ContentBlock]) -> acp.StopReason:
        """The provider's turn, shielded from the request's own cancellation.

        A cancelled request (`$/cancel_request`, the client gone) must not cut the provider off
        mid-turn: its backend would go on and the next prompt would read this turn's answer. The
        watcher asks the provider to cancel instead; only `run_scope` (the cancel grace, shutdown)
        ends the provider's turn by force.
        """
        from acp_agent.backends.events import TurnEnd

        stop_reason: acp.StopReason = "end_turn"
        with anyio.CancelScope(shield=True) as turn.run_scope:
            if self.stopping:
                turn.record_failure(_shutdown_failure())
                return stop_reason
            try:
                runtime = await self.start_runtime()
                end = await runtime.prompt(session.session_id, prompt, turn)
                stop_reason = end.stop_reason if isinstance(end, TurnEnd) else "end_turn"
            except PhaseDeadlineExceeded as exc:
                turn.record_failure(exc.observation)
                # The deadline ended the prompt, not necessarily the backend's turn.
                await self._cancel_backend(turn, self.cancel_grace_s)
            except (TurnFailed, PhaseFailed) as exc:
                turn.record_failure(exc.observation)
            except NotSupported as exc:
                turn.record_failure(_internal_failure(f"The provider cannot run this prompt ({exc})."))
            except Exception:
                log.exception("turn %s failed in provider %s", turn.turn_id, self.provider_name)
                turn.record_failure(_internal_failure("The agent hit an internal error while running the turn."))
        return stop_reason

    async def _stop_backend_if_abandoned(self, turn: Turn) -> None:
        """Runs beside the provider's turn; when the request is cancelled, cancel the turn like `session/cancel`."""
        try:
            await anyio.sleep_forever()
        finally:
            if not turn.backend_done:
                with anyio.CancelScope(shield=True):
                    log.info("prompt request of turn %s ended early; cancelling the backend turn", turn.turn_id)
                    grace_s = self.input_gone_cancel_grace_s if self.input_ended else self.cancel_grace_s
                    await self.cancel_turn(turn, grace_s)

    async def prompt_waiting(self, session: Session) -> None:
        """A prompt joined the line behind the running turn: the provider hears of it (a turn held
        only for background work then answers, as claude-agent-acp hands it over); never raises."""
        runtime = self.running_runtime()
        try:
            if runtime is not None and session.turn is not None:
                await runtime.prompt_waiting(session.session_id)
        except Exception:
            log.exception("prompt_waiting failed in provider %s", self.provider_name)

    async def cancel(self, session: Session) -> None:
        """`session/cancel`: the prompts queued before it and the running turn are cancelled."""
        # As both reference adapters do; a prompt sent after the cancel runs.
        self.line(session).drop_waiting()
        if session.turn is not None:
            await self.cancel_turn(session.turn)

    async def cancel_turn(self, turn: Turn, grace_s: float | None = None) -> None:
        """Ask the provider to cancel; its prompt is cut off by force once the grace is over."""
        if grace_s is None:
            grace_s = self.cancel_grace_s
        turn.cancel_requested = True
        for scope in list(turn.permission_scopes):
            scope.cancel()
        if self.running_runtime() is None:
            grace_s = 0  # the runtime is closed (shutdown): no backend turn is left to wait for
        if turn.run_scope is not None:
            turn.run_scope.deadline = min(turn.run_scope.deadline, anyio.current_time() + grace_s)
        await self._cancel_backend(turn, grace_s)

    async def _cancel_backend(self, turn: Turn, grace_s: float) -> None:
        """The provider's `cancel` for the turn's session, bounded by the grace; never raises."""
        runtime = self.running_runtime()
        try:
            if runtime is not None:
                with anyio.move_on_after(grace_s):
                    await runtime.cancel(turn.session_id)
        except Exception:
            log.exception("cancel failed in provider %s", self.provider_name)


class InputWatch(anyio.abc.ByteReceiveStream):
    """The client's input stream; tells the turn runners (one per provider served) when it ended
    (the client is gone), and ends it early when the agent is told to exit (`end`)."""

    def __init__(self, stream: anyio.abc.ByteReceiveStream, *runners: TurnRunner) -> None:
        self._stream = stream
        self._runners = runners
        self._ended = False
        self._reading: anyio.CancelScope | None = None

    def end(self) -> None:
        """Read nothing more: the connection meets the end of its input, as at EOF (requests
        received run on for their grace and are answered, the last frames are written)."""
        self._ended = True
        if self._reading is not None:
            self._reading.cancel()

    async def receive(self, max_bytes: int = 65536) -> bytes:
        try:
            if not self._ended:
                with anyio.CancelScope() as self._reading:
                    return await self._stream.receive(max_bytes)
            raise anyio.EndOfStream
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._gone()
            raise
        finally:
            self._reading = None

    async def aclose(self) -> None:
        """The connection reads no more (its output failed: the client is gone), as at EOF."""
        self._gone()
        await self._stream.aclose()

    def _gone(self) -> None:
        for runner in self._runners:
            runner.input_gone()


def _shutdown_failure() -> FailureObservation:
    return FailureObservation(kind=FailureKind.WORKER_SHUTDOWN, native_kind="workerShutdown",
                              title="The agent is shutting down; the turn was stopped.", source="adapter",
                              outcome="unknown", execution="possiblySubmitted")


def _internal_failure(title: str) -> FailureObservation:
    return FailureObservation(kind=FailureKind.INTERNAL_ERROR, native_kind="internalError", title=title,
                              source="adapter", outcome="unknown", execution="possiblySubmitted")


__all__ = ["InputWatch", "TurnRunner"]
