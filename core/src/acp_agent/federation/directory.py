"""Which provider holds each session the front opened, kept across agent processes.

A session keeps its client id for life; a session moved to another provider before its first
prompt is known there under that backend's own id, so an entry is `(provider, backend id)`. The
file lives in the state directory, is read once (a regular file, bounded:
`acp_agent.backends.files`; a damaged one is started afresh) and written whole and atomically
after each change; the oldest entries go beyond `MAX_ENTRIES`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path

from attrs import frozen

from acp_agent.state import write_atomically

log = logging.getLogger(__name__)

MAX_ENTRIES = 10_000
MAX_FILE_BYTES = 4 * 1024 * 1024
FILE_NAME = "providers-of-sessions.json"
MODELS_FILE_NAME = "models-of-providers.json"
MAX_MODELS = 200


@frozen
class Placement:
    """Where a session lives: its provider and the id its backend knows it by."""

    provider: str
    backend_id: str


class SessionDirectory:
    """Client session id → `Placement`, persisted under `directory` (None: in memory only)."""

    def __init__(self, directory: Path | None) -> None:
        self.path = directory / FILE_NAME if directory is not None else None
        self._entries: dict[str, Placement] | None = None

    def find(self, session_id: str) -> Placement | None:
        return self._loaded().get(session_id)

    def client_id(self, provider: str, backend_id: str) -> str:
        """The client's id of a session a provider lists under `backend_id`."""
        for client_id, placement in self._loaded().items():
            if placement == Placement(provider, backend_id):
                return client_id
        return backend_id

    def record(self, session_id: str, placement: Placement) -> None:
        entries = self._loaded()
        if entries.get(session_id) == placement:
            return
        entries.pop(session_id, None)
        entries[session_id] = placement
        while len(entries) > MAX_ENTRIES:
            del entries[next(iter(entries))]
        self._write()

    def forget(self, session_id: str) -> None:
        if self._loaded().pop(session_id, None) is not None:
            self._write()

    def _loaded(self) -> dict[str, Placement]:
        if self._entries is None:
            self._entries = self._read()
        return self._entries

    def _read(self) -> dict[str, Placement]:
        return dict(_placements(_read_json(self.path)))

    def _write(self) -> None:
        _write_json(self.path, {session_id: {"provider": p.provider, "backendId": p.backend_id}
                                for session_id, p in self._loaded().items()})


def _read_json(path: Path | None) -> object:
    """The JSON in `path` (a regular file, bounded), or None: absent, unreadable or damaged."""
    if path is None:
        return None
    from acp_agent.backends.files import read_regular_file

    try:
        return json.loads(read_regular_file(str(path), MAX_FILE_BYTES))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # also one that is not a regular file, or too large
        log.warning("cannot read %s (%s); starting afresh", path, exc)
        return None


def _write_json(path: Path | None, payload: object) -> None:
    """`payload` written whole to `path`: to a file beside it, then renamed over it."""
    if path is None:
        return
    try:
        write_atomically(str(path), json.dumps(payload).encode())
    except OSError as exc:
        log.warning("cannot write %s: %s", path, exc)


def _placements(raw: object) -> list[tuple[str, Placement]]:
    if not isinstance(raw, Mapping):
        return []
    found = []
    for session_id, entry in raw.items():
        if not isinstance(entry, Mapping):
            continue
        provider, backend_id = entry.get("provider"), entry.get("backendId")
        if isinstance(session_id, str) and isinstance(provider, str) and isinstance(backend_id, str):
            found.append((session_id, Placement(provider, backend_id)))
    return found


class KnownModels:
    """The models each provider listed the last time one of its sessions opened, kept beside the
    directory, so a session can offer another provider's models without starting its backend."""

    def __init__(self, directory: Path | None) -> None:
        self.path = directory / MODELS_FILE_NAME if directory is not None else None
        self._models: dict[str, list[dict[str, str]]] | None = None

    def all(self) -> Mapping[str, list[dict[str, str]]]:
        if self._models is None:
            self._models = _models(_read_json(self.path))
        return self._models

    def learn(self, provider: str, models: list[dict[str, str]]) -> None:
        known = dict(self.all())
        if known.get(provider) == models:
            return
        known[provider] = models[:MAX_MODELS]
        self._models = known
        _write_json(self.path, known)


def _models(raw: object) -> dict[str, list[dict[str, str]]]:
    if not isinstance(raw, Mapping):
        return {}
    return {provider: [{"value": model["value"], "name": model["name"]} for model in models[:MAX_MODELS]
                       if isinstance(model, Mapping) and isinstance(model.get("value"), str)
                       and isinstance(model.get("name"), str)]
            for provider, models in raw.items() if isinstance(provider, str) and isinstance(models, list)}
