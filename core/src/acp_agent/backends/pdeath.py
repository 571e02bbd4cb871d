"""The parent-death signal for backends (`setpriv --pdeathsig KILL`), with the standard library only.

Kept apart from `acp_agent.backends.process` (which imports anyio) so that the command line can spawn a
backend before the agent's imports (`acp_agent.startup.prestart`); `process.parent_death_argv` is the
documented entry point and uses the same probe, run once per process. The command line reads
`setpriv_candidate` and `PROBE` before its spawn, so this module imports no more than it needs.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

SETPRIV_CANDIDATES = ("/usr/bin/setpriv", "/bin/setpriv")
PDEATHSIG = ("--pdeathsig", "KILL", "--")
"""setpriv's arguments before the program it runs with the parent-death signal set."""
PROBE = (*PDEATHSIG, "true")
"""setpriv's arguments for the probe: a setpriv that runs them and exits 0 knows `--pdeathsig`."""


def setpriv_candidate() -> str | None:
    """The setpriv to try, found without running it (the probe says whether it can be used)."""
    if not sys.platform.startswith("linux"):
        return None
    return next((path for path in SETPRIV_CANDIDATES if os.access(path, os.X_OK)), None)


@functools.cache
def setpriv() -> str | None:
    """util-linux `setpriv` if it runs here and knows `--pdeathsig` (util-linux 2.33 or later)."""
    import logging
    import subprocess

    log = logging.getLogger("acp_agent.backends.process")
    if not sys.platform.startswith("linux"):
        log.debug("no parent-death signal for backends: not Linux")
        return None
    found = setpriv_candidate() or shutil.which("setpriv")
    if found is None:
        log.debug("no parent-death signal for backends: setpriv not found")
        return None
    try:
        probe = subprocess.run([found, *PROBE], stdin=subprocess.DEVNULL,
                               capture_output=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.debug("no parent-death signal for backends: %s failed (%s)", found, type(exc).__name__)
        return None
    if probe.returncode != 0:
        log.debug("no parent-death signal for backends: %s --pdeathsig is not supported", found)
        return None
    return found


def wrap(argv: Sequence[str], env: Mapping[str, str] | None, setpriv: str | None) -> list[str]:
    """`argv` under `setpriv --pdeathsig KILL --`, unless there is no setpriv or no such program."""
    if setpriv is None or not runnable(argv[0], env):
        return list(argv)
    return [setpriv, *PDEATHSIG, *argv]


def runnable(program: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether `program` names an executable file, directly or on `env`'s PATH (the child's)."""
    path = (os.environ if env is None else env).get("PATH", os.defpath)
    return shutil.which(program, path=path) is not None
