"""ACP's LLM gateways (`providers/list|set|disable`, `acp_agent.gateways`) behind the front.

`providers/list` lists every provider's routing slots; `set` and `disable` go to the provider
whose slot `providerId` names (an unknown slot to the default provider, which answers as
`--provider` does: -32602 for `set`, nothing to disable).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from acp_agent.federation import ProviderCall
from acp_agent.wire.acp import MethodNames as M
from acp_agent.wire.rpc import result_of

if TYPE_CHECKING:
    from acp_agent.agent import Agent


class MergedGateways:
    """The routing slots of the providers in `providers` (those that have any)."""

    def __init__(self, agents: Mapping[str, Agent], providers: Sequence[str], call: ProviderCall, *,
                 default: str | None) -> None:
        self.agents = agents
        self.providers = list(providers)
        self._call = call
        self.default = default

    def methods(self) -> dict[str, Callable[[Any], Awaitable[Any]]]:
        return {M.PROVIDERS_LIST: self.list, M.PROVIDERS_SET: self.set, M.PROVIDERS_DISABLE: self.disable}

    async def list(self, params: Any) -> dict[str, Any]:
        slots: list[Any] = []
        for name in self.providers:
            answer = await self._call(name, M.PROVIDERS_LIST, params)
            slots.extend(result_of(answer)["providers"])
        return {"providers": slots}

    async def set(self, params: Any) -> Any:
        return await self._slot(M.PROVIDERS_SET, params)

    async def disable(self, params: Any) -> Any:
        return await self._slot(M.PROVIDERS_DISABLE, params)

    async def _slot(self, method: str, params: Any) -> Any:
        """`providers/set` or `providers/disable`, by the provider that has the slot."""
        slot = params.get("providerId") if isinstance(params, Mapping) else None
        owner = next((name for name in self.providers if slot in self.agents[name].gateways.slots), None)
        if owner is None:
            default = self.default if self.default in self.providers else None
            owner = default or self.providers[0]
        return await self._call(owner, method, params)
