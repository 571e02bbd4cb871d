"""Where the agent keeps what outlives one of its processes (session holds, the early-start record)."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # the command line reads the state directory before its imports
if TYPE_CHECKING:
    from collections.abc import Mapping

STATE_DIR_VARIABLE = "ACP_AGENT_STATE_DIR"
"""Where the agent keeps its state (tests point it at a directory of their own)."""


def state_directory(environ: Mapping[str, str]) -> str | None:
    """`$ACP_AGENT_STATE_DIR`, else `$XDG_STATE_HOME/acp-agent`, else `~/.local/state/acp-agent`
    (from the agent's environment; None without any of them)."""
    explicit = environ.get(STATE_DIR_VARIABLE)
    if explicit:
        return explicit
    xdg = environ.get("XDG_STATE_HOME")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "acp-agent")
    home = environ.get("HOME")
    if home and os.path.isabs(home):
        return os.path.join(home, ".local", "state", "acp-agent")
    return None


def write_atomically(path: str, data: bytes) -> None:
    """`data` as the whole of `path`: written to a file beside it, flushed to disk, then renamed
    over it, so a reader sees the old file or the new one, never a part (its directory is made,
    private, when missing). Raises OSError; the file beside it does not stay."""
    import tempfile

    directory = os.path.dirname(path) or "."
    os.makedirs(directory, mode=0o700, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
