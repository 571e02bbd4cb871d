"""The child-process owner: orderly stop, escalation, reaping, no orphans."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import anyio
import anyio.abc
import pytest

from acp_agent.backends.process import STDERR_LINE_BYTES, drain_stderr, open_child, parent_death_available, write_launcher

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_closing_stdin_is_enough_for_a_polite_child() -> None:
    async with open_child(["cat"], name="cat") as child:
        await child.stdin.send(b"ping\n")
        assert await child.stdout.receive() == b"ping\n"
    assert child.returncode == 0
    assert not alive(child.pid)


async def test_a_child_ignoring_sigterm_is_killed_and_reaped() -> None:
    script = "trap '' TERM; exec 0<&-; while true; do sleep 0.05; done"
    async with open_child(["bash", "-c", script], name="stubborn", grace_s=0.1) as child:
        pid = child.pid
    assert child.returncode == -9
    assert not alive(pid)


async def test_cancellation_still_stops_the_child() -> None:
    with anyio.move_on_after(0.2):
        async with open_child(["sleep", "30"], name="sleeper", grace_s=0.1) as child:
            await anyio.sleep_forever()
    assert child.returncode is not None
    assert not alive(child.pid)


class Pieces(anyio.abc.ByteReceiveStream):
    """What a backend wrote to its stderr, one read per piece, then the end of it."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = list(pieces)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self.pieces:
            raise anyio.EndOfStream
        return self.pieces.pop(0)

    async def aclose(self) -> None:
        self.pieces.clear()


async def test_stderr_reaches_the_debug_log_a_whole_line_at_a_time(caplog: pytest.LogCaptureFixture) -> None:
    """A line the backend wrote in pieces is one log record; a line over the bound is dropped
    (its size logged), and blank lines are skipped."""
    long_line = b"x" * (STDERR_LINE_BYTES + 10)
    pieces = [b"half of a li", b"ne\n\n", long_line + b"\n", b"caf\xc3", b"\xa9 last words"]
    caplog.set_level("DEBUG", logger="acp_agent.backends.process")
    await drain_stderr(Pieces(pieces), "tool")
    assert [record.getMessage() for record in caplog.records] == [
        "tool stderr: half of a line",
        f"tool stderr: a line of {len(long_line)} bytes, not logged",
        "tool stderr: caf\u00e9 last words",
    ]


# -- the parent-death signal (Linux, util-linux setpriv) ------------------------------------------------

REPORT = ("import ctypes, os, sys; libc = ctypes.CDLL(None); signal = ctypes.c_int(); "
          "libc.prctl(2, ctypes.byref(signal), 0, 0, 0); "  # PR_GET_PDEATHSIG
          "print(signal.value, int(os.getsid(0) == os.getpid()), flush=True)")
needs_setpriv = pytest.mark.skipif(not parent_death_available(), reason="no util-linux setpriv with --pdeathsig here")


@needs_setpriv
async def test_open_child_gives_the_backend_a_parent_death_signal() -> None:
    async with open_child([sys.executable, "-c", REPORT], name="reporter") as child:
        line = b""
        while not line.endswith(b"\n"):
            line += await child.stdout.receive()
    assert line.split() == [b"9", b"1"]  # SIGKILL; and its own session (start_new_session)


@needs_setpriv
async def test_a_launcher_sets_the_signal_and_a_session_then_runs_the_program(tmp_path: Path) -> None:
    launcher = write_launcher(tmp_path / "launch", [sys.executable], new_session=True)
    assert stat.S_IMODE(os.stat(launcher).st_mode) == 0o700
    result = await anyio.run_process([launcher, "-c", REPORT])
    assert result.stdout.split() == [b"9", b"1"]


async def test_a_missing_program_still_fails_to_start_as_such(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        async with open_child([str(tmp_path / "no-such-backend")], name="missing"):
            pass


def test_where_setpriv_is_missing_the_command_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    from acp_agent.backends import process

    monkeypatch.setattr(process, "_setpriv", lambda: None)
    assert process.parent_death_argv(["true", "x"]) == ["true", "x"]
