"""Startup phases and their deadlines (DESIGN §7).

Every backend operation runs inside one phase; each phase has its own budget, read from the
environment once at start-up. A phase that overruns raises `PhaseDeadlineExceeded`, which carries
the `deadlineExceeded` observation; the phase's own cleanup can never replace it.
"""

from __future__ import annotations

import enum
import logging
import math
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Final, TypeVar

import anyio

from acp_agent.failures.protocol import Execution, FailureKind, FailureObservation
from acp_agent.wire.records import frozen

log = logging.getLogger(__name__)
_T = TypeVar("_T")

MAX_MS: Final = 2_147_483_647
STARTUP_VAR: Final = "ACP_AGENT_STARTUP_TIMEOUT_MS"
SUBMIT_VAR: Final = "ACP_AGENT_SUBMIT_TIMEOUT_MS"
READ_VAR: Final = "ACP_AGENT_READ_TIMEOUT_MS"
FORK_VAR: Final = "ACP_AGENT_FORK_TIMEOUT_MS"


class Phase(enum.StrEnum):
    INITIALIZING = "initializing"
    PREPARING = "preparing"
    SUBMITTING = "submitting"
    RUNNING = "running"
    READING = "reading"
    FORKING = "forking"


class DeadlineConfigError(ValueError):
    """A deadline variable holds something other than an integer in 1..2147483647."""

    def __init__(self, variable: str, value: str) -> None:
        super().__init__(
            f"{variable} must be a whole number of milliseconds from 1 to {MAX_MS}, got {value!r}."
        )
        self.variable = variable


def _parse(environ: Mapping[str, str], variable: str, aliases: tuple[str, ...], default: int) -> int:
    for name in (variable, *aliases):
        raw = environ.get(name)
        if raw is None:
            continue
        text = raw.strip()
        if not text.isdigit() or not 1 <= int(text) <= MAX_MS:
            raise DeadlineConfigError(name, raw)
        return int(text)
    return default


@frozen
class Deadlines:
    """Milliseconds per phase; `running` has no startup timer."""

    startup_ms: int = 120_000
    submit_ms: int = 30_000
    read_ms: int = 20_000
    fork_ms: int = 20_000

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str], aliases: Mapping[str, tuple[str, ...]] | None = None
    ) -> Deadlines:
        """Read the deadline variables; a provider may name its vendor's historical aliases."""
        aliases = aliases or {}
        return cls(
            startup_ms=_parse(environ, STARTUP_VAR, aliases.get(STARTUP_VAR, ()), 120_000),
            submit_ms=_parse(environ, SUBMIT_VAR, aliases.get(SUBMIT_VAR, ()), 30_000),
            read_ms=_parse(environ, READ_VAR, aliases.get(READ_VAR, ()), 20_000),
            fork_ms=_parse(environ, FORK_VAR, aliases.get(FORK_VAR, ()), 20_000),
        )

    def budget_ms(self, phase: Phase) -> int | None:
        return {
            Phase.INITIALIZING: self.startup_ms,
            Phase.PREPARING: self.startup_ms,
            Phase.SUBMITTING: self.submit_ms,
            Phase.READING: self.read_ms,
            Phase.FORKING: self.fork_ms,
        }.get(phase)


def _execution(phase: Phase) -> Execution:
    return "possiblySubmitted" if phase in (Phase.SUBMITTING, Phase.RUNNING) else "notSubmitted"


def deadline_observation(phase: Phase, budget_ms: int, backend: str, *, mutation: bool = False) -> FailureObservation:
    """The `deadlineExceeded` observation; its message names the phase and the budget.

    `mutation` marks a phase whose request may have changed something (a fork that may have
    created a branch): the outcome is then unknown and the message says so.
    """
    execution = _execution(phase)
    outcome = "failed"
    if execution == "possiblySubmitted":
        title = (f"{backend} did not acknowledge the turn within {budget_ms} ms (phase {phase.value}); "
                 "the turn may have been submitted.")
        hint = "Reload and inspect the session before deciding to submit again."
        outcome = "unknown"
    elif mutation:
        title = (f"{backend} did not finish {phase.value} within {budget_ms} ms. No model turn was submitted, "
                 "but a branch may have been created.")
        hint = "Inspect session/list before retrying the fork."
        outcome = "unknown"
    else:
        title = f"{backend} did not finish {phase.value} within {budget_ms} ms. No model turn was submitted."
        hint = "Check that the backend can start and the deadline fits this machine before trying again."
    return FailureObservation(
        kind=FailureKind.DEADLINE_EXCEEDED,
        native_kind="deadlineExceeded",
        title=title,
        source="adapter",
        outcome=outcome,  # type: ignore[arg-type]
        execution=execution,
        phase=phase.value,
        recovery_hint=hint,
        mutation_possibly_applied=mutation,
    )


class PhaseDeadlineExceeded(Exception):
    """A phase overran its budget."""

    def __init__(self, observation: FailureObservation) -> None:
        super().__init__(observation.title)
        self.observation = observation


class PhaseFailed(Exception):
    """A backend operation failed inside a phase with an observation the provider made."""

    def __init__(self, observation: FailureObservation) -> None:
        super().__init__(observation.title)
        self.observation = observation


@frozen
class PhaseClock:
    """Runs blocks of backend work under their phase's deadline and logs timings (never content)."""

    deadlines: Deadlines
    backend: str

    @asynccontextmanager
    async def phase(self, phase: Phase, *, label: str = "", mutation: bool = False,
                    scale: float = 1.0) -> AsyncIterator[None]:
        """Run the block under the phase's budget; `mutation` when its request may change state;
        `scale`: a budget that many times the phase's (one response whose size the history decides)."""
        budget = self.deadlines.budget_ms(phase)
        budget = None if budget is None else min(MAX_MS, round(budget * max(scale, 1.0)))
        started = time.monotonic()
        log.debug("phase %s%s started", phase.value, f" ({label})" if label else "")
        outcome = "failed"
        try:
            if budget is None:
                yield
            else:
                with anyio.move_on_after(budget / 1000) as scope:
                    yield
                if scope.cancelled_caught:
                    outcome = "deadline"
                    raise PhaseDeadlineExceeded(deadline_observation(phase, budget, self.backend, mutation=mutation))
            outcome = "ok"
        finally:
            log.info("phase %s%s %s after %.0f ms", phase.value, f" ({label})" if label else "", outcome,
                     (time.monotonic() - started) * 1000)

    async def paced(self, phase: Phase, items: AsyncIterator[_T], *, label: str = "") -> AsyncGenerator[_T, None]:
        """`items`, each within the phase's budget of the one before: a deadline on progress.

        For a read whose length the history decides (a long transcript, many pages): it may take
        as long as it keeps going, and one that stalls overruns as a phase does. The consumer's
        own time between items (sending them on) does not count. Iterate it in `aclosing`.
        """
        budget = self.deadlines.budget_ms(phase)
        started, count, outcome = time.monotonic(), 0, "failed"
        try:
            while True:
                with anyio.move_on_after(math.inf if budget is None else budget / 1000) as scope:
                    try:
                        item = await anext(items)
                    except StopAsyncIteration:
                        break
                if scope.cancelled_caught:
                    outcome = "deadline"
                    assert budget is not None
                    raise PhaseDeadlineExceeded(deadline_observation(phase, budget, self.backend))
                count += 1
                yield item
            outcome = "ok"
        finally:
            log.info("phase %s%s %s after %.0f ms (%d steps)", phase.value, f" ({label})" if label else "",
                     outcome, (time.monotonic() - started) * 1000, count)
