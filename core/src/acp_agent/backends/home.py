"""The provider runtime's home: one long-lived task that opens it, keeps it, and closes it.

The runtime's task groups must enter and leave in one task, so the runtime lives in a task of
the agent's task group rather than in whichever request first needed it. Kept apart from the
agent so ACP methods only ask for "the runtime" and never see how it is opened (at start-up for
`ProviderSpec.start_early`, else on first use), replaced (its backend died, or a sign-in made it
outdated) or closed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

import anyio
import anyio.abc
import anyio.to_thread
from attrs import define, field

from acp_agent.backends.contract import ProviderRuntime, ProviderSpec, RuntimeContext
from acp_agent.backends.phases import PhaseDeadlineExceeded, PhaseFailed
from acp_agent.failures.protocol import FailureKind, FailureObservation
from acp_agent.startup.prestart import Prestarted
from acp_agent.wire.rpc import new_event

log = logging.getLogger(__name__)


@define(eq=False)
class RuntimeOpening:
    """One opening of the runtime, owned by its task."""

    ready: anyio.Event = field(factory=new_event)
    stop: anyio.Event = field(factory=new_event)
    done: anyio.Event = field(factory=new_event)
    runtime: ProviderRuntime | None = None
    error: BaseException | None = None
    early_environ: Mapping[str, str] | None = None
    """Set while a runtime opened at start-up (`ProviderSpec.start_early`) awaits its first use."""
    opening: anyio.CancelScope = field(factory=anyio.CancelScope)
    """Cancelled when the home is closed before the runtime finished opening (its backend may
    still be starting when the client leaves)."""
    environ: Mapping[str, str] | None = None
    """The environment the runtime has now (renewed when the credentials change)."""


class RuntimeHome:
    """Opens the provider's runtime when asked, and replaces or closes it."""

    def __init__(self, provider: ProviderSpec, prestarted: Prestarted | None = None) -> None:
        self.provider = provider
        self.prestarted = prestarted if prestarted is not None else Prestarted()
        """Backends the command line started (`acp_agent.startup.prestart`), for the runtime to claim."""
        self.current: RuntimeOpening | None = None
        self.outdated = False
        """A sign-in happened while sessions were open: replace the backend once none is."""
        self._opening: anyio.Lock | None = None
        self._task_group: anyio.abc.TaskGroup | None = None

    def _lock(self) -> anyio.Lock:
        """Opening, replacing and closing take turns (made on first use: not on the way to
        `initialize`)."""
        if self._opening is None:
            self._opening = anyio.Lock()
        return self._opening

    def attach(self, task_group: anyio.abc.TaskGroup) -> None:
        """The task group the runtime's task runs in (the agent's, for one connection)."""
        self._task_group = task_group

    @property
    def running(self) -> ProviderRuntime | None:
        return self.current.runtime if self.current is not None else None

    def open(self, context: RuntimeContext, *, early: bool = False) -> RuntimeOpening:
        opened = RuntimeOpening(early_environ=context.environ if early else None, environ=context.environ)
        self.current = opened
        self.outdated = False  # a new backend starts with what is configured now
        assert self._task_group is not None
        self._task_group.start_soon(self._serve, opened, context)
        return opened

    async def runtime(self, context: Callable[[], Awaitable[RuntimeContext]], *, sessions_open: bool) -> ProviderRuntime:
        """The runtime, opened (or replaced) first if need be; `context` is what a new one gets."""
        async with self._lock():
            opened = self.current
            if opened is not None and self.outdated and not sessions_open:
                await self.close()
                opened = None
            if opened is not None and opened.early_environ is not None:
                # The runtime opened at start-up is adopted only if a session would get the same
                # environment (credentials may have changed since, e.g. through the keyring).
                fresh = await context()
                opened.early_environ, early_environ = None, opened.early_environ
                if early_environ != fresh.environ and not opened.done.is_set():
                    opened.stop.set()  # it closes in its own task; the session need not wait
                    opened = self.open(fresh)
            if opened is None or opened.done.is_set():
                opened = self.open(await context())
        await opened.ready.wait()
        if opened.runtime is not None and sessions_open:
            await self._renew(opened, opened.runtime, context)
        if opened.runtime is None:
            error = opened.error
            if isinstance(error, PhaseDeadlineExceeded | PhaseFailed):
                raise error
            raise PhaseFailed(FailureObservation(
                kind=FailureKind.INTERNAL_ERROR, native_kind="internalError",
                title=f"The {self.provider.title} backend could not be started.", source="adapter",
                execution="notSubmitted", phase="initializing"))
        return opened.runtime

    async def _renew(self, opened: RuntimeOpening, runtime: ProviderRuntime,
                     context: Callable[[], Awaitable[RuntimeContext]]) -> None:
        """Open sessions see credentials stored since their backend started (their next prompt
        runs on a backend with them), where the runtime can renew its environment; otherwise the
        backend is replaced once no session is open."""
        async with self._lock():
            fresh = (await context()).environ
            if opened.environ is None or fresh == opened.environ:
                return
            opened.environ = fresh
            if not await runtime.renew_environment(fresh):
                self.outdated = True

    async def replace_when_idle(self, *, sessions_open: bool) -> None:
        """Let the next session start a backend that sees what a sign-in stored.

        A running backend keeps the environment (and, for some vendors, the sign-in) it started
        with; it is replaced as soon as no session uses it, so the next `session/new` starts a
        fresh one (an open session keeps its backend: ending it under the client is worse).
        """
        await self.drop_prestarted()
        if self.current is None:
            return
        if sessions_open:
            self.outdated = True
            return
        async with self._lock():
            self.outdated = False
            await self.close()

    async def drop_prestarted(self) -> None:
        """A backend the command line started that no runtime has claimed yet was started before
        a sign-in, sign-out or close: it is stopped, never adopted later (in a thread: the stop
        waits for the process)."""
        await anyio.to_thread.run_sync(self.prestarted.stop_unclaimed)

    async def close(self) -> None:
        opened = self.current
        self.current = None
        if opened is not None:
            opened.stop.set()
            if not opened.ready.is_set():
                opened.opening.cancel()
            await opened.done.wait()
        await self.drop_prestarted()  # after the runtime: a shutdown budget running out spares it

    async def _serve(self, opened: RuntimeOpening, context: RuntimeContext) -> None:
        try:
            with opened.opening:
                async with self.provider.open_runtime(context) as runtime:
                    opened.runtime = runtime
                    opened.ready.set()
                    await opened.stop.wait()
        except Exception as exc:
            if not opened.ready.is_set():
                log.warning("runtime of %s failed to start: %s", self.provider.name, type(exc).__name__)
            else:
                log.exception("runtime of %s failed", self.provider.name)
            opened.error = exc
        finally:
            opened.runtime = None
            opened.ready.set()
            opened.done.set()
