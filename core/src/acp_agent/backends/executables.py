"""Why a vendor's program cannot run, in words a user can act on.

Every provider starts a vendor CLI; when it is missing or unusable, each says so the same way:
"<Title> could not be started: the <program> was not found at <path>." followed by how to install
it or which variable names it, never an exception's class name.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Mapping

from acp_agent.failures.protocol import FailureKind, FailureObservation


def executable_problem(path: str | None, environ: Mapping[str, str], *, error: OSError | None = None) -> str | None:
    """What keeps `path` from running ("was not found at …", "at … is not executable"), or None.

    `error` is what starting it raised, when it was tried; without it only the file is checked.
    A bare name is looked up on the environment's PATH, as starting it would; a path is checked
    as it is, so the problem named is that file's.
    """
    if not path:
        return "was not found"
    resolved = path if os.sep in path else shutil.which(path, path=environ.get("PATH", os.defpath))
    if resolved is None:
        return f"was not found (no `{path}` on PATH)"
    if not os.path.exists(resolved):
        return f"was not found at {resolved}"
    if os.path.isdir(resolved):
        return f"at {resolved} is a directory, not a program"
    if not os.access(resolved, os.X_OK):
        return f"at {resolved} is not executable"
    if error is None:
        return None
    if error.errno == errno.ENOEXEC:
        return f"at {resolved} is not a program this machine can run"
    return f"at {resolved} could not be run: {error.strerror or 'unknown error'}"


def program_unavailable(title: str, program: str, problem: str, *, recovery: str,
                        native_kinds: tuple[str, str], phase: str = "initializing") -> FailureObservation:
    """Nothing started because the vendor's program is missing or cannot run.

    The adapter's own observation, the same for every provider: `title` names the backend
    ("Muse Code"), `program` what was looked for ("Muse Code CLI"), `problem` completes it (from
    `executable_problem`), `recovery` says how to install it or which variable names it;
    `native_kinds` are the provider's kinds for "not found" and for "found but would not run".
    """
    not_found, failed = native_kinds
    return FailureObservation(
        kind=FailureKind.BAD_REQUEST,
        native_kind=not_found if problem.startswith("was not found") else failed,
        title=f"{title} could not be started: the {program} {problem}.",
        source="adapter",
        outcome="failed",
        execution="notSubmitted",
        phase=phase,
        retryable=False,
        recovery_hint=recovery,
    )
