"""Finding and ending an agent's backend processes by PID, through /proc (never by name)."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as handle:
            found.extend(int(child) for child in handle.read().split())
    return found


def descendants(pid: int) -> list[int]:
    found = []
    for child in children(pid):
        found.append(child)
        found.extend(descendants(child))
    return found


def argv_of(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        return []


def child_matching(agent_pid: int, matches: Callable[[list[bytes]], bool], what: str) -> int:
    for child in children(agent_pid):
        if matches(argv_of(child)):
            return child
    raise AssertionError(f"no {what} child of the agent found")


def kill_child(agent_pid: int, matches: Callable[[list[bytes]], bool], what: str) -> int:
    pid = child_matching(agent_pid, matches, what)
    os.kill(pid, signal.SIGKILL)
    return pid


def gone(pid: int) -> bool:
    """Exited and reaped (or a zombie about to be)."""
    try:
        # the state follows the command name, which may itself hold spaces and parentheses
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].startswith("Z")
    except FileNotFoundError:
        return True
