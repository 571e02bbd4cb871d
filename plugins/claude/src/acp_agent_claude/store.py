"""The Claude store's session list, read without trusting what the store's directories hold.

claude-agent-sdk's `list_sessions` opens every `<uuid>.jsonl` in the project directories of
`$CLAUDE_CONFIG_DIR/projects` as it finds it: a FIFO there blocks its thread for good, a link to
the agent's stdin reads the client's requests. This lists the same sessions: it finds the
directories as the SDK does (the project's, its git worktrees'; all of them for a list of all),
keeps the transcripts that are regular files (`os.stat` opens nothing; others are skipped with a
log line), and has the SDK's public `get_session_info` read each. The SDK reads the store of
`os.environ`, so this does too. A load or fork is checked the same way (`check_transcript`);
a transcript replaced by a FIFO between the check and the SDK's open is the one race left.

`read` runs any of these (and the SDK's readers) on a worker thread within the reading deadline.
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
import re
import stat
import subprocess
import unicodedata
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from acp_agent.provider import Phase, PhaseClock, UnsafeFile, regular_file_stat

if TYPE_CHECKING:
    from claude_agent_sdk import SDKSessionInfo

log = logging.getLogger(__name__)
TRANSCRIPT = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.jsonl$", re.I)
LONG_KEY = 200  # a longer project key is cut here and given a hash suffix (which may differ)


def projects_dir() -> str:
    config = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    return os.path.join(unicodedata.normalize("NFC", config), "projects")


def _subdirectories(path: str) -> dict[str, str]:
    try:
        with os.scandir(path) as entries:
            return {entry.name: entry.path for entry in entries if entry.is_dir()}
    except OSError:
        return {}


def _worktrees(directory: str) -> list[str]:
    """The git worktrees of the repository holding `directory` (none outside one)."""
    try:
        result = subprocess.run(["git", "worktree", "list", "--porcelain"], cwd=directory, capture_output=True,
                                text=True, timeout=5, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return []
    if result.returncode != 0:
        return []
    return [unicodedata.normalize("NFC", line[len("worktree "):])
            for line in result.stdout.splitlines() if line.startswith("worktree ")]


def project_dirs(directory: str | None) -> Iterator[tuple[str, str | None]]:
    """(store directory, project path) of each directory a list reads, in the SDK's order: all of
    them for `directory` None, else the project's, then its git worktrees' (asked of git only when
    the caller goes on; a long key matches by its cut prefix, as the SDK matches it)."""
    from claude_agent_sdk import project_key_for_directory

    present = _subdirectories(projects_dir())
    if directory is None:
        yield from ((path, None) for path in present.values())
        return
    canonical = unicodedata.normalize("NFC", os.path.realpath(directory))
    seen: set[str] = set()
    for path in itertools.chain([canonical], (p for p in _worktrees(canonical) if p != canonical)):
        key = project_key_for_directory(path)
        name = key if key in present else next(
            (n for n in present if len(key) > LONG_KEY and n.startswith(key[:LONG_KEY] + "-")), None)
        if name is not None and name not in seen:
            seen.add(name)
            yield present[name], path


def check_transcript(session_id: str, directory: str | None) -> None:
    """Raise `UnsafeFile` (logged) when the transcript the SDK would read for `session_id` is not
    a regular file, before a load or fork has the SDK open it; the first regular one ends the
    search, as the SDK's own lookup ends there."""
    transcript_path(session_id, directory, refuse_unsafe=True)


def transcript_path(session_id: str, directory: str | None, *, refuse_unsafe: bool = False) -> str | None:
    """The regular file holding `session_id`'s transcript, searched where the SDK searches (the
    project's store directory, then its git worktrees'); None when there is none. One that is not
    a regular file is passed over, or, `refuse_unsafe`, refused."""
    name = f"{session_id}.jsonl"
    if not TRANSCRIPT.match(name):
        return None
    for store, _ in project_dirs(directory):
        path = os.path.join(store, name)
        try:
            regular_file_stat(path)
        except UnsafeFile as exc:
            if refuse_unsafe:
                log.warning("claude store entry refused: %s", exc)
                raise
            continue
        except OSError:  # absent
            continue
        return path
    return None


def written_transcript(session_id: str, directory: str) -> Path | None:
    """The transcript where the CLI writes it for `directory` (`<config>/projects/<directory with
    every character but letters and digits a dash>/<id>.jsonl`), found without importing
    claude-agent-sdk (a slow import). None where only the SDK's fuller search can tell."""
    try:
        uuid.UUID(session_id)
    except ValueError:
        return None
    name = re.sub(r"[^a-zA-Z0-9]", "-", unicodedata.normalize("NFC", os.path.realpath(directory)))
    if len(name) > LONG_KEY:
        return None
    path = Path(projects_dir(), name, f"{session_id}.jsonl")
    try:
        status = path.stat()
    except OSError:
        return None
    return path if stat.S_ISREG(status.st_mode) and status.st_size > 0 else None


def find_transcript(session_id: str, directory: str) -> Path | None:
    """The session's stored transcript, found as claude-agent-sdk finds it (the project directory,
    then its git worktrees): where the CLI writes it, else by the store's search."""
    written = written_transcript(session_id, directory)
    if written is not None:
        return written
    found = transcript_path(session_id, directory)
    return Path(found) if found is not None else None


async def read(clock: PhaseClock, function: Any, *args: Any, label: str = "claude transcript", **kwargs: Any) -> Any:
    """`function(*args, **kwargs)` on a worker thread (files are read off the event loop), within
    the reading deadline."""
    async with clock.phase(Phase.READING, label=label):
        return await anyio.to_thread.run_sync(functools.partial(function, *args, **kwargs), abandon_on_cancel=True)


async def stored(clock: PhaseClock, session_id: str, directory: str) -> bool:
    """Whether claude-agent-sdk finds the session's transcript for `directory` (its worktrees too):
    whether a CLI wrote it (one killed early never did)."""
    from claude_agent_sdk import get_session_info

    return await read(clock, get_session_info, session_id, directory=directory) is not None


def list_sessions(directory: str | None, *, limit: int, offset: int = 0) -> list[SDKSessionInfo]:
    """The stored sessions of `directory` (None: of every project), newest first, as
    claude-agent-sdk's `list_sessions` answers, without opening anything but regular files."""
    from claude_agent_sdk import get_session_info

    candidates: list[tuple[str, str | None]] = []
    unsafe: set[str] = set()
    for store, project in project_dirs(directory):
        try:
            with os.scandir(store) as entries:
                names = [entry.name for entry in entries if TRANSCRIPT.match(entry.name)]
        except OSError:
            continue
        for name in names:
            try:
                regular_file_stat(os.path.join(store, name))
            except UnsafeFile as exc:
                log.warning("claude store entry skipped: %s", exc)
                unsafe.add(name[:-len(".jsonl")])
                continue
            except OSError:
                continue
            candidates.append((name[:-len(".jsonl")], project))
    newest: dict[str, SDKSessionInfo] = {}
    for session_id, project in candidates:
        if session_id in unsafe:  # the SDK's lookup of this id may meet the unsafe one first
            continue
        info = get_session_info(session_id, directory=project)
        if info is not None and (session_id not in newest or info.last_modified > newest[session_id].last_modified):
            newest[session_id] = info
    ordered = sorted(newest.values(), key=lambda info: info.last_modified, reverse=True)
    return ordered[offset:offset + limit]
