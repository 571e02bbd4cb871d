"""The ACP methods of the connection: `initialize` (also before the event loop, `acp_agent.startup.early`),
`authenticate` and `logout`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp_agent.agent_base import AgentBase
from acp_agent.failures.auth_status import auth_status_negotiated
from acp_agent.failures.protocol import INDEX_ADVERTISED as INDEX_CAPABILITIES
from acp_agent.failures.protocol import advertised_meta, declared_air, negotiated
from acp_agent.failures.protocol import index_declared as index_declared_by
from acp_agent.wire import acp
from acp_agent.wire import v2 as wire_v2
from acp_agent.wire.convert import UNSET, Unset
from acp_agent.wire.rpc import Reply

if TYPE_CHECKING:
    from acp_agent.backends.contract import RuntimeCapabilities


class Initialization(AgentBase):
    """`initialize`, `authenticate`, `logout`."""

    async def initialize(self, params: Any) -> Any:
        v2 = wire_v2.requested(params)
        request = self._parse(wire_v2.v1_initialize(params) if v2 else params, acp.InitializeRequest)
        wanted = auth_status_negotiated(request.client_capabilities.meta, self.provider.name)
        return self._initialized(request, await self.signin.auth_meta(wanted), v2=v2)

    def initialize_now(self, params: Any) -> Reply | None:
        """`initialize` answered without the event loop (`acp_agent.startup.early`): the same answer, or
        None when it needs the loop (a client that negotiated auth status: the keyring is asked).
        Raises RpcError as `initialize` does, before anything changes."""
        v2 = wire_v2.requested(params)
        request = self._parse(wire_v2.v1_initialize(params) if v2 else params, acp.InitializeRequest)
        if auth_status_negotiated(request.client_capabilities.meta, self.provider.name):
            return None
        return self._initialized(request, UNSET, v2=v2)

    def _initialized(self, request: acp.InitializeRequest, auth_meta: dict[str, Any] | Unset, *,
                     v2: bool = False) -> Reply:
        """What the client declared is recorded and the answer built (`initialize` may come again:
        the newest declaration wins). A v2 client (`protocolVersion` 2 or more) declared what
        `acp_agent.wire.v2.v1_initialize` makes of its request, is answered the v2 form of the v1
        answer, and the connection speaks v2 from now on (`acp_agent.v2`)."""
        self.client_capabilities = self.signin.client_capabilities = request.client_capabilities
        client_meta = request.client_capabilities.meta
        self.capable = negotiated(client_meta)
        caps = self.provider.capabilities
        index_declared = caps.list_sessions and caps.set_title and index_declared_by(client_meta)
        if not index_declared and self._index is not None:  # a new client without the index
            self._index.close()
            self._index = None
        self.index_declared = index_declared
        self.auth_status = auth_status_negotiated(client_meta, self.provider.name)
        self.auth_feed.air, self.auth_feed.air_last = self.capable, None  # a new client: told afresh
        if self._outbox is not None:  # sessions opened before `initialize` follow what it negotiated
            self._negotiate(self._outbox, v2)
        session_caps = acp.SessionCapabilities(
            list={} if caps.list_sessions else UNSET,
            resume={} if caps.resume_session else UNSET,
            close={} if caps.close_session else UNSET,
            fork={} if caps.fork_session else UNSET,
            delete={} if caps.delete_session else UNSET,
            title={} if caps.set_title else UNSET,
            additional_directories={} if caps.additional_directories else UNSET,
        )
        meta: dict[str, Any] = {}
        if caps.steering:
            # Where claude-agent-acp and codex-acp advertise `_session/steering`: the top-level
            # `_meta` of the initialize response, beside `agentCapabilities`.
            meta["steering"] = {"supported": True}
        if self.capable:
            declared = declared_air(client_meta)
            meta.update(advertised_meta(*air_capabilities(caps, declared, v2=v2, index=index_declared)))
            if goal_advertised(caps, declared):  # where both anchors describe `_session/goal`
                meta["jetbrains"]["air"]["goal"] = {"version": 1, "controlMethod": "_session/goal",
                                                    "actions": list(caps.goal_actions)}
        elif index_declared:  # AIR without sessionFailure: the index alone
            meta["jetbrains"] = {"air": {"version": 1, "capabilities": list(INDEX_CAPABILITIES)}}
        if isinstance(auth_meta, dict):
            meta.update(auth_meta)
        response = acp.InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=acp.AgentCapabilities(
                load_session=caps.load_session,
                prompt_capabilities=acp.PromptCapabilities(
                    image=caps.image, audio=caps.audio, embedded_context=caps.embedded_context),
                mcp_capabilities=acp.McpCapabilities(http=caps.mcp_http, sse=caps.mcp_sse),
                session_capabilities=session_caps,
                auth=acp.AgentAuthCapabilities(logout={}, status={}),
                providers={} if self.provider.gateways else UNSET,
                # AIR: this agent pushes its own sign-in (`_auth/status_update`), as both anchors do
                meta={"authStatus": {}} if self.capable else UNSET,
            ),
            auth_methods=self.signin.auth_methods(),
            agent_info=acp.Implementation(name=f"acp-agent-{self.provider.name}",
                                          version=self.settings.agent_version,
                                          title=f"{self.provider.title} (acp-agent)"),
            meta=meta or UNSET,
        )
        if v2 != (self.surface is not None):
            from acp_agent.v2 import V2Surface

            self.surface = V2Surface(self) if v2 else None
            self._link()
        if v2:
            return Reply(wire_v2.v2_initialize(self._dump(response)), self._mark_answered)
        return Reply(self._dump(response), self._mark_answered)

    def _mark_answered(self, written: bool) -> None:
        self._answered_once = True
        if self._answered is not None:
            self._answered.set()
        if written and self.capable and self._task_group is not None:
            self._task_group.start_soon(self.outbox.push_auth_status)  # AIR: the first push

    async def authenticate(self, params: Any) -> Any:
        request = self._parse(params, acp.AuthenticateRequest)
        await self.signin.authenticate(request.method_id)
        await self.backend.replace_when_idle(sessions_open=bool(self.sessions))
        self.auth_feed.signed_in_or_out()
        await self.outbox.push_auth_status()
        return self._dump(acp.MetaOnlyResponse(meta=await self.signin.auth_meta(self.auth_status)))

    async def logout(self, params: Any) -> Any:
        self._parse(params, acp.LogoutRequest)
        for session in list(self.sessions.values()):
            await self._end_session(session)
        await self.backend.close()
        await self.signin.logout()
        self.auth_feed.signed_in_or_out()
        await self.outbox.push_auth_status()
        return self._dump(acp.MetaOnlyResponse(meta=await self.signin.auth_meta(self.auth_status)))

    async def providers_list(self, params: Any) -> Any:
        """`providers/list` (unstable): the provider's LLM routing slots (`acp_agent.gateways`)."""
        return self.gateways.listing()

    async def providers_set(self, params: Any) -> Any:
        """`providers/set` (unstable): a slot routed to the client's gateway for later sessions."""
        self.gateways.set(params)
        return {}

    async def providers_disable(self, params: Any) -> Any:
        """`providers/disable` (unstable): a slot back to the backend's own routing."""
        self.gateways.disable(params)
        return {}

    async def auth_status_request(self, params: Any) -> Any:
        """`auth/status` (unstable): the agent's own credentials as ACP's auth state; never
        `auth_required`. The client is sent `auth/status_update` from now on when it changes."""
        self._parse(params, acp.AuthStatusRequest)
        return self.auth_feed.answer(await self.signin.credentials())


def air_capabilities(caps: RuntimeCapabilities, declared: frozenset[str] = frozenset(), *, v2: bool = False,
                     index: bool = False) -> list[str]:
    """The AIR capabilities besides `sessionFailure` this agent serves for its provider, in the
    order claude-agent-acp lists them; advertised to a client of the extension only (the session
    index's to a client that declared `sessionIndex`, `index`; `customInstructions` and
    `asyncTasks` only to one that `declared` it, its only user; `goal` so where the provider asks
    it). Not `diffPatch` on ACP v2, whose diffs carry their own git patch, nor `planContentDelta`
    (as codex-acp), nor `asyncTasks`."""
    served: list[str] = []
    if index and caps.list_sessions and caps.set_title:
        served.extend(INDEX_CAPABILITIES)
    if caps.file_changes:
        served.append("agentFileChangeReport")
    if caps.custom_instructions and "customInstructions" in declared:
        served.append("customInstructions")
    if caps.recommended_values:
        served.append("recommendedValue")
    if caps.file_patches and not v2:
        served.append("diffPatch")
    if caps.raw_input:
        served.append("rawInputRendering")
    if caps.plan_file:
        served.append("planFile")
    if caps.plan_content_delta and not v2:
        served.append("planContentDelta")
    if caps.subagents:
        served.append("nativeSubagentSessions")
    if caps.async_tasks and "asyncTasks" in declared and not v2:  # (claude-agent-acp's v2 drops it too)
        served.append("asyncTasks")
    if caps.background_subagents and "backgroundSubagents" in declared and not v2:
        served.append("backgroundSubagents")
    if caps.codex_hooks:
        served.append("codexHooks")
    if goal_advertised(caps, declared):
        served.append("goal")
    return served


def goal_advertised(caps: RuntimeCapabilities, declared: frozenset[str]) -> bool:
    """Whether `initialize` names AIR's `goal` to a client of the extension that `declared` these."""
    return bool(caps.goal_actions) and (not caps.goal_if_declared or "goal" in declared)
