"""What the Muse runtime keeps per ACP session (one Muse session, same id) and per running turn,
and the MSP requests that open a session and apply its settings, whose failures become phase
failures."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
from attrs import define, field

from acp_agent.provider import (
    BackendTurn,
    ConfigOptionValue,
    ConnectionClosed,
    Notice,
    Phase,
    PhaseFailed,
    RpcError,
    SessionNotFound,
)
from acp_agent_muse.classify import (
    HOST_TITLE,
    SESSION_NOT_FOUND_CODE,
    host_lost,
    request_error_observation,
    settings_not_applied,
)
from acp_agent_muse.host import MuseHost
from acp_agent_muse.modes import APPROVAL_MODES, DEFAULT_MODE, mapping, served_mode
from acp_agent_muse.translate import TurnTranslator

if TYPE_CHECKING:
    from acp_agent.provider import Event

log = logging.getLogger(__name__)

Emit = Callable[["Event"], Awaitable[None]]
"""Publishes a session-scoped event (the router's, for one session)."""

QueueItem = tuple[str, Mapping[str, Any]]


@define(eq=False, kw_only=True)
class ActiveTurn(BackendTurn[QueueItem, TurnTranslator]):
    """A prompt's turn on `host` (its translator is made once the host named the turn)."""

    host: MuseHost
    cancel_sent: bool = False
    approvals: dict[str, Mapping[str, Any]] = field(factory=dict)
    decided: set[str] = field(factory=set)
    resolved: set[str] = field(factory=set)
    questions: set[str] = field(factory=set)


@define(eq=False)
class MuseSession:
    """What the runtime knows of one ACP session (= one Muse session, same id)."""

    session_id: str
    cwd: str
    mode: str = DEFAULT_MODE
    model: str | None = None
    mcp: dict[str, Any] = field(factory=dict)
    host: MuseHost | None = None
    active: ActiveTurn | None = None
    lock: anyio.Lock = field(factory=anyio.Lock)
    busy: int = 0
    last_used: float = 0.0
    """When the session was last in use (`time.monotonic()`): its idle host's release is timed from it."""
    stopping: anyio.Event | None = None
    """Set once its released host has stopped: the next host waits for that (one host per session)."""
    models: list[ConfigOptionValue] = field(factory=list)
    efforts: dict[str, tuple[list[ConfigOptionValue], str | None]] = field(factory=dict)
    default_model: str | None = None
    """The model `model/list` marks `isDefault` (recommended to a client of AIR's `recommendedValue`)."""
    """Per model: the reasoning-effort tiers `model/list` describes, and the model's default."""
    effort: str | None = None
    """The reasoning effort the user chose (sent with every `turn/start`); None: the host's default."""
    roots: tuple[str, ...] = ()
    """Workspace roots beside `cwd` (ACP `additionalDirectories`): MSP `workspaceRoots`."""
    needs_resume: bool = False
    lost: bool = False
    closed: bool = False
    mcp_noticed: bool = False
    window: int | None = None
    """The context window's size the host last reported (`session/contextUsage`)."""
    used: int | None = None
    """The tokens in context the host last reported (`session/contextUsage`)."""


async def ask(host: MuseHost, method: str, params: Mapping[str, Any], phase: Phase, *,
              command: bool = False, missing: str | None = None,
              mutation: bool = False) -> Mapping[str, Any]:
    """A request within a phase: a lost host and an error answer become that phase's failures."""
    try:
        if command:
            return await host.command(method, params)
        result = await host.call(method, params)
        return result if isinstance(result, Mapping) else {}
    except ConnectionClosed:
        raise PhaseFailed(host_lost(phase.value, submitted=False, mutation=mutation)) from None
    except RpcError as exc:
        if missing is not None and exc.code == SESSION_NOT_FOUND_CODE:
            raise SessionNotFound(missing) from None
        raise PhaseFailed(request_error_observation(exc.code, exc.message, exc.data, phase.value)) from None


async def apply_settings(host: MuseHost, state: MuseSession, served: Mapping[str, Any] | None, *,
                         force_mode: bool = False, force_model: bool = False) -> None:
    """Apply the approval mode and model the session should have, then verify them with `session/read`.

    `served` is the session as the host last described it (None: unknown, so only the forced
    setting is sent); verification always reads the session back.
    """
    wanted_mode = APPROVAL_MODES[state.mode]
    session_id = state.session_id
    if force_mode or (served is not None and served_mode(served) != wanted_mode):
        await ask(host, "session/setApprovalMode", {"sessionId": session_id, "mode": wanted_mode},
                  Phase.PREPARING, command=True)
    if state.model and (force_model or (served is not None and served.get("modelId") != state.model)):
        await ask(host, "session/setModel", {"sessionId": session_id, "model": {"modelId": state.model}},
                  Phase.PREPARING, command=True)
    read = await ask(host, "session/read", {"sessionId": session_id, "excludeItems": True},
                     Phase.PREPARING, missing=session_id)
    session = mapping(read.get("session"))
    if served_mode(session) != wanted_mode:
        raise PhaseFailed(settings_not_applied("approval mode", wanted_mode, served_mode(session),
                                               Phase.PREPARING.value))
    served_model = session.get("modelId")
    if state.model and served_model != state.model:
        raise PhaseFailed(settings_not_applied("model", state.model,
                                               served_model if isinstance(served_model, str) else None,
                                               Phase.PREPARING.value))
    if not state.model and isinstance(served_model, str) and served_model:
        state.model = served_model


async def mcp_config(host: MuseHost, state: MuseSession, emit: Emit) -> dict[str, Any]:
    """The session's MCP servers as MSP config, if the host granted `sessionMcp` (else a notice, once)."""
    if not state.mcp:
        return {}
    if "sessionMcp" in host.granted:
        return {"config": {"mcpServers": state.mcp}}
    if not state.mcp_noticed:
        state.mcp_noticed = True
        log.warning("the Muse Code host did not grant sessionMcp; MCP servers were not passed to it")
        await emit(Notice(
            f"{HOST_TITLE} did not accept the editor's MCP servers (no sessionMcp grant); "
            "the session runs without them.", severity="warning"))
    return {}

async def open_session(host: MuseHost, state: MuseSession, emit: Emit, *, restart: bool) -> Mapping[str, Any]:
    """`session/resume` of the session id; `session/start` when the host does not know it."""
    config = await mcp_config(host, state, emit)
    try:
        result = await ask(host, "session/resume",
                           {"sessionId": state.session_id, "excludeItems": True, **config},
                           Phase.PREPARING, command=True, missing=state.session_id)
    except SessionNotFound:
        params: dict[str, Any] = {"sessionId": state.session_id, "workspaceRoot": state.cwd,
                                  "approvalMode": APPROVAL_MODES[state.mode], **config}
        if state.roots:
            params["workspaceRoots"] = [state.cwd, *state.roots]
        if state.model:
            params["modelId"] = state.model
        result = await ask(host, "session/start", params, Phase.PREPARING, command=True)
        if restart:
            await emit(Notice(
                f"{HOST_TITLE} no longer had this session's history; it continues as a "
                "new session with the same id.", severity="warning"))
    return mapping(result.get("session"))
