"""`acp_agent.prestart`: a provider's backend started by the command line before the agent's
imports, claimed only with the same argv and environment, stopped when nobody claims it; and
`process.adopt_child`, which owns such a process from the event loop like `open_child`."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from acp_agent.prestart import Prestarted
from acp_agent.process import adopt_child

pytestmark = pytest.mark.timeout(30)

ECHO = [sys.executable, "-c", "import sys\nfor line in sys.stdin: print(line.strip().upper(), flush=True)"]


@pytest.fixture
def prestart() -> Iterator[Prestarted]:
    """What the command line creates and hands down; each test gets its own (no global state)."""
    held = Prestarted()
    yield held
    held.stop_unclaimed()


def write_provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, returned: str) -> str:
    """A package `acp_agent_<name>` whose __init__ must never run, with a prestart.py returning
    the Python expression `returned`."""
    package = tmp_path / f"acp_agent_{name}"
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('the package must not be imported')\n")
    (package / "prestart.py").write_text(f"def prestart(environ):\n    return {returned}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


@pytest.fixture
def provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A package `acp_agent_prestarttest` whose __init__ must never run, with a prestart.py."""
    return write_provider(tmp_path, monkeypatch, "prestarttest",
                          f"{ECHO!r}, {{'PATH': environ.get('PATH', ''), 'MARK': environ.get('MARK', '')}}")


def test_a_backend_is_started_without_importing_the_package_and_claimed_once(
        provider: str, prestart: Prestarted) -> None:
    environ = {"PATH": "/usr/bin:/bin", "MARK": "one"}
    prestart.start(provider, environ)
    popen = prestart.take(provider, ECHO, {"PATH": "/usr/bin:/bin", "MARK": "one"})
    assert popen is not None and popen.poll() is None
    assert prestart.take(provider, ECHO, {"PATH": "/usr/bin:/bin", "MARK": "one"}) is None  # once
    popen.kill()
    popen.wait(timeout=10)
    for stream in (popen.stdin, popen.stdout, popen.stderr):
        assert stream is not None
        stream.close()


def test_a_backend_started_with_another_environment_is_stopped_not_claimed(
        provider: str, prestart: Prestarted) -> None:
    prestart.start(provider, {"PATH": "/usr/bin:/bin", "MARK": "one"})
    assert prestart.holds(provider)
    popen = prestart._held[provider][0]
    assert prestart.take(provider, ECHO, {"PATH": "/usr/bin:/bin", "MARK": "two"}) is None
    assert popen.returncode is not None  # stopped and reaped


def test_an_unclaimed_backend_is_stopped_when_the_command_returns(
        provider: str, prestart: Prestarted) -> None:
    prestart.start(provider, {"PATH": "/usr/bin:/bin"})
    assert prestart.holds(provider)
    popen = prestart._held[provider][0]
    prestart.stop_unclaimed()
    assert popen.returncode is not None
    assert prestart.take(provider, ECHO, {"PATH": "/usr/bin:/bin", "MARK": ""}) is None


def test_what_one_command_line_started_is_not_seen_by_another(provider: str, prestart: Prestarted) -> None:
    """The processes are held by the object the command line passes down, not by the module."""
    prestart.start(provider, {"PATH": "/usr/bin:/bin"})
    other = Prestarted()
    assert prestart.holds(provider) and not other.holds(provider)
    assert other.take(provider, ECHO, {"PATH": "/usr/bin:/bin", "MARK": ""}) is None
    assert prestart.holds(provider)


@pytest.fixture
def greeting_provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A provider whose prestart also returns a greeting for the backend's stdin."""
    return write_provider(tmp_path, monkeypatch, "greettest",
                          f"{ECHO!r}, {{'PATH': environ.get('PATH', '')}}, b'hello\\nthere\\n'")


def test_a_greeting_is_written_at_spawn_and_the_process_goes_only_to_who_would_send_it(
        greeting_provider: str, prestart: Prestarted) -> None:
    environ = {"PATH": "/usr/bin:/bin"}
    prestart.start(greeting_provider, environ)
    popen = prestart._held[greeting_provider][0]
    assert prestart.take(greeting_provider, ECHO, environ) is None  # a taker that would not greet
    assert popen.returncode is not None  # stopped and reaped
    prestart.start(greeting_provider, environ)
    popen = prestart.take(greeting_provider, ECHO, environ, b"hello\nthere\n")
    assert popen is not None and popen.stdout is not None and popen.stdin is not None
    assert popen.stdout.readline() == b"HELLO\n" and popen.stdout.readline() == b"THERE\n"  # answered
    popen.stdin.close()
    popen.wait(timeout=10)
    for stream in (popen.stdout, popen.stderr):
        assert stream is not None
        stream.close()


def test_a_provider_without_prestart_starts_nothing(prestart: Prestarted) -> None:
    prestart.start("no_such_provider_here", {})
    assert not prestart.holds("no_such_provider_here")


@pytest.mark.anyio
async def test_an_adopted_child_talks_over_its_pipes_and_is_stopped_on_exit() -> None:
    popen = subprocess.Popen(ECHO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
    async with adopt_child(popen, name="echo") as child:
        assert child.pid == popen.pid and child.returncode is None
        await child.stdin.send(b"hello\n")
        with anyio.fail_after(10):
            data = b""
            while not data.endswith(b"\n"):
                data += await child.stdout.receive()
        assert data == b"HELLO\n"
    assert popen.returncode == 0  # stdin closed: it ended on its own
    assert child.exited.is_set()


class RecordingPopen:
    """A process that records how it is stopped: it ends on a signal, never on its own."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.returncode: int | None = None
        self.stdin = self.stdout = self.stderr = None

    def poll(self) -> int | None:
        return self.returncode

    def terminate(self) -> None:
        self.calls.append("terminate")
        self.returncode = -15

    def kill(self) -> None:
        self.calls.append("kill")
        self.returncode = -9

    def wait(self, timeout: float | None = None) -> int:
        self.calls.append("wait")
        if self.returncode is None:
            raise subprocess.TimeoutExpired("backend", timeout or 0)
        return self.returncode


def test_an_unclaimed_backend_is_terminated_without_waiting_for_it_to_see_its_input_end() -> None:
    """Nobody used it: waiting for it to read the end of its input first would cost what is left
    of its boot (a Claude CLI the agent leaves right after `initialize`) before the agent exits."""
    from acp_agent import prestart as module

    popen = RecordingPopen()
    module._stop(popen)  # type: ignore[arg-type]
    assert popen.calls == ["terminate", "wait"]
