"""Holds on sessions across agent processes: one agent process at a time uses a session.

Two editor windows that both load and prompt one stored session would each append to its
history from where they loaded it, and the history forks: a later load replays one branch and
what was typed in the other vanishes. So the agent that opens a session holds it, with an OS
file lock (`fcntl.flock`) on a file per provider and session id under the user's state
directory, and another agent process that tries to open it is told to close it where it is
open. The kernel drops the lock with its holder, so a crashed agent never blocks a session.

The lock files are not trusted input: the name is a hash of the session id (an id never names
a path), the file is opened without following a symlink and must be a regular file, and what is
read from it (the holder's pid, for the message) is bounded. A state directory that cannot be
used leaves sessions unheld, with a log line: a hold protects history, it never stops work.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import logging
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from acp_agent import state
from acp_agent.state import STATE_DIR_VARIABLE

log = logging.getLogger(__name__)

_PID_BYTES = 32


class HeldElsewhere(Exception):
    """Another live agent process holds the session; `holder` is its pid when it wrote one."""

    def __init__(self, session_id: str, holder: int | None) -> None:
        super().__init__(session_id)
        self.session_id = session_id
        self.holder = holder


def state_directory(environ: Mapping[str, str]) -> Path | None:
    """`acp_agent.state.state_directory`, as a path."""
    found = state.state_directory(environ)
    return None if found is None else Path(found)


class SessionHolds:
    """The sessions this agent process holds, for one provider."""

    def __init__(self, provider: str, directory: Path | None) -> None:
        self.directory = directory / "sessions" / provider if directory is not None else None
        self._held: dict[str, int] = {}

    def _path(self, session_id: str) -> Path:
        assert self.directory is not None
        return self.directory / (hashlib.sha256(session_id.encode()).hexdigest()[:32] + ".lock")

    def holds(self, session_id: str) -> bool:
        return session_id in self._held

    def acquire(self, session_id: str) -> None:
        """Hold the session (again, if already held here); `HeldElsewhere` if another holds it."""
        if self.directory is None or session_id in self._held:
            return
        path = self._path(session_id)
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = self._locked(session_id, path)
        except HeldElsewhere:
            raise
        except OSError as exc:
            log.warning("session %s is not held against other agent processes: %s (%s)",
                        session_id, os.strerror(exc.errno) if exc.errno else type(exc).__name__, path)
            return
        self._held[session_id] = fd

    @staticmethod
    def _locked(session_id: str, path: Path) -> int:
        """A descriptor holding the lock on `path`'s file (the same file the path names after the
        lock: a holder that released meanwhile may have removed the one opened)."""
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
            try:
                opened = os.fstat(fd)
                if not stat.S_ISREG(opened.st_mode):
                    raise OSError(errno.EINVAL, "not a regular file")
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise HeldElsewhere(session_id, _holder(fd)) from None
                try:
                    named = os.stat(path, follow_symlinks=False)
                except FileNotFoundError:
                    named = None
                if named is None or (named.st_dev, named.st_ino) != (opened.st_dev, opened.st_ino):
                    os.close(fd)
                    continue
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
                return fd
            except BaseException:
                with contextlib.suppress(OSError):
                    os.close(fd)
                raise

    def release(self, session_id: str) -> None:
        """Let other agent processes open the session (the lock file goes while still locked)."""
        fd = self._held.pop(session_id, None)
        if fd is None:
            return
        try:
            with contextlib.suppress(OSError):
                os.unlink(self._path(session_id))
        finally:
            os.close(fd)

    def release_all(self) -> None:
        for session_id in list(self._held):
            self.release(session_id)


def _holder(fd: int) -> int | None:
    """The pid the holder wrote, read bounded (the file is not trusted)."""
    try:
        text = os.pread(fd, _PID_BYTES, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() and len(text) <= 10 else None


__all__ = ["STATE_DIR_VARIABLE", "HeldElsewhere", "SessionHolds", "state_directory"]
