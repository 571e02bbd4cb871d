"""Backends started by the command line before the agent's own imports (issue 11, target 2).

The provider is known from `--provider` before anything heavy is imported, so a backend that one
process serves for every session (Codex's app-server) can boot while the agent imports, discovers
its plugins and answers `initialize`. The hook is light on purpose: a provider package
`acp_agent_<name>` may contain a module `prestart.py` whose `prestart(environ)` returns the argv
and environment of its backend (or None). The command line loads that one file without importing
the package (which would import the core's wire layer), spawns the process here (parent-death
signal and a process group of its own, as `process.open_child` does), and the provider's runtime
claims it with `take`, which hands it over only if the argv and environment are the ones it would
use now; otherwise the process is stopped and the runtime starts its own. The hook may also return
a greeting: bytes written to the process's stdin the moment it is spawned (the opening requests of
a JSON-RPC handshake), so the backend answers them as soon as it has booted instead of when the
agent's runtime first gets to it; `take` then hands the process over only to a runtime that would
have written the same greeting, and that runtime awaits the answers instead of asking again.
Whatever is never claimed is stopped when the command returns (`stop_unclaimed`). The processes are held by a
`Prestarted` the command line creates and hands down (`AgentSettings.prestarted`, then
`RuntimeContext.prestarted`): no state lives in this module. Only the standard library is
imported here; the module must never write to stdout.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence


class Prestarted:
    """The backends the command line started, until a runtime claims them or the command returns."""

    def __init__(self) -> None:
        self._held: dict[str, tuple[subprocess.Popen[bytes], list[str], dict[str, str], bytes]] = {}

    def start(self, provider: str, environ: Mapping[str, str]) -> None:
        """Spawn `provider`'s backend now if its package offers a `prestart.py`; never raises."""
        if provider in self._held or not provider.isidentifier() or not hasattr(os, "pidfd_open"):
            return  # adoption waits on a pidfd (Linux): elsewhere the runtime starts its backend itself
        try:
            wanted = _ask(provider, environ)
            if wanted is None:
                return
            argv, env = list(wanted[0]), dict(wanted[1])
            greeting = bytes(wanted[2]) if len(wanted) > 2 else b""
            from acp_agent import pdeath  # not acp_agent.process: it imports anyio

            popen = subprocess.Popen(pdeath.wrap(argv, env, pdeath.setpriv()), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                     start_new_session=True)
        except Exception:
            return
        if greeting and not _write(popen, greeting):
            _stop(popen)
            return
        self._held[provider] = (popen, argv, env, greeting)

    def holds(self, provider: str) -> bool:
        """Whether a process started for `provider` waits to be claimed."""
        return provider in self._held

    def take(self, provider: str, argv: Sequence[str], env: Mapping[str, str],
             greeting: bytes = b"") -> subprocess.Popen[bytes] | None:
        """The process started for `provider`, if it still runs with exactly this argv and
        environment and was sent exactly this greeting (its answers are the taker's to read)."""
        held = self._held.pop(provider, None)
        if held is None:
            return None
        popen, started_argv, started_env, sent = held
        if (popen.poll() is None and started_argv == list(argv) and started_env == dict(env)
                and sent == greeting):
            return popen
        _stop(popen)
        return None

    def stop_unclaimed(self) -> None:
        """Stop every process started here that no runtime claimed (the command is returning)."""
        while self._held:
            _, (popen, _, _, _) = self._held.popitem()
            _stop(popen)


Wanted = tuple[Sequence[str], Mapping[str, str]] | tuple[Sequence[str], Mapping[str, str], bytes]
"""What a provider's `prestart(environ)` returns: argv and environment, optionally a greeting."""


def _ask(provider: str, environ: Mapping[str, str]) -> Wanted | None:
    spec = importlib.util.find_spec(f"acp_agent_{provider}")  # finds the package, does not import it
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = os.path.join(location, "prestart.py")
        if os.path.isfile(path):
            break
    else:
        return None
    module_spec = importlib.util.spec_from_file_location(f"_acp_agent_prestart_{provider}", path)
    if module_spec is None or module_spec.loader is None:
        return None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    result: Wanted | None = module.prestart(environ)
    return result


def _write(popen: subprocess.Popen[bytes], greeting: bytes) -> bool:
    """Write the greeting whole (it fits the pipe's buffer: the process need not be reading yet)."""
    if popen.stdin is None:
        return False
    try:
        popen.stdin.write(greeting)
        popen.stdin.flush()
    except OSError:
        return False
    return True


def _stop(popen: subprocess.Popen[bytes]) -> None:
    """Close its pipes and SIGTERM it at once, then SIGKILL, and reap it (each wait bounded).

    Nobody used it, so there is nothing for it to finish: waiting for it to notice the end of its
    input first would cost what is left of its boot (a few hundred ms for a backend still starting
    when the client leaves right after `initialize`) before the agent can exit.
    """
    for stream in (popen.stdin, popen.stdout, popen.stderr):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass
    for action in (popen.terminate, popen.kill):
        if popen.poll() is not None:
            return
        try:
            action()
        except ProcessLookupError:
            return
        try:
            popen.wait(timeout=2.0)
            return
        except subprocess.TimeoutExpired:
            continue
    print("acp-agent: a backend started early did not stop", file=sys.stderr)
