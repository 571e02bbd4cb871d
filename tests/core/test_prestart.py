"""`acp_agent.startup.prestart`: a provider's backend started by the command line before the agent's
imports with the hook its `ProviderSpec.prestart` declared (recorded by `acp_agent.startup.declared`),
claimed only with the same argv and environment, stopped when nobody claims it; and
`process.adopt_child`, which owns such a process from the event loop like `open_child`."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from acp_agent.backends import pdeath
from acp_agent.backends.process import adopt_child
from acp_agent.startup import declared
from acp_agent.startup.prestart import Prestarted, Spawned

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


def hook(provider: str) -> str:
    """What `write_provider`'s spec would declare as its `prestart`."""
    return f"acp_agent_{provider}.prestart:prestart"


@pytest.fixture
def provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A package `acp_agent_prestarttest` whose __init__ must never run, with a prestart.py."""
    return write_provider(tmp_path, monkeypatch, "prestarttest",
                          f"{ECHO!r}, {{'PATH': environ.get('PATH', ''), 'MARK': environ.get('MARK', '')}}")


def test_a_backend_is_started_without_importing_the_package_and_claimed_once(
        provider: str, prestart: Prestarted) -> None:
    environ = {"PATH": "/usr/bin:/bin", "MARK": "one"}
    prestart.start(provider, environ, hook(provider))
    spawned = prestart.take(provider, ECHO, {"PATH": "/usr/bin:/bin", "MARK": "one"})
    assert spawned is not None and spawned.poll() is None
    assert prestart.take(provider, ECHO, {"PATH": "/usr/bin:/bin", "MARK": "one"}) is None  # once
    spawned.kill()
    assert spawned.wait(timeout=10) == -signal.SIGKILL
    spawned.close_pipes()


def test_a_backend_started_with_another_environment_is_stopped_not_claimed(
        provider: str, prestart: Prestarted) -> None:
    prestart.start(provider, {"PATH": "/usr/bin:/bin", "MARK": "one"}, hook(provider))
    assert prestart.holds(provider)
    popen = prestart._held[provider].process
    assert prestart.take(provider, ECHO, {"PATH": "/usr/bin:/bin", "MARK": "two"}) is None
    assert popen.returncode is not None  # stopped and reaped


def test_an_unclaimed_backend_is_stopped_when_the_command_returns(
        provider: str, prestart: Prestarted) -> None:
    prestart.start(provider, {"PATH": "/usr/bin:/bin"}, hook(provider))
    assert prestart.holds(provider)
    popen = prestart._held[provider].process
    prestart.stop_unclaimed()
    assert popen.returncode is not None
    assert prestart.take(provider, ECHO, {"PATH": "/usr/bin:/bin", "MARK": ""}) is None


def test_what_one_command_line_started_is_not_seen_by_another(provider: str, prestart: Prestarted) -> None:
    """The processes are held by the object the command line passes down, not by the module."""
    prestart.start(provider, {"PATH": "/usr/bin:/bin"}, hook(provider))
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
    prestart.start(greeting_provider, environ, hook(greeting_provider))
    popen = prestart._held[greeting_provider].process
    assert prestart.take(greeting_provider, ECHO, environ) is None  # a taker that would not greet
    assert popen.returncode is not None  # stopped and reaped
    prestart.start(greeting_provider, environ, hook(greeting_provider))
    spawned = prestart.take(greeting_provider, ECHO, environ, b"hello\nthere\n")
    assert spawned is not None
    assert read_all(spawned, close_input=True) == b"HELLO\nTHERE\n"  # answered
    assert spawned.wait(timeout=10) == 0


def test_a_provider_without_prestart_starts_nothing(prestart: Prestarted) -> None:
    prestart.start("no_such_provider_here", {}, None)
    prestart.start("no_such_module_here", {}, "acp_agent_no_such_module_here.prestart:prestart")
    assert not prestart.holds("no_such_provider_here") and not prestart.holds("no_such_module_here")


def read_all(spawned: Spawned, *, close_input: bool) -> bytes:
    """Everything the process writes to stdout until it closes it (after the end of its input)."""
    assert spawned.stdin is not None and spawned.stdout is not None
    if close_input:
        os.close(spawned.stdin)
        spawned.stdin = None
    data = b""
    while chunk := os.read(spawned.stdout, 65536):
        data += chunk
    return data


@pytest.mark.anyio
async def test_an_adopted_child_talks_over_its_pipes_and_is_stopped_on_exit(
        provider: str, prestart: Prestarted) -> None:
    prestart.start(provider, {"PATH": "/usr/bin:/bin"}, hook(provider))
    popen = prestart.take(provider, ECHO, {"PATH": "/usr/bin:/bin", "MARK": ""})
    assert popen is not None
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


class RecordingProcess:
    """A process that records how it is stopped: it ends on a signal, never on its own."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.returncode: int | None = None

    def close_pipes(self) -> None:
        self.calls.append("close")

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
            raise TimeoutError("backend")
        return self.returncode


def test_an_unclaimed_backend_is_terminated_without_waiting_for_it_to_see_its_input_end() -> None:
    """Nobody used it: waiting for it to read the end of its input first would cost what is left
    of its boot (a Claude CLI the agent leaves right after `initialize`) before the agent exits."""
    from acp_agent.startup import prestart as module

    process = RecordingProcess()
    module._stop(process)  # type: ignore[arg-type]
    assert process.calls == ["close", "terminate", "wait"]


REPORT = ("import json, os, sys\n"
          "print(json.dumps({'fds': sorted(int(fd) for fd in os.listdir('/proc/self/fd')),\n"
          "                  'own_session': os.getsid(0) == os.getpid()}), flush=True)\n"
          "sys.stdin.read()\n")  # lives until claimed and told to end


def test_a_backend_gets_only_its_pipes_default_signals_and_a_session_of_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prestart: Prestarted) -> None:
    """As `subprocess.Popen(close_fds=True, restore_signals=True, start_new_session=True)` did:
    a descriptor an editor left inheritable does not leak into the backend, and SIGPIPE, which
    Python ignores, is back at its default (`cat` shows what it inherited)."""
    report = [sys.executable, "-c", REPORT]
    status = ["sh", "-c", "cat /proc/self/status; exec cat"]
    environ = {"PATH": "/usr/bin:/bin"}
    leaked_read, leaked_write = os.pipe()
    os.set_inheritable(leaked_read, True)
    try:
        for name, argv in (("hygiene", report), ("signals", status)):
            provider = write_provider(tmp_path, monkeypatch, name, f"{argv!r}, dict(environ)")
            prestart.start(provider, environ, hook(provider))
    finally:
        os.close(leaked_read)
        os.close(leaked_write)
    outputs = {}
    for name, argv in (("hygiene", report), ("signals", status)):
        spawned = prestart.take(name, argv, environ)
        assert spawned is not None
        outputs[name] = read_all(spawned, close_input=True).decode()
        spawned.wait(timeout=10)
        spawned.close_pipes()
    assert json.loads(outputs["hygiene"]) == {"fds": [0, 1, 2, 3], "own_session": True}  # 3: the listing
    ignored = next(int(line.split()[1], 16) for line in outputs["signals"].splitlines()
                   if line.startswith("SigIgn:"))
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN  # this process's, which a child inherits
    assert not ignored & (1 << (signal.SIGPIPE - 1))


def test_a_backend_is_not_handed_over_when_setpriv_fails_its_probe(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: str, prestart: Prestarted) -> None:
    """The probe runs beside the backend instead of before it: a setpriv that does not know
    `--pdeathsig` (util-linux before 2.33) is found out when the process is claimed."""
    fake = tmp_path / "setpriv"
    # Runs the program but fails the probe: the process lives, without the signal it was promised.
    fake.write_text('#!/bin/sh\n[ "$4" = true ] && exit 1\nshift 3\nexec "$@"\n')
    fake.chmod(0o755)
    monkeypatch.setattr(pdeath, "SETPRIV_CANDIDATES", (str(fake),))
    environ = {"PATH": "/usr/bin:/bin", "MARK": ""}
    prestart.start(provider, environ, hook(provider))
    spawned = prestart._held[provider].process
    assert prestart.take(provider, ECHO, environ) is None
    assert spawned.returncode is not None  # stopped and reaped


def test_the_command_line_spawns_before_importing_anything_heavy(tmp_path: Path) -> None:
    """The real entry point, with a plugin whose spec declares a prestart: the first start finds
    no record and runs the hook once the plugin is loaded (with logging and attrs imported), and
    records it; every later start runs it when the command line has parsed its arguments and
    imported nothing more (no logging, subprocess, typing, pathlib, anyio or attrs: each delays
    the backend's boot). Each call of this prestart (which starts nothing) appends a line."""
    package = tmp_path / "acp_agent_earlytest"
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('the package must not be imported')\n")
    loaded = tmp_path / "loaded.json"
    (package / "prestart.py").write_text(
        "import json, sys\n"
        "def prestart(environ):\n"
        "    heavy = ('logging', 'subprocess', 'typing', 'pathlib', 'anyio', 'attrs')\n"
        f"    with open({str(loaded)!r}, 'a') as handle:\n"
        "        print(json.dumps([name for name in heavy if name in sys.modules]), file=handle)\n"
        "    return None\n")
    (tmp_path / "earlytest_plugin.py").write_text(
        "from acp_agent.provider import ProviderSpec, hookimpl\n"
        "def open_runtime(context):\n"
        "    raise AssertionError('no session is asked for')\n"
        "@hookimpl\n"
        "def acp_agent_providers():\n"
        "    return [ProviderSpec(name='earlytest', title='Early', open_runtime=open_runtime,\n"
        "                         prestart='acp_agent_earlytest.prestart:prestart')]\n")
    dist = tmp_path / "earlytest-1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: earlytest\nVersion: 1\n")
    (dist / "entry_points.txt").write_text("[acp_agent]\nearlytest = earlytest_plugin\n")
    script = Path(sys.executable).with_name("acp-agent")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "acp_agent.cli"]
    state = tmp_path / "state"
    environ = {**os.environ, "ACP_AGENT_STATE_DIR": str(state),
               "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    import subprocess

    # cold; then plain and an abbreviation, from the record
    for argv in (["--provider", "earlytest"], ["--provider", "earlytest"], ["--prov", "earlytest"]):
        finished = subprocess.run([*command, *argv], stdin=subprocess.DEVNULL,
                                  capture_output=True, env=environ, timeout=60, check=False)
        assert finished.returncode == 0, finished.stderr
        assert finished.stdout == b""
    first, *later = [json.loads(line) for line in loaded.read_text().splitlines()]
    assert {"logging", "attrs"} <= set(first)
    assert later == [[], []]
    assert (state / "prestart" / "earlytest").read_text() == "acp_agent_earlytest.prestart:prestart\n"


def test_the_record_follows_the_spec_and_a_stale_start_is_stopped(
        provider: str, prestart: Prestarted, tmp_path: Path) -> None:
    """`Prestarted.declared`: a spec that declares what the command line used changes nothing; one
    that declares another hook (or none) stops what the stale record started, rewrites (or
    removes) the record and starts with the declared hook."""
    environ = {"PATH": "/usr/bin:/bin", "ACP_AGENT_STATE_DIR": str(tmp_path / "state")}
    record = tmp_path / "state" / "prestart" / provider
    prestart.start(provider, environ, declared.recorded(provider, environ))  # no record yet
    assert not prestart.holds(provider)
    prestart.declared(provider, hook(provider), environ)
    assert prestart.holds(provider) and record.read_text() == hook(provider) + "\n"
    assert declared.recorded(provider, environ) == hook(provider)
    prestart.declared(provider, hook(provider), environ)  # the same: the process stays
    spawned = prestart.take(provider, ECHO, {"PATH": "/usr/bin:/bin", "MARK": ""})
    assert spawned is not None
    spawned.kill()
    spawned.wait(timeout=10)

    later = Prestarted()
    later.start(provider, environ, declared.recorded(provider, environ))
    assert later.holds(provider)
    later.declared(provider, None, environ)  # the plugin no longer starts early
    assert not later.holds(provider) and not record.exists()


@pytest.mark.parametrize("content", [b"", b"not a reference", b"os:system", b"/etc/passwd:x",
                                     b"a.b:c" + b" " * 600, b"\xff\xfe.b:c"])
def test_a_record_that_is_no_reference_is_ignored(tmp_path: Path, content: bytes) -> None:
    environ = {"ACP_AGENT_STATE_DIR": str(tmp_path)}
    (tmp_path / "prestart").mkdir()
    (tmp_path / "prestart" / "demo").write_bytes(content)
    assert declared.recorded("demo", environ) is None


def test_a_record_behind_a_link_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "real").write_text("acp_agent_demo.prestart:prestart\n")
    (tmp_path / "prestart").mkdir()
    (tmp_path / "prestart" / "demo").symlink_to(tmp_path / "real")
    assert declared.recorded("demo", {"ACP_AGENT_STATE_DIR": str(tmp_path)}) is None


@pytest.mark.anyio
async def test_an_adopted_child_is_waited_for_without_a_pidfd(
        provider: str, prestart: Prestarted, monkeypatch: pytest.MonkeyPatch) -> None:
    """The event loop's wait for an adopted backend (`process.adopt_child`) ends as well where no
    descriptor can be had for a pidfd."""
    prestart.start(provider, {"PATH": "/usr/bin:/bin"}, hook(provider))
    spawned = prestart.take(provider, ECHO, {"PATH": "/usr/bin:/bin", "MARK": ""})
    assert spawned is not None

    def exhausted(pid: int) -> int:
        raise OSError(24, "Too many open files")

    async with adopt_child(spawned, name="echo") as child:
        monkeypatch.setattr(os, "pidfd_open", exhausted)
        await child.stdin.aclose()  # the end of its input: it exits
        with anyio.fail_after(20):
            assert await child.wait() == 0


def test_a_spawned_process_is_waited_for_without_a_pidfd(
        provider: str, prestart: Prestarted, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no descriptor can be had for a pidfd (the process is out of them), waiting for the
    backend still ends with its exit code, not an error from the stop at exit."""
    prestart.start(provider, {"PATH": "/usr/bin:/bin"}, hook(provider))
    spawned = prestart.take(provider, ECHO, {"PATH": "/usr/bin:/bin", "MARK": ""})
    assert spawned is not None

    def exhausted(pid: int) -> int:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(os, "pidfd_open", exhausted)
    spawned.close_pipes()  # the end of its input: it exits
    assert spawned.wait(timeout=20) == 0
