"""Finding and ending an agent's backend processes by PID, through /proc (never by name)."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio

PARENT_DEATH_WAIT_S = 5.0
"""How long a backend may take to end after its agent was SIGKILLed before a test fails: the
parent-death signal ends it at once; without it the Claude CLI lived on for about 12 s."""


def children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:  # the process is gone
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found.extend(int(child) for child in handle.read().split())
        except FileNotFoundError:  # a thread that ended meanwhile
            continue
    return found


def descendants(pid: int) -> list[int]:
    found = []
    for child in children(pid):
        found.append(child)
        found.extend(descendants(child))
    return found


def live_descendants(pid: int) -> list[int]:
    """Descendants that are still running (a zombie about to be reaped does not count)."""
    return [child for child in descendants(pid) if not gone(child)]


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


async def wait_ended(pids: Iterable[int], *, within_s: float) -> None:
    """Wait until every process in `pids` has ended (exited, zombie or reaped), on pidfds; fail after `within_s`.

    Open the pidfds (`pidfds`) before whatever ends the processes when their PIDs could be reused.
    """
    with ExitStack() as stack:
        descriptors = pidfds(pids, stack)
        with anyio.fail_after(within_s):
            for descriptor in descriptors:
                await anyio.wait_readable(descriptor)


def pidfds(pids: Iterable[int], stack: ExitStack) -> list[int]:
    """A pidfd for each process still there (closed with `stack`); a process already reaped has none."""
    descriptors = []
    for pid in pids:
        try:
            descriptor = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        stack.callback(os.close, descriptor)
        descriptors.append(descriptor)
    return descriptors


async def kill_agent_and_wait_for(agent_pid: int, backend_pid: int) -> None:
    """SIGKILL the agent (by PID) and wait on pidfds until it and its backend have ended.

    The agent gets no chance to stop anything: only the parent-death signal can end the backend,
    and it must do so within `PARENT_DEATH_WAIT_S`.
    """
    with ExitStack() as stack:
        agent_fd, backend_fd = pidfds([agent_pid, backend_pid], stack)
        os.kill(agent_pid, signal.SIGKILL)
        with anyio.fail_after(10):
            await anyio.wait_readable(agent_fd)
        with anyio.fail_after(PARENT_DEATH_WAIT_S):
            await anyio.wait_readable(backend_fd)


async def close_input_and_wait_for(agent_process: Any, backend_pid: int) -> None:
    """Close the agent's stdin and wait (pidfd, 15 s) until it and its backend have ended."""
    with ExitStack() as stack:
        (backend_fd,) = pidfds([backend_pid], stack)
        agent_process.stdin.close()
        with anyio.fail_after(15):
            await agent_process.wait()
            await anyio.wait_readable(backend_fd)
