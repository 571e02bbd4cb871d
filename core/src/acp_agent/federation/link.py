"""One provider's agent's view of the client connection the front shares.

A session moved to this provider before its first prompt has a backend id of its own and keeps
the client's id: every frame the agent writes with `sessionId` gets the client's id back, and
while a move to this provider is under way the frames of sessions not yet named wait, so the new
session's first updates go out under the id the client knows. Each session update passes the
front (its config options shown as the front shows them); the agent's `auth/status_update`
becomes the front's update for every provider, its `_session/list/changes` the front's
subscription's (`acp_agent.federation.index`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from acp_agent.wire.acp import MethodNames as M
from acp_agent.wire.rpc import ClientLink

Observe = Callable[[str, Mapping[str, Any]], Mapping[str, Any]]
"""The front's `(client session id, update)` → the update as the client sees it."""


class ProviderLink:
    """`ClientLink` for one provider's agent, over the shared one."""

    def __init__(self, client: ClientLink, observe: Observe, auth_changed: Callable[[], Awaitable[None]],
                 list_changes: Callable[[Any], Any] = lambda params: params) -> None:
        self._client = client
        self._observe = observe
        self._auth_changed = auth_changed
        self._list_changes = list_changes
        self._client_ids: dict[str, str] = {}
        self._moving = 0
        self._held: list[tuple[str, Any]] = []

    def name(self, backend_id: str, client_id: str) -> None:
        """This provider knows the client's session `client_id` as `backend_id`."""
        if backend_id != client_id:
            self._client_ids[backend_id] = client_id

    def forget(self, backend_id: str) -> None:
        self._client_ids.pop(backend_id, None)

    @contextmanager
    def moving(self) -> Iterator[None]:
        """While a session moves here: frames of unnamed sessions are held until it is named."""
        self._moving += 1
        try:
            yield
        finally:
            self._moving -= 1

    async def release(self) -> None:
        """Write what was held during a move (in order), now that its session has its name."""
        if self._moving:
            return
        held, self._held = self._held, []
        for method, params in held:
            await self._client.notify(method, self._as_client(params))

    async def notify(self, method: str, params: Any, *, wait_written: bool = False) -> bool:
        if method == M.AUTH_STATUS_UPDATE:
            await self._auth_changed()
            return True
        if method == M.SESSION_LIST_CHANGES:
            return await self._client.notify(method, self._list_changes(params), wait_written=wait_written)
        session_id = params.get("sessionId") if isinstance(params, Mapping) else None
        if self._moving and isinstance(session_id, str) and session_id not in self._client_ids:
            self._held.append((method, params))
            return True
        return await self._client.notify(method, self._as_client(params), wait_written=wait_written)

    async def request(self, method: str, params: Any, *, timeout_s: float | None = None) -> Any:
        return await self._client.request(method, self._as_client(params), timeout_s=timeout_s)

    def _as_client(self, params: Any) -> Any:
        backend_id = params.get("sessionId") if isinstance(params, Mapping) else None
        if not isinstance(backend_id, str):
            return params
        client_id = self._client_ids.get(backend_id, backend_id)
        update = params.get("update")
        if isinstance(update, Mapping):
            return {**params, "sessionId": client_id, "update": self._observe(client_id, update)}
        return {**params, "sessionId": client_id} if client_id != backend_id else params
