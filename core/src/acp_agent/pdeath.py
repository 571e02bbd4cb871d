"""The parent-death signal for backends (`setpriv --pdeathsig KILL`), with the standard library only.

Kept apart from `acp_agent.process` (which imports anyio) so that the command line can spawn a
backend before the agent's imports (`acp_agent.prestart`); `process.parent_death_argv` is the
documented entry point and uses the same probe, run once per process.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence

log = logging.getLogger("acp_agent.process")

SETPRIV_CANDIDATES = ("/usr/bin/setpriv", "/bin/setpriv")


@functools.cache
def setpriv() -> str | None:
    """util-linux `setpriv` if it runs here and knows `--pdeathsig` (util-linux 2.33 or later)."""
    if not sys.platform.startswith("linux"):
        log.debug("no parent-death signal for backends: not Linux")
        return None
    found = next((path for path in SETPRIV_CANDIDATES if os.access(path, os.X_OK)), None) or shutil.which("setpriv")
    if found is None:
        log.debug("no parent-death signal for backends: setpriv not found")
        return None
    try:
        probe = subprocess.run([found, "--pdeathsig", "KILL", "--", "true"], stdin=subprocess.DEVNULL,
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
    return [setpriv, "--pdeathsig", "KILL", "--", *argv]


def runnable(program: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether `program` names an executable file, directly or on `env`'s PATH (the child's)."""
    path = (env if env is not None else os.environ).get("PATH", os.defpath)
    return shutil.which(program, path=path) is not None
