"""`session/list` across every provider: one list, newest first, with the front's own cursor.

Each provider's own pages are read (at most `PAGES_PER_PROVIDER` of them), every row is named
by its client-facing session id and says its provider in `_meta["acp-agent"]`; a provider whose
list fails is left out and logged, so one broken backend does not hide the others' history.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from acp_agent.federation import ProviderCall
from acp_agent.federation.directory import SessionDirectory
from acp_agent.federation.signin import PROVIDER_META
from acp_agent.sessions.index import list_options
from acp_agent.wire.acp import MethodNames as M
from acp_agent.wire.rpc import INVALID_PARAMS, RpcError, result_of

log = logging.getLogger(__name__)

PAGE = 50
"""Sessions per page of the merged list (or AIR's `_meta.jetbrains.air.list.limit`, at most 200)."""
PAGES_PER_PROVIDER = 40
"""How many of a provider's own pages one merged listing reads at most."""


class MergedList:
    """The merged `session/list` of the providers in `providers` (in their order)."""

    def __init__(self, providers: Sequence[str], call: ProviderCall, directory: SessionDirectory) -> None:
        self.providers = list(providers)
        self._call = call
        self.directory = directory

    async def page(self, params: Any) -> dict[str, Any]:
        if not isinstance(params, Mapping):
            raise RpcError(INVALID_PARAMS, "Invalid params: expected an object", {"field": "params"})
        start = offset(params.get("cursor"))
        size = list_options(params.get("_meta")).limit if "_meta" in params else PAGE
        rows: list[dict[str, Any]] = []
        seen: set[str] = set()
        for name in self.providers:
            try:
                for row in await self._rows(name, params):
                    client_id = self.directory.client_id(name, row["sessionId"])
                    if client_id in seen:
                        continue
                    seen.add(client_id)
                    meta = {**(row.get("_meta") or {}), PROVIDER_META: {"provider": name}}
                    rows.append({**row, "sessionId": client_id, "_meta": meta})
            except RpcError as exc:
                log.warning("session/list of %s failed: %s", name, exc.message)
        rows.sort(key=lambda row: str(row.get("updatedAt") or ""), reverse=True)
        answer: dict[str, Any] = {"sessions": rows[start:start + size]}
        if start + size < len(rows):
            answer["nextCursor"] = cursor(start + size)
        return answer

    async def _rows(self, provider: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        after: Any = None
        for _ in range(PAGES_PER_PROVIDER):
            asked = {key: value for key, value in params.items() if key != "cursor"}
            if after is not None:
                asked["cursor"] = after
            answer = await self._call(provider, M.SESSION_LIST, asked)
            answer = result_of(answer)
            rows.extend(row for row in answer.get("sessions") or () if isinstance(row, dict))
            after = answer.get("nextCursor")
            if not after:
                break
        return rows


def cursor(start: int) -> str:
    """The cursor of the merged list's page that starts at row `start`."""
    return base64.urlsafe_b64encode(json.dumps({"offset": start}).encode()).decode()


def offset(given: Any) -> int:
    """The row a cursor of `cursor` starts at; -32602 for one the front did not give."""
    if given is None:
        return 0
    try:
        start = json.loads(base64.urlsafe_b64decode(str(given).encode()))["offset"]
    except (ValueError, TypeError, KeyError, binascii.Error):
        start = None
    if not isinstance(start, int) or isinstance(start, bool) or start < 0:
        raise RpcError(INVALID_PARAMS, "Invalid params: cursor: not one this agent gave", {"field": "cursor"})
    return start
