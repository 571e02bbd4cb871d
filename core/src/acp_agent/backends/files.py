"""Reading files an untrusted project or store may hold: regular files only, bounded, never blocking.

A cloned repository's `.claude/settings.json` (or a provider's store entry) may be a FIFO, a
symlink to the agent's own stdin, or to `/dev/zero`: opening the first blocks until a writer comes,
the second steals the client's requests, the third never ends. A symlink to a regular file stays
legitimate (settings are often linked from a dotfiles repository), so symlinks are followed and the
file they reach is checked: `os.stat` first (it never opens, so no device sees an open), then the
open with `O_NONBLOCK` (a FIFO swapped in after the check still opens at once) and `fstat` on the
descriptor, which must be a regular file no larger than the bound. A regular file's read does not
block on `O_NONBLOCK`'s account; it is bounded by `limit`, so a file growing meanwhile is cut off.
"""

from __future__ import annotations

import os
import stat

SETTINGS_LIMIT = 1 << 20  # 1 MiB: settings files are a few KiB; a larger one is not settings


class UnsafeFile(OSError):
    """The path is there but is not a file to read: not a regular file, or larger than allowed.
    Its message names the path and why (never its content)."""


def regular_file_stat(path: str) -> os.stat_result:
    """The stat of the regular file at `path` (symlinks followed), without opening it.

    Raises FileNotFoundError (and the other `OSError`s of `os.stat`) as `os.stat` does, and
    `UnsafeFile` for anything but a regular file."""
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeFile(f"{path} is not a regular file")
    return info


def read_regular_file(path: str, limit: int = SETTINGS_LIMIT) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them.

    Raises FileNotFoundError when it is absent (and the other `OSError`s of `open`), `UnsafeFile`
    when it is not a regular file or holds more than `limit` bytes. Never blocks on a FIFO,
    never reads a device, never reads more than `limit` + 1 bytes."""
    regular_file_stat(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # replaced between the stat and the open
            raise UnsafeFile(f"{path} is not a regular file")
        if info.st_size > limit:
            raise UnsafeFile(f"{path} is larger than {limit} bytes")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise UnsafeFile(f"{path} is larger than {limit} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)
