"""A session's prompts in arrival order: one holds the session, the others wait their turn.

ACP lets a client send a follow-up `session/prompt` while a turn runs (the reference adapters
queue it). The agent admits prompts through a `PromptLine` per session: the first one holds the
session until its answer is written, then hands it to the next, so every prompt gets its own turn,
its own answer and its own stop reason, and no update of a later turn is written before the answer
of the turn before it. `drop_waiting` (a `session/cancel`, the session closed, the client gone)
answers every prompt still waiting as cancelled without running it; the one holding the session is
cancelled by the agent itself. It knows nothing of turns, providers or the wire.
"""

from __future__ import annotations

from collections import deque

import anyio
from attrs import define, field


@define(eq=False)
class _Ticket:
    admitted: anyio.Event = field(factory=anyio.Event)
    dropped: bool = False


class PromptLine:
    """One session's FIFO of prompts; see the module docstring."""

    def __init__(self) -> None:
        self.held = False
        """A prompt holds the session (its turn runs, or its answer is not written yet)."""
        self._waiting: deque[_Ticket] = deque()

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    @property
    def busy(self) -> bool:
        return self.held or bool(self._waiting)

    async def enter(self) -> bool:
        """Wait until this prompt holds the session; False when it was dropped while waiting.

        A waiter cancelled in line (`$/cancel_request`) leaves it; one cancelled just after it was
        handed the session passes the session on, so the line never stalls.
        """
        if not self.busy:
            self.held = True
            return True
        ticket = _Ticket()
        self._waiting.append(ticket)
        try:
            await ticket.admitted.wait()
        except BaseException:
            if ticket in self._waiting:
                self._waiting.remove(ticket)
            elif not ticket.dropped:
                self.release()
            raise
        return not ticket.dropped

    def release(self) -> None:
        """The holder is done (its answer written or abandoned): the next waiting prompt holds it."""
        if self._waiting:
            self._waiting.popleft().admitted.set()  # `held` stays set: it passes to that prompt
        else:
            self.held = False

    def drop_waiting(self) -> int:
        """Every prompt waiting now is answered cancelled, unrun; returns how many there were."""
        dropped = len(self._waiting)
        while self._waiting:
            ticket = self._waiting.popleft()
            ticket.dropped = True
            ticket.admitted.set()
        return dropped


class ReleaseOnce:
    """Releases a line exactly once, whichever path (answer written, error, cancellation) comes first."""

    def __init__(self, line: PromptLine) -> None:
        self._line: PromptLine | None = line

    def __call__(self, _written: bool = True) -> None:
        line, self._line = self._line, None
        if line is not None:
            line.release()


__all__ = ["PromptLine", "ReleaseOnce"]
