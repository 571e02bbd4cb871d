"""`initialize` and sign-in for every provider behind the front.

`initialize` asks every agent and merges the answers; each provider's auth methods are offered
as `<provider>:<id>` and `authenticate` hands the method to that provider; `logout` signs out of
the provider `_meta["acp-agent"].provider` names (else of every one); auth status is signed in
when any provider is, with one account row per provider that has credentials.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from acp_agent.wire.acp import MethodNames as M
from acp_agent.wire.convert import clip
from acp_agent.wire.rpc import INVALID_PARAMS, Connection, Reply, RpcError

if TYPE_CHECKING:
    from acp_agent.agent import Agent

PROVIDER_META = "acp-agent"
"""`_meta` key naming a provider: `{"provider": NAME}` (a listed session, a logout)."""


class SignIn:
    """The front's `initialize`, `authenticate`, `logout` and auth status."""

    def __init__(self, agents: Mapping[str, Agent], agent_version: str,
                 connection: Callable[[], Connection | None]) -> None:
        self.agents = agents
        self.order = list(agents)
        self.titles = {name: agent.provider.title for name, agent in agents.items()}
        self.agent_version = agent_version
        self._connection = connection

    def methods(self) -> dict[str, Callable[[Any], Awaitable[Any]]]:
        return {M.INITIALIZE: self.initialize, M.AUTHENTICATE: self.authenticate, M.LOGOUT: self.logout,
                M.AUTH_STATUS: self.auth_status}

    async def initialize(self, params: Any) -> Any:
        """Every agent's answer, merged: the front speaks ACP v1."""
        if isinstance(params, dict) and isinstance(params.get("protocolVersion"), int) \
                and params["protocolVersion"] > 1:
            params = {**params, "protocolVersion": 1}
        replies: list[Reply] = []
        answers: dict[str, Any] = {}
        for name, agent in self.agents.items():
            reply = await agent.initialize(params)
            replies.append(reply)
            answers[name] = reply.result

        def written(done: bool) -> None:
            for reply in replies:
                reply.on_written(done)

        return Reply(self.merged_initialize(answers), written)

    def merged_initialize(self, answers: Mapping[str, Any]) -> dict[str, Any]:
        """One answer: capabilities any provider has (MCP transports every one speaks), every
        provider's auth methods under their `<provider>:<id>`, the `_meta` of all merged."""
        first = answers[self.order[0]]
        capabilities: dict[str, Any] = json.loads(json.dumps(first.get("agentCapabilities") or {}))
        meta: dict[str, Any] = {}
        methods: list[Any] = []
        for name, answer in answers.items():
            caps = answer.get("agentCapabilities") or {}
            capabilities["loadSession"] = bool(capabilities.get("loadSession") or caps.get("loadSession"))
            prompt = capabilities.setdefault("promptCapabilities", {})
            for flag, value in (caps.get("promptCapabilities") or {}).items():
                prompt[flag] = bool(prompt.get(flag) or value)
            mcp = capabilities.setdefault("mcpCapabilities", {})
            for flag in list(mcp):
                mcp[flag] = bool(mcp[flag] and (caps.get("mcpCapabilities") or {}).get(flag))
            if caps.get("providers") is not None:  # gateways: some provider has a routing slot
                capabilities["providers"] = caps["providers"]
            sessions = capabilities.setdefault("sessionCapabilities", {})
            sessions.update({key: value for key, value in (caps.get("sessionCapabilities") or {}).items()
                             if key not in sessions})
            merge_meta(meta, answer.get("_meta") or {})
            for method in answer.get("authMethods") or ():
                label = str(method.get("name") or method["id"])
                methods.append({**method, "id": f"{name}:{method['id']}",
                                "name": label if self.titles[name] in label else f"{self.titles[name]}: {label}"})
        answer = {
            "protocolVersion": first.get("protocolVersion", 1),
            "agentCapabilities": capabilities,
            "authMethods": methods,
            "agentInfo": {"name": "acp-agent", "version": self.agent_version,
                          "title": "acp-agent (" + ", ".join(self.titles.values()) + ")"},
        }
        if meta:
            answer["_meta"] = meta
        return answer

    async def first_with_credentials(self) -> str:
        """The first provider (in the documented order) that has credentials, else the first."""
        for name in self.order:
            if (await self.agents[name].credentials()).configured:
                return name
        return self.order[0]

    async def authenticate(self, params: Any) -> Any:
        """`methodId` `<provider>:<id>`: that provider's sign-in."""
        method_id = params.get("methodId") if isinstance(params, Mapping) else None
        provider, _, own = method_id.partition(":") if isinstance(method_id, str) else ("", "", "")
        if provider not in self.agents or not own:
            known = ", ".join(f"{name}:…" for name in self.order)
            raise RpcError(INVALID_PARAMS, f"Unknown auth method {clip(str(method_id))!r}: the ids are "
                           f"<provider>:<method> ({known})", {"field": "methodId"})
        return await self.agents[provider].authenticate({**params, "methodId": own})

    async def logout(self, params: Any) -> Any:
        """Sign out of the provider `_meta["acp-agent"].provider` names, else of every one."""
        chosen = meta_provider(params)
        if chosen is not None and chosen not in self.agents:
            raise RpcError(INVALID_PARAMS, f"Unknown provider {clip(chosen)!r}", {"field": "_meta"})
        meta: dict[str, Any] = {}
        for name in [chosen] if chosen else self.order:
            answer = await self.agents[name].logout(params)
            merge_meta(meta, (answer or {}).get("_meta") or {})
        return {"_meta": meta} if meta else {}

    async def auth_status(self, params: Any) -> Any:
        """Signed in when any provider is; one account per provider that has credentials."""
        answers = [await agent.auth_status_request(params) for agent in self.agents.values()]
        return self.merged_status(answers)

    def merged_status(self, answers: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        accounts = [{**account, "label": f"{self.titles[name]}: {account.get('label', '')}"}
                    for name, answer in zip(self.order, answers, strict=True)
                    for account in answer.get("accounts") or ()]
        signed_in = any(answer.get("state") == "authenticated" for answer in answers)
        status: dict[str, Any] = {"state": "authenticated" if signed_in else "unauthenticated"}
        if accounts:
            status["accounts"] = accounts
        return status

    async def changed(self) -> None:
        """A provider's `auth/status_update`: the client is told the merged status."""
        answers = [agent.auth_feed.last for agent in self.agents.values()]
        connection = self._connection()
        if connection is not None and all(answer is not None for answer in answers):
            await connection.notify(M.AUTH_STATUS_UPDATE, self.merged_status(
                [answer for answer in answers if answer is not None]))


def meta_provider(params: Any) -> str | None:
    """The provider `_meta["acp-agent"].provider` names, if any."""
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    own = meta.get(PROVIDER_META) if isinstance(meta, Mapping) else None
    provider = own.get("provider") if isinstance(own, Mapping) else None
    return provider if isinstance(provider, str) else None


def merge_meta(into: dict[str, Any], meta: Mapping[str, Any]) -> None:
    """`meta` merged into `into`: objects key by key, lists as their union (AIR's capabilities)."""
    for key, value in meta.items():
        mine = into.get(key)
        if isinstance(mine, dict) and isinstance(value, Mapping):
            merge_meta(mine, value)
        elif isinstance(mine, list) and isinstance(value, list):
            mine.extend(item for item in value if item not in mine)
        elif key not in into:
            into[key] = json.loads(json.dumps(value))
