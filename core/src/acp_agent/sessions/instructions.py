"""AIR's `customInstructions`: text a client gives a session on `session/new`, which reaches the
model through the backend's own instruction mechanism and stays with the session.

A client that lists `customInstructions` in `clientCapabilities._meta.jetbrains.air.capabilities`
(and is told so back in `initialize`, for a provider whose runtime declares
`RuntimeCapabilities.custom_instructions`) may send `_meta.jetbrains.air.customInstructions`, a
string of at most `MAX_BYTES` UTF-8 bytes, on `session/new`, as claude-agent-acp and codex-acp
read it. The runtime reads the session's text with `backends.contract.custom_instructions(channel)`
whenever it starts or reopens the session's backend (Claude's appended system prompt, Codex's
developer instructions). A resume, load or fork runs with the instructions the session (its
source) was created with: both backends keep those in the session's history (Claude Code's
system prompt snapshot, codex's developer message), so others named then are not taken.

The backends take the text per process or per thread request, though (Claude Code renders its
system prompt anew from `--append-system-prompt` after a compaction; app-server takes
`developerInstructions` with each `thread/start|resume|fork`), so the core keeps it: one small
file per provider and session under the user's state directory (named by a hash of the session
id, written atomically, read as an untrusted regular file, bounded), which a fresh agent process
reads on resume or load. A client that did not declare the capability has its meta ignored, and
nothing else changes for it. A state directory that cannot be used keeps the text in memory only
(logged).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from acp_agent.backends.files import read_regular_file
from acp_agent.state import write_atomically
from acp_agent.wire.rpc import INVALID_PARAMS, RpcError

log = logging.getLogger(__name__)

CAPABILITY = "customInstructions"
MAX_BYTES = 64 * 1024
"""The bound on one session's instructions (UTF-8): many pages of rules, and well inside what one
command-line argument may hold (Claude Code takes them as `--append-system-prompt`; Linux allows
128 KiB per argument)."""
FIELD = "_meta.jetbrains.air.customInstructions"


def requested(meta: Any) -> str | None:
    """The request's `_meta.jetbrains.air.customInstructions` (None: absent or null); -32602 for
    anything but a string of at most `MAX_BYTES` bytes. Only for a negotiated capability."""
    air = _mapping(_mapping(_mapping(meta).get("jetbrains")).get("air"))
    value = air.get(CAPABILITY)
    if value is None:
        return None
    if not isinstance(value, str):
        raise RpcError(INVALID_PARAMS, f"Invalid params: {FIELD} must be a string, got "
                       f"{type(value).__name__ if not isinstance(value, list | dict) else 'an array or object'}",
                       {"field": FIELD})
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate (`"\\ud800"` in the JSON): no text to hand on
        raise RpcError(INVALID_PARAMS, f"Invalid params: {FIELD} must be valid Unicode text",
                       {"field": FIELD}) from None
    if size > MAX_BYTES:
        raise RpcError(INVALID_PARAMS, f"Invalid params: {FIELD} is {size} bytes; at most {MAX_BYTES} "
                       "bytes (UTF-8) are accepted", {"field": FIELD, "maxBytes": MAX_BYTES})
    return value


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


class InstructionStore:
    """The instructions of each session of one provider, kept across agent processes under
    `directory` (None: in memory only)."""

    def __init__(self, provider: str, directory: Path | None) -> None:
        self.directory = directory / "instructions" / provider if directory is not None else None
        self._known: dict[str, str | None] = {}

    def _path(self, session_id: str) -> Path:
        assert self.directory is not None
        return self.directory / (hashlib.sha256(session_id.encode()).hexdigest()[:32] + ".txt")

    def get(self, session_id: str) -> str | None:
        """The session's instructions (None: it has none)."""
        if session_id in self._known:
            return self._known[session_id]
        text: str | None = None
        if self.directory is not None:
            path = self._path(session_id)
            try:
                text = read_regular_file(str(path), MAX_BYTES).decode("utf-8") or None
            except FileNotFoundError:
                pass
            except (OSError, UnicodeDecodeError) as exc:
                log.warning("the instructions of session %s are not read: %s (%s)", session_id,
                            type(exc).__name__, path)
        self._known[session_id] = text
        return text

    def put(self, session_id: str, text: str | None) -> None:
        """Keep `text` (None or empty: none) as the session's instructions."""
        text = text or None
        if session_id in self._known and self._known[session_id] == text:
            return
        self._known[session_id] = text
        if self.directory is None:
            return
        path = self._path(session_id)
        try:
            if text is None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
                return
            write_atomically(str(path), text.encode("utf-8"))
        except OSError as exc:
            log.warning("the instructions of session %s are kept in memory only: %s (%s)", session_id,
                        os.strerror(exc.errno) if exc.errno else type(exc).__name__, path)

    def forget(self, session_id: str) -> None:
        """The session was deleted: its instructions go too."""
        self.put(session_id, None)
        self._known.pop(session_id, None)


__all__ = ["CAPABILITY", "MAX_BYTES", "InstructionStore", "requested"]
