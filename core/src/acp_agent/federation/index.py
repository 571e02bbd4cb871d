"""AIR's session index across every provider behind the front.

`_session/batch_get` asks each session's provider for its own ids (an id no provider is known
for is asked of every one); `_session/list/subscribe` subscribes with every provider that has the
index and answers one subscription id of the front's, under which each provider's
`_session/list/changes` reaches the client, its session ids as the client knows them. The other
index methods name one session and are routed like every session method.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from acp_agent.federation import ProviderCall
from acp_agent.federation.directory import SessionDirectory
from acp_agent.sessions.index import session_ids_param
from acp_agent.wire.acp import MethodNames as M
from acp_agent.wire.rpc import RpcError, result_of


class MergedIndex:
    """The index methods that span providers, for the providers in `providers` (in order)."""

    def __init__(self, providers: Sequence[str], call: ProviderCall, directory: SessionDirectory) -> None:
        self.providers = list(providers)
        self._call = call
        self.directory = directory
        self._subscriptions: dict[str, dict[str, str]] = {}
        """The front's subscription id → each provider's own."""
        self._fronts: dict[tuple[str, str], str] = {}
        """(provider, its subscription id) → the front's."""

    def methods(self) -> dict[str, Callable[[Any], Awaitable[Any]]]:
        return {M.SESSION_BATCH_GET: self.batch_get, M.SESSION_LIST_SUBSCRIBE: self.subscribe,
                M.SESSION_LIST_UNSUBSCRIBE: self.unsubscribe}

    async def batch_get(self, params: Any) -> dict[str, Any]:
        wanted = session_ids_param(params)
        asked: dict[str, list[str]] = {}
        unplaced: list[str] = []
        for session_id in wanted:
            placement = self.directory.find(session_id)
            if placement is None or placement.provider not in self.providers:
                unplaced.append(session_id)
            else:
                asked.setdefault(placement.provider, []).append(placement.backend_id)
        for name in self.providers:
            asked.setdefault(name, []).extend(unplaced)
        rows: dict[str, dict[str, Any]] = {}
        for name, backend_ids in asked.items():
            if not backend_ids:
                continue
            answer = result_of(await self._call(name, M.SESSION_BATCH_GET, {**params, "sessionIds": backend_ids})) or {}
            for row in answer.get("sessions") or ():
                if isinstance(row, Mapping) and isinstance(row.get("sessionId"), str):
                    client_id = self.directory.client_id(name, row["sessionId"])
                    rows.setdefault(client_id, {**row, "sessionId": client_id})
        return {"sessions": [rows[i] for i in wanted if i in rows]}

    async def subscribe(self, params: Any) -> dict[str, Any]:
        own: dict[str, str] = {}
        front = uuid.uuid4().hex
        try:
            for name in self.providers:
                answer = result_of(await self._call(name, M.SESSION_LIST_SUBSCRIBE, params)) or {}
                own[name] = str(answer["subscriptionId"])
                self._fronts[(name, own[name])] = front
        except BaseException:
            await self._unsubscribe(own)
            raise
        self._subscriptions[front] = own
        return {"subscriptionId": front}

    async def unsubscribe(self, params: Any) -> dict[str, Any]:
        """Idempotent, as each provider's: an unknown id is no error."""
        given = params.get("subscriptionId") if isinstance(params, Mapping) else None
        own = self._subscriptions.pop(given, {}) if isinstance(given, str) else {}
        await self._unsubscribe(own)
        return {}

    async def _unsubscribe(self, own: Mapping[str, str]) -> None:
        for name, subscription_id in own.items():
            self._fronts.pop((name, subscription_id), None)
            try:
                await self._call(name, M.SESSION_LIST_UNSUBSCRIBE, {"subscriptionId": subscription_id})
            except RpcError:
                pass  # the provider no longer has it: nothing to end

    def changes(self, provider: str, params: Any) -> Any:
        """A provider's `_session/list/changes`, as the client's subscription sees it."""
        if not isinstance(params, Mapping):
            return params
        front = self._fronts.get((provider, str(params.get("subscriptionId"))))
        if front is None:
            return params
        sessions = [{**row, "sessionId": self.directory.client_id(provider, row["sessionId"])}
                    if isinstance(row, Mapping) and isinstance(row.get("sessionId"), str) else row
                    for row in params.get("sessions") or ()]
        removed = [self.directory.client_id(provider, i) if isinstance(i, str) else i
                   for i in params.get("removed") or ()]
        return {**params, "subscriptionId": front, "sessions": sessions, "removed": removed}
