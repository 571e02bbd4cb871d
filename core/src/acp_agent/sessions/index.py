"""AIR's session index (`sessionIndex`): a bounded, filtered `session/list` whose rows carry
`_meta.jetbrains.air {archived, state, model, cost, forkedFrom, lastTurnEndedAt}`, `_session/batch_get`,
archive and unarchive, and the list subscription (`_session/list/changes`), as claude-agent-acp's
`session-index/*` serves them. Written once for every provider: the rows come from the provider's
own `session/list` pages; the archive state from the backend where it keeps one
(`RuntimeCapabilities.archive_sessions`: Codex's `thread/archive`), else from `ArchiveStore`, a
small file of acp-agent's own under the state directory.

A subscription re-lists its directory when a session of this agent process changes (created,
prompted, its turn ended, renamed, archived, closed, deleted) and every `poll_s` otherwise, so what
another agent process changed shows within that bound; it pushes the rows whose fields changed
(`updatedAt` alone is no change) and the ids that left.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
import os
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import aclosing
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.abc
from attrs import define, field

from acp_agent.state import write_atomically
from acp_agent.wire import acp
from acp_agent.wire.rpc import INVALID_PARAMS, METHOD_NOT_FOUND, RpcError

log = logging.getLogger(__name__)

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
ARCHIVED_FILTERS = ("unarchived", "archived", "all")
MAX_PAGES = 50
"""Backend pages one request reads at most (a filter that matches little cannot read forever)."""
MAX_SUBSCRIPTIONS = 128
MAX_STORE_BYTES = 8 << 20
"""The archive store read at most (4096 sessions of a few hundred bytes each fit well)."""
POLL_S = 10.0
CURSOR_VERSION = 1
AIR_VERSION = 1

Fetch = Callable[[str | None, str | None], Awaitable[Any]]
"""A provider's listing: `(cwd, cursor) -> SessionListing`."""


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def not_offered(method: str) -> RpcError:
    """A `_session/*` index method from a client that did not declare `sessionIndex`."""
    return RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")


@define(frozen=True)
class ListOptions:
    limit: int = DEFAULT_LIMIT
    archived: str = "unarchived"
    include_worktrees: bool = False


def list_options(meta: Any) -> ListOptions:
    """`_meta.jetbrains.air.list {limit, archived, includeWorktrees}` of a `session/list`: omitted
    or null is the default, a limit above `MAX_LIMIT` is clamped, anything else is -32602."""
    air = _mapping(_mapping(meta).get("jetbrains")).get("air")
    raw = _mapping(_mapping(air).get("list"))
    limit = raw.get("limit")
    if limit is None:
        limit = DEFAULT_LIMIT
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise RpcError(INVALID_PARAMS, "`_meta.jetbrains.air.list.limit` must be an integer of at least 1",
                       {"field": "_meta.jetbrains.air.list.limit"})
    archived = raw.get("archived")
    archived = "unarchived" if archived is None else archived
    if archived not in ARCHIVED_FILTERS:
        raise RpcError(INVALID_PARAMS, '`_meta.jetbrains.air.list.archived` must be "unarchived", "archived" '
                       'or "all"', {"field": "_meta.jetbrains.air.list.archived"})
    worktrees = raw.get("includeWorktrees")
    worktrees = False if worktrees is None else worktrees
    if not isinstance(worktrees, bool):
        raise RpcError(INVALID_PARAMS, "`_meta.jetbrains.air.list.includeWorktrees` must be a boolean",
                       {"field": "_meta.jetbrains.air.list.includeWorktrees"})
    return ListOptions(min(limit, MAX_LIMIT), archived, worktrees)


def session_id_param(params: Any, method: str) -> str:
    value = _mapping(params).get("sessionId")
    if not isinstance(value, str) or not value.strip():
        raise RpcError(INVALID_PARAMS, f"{method} needs a non-empty sessionId", {"field": "sessionId"})
    return value.strip()


def session_ids_param(params: Any) -> list[str]:
    """`_session/batch_get`'s `sessionIds`: distinct non-blank strings."""
    ids = _mapping(params).get("sessionIds")
    if (not isinstance(ids, list) or any(not isinstance(i, str) or not i.strip() for i in ids)
            or len(set(ids)) != len(ids)):
        raise RpcError(INVALID_PARAMS, "sessionIds must be distinct, non-blank strings", {"field": "sessionIds"})
    return list(ids)


# --- the archive store -------------------------------------------------------------------------


class ArchiveStore:
    """What acp-agent itself keeps of a provider's sessions for the index: which are archived and
    what each was forked from. One JSON file per provider, re-read when another process changed it,
    replaced atomically (tempfile + `os.replace`), at most `max_entries` sessions (the oldest
    marks go first); an unreadable file counts as empty (and is replaced at the next write).
    Without a state directory it lives in memory only."""

    def __init__(self, path: str | None, *, max_entries: int = 4096) -> None:
        self.path = path
        self.max_entries = max_entries
        self._entries: dict[str, dict[str, Any]] = {}
        self._stamp: tuple[int, int] | None = None

    def _read(self) -> dict[str, dict[str, Any]]:
        if self.path is None:
            return self._entries
        try:
            stat = os.stat(self.path)
        except OSError:
            self._entries, self._stamp = {}, None
            return self._entries
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp == self._stamp:
            return self._entries
        try:
            from acp_agent.backends.files import read_regular_file

            data = json.loads(read_regular_file(self.path, MAX_STORE_BYTES))
            sessions = data.get("sessions") if isinstance(data, dict) else None
            if not isinstance(sessions, dict):
                raise ValueError("no sessions object")
            self._entries = {key: value for key, value in sessions.items()
                             if isinstance(key, str) and isinstance(value, dict)}
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            log.warning("the session index store %s is unreadable (%s): starting empty", self.path,
                        type(exc).__name__)
            self._entries = {}
        self._stamp = stamp
        return self._entries

    def _write(self, entries: dict[str, dict[str, Any]]) -> None:
        if len(entries) > self.max_entries:
            keep = sorted(entries.items(), key=lambda item: item[1].get("at", 0))[-self.max_entries:]
            entries = dict(keep)
        self._entries = entries
        if self.path is None:
            return
        write_atomically(self.path, json.dumps({"version": 1, "sessions": entries}, separators=(",", ":")).encode())
        stat = os.stat(self.path)
        self._stamp = (stat.st_mtime_ns, stat.st_size)

    def _change(self, session_id: str, key: str, value: Any) -> None:
        entries = dict(self._read())
        entry = {k: v for k, v in entries.get(session_id, {}).items() if k != key}
        if value is not None:
            entry[key] = value
        if set(entry) - {"at"}:
            entry["at"] = int(time.time() * 1000)
            entries[session_id] = entry
        else:
            entries.pop(session_id, None)
        self._write(entries)

    def archived(self, session_id: str) -> bool:
        return self._read().get(session_id, {}).get("archived") is True

    def set_archived(self, session_id: str, archived: bool) -> None:
        if self.archived(session_id) != archived:
            self._change(session_id, "archived", True if archived else None)

    def forked_from(self, session_id: str) -> str | None:
        value = self._read().get(session_id, {}).get("forkedFrom")
        return value if isinstance(value, str) else None

    def set_forked_from(self, session_id: str, source: str) -> None:
        self._change(session_id, "forkedFrom", source)

    def forget(self, session_id: str) -> None:
        if session_id in self._read():
            entries = dict(self._entries)
            entries.pop(session_id)
            self._write(entries)


def _normal(path: str) -> str:
    """A directory as a subscription compares it (no file system access)."""
    return os.path.normpath(path)


def store_path(state_dir: str | None, provider: str) -> str | None:
    return os.path.join(state_dir, "session-index", f"{provider}.json") if state_dir else None


# --- rows --------------------------------------------------------------------------------------


@define
class OwnSession:
    """What this agent process knows of a session it has open."""

    cwd: str
    running: bool = False
    last_turn_ended_at: float | None = None
    model: str | None = None
    cost: acp.Cost | None = None


def _iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def row(info: Mapping[str, Any], archived: bool, forked_from: str | None, own: OwnSession | None) -> dict[str, Any]:
    """A `SessionInfo` (wire form) with the index's row fields in `_meta.jetbrains.air`: `archived`
    always, the others where known (`state`, `lastTurnEndedAt`, `model` and a positive `cost` for a
    session open here, as claude-agent-acp: what it cost so far, none once it is closed)."""
    fields: dict[str, Any] = {"version": AIR_VERSION, "archived": archived}
    if own is not None and own.model:
        fields["model"] = own.model
    if forked_from:
        fields["forkedFrom"] = forked_from
    if own is not None:
        fields["state"] = "running" if own.running else "idle"
        if own.last_turn_ended_at is not None:
            fields["lastTurnEndedAt"] = _iso(own.last_turn_ended_at)
        if own.cost is not None and math.isfinite(own.cost.amount) and own.cost.amount > 0:
            fields["cost"] = {"amount": own.cost.amount, "currency": own.cost.currency}
    meta = dict(_mapping(info.get("_meta")))
    jetbrains = dict(_mapping(meta.get("jetbrains")))
    jetbrains["air"] = {**_mapping(jetbrains.get("air")), **fields}
    meta["jetbrains"] = jetbrains
    return {**info, "_meta": meta}


def signature(info: Mapping[str, Any]) -> str:
    """What a change of a row is compared by: everything but `updatedAt`."""
    return json.dumps({k: v for k, v in info.items() if k != "updatedAt"}, sort_keys=True)


def _encode_cursor(payload: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, scope: dict[str, Any]) -> dict[str, Any]:
    try:
        payload = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        payload = None
    if not isinstance(payload, dict) or payload.get("v") != CURSOR_VERSION:
        raise RpcError(INVALID_PARAMS, "Unknown session/list cursor", {"field": "cursor"})
    if any(payload.get(k) != v for k, v in scope.items()):
        raise RpcError(INVALID_PARAMS, "The session/list cursor belongs to another cwd or filter",
                       {"field": "cursor"})
    return payload


# --- the index ---------------------------------------------------------------------------------


@define
class _Subscription:
    id: str
    cwd: str
    sent: dict[str, str] = field(factory=dict)
    dirty: anyio.Event = field(factory=anyio.Event)
    scope: anyio.CancelScope = field(factory=anyio.CancelScope)


@define(eq=False)
class SessionIndex:
    """The index of one connection whose client declared `sessionIndex` (see the module docstring).

    `fetch` is the provider's listing and `fetch_archived` its listing of archived sessions where
    the backend keeps the archive (None: `store` keeps it)."""

    fetch: Fetch
    fetch_archived: Fetch | None
    store: ArchiveStore
    notify: Callable[[dict[str, Any]], Awaitable[Any]]
    poll_s: float = POLL_S
    own: dict[str, OwnSession] = field(factory=dict)
    subscriptions: dict[str, _Subscription] = field(factory=dict)

    # -- listing --

    def _phases(self, archived: str) -> list[tuple[str, Fetch, bool | None]]:
        if self.fetch_archived is None:
            return [("s", self.fetch, None)]
        phases: list[tuple[str, Fetch, bool | None]] = []
        if archived in ("unarchived", "all"):
            phases.append(("u", self.fetch, False))
        if archived in ("archived", "all"):
            phases.append(("a", self.fetch_archived, True))
        return phases

    def _archived(self, session_id: str, backend: bool | None) -> bool:
        return backend if backend is not None else self.store.archived(session_id)

    async def _rows(self, cwd: str | None, archived: str, start: dict[str, Any] | None,
                    dump: Callable[[Any], Any]) -> AsyncGenerator[tuple[dict[str, Any], dict[str, Any]]]:
        """Each matching row with the cursor of the position after it."""
        phases = self._phases(archived)
        names = [name for name, _, _ in phases]
        index = names.index(start["p"]) if start and start.get("p") in names else 0
        cursor: str | None = start.get("c") if start else None
        skip = int(start.get("o", 0)) if start else 0
        pages = 0
        for name, fetch, backend in phases[index:]:
            while pages < MAX_PAGES:
                pages += 1
                listing = await fetch(cwd, cursor)
                items = list(listing.sessions)
                for position, info in enumerate(items):
                    if position < skip:
                        continue
                    wire = dump(info)
                    session_id = wire.get("sessionId")
                    if not isinstance(session_id, str):
                        continue
                    is_archived = self._archived(session_id, backend)
                    if archived != "all" and is_archived != (archived == "archived"):
                        continue
                    after = {"p": name, "c": cursor, "o": position + 1}
                    yield row(wire, is_archived, self.store.forked_from(session_id),
                              self.own.get(session_id)), after
                skip = 0
                if not listing.next_cursor:
                    break
                cursor = listing.next_cursor
            cursor = None

    async def page(self, cwd: str | None, cursor: str | None, options: ListOptions,
                   dump: Callable[[Any], Any]) -> dict[str, Any]:
        """A `session/list` page of at most `options.limit` rows (and `nextCursor` when more may
        follow)."""
        scope = {"cwd": cwd, "a": options.archived}
        start = _decode_cursor(cursor, scope) if cursor else None
        sessions: list[dict[str, Any]] = []
        last: dict[str, Any] = {}
        async with aclosing(self._rows(cwd, options.archived, start, dump)) as rows:
            async for info, after in rows:
                if len(sessions) == options.limit:
                    return {"sessions": sessions, "nextCursor": _encode_cursor(
                        {"v": CURSOR_VERSION, **scope, **last})}
                sessions.append(info)
                last = after
        return {"sessions": sessions}

    async def find(self, session_ids: list[str], dump: Callable[[Any], Any]) -> dict[str, dict[str, Any]]:
        """The rows of these ids, in any directory and archive state; a session open here that the
        backend does not list yet (nothing written) gets a row of what this process knows."""
        wanted = set(session_ids)
        found: dict[str, dict[str, Any]] = {}
        if wanted:
            async with aclosing(self._rows(None, "all", None, dump)) as rows:
                async for info, _ in rows:
                    if info["sessionId"] in wanted:
                        found[info["sessionId"]] = info
                        if len(found) == len(wanted):
                            break
        for session_id in wanted - set(found):
            own = self.own.get(session_id)
            if own is not None:
                found[session_id] = self._own_row(session_id, own)
        return found

    def _own_row(self, session_id: str, own: OwnSession) -> dict[str, Any]:
        return row({"sessionId": session_id, "cwd": own.cwd, "updatedAt": _iso(time.time())},
                   self.store.archived(session_id), self.store.forked_from(session_id), own)

    async def batch_get(self, session_ids: list[str], dump: Callable[[Any], Any]) -> dict[str, Any]:
        """`_session/batch_get`: the rows of the known ids, in the order asked; unknown ids are left out."""
        found = await self.find(session_ids, dump)
        return {"sessions": [found[i] for i in session_ids if i in found]}

    # -- what this process changes --

    def opened(self, session_id: str, cwd: str, model: str | None, forked_from: str | None = None) -> None:
        own = self.own.setdefault(session_id, OwnSession(cwd))
        own.cwd, own.model = cwd, model or own.model
        if forked_from:
            self.store.set_forked_from(session_id, forked_from)
        self.changed()

    def turn(self, session_id: str, running: bool, model: str | None = None,
             cost: acp.Cost | None = None) -> None:
        own = self.own.get(session_id)
        if own is None:
            return
        own.running = running
        own.model = model or own.model
        own.cost = cost or own.cost
        if not running:
            own.last_turn_ended_at = time.time()
        self.changed()

    def closed(self, session_id: str) -> None:
        if self.own.pop(session_id, None) is not None:
            self.changed()

    def deleted(self, session_id: str) -> None:
        self.own.pop(session_id, None)
        self.store.forget(session_id)
        self.changed()

    def changed(self) -> None:
        """Every subscription re-lists its directory now."""
        for subscription in self.subscriptions.values():
            subscription.dirty.set()

    # -- subscriptions --

    async def subscribe(self, cwd: str, dump: Callable[[Any], Any], task_group: anyio.abc.TaskGroup) -> str:
        """`_session/list/subscribe`: changes of the sessions of `cwd` are pushed from now on."""
        if len(self.subscriptions) >= MAX_SUBSCRIPTIONS:
            raise RpcError(INVALID_PARAMS, f"At most {MAX_SUBSCRIPTIONS} session list subscriptions per connection",
                           {"reason": "too_many_subscriptions", "max": MAX_SUBSCRIPTIONS})
        subscription = _Subscription(uuid.uuid4().hex, _normal(cwd))
        subscription.sent = {i: signature(info) for i, info in (await self._snapshot(subscription.cwd, dump)).items()}
        self.subscriptions[subscription.id] = subscription
        task_group.start_soon(self._follow, subscription, dump)
        return subscription.id

    def unsubscribe(self, subscription_id: str) -> None:
        """Idempotent: an unknown id is no error."""
        subscription = self.subscriptions.pop(subscription_id, None)
        if subscription is not None:
            subscription.scope.cancel()

    def close(self) -> None:
        for subscription_id in list(self.subscriptions):
            self.unsubscribe(subscription_id)

    async def _snapshot(self, cwd: str, dump: Callable[[Any], Any]) -> dict[str, dict[str, Any]]:
        rows: dict[str, dict[str, Any]] = {}
        async with aclosing(self._rows(cwd, "all", None, dump)) as listed:
            async for info, _ in listed:
                rows[info["sessionId"]] = info
                if len(rows) >= MAX_LIMIT:
                    break
        for session_id, own in self.own.items():
            if session_id not in rows and _normal(own.cwd) == cwd:
                rows[session_id] = self._own_row(session_id, own)
        return rows

    async def _follow(self, subscription: _Subscription, dump: Callable[[Any], Any]) -> None:
        with subscription.scope:
            while True:
                with anyio.move_on_after(self.poll_s):
                    await subscription.dirty.wait()
                subscription.dirty = anyio.Event()
                try:
                    await self._push(subscription, dump)
                except Exception as exc:  # a failed re-list is tried again at the next change or poll
                    log.warning("session list subscription %s: re-listing failed: %s", subscription.id,
                                type(exc).__name__)

    async def _push(self, subscription: _Subscription, dump: Callable[[Any], Any]) -> None:
        rows = await self._snapshot(subscription.cwd, dump)
        sessions = [info for i, info in rows.items() if subscription.sent.get(i) != signature(info)]
        removed = [i for i in subscription.sent if i not in rows]
        if (not sessions and not removed) or subscription.id not in self.subscriptions:
            return
        subscription.sent = {i: signature(info) for i, info in rows.items()}
        await self.notify({"subscriptionId": subscription.id, "sessions": sessions, "removed": removed})
