"""`ProviderSpec.start_early`: the core opens the runtime as soon as `initialize` is answered (not
before: its imports would delay the answer; the backend itself boots from the command line), and
the first session adopts it unless its environment has changed (issue 11)."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import attrs
import pytest

from acp_agent.backends.contract import ProviderRuntime, ProviderSpec, RuntimeContext
from acp_agent.backends.home import RuntimeHome
from acp_agent.backends.phases import Deadlines, PhaseClock
from acp_agent.backends.plugins import installed_hooks
from acp_agent.failures.redaction import Redactor
from acp_agent.testing import run_in_process
from acp_agent_scripted import make_spec
from tests.core.test_auth import MemoryKeyring

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]
CWD = tempfile.gettempdir()


class Recorder:
    """Wraps the scripted provider's `open_runtime`: which environments were opened and closed."""

    def __init__(self, spec: ProviderSpec) -> None:
        self.spec = attrs.evolve(spec, open_runtime=self.open_runtime, start_early=True)
        self._inner = spec.open_runtime
        self.opened: list[dict[str, str]] = []
        self.closed: list[dict[str, str]] = []
        self.first_open = anyio.Event()

    @asynccontextmanager
    async def open_runtime(self, context: RuntimeContext) -> AsyncIterator[ProviderRuntime]:
        self.opened.append(dict(context.environ))
        self.first_open.set()
        try:
            async with self._inner(context) as runtime:
                yield runtime
        finally:
            self.closed.append(dict(context.environ))


async def test_the_runtime_opens_once_initialize_is_answered_and_serves_the_first_session() -> None:
    recorder = Recorder(make_spec({}))
    async with run_in_process(recorder.spec, environ={"SCRIPTED_API_KEY": "k"}) as client:
        await client.initialize()
        with anyio.fail_after(5):
            await recorder.first_open.wait()  # no session was asked for
        await client.new_session(CWD)
        await client.new_session(CWD)
        assert len(recorder.opened) == 1 and recorder.closed == []
    assert len(recorder.closed) == 1  # stopped with the agent


async def test_a_session_asked_for_before_initialize_gets_one_runtime() -> None:
    """A client that skips `initialize`: the session's request opens the runtime, once."""
    recorder = Recorder(make_spec({}))
    async with run_in_process(recorder.spec, environ={"SCRIPTED_API_KEY": "k"}) as client:
        await client.new_session(CWD)
        await client.new_session(CWD)
        assert len(recorder.opened) == 1 and recorder.closed == []
    assert len(recorder.closed) == 1


async def test_an_early_runtime_is_closed_with_an_agent_that_opens_no_session() -> None:
    recorder = Recorder(make_spec({}))
    async with run_in_process(recorder.spec, environ={"SCRIPTED_API_KEY": "k"}) as client:
        await client.initialize()
        with anyio.fail_after(5):
            await recorder.first_open.wait()
    assert len(recorder.opened) == 1 and len(recorder.closed) == 1


async def test_an_environment_changed_since_start_up_reopens_the_runtime() -> None:
    """A key stored in the keyring after start-up reaches the backend the first session uses."""
    recorder = Recorder(make_spec({}))
    keyring = MemoryKeyring()
    async with run_in_process(recorder.spec, keyring=keyring) as client:
        await client.initialize()
        with anyio.fail_after(5):
            await recorder.first_open.wait()
        keyring.set_password("acp-agent", "scripted", "stored-later")
        await client.new_session(CWD)
        assert [env.get("SCRIPTED_API_KEY") for env in recorder.opened] == [None, "stored-later"]
        assert [env.get("SCRIPTED_API_KEY") for env in recorder.closed] == [None]


async def test_without_start_early_the_runtime_waits_for_the_first_session() -> None:
    recorder = Recorder(make_spec({}))
    spec = attrs.evolve(recorder.spec, start_early=False)
    async with run_in_process(spec, environ={"SCRIPTED_API_KEY": "k"}) as client:
        await client.initialize()
        assert recorder.opened == []
        await client.new_session(CWD)
        assert len(recorder.opened) == 1


class Gated(Recorder):
    """An early runtime whose opening waits on its backend (here: `gate`, which a test may never
    open), and which records the client capabilities its context reports."""

    def __init__(self, spec: ProviderSpec) -> None:
        super().__init__(spec)
        self.waiting = anyio.Event()
        self.gate = anyio.Event()
        self.answered = anyio.Event()
        self.cancelled = False
        self.terminal: list[bool] = []

    @asynccontextmanager
    async def open_runtime(self, context: RuntimeContext) -> AsyncIterator[ProviderRuntime]:
        self.terminal.append(context.client_terminal)
        self.waiting.set()
        try:
            await self.gate.wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
        self.answered.set()
        async with super().open_runtime(context) as runtime:
            yield runtime


async def test_an_early_runtime_is_opened_with_initialize_answered() -> None:
    """Opened only after the answer: it sees the client's capabilities (a terminal, here)."""
    gated = Gated(make_spec({}))
    gated.gate.set()
    async with run_in_process(gated.spec, environ={"SCRIPTED_API_KEY": "k"}) as client:
        await client.request("initialize", {
            "protocolVersion": 1, "clientInfo": {"name": "in-process-test", "version": "0"},
            "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": True}})
        with anyio.fail_after(5):
            await gated.answered.wait()
        await client.new_session(CWD)
        assert len(gated.opened) == 1
    assert gated.terminal == [True]


async def test_closing_the_host_cancels_an_opening_still_waiting_for_its_backend() -> None:
    """A client that leaves while the runtime is still opening (its backend never answers):
    closing its host (the agent's shutdown) must not wait for it."""
    gated = Gated(make_spec({}))
    host = RuntimeHome(gated.spec)
    context = RuntimeContext(hooks=installed_hooks(), environ={"SCRIPTED_API_KEY": "k"},
                             clock=PhaseClock(Deadlines(), "Scripted"), redact=Redactor())
    async with anyio.create_task_group() as task_group:
        host.attach(task_group)
        host.open(context, early=True)
        with anyio.fail_after(5):
            await gated.waiting.wait()
            await host.close()
    assert gated.cancelled and gated.opened == []
