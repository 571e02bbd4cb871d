"""Backends started by the command line before the agent's own imports.

The provider is known from `--provider` before anything heavy is imported, so a backend that one
process serves for every session (Codex's app-server) or a spare for the first session (Claude's
CLI) can boot while the agent imports, discovers its plugins and answers `initialize`. A
provider declares such a start in `ProviderSpec.prestart`: a reference to a hook
`prestart(environ)` in a module that imports little, returning the argv and environment of its
backend (or None), optionally a greeting (bytes written to its stdin at spawn: the opening
requests of a JSON-RPC handshake, answered as soon as the backend has booted) and then a tag (a
string the runtime reads back, `tag`, to rebuild the argv it claims with). The command line knows
the reference from the last start (`acp_agent.startup.declared`), loads that one file without
importing its package, and spawns the process here (in a session of its own, under setpriv for
a parent-death signal where setpriv knows it). The runtime claims it with `take`, which hands it
over only if the argv, environment and greeting are the ones it would use now; otherwise the
process is stopped and the runtime starts its own. Whatever is never claimed is stopped when the
command returns (`stop_unclaimed`). The processes are held by a `Prestarted` the command line
creates and hands down (`AgentSettings.prestarted`, then `RuntimeContext.prestarted`): no state
lives in this module. The module must never write to stdout.

The path to the spawn imports little (`subprocess` only once the hook has answered) and does
not wait for the setpriv probe, which runs beside the backend and is consulted at `take`.
"""

from __future__ import annotations

import os
import sys

from acp_agent.backends import pdeath
from acp_agent.startup import declared

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Mapping, Sequence


class Spawned:
    """A backend the command line spawned: its process and this process's ends of its stdin,
    stdout and stderr pipes (raw descriptors: the runtime that claims it makes them anyio streams)."""

    def __init__(self, process: subprocess.Popen[bytes], stdin: int | None, stdout: int | None,
                 stderr: int | None) -> None:
        self._process = process
        self.pid = process.pid
        self.stdin: int | None = stdin
        self.stdout: int | None = stdout
        self.stderr: int | None = stderr

    @property
    def returncode(self) -> int | None:
        """Its exit code (negative: the signal that ended it) once it has been reaped, else None."""
        return self._process.returncode

    def poll(self) -> int | None:
        """Its exit code once it has exited, else None."""
        return self._process.poll()

    def wait(self, timeout: float) -> int:
        """Its exit code, waiting at most `timeout` seconds (TimeoutError after that). The wait
        is on a pidfd, so it ends the moment the process does."""
        if self.poll() is None:
            import select

            try:
                pidfd = os.pidfd_open(self.pid)
            except OSError:  # gone already, or no descriptor to be had (EMFILE, say)
                pass
            else:
                try:
                    select.select([pidfd], [], [], timeout)
                finally:
                    os.close(pidfd)
        import subprocess

        try:
            return self._process.wait(timeout=0 if self.poll() is not None else timeout)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"process {self.pid} still runs after {timeout} s") from None

    def send_signal(self, signum: int) -> None:
        self._process.send_signal(signum)

    def terminate(self) -> None:
        self._process.terminate()

    def kill(self) -> None:
        self._process.kill()

    def close_pipes(self) -> None:
        """Close this process's ends of the pipes (the backend sees the end of its input)."""
        for fd in (self.stdin, self.stdout, self.stderr):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.stdin = self.stdout = self.stderr = None


class _Held:
    """A backend waiting to be claimed: the process, the argv and environment it was asked for,
    the greeting written to it, the hook's tag, and the setpriv probe started beside it (None: no
    setpriv here)."""

    __slots__ = ("argv", "env", "greeting", "probe", "process", "tag")

    def __init__(self, process: Spawned, argv: list[str], env: dict[str, str], greeting: bytes,
                 tag: str | None, probe: Spawned | None) -> None:
        self.process, self.argv, self.env, self.greeting, self.probe = process, argv, env, greeting, probe
        self.tag = tag

    def stop(self) -> None:
        _stop(self.process)
        _stop(self.probe)


class Prestarted:
    """The backends the command line started, until a runtime claims them or the command returns."""

    def __init__(self) -> None:
        self._held: dict[str, _Held] = {}
        self._asked: dict[str, str | None] = {}

    def start(self, provider: str, environ: Mapping[str, str], reference: str | None) -> None:
        """Spawn `provider`'s backend now with the hook `reference` names (None: nothing to
        start); never raises."""
        self._asked[provider] = reference
        if reference is None or provider in self._held or not hasattr(os, "pidfd_open"):
            return  # adoption waits on a pidfd (Linux): elsewhere the runtime starts its backend itself
        probe: Spawned | None = None
        try:
            hook = declared.load(reference, provider)
            wanted: Wanted | None = None if hook is None else hook(environ)
            if wanted is None:
                return
            argv, env = list(wanted[0]), dict(wanted[1])
            greeting = bytes(wanted[2]) if len(wanted) > 2 else b""
            tag = str(wanted[3]) if len(wanted) > 3 else None
            # Under setpriv, for a parent-death signal; whether it knows `--pdeathsig` is the
            # probe's answer, read when the process is claimed. A program that is not there is
            # not started (the runtime's own start says what is missing).
            setpriv = pdeath.setpriv_candidate()
            if setpriv is not None:
                probe = _spawn([setpriv, *pdeath.PROBE], environ, piped=False)
            spawned = _spawn(pdeath.wrap(argv, env, setpriv), env, piped=True)
        except Exception:
            _stop(probe)
            return
        held = _Held(spawned, argv, env, greeting, tag, probe)
        if greeting and not _write(spawned, greeting):
            held.stop()
            return
        self._held[provider] = held

    def declared(self, provider: str, reference: str | None, environ: Mapping[str, str]) -> None:
        """What `provider`'s spec declares, now that its plugin is loaded. When the command line
        started with another reference (no record yet, or a stale one), the record is rewritten
        for the next start and the backend is started now with the declared hook."""
        if provider in self._asked and self._asked[provider] == reference:
            return
        stale = self._held.pop(provider, None)
        if stale is not None:
            stale.stop()
        try:
            declared.record(provider, reference, environ)
        except OSError as exc:
            import logging

            logging.getLogger(__name__).warning("could not record how %s starts early: %s", provider, exc)
        self.start(provider, environ, reference)

    def holds(self, provider: str) -> bool:
        """Whether a process started for `provider` waits to be claimed."""
        return provider in self._held

    def tag(self, provider: str) -> str | None:
        """The tag the hook returned with the process waiting for `provider` (None: no tag, or
        nothing waits)."""
        held = self._held.get(provider)
        return None if held is None else held.tag

    def take(self, provider: str, argv: Sequence[str], env: Mapping[str, str],
             greeting: bytes = b"") -> Spawned | None:
        """The process started for `provider`, if it still runs with exactly this argv and
        environment, was sent exactly this greeting (its answers are the taker's to read) and, if
        it was started under setpriv, setpriv turned out to know `--pdeathsig`."""
        held = self._held.pop(provider, None)
        if held is None:
            return None
        probed = held.probe is None or _succeeded(held.probe)
        if (probed and held.process.poll() is None and held.argv == list(argv)
                and held.env == dict(env) and held.greeting == greeting):
            return held.process
        held.stop()
        return None

    def stop_unclaimed(self) -> None:
        """Stop every process started here that no runtime claimed (the command is returning)."""
        while self._held:
            self._held.popitem()[1].stop()


Wanted = (tuple["Sequence[str]", "Mapping[str, str]"] | tuple["Sequence[str]", "Mapping[str, str]", bytes]
          | tuple["Sequence[str]", "Mapping[str, str]", bytes, str])
"""What a provider's `prestart(environ)` returns: argv and environment, optionally a greeting and
then a tag."""


def _spawn(argv: Sequence[str], env: Mapping[str, str], *, piped: bool) -> Spawned:
    """Start `argv` in a session of its own with its three pipes (or /dev/null when not `piped`)
    and no other descriptor of this process. The pipes are made here, not by `Popen`, so that
    their ends stay plain descriptors for the runtime that claims the process."""
    import subprocess  # here, after the provider's hook: nothing before the spawn waits for more

    if not piped:
        process = subprocess.Popen(list(argv), env=dict(env), stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   start_new_session=True)
        return Spawned(process, None, None, None)
    ours: list[int] = []
    try:
        for _ in range(3):
            ours.extend(os.pipe())
        (in_read, in_write, out_read, out_write, err_read, err_write) = ours
        process = subprocess.Popen(list(argv), env=dict(env), stdin=in_read, stdout=out_write,
                                   stderr=err_write, start_new_session=True)
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    for fd in (in_read, out_write, err_write):
        os.close(fd)
    return Spawned(process, in_write, out_read, err_read)


def _write(spawned: Spawned, greeting: bytes) -> bool:
    """Write the greeting whole (it fits the pipe's buffer: the process need not be reading yet)."""
    view = memoryview(greeting)
    try:
        while view and spawned.stdin is not None:
            view = view[os.write(spawned.stdin, view):]
    except OSError:
        return False
    return not view


def _succeeded(probe: Spawned) -> bool:
    """Whether the setpriv probe exited 0 (it takes milliseconds; claiming comes much later)."""
    try:
        return probe.wait(timeout=2.0) == 0
    except (TimeoutError, OSError):
        _stop(probe)
        return False


def _stop(spawned: Spawned | None) -> None:
    """Close its pipes and SIGTERM it at once, then SIGKILL, and reap it (each wait bounded).

    Nobody used it, so there is nothing for it to finish: waiting for it to notice the end of its
    input first would cost what is left of its boot (a few hundred ms for a backend still starting
    when the client leaves right after `initialize`) before the agent can exit.
    """
    if spawned is None:
        return
    spawned.close_pipes()
    for action in (spawned.terminate, spawned.kill):
        if spawned.poll() is not None:
            return
        try:
            action()
        except ProcessLookupError:
            return
        try:
            spawned.wait(timeout=2.0)
            return
        except TimeoutError:
            continue
    print("acp-agent: a backend started early did not stop", file=sys.stderr)
