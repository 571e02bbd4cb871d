"""What the Codex runtime keeps per session (an app-server thread) and per running turn, and the
thread requests whose answers it only translates: failures into phase failures, pages of stored
turns, listings, the user's choices carried across close, resume and fork.
"""

from __future__ import annotations

import contextlib
import glob
from collections.abc import AsyncGenerator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import anyio
from attrs import define, evolve, field

from acp_agent.provider import (
    BackendTurn,
    ConnectionClosed,
    FailureObservation,
    McpServer,
    McpServerStdio,
    Notice,
    Phase,
    PhaseFailed,
    RpcError,
    SessionInfo,
    SessionListing,
    SessionNotFound,
    mcp_server_config,
)
from acp_agent_codex import settings
from acp_agent_codex.appserver import AppServer
from acp_agent_codex.classify import rpc_error_observation, transport_lost
from acp_agent_codex.translate import TurnTranslator

LIST_PAGE: Final = 50
TURNS_PAGE: Final = 100
RESUME_BYTES: Final = 8 << 20
"""A rollout this large may take the whole read budget to resume; a larger one gets a budget as
many times longer (`rollout_size`)."""
NOT_FOUND_MARKERS: Final = ("no rollout found", "invalid session id", "invalid thread id", "not found")
"""What app-server's error says when it has no such thread (or no rollout for it)."""


@define(eq=False)
class Barrier:
    """Queued behind a turn's notifications; set once the prompt has processed everything before it."""

    reached: anyio.Event = field(factory=anyio.Event)


QueueItem = tuple[str, Mapping[str, Any]] | Notice | Barrier


@define(eq=False, kw_only=True)
class ActiveTurn(BackendTurn[QueueItem, TurnTranslator]):
    """A prompt's turn on the app-server of `generation` (its `turn_id` is app-server's)."""

    generation: int


def tool_items(active: ActiveTurn) -> Mapping[str, Any]:
    """The turn's items so far (the tool calls an approval or a question belongs to)."""
    return active.translator.items if active.translator is not None else {}


@define(eq=False)
class ThreadState:
    """What the runtime knows of one session (an app-server thread)."""

    thread_id: str
    cwd: str
    mcp_config: dict[str, Any]
    generation: int
    mode: str
    choices: settings.Choices
    active: ActiveTurn | None = None
    roots: tuple[str, ...] = ()
    """The workspace roots beside `cwd` (ACP `additionalDirectories`): app-server's runtime roots."""
    instructions: str | None = None
    """AIR's `customInstructions`: the thread's `developerInstructions` (each start, resume, fork)."""
    usage: Mapping[str, Any] | None = None
    """The last `thread/tokenUsage/updated`, for `/status`."""
    mode_dirty: bool = False
    mode_explicit: bool = False
    orphaned: bool = False
    """A prompt ended before app-server acknowledged its turn: interrupt that turn when it shows up."""
    titled: bool = True
    """The thread has a name, or its title is being (or was) generated: generate none (again)."""
    ran: bool = True
    """A turn was submitted: app-server has a rollout to resume. One that never ran a turn has
    none, and is started afresh on a new app-server."""
    codex_id: str = ""
    """The app-server thread (`thread_id` is the ACP session id): another one once the session was
    started afresh on a new app-server."""

    def __attrs_post_init__(self) -> None:
        self.codex_id = self.codex_id or self.thread_id




# --- the runtime ----------------------------------------------------------------------------------


def mcp_config(servers: Sequence[McpServer]) -> dict[str, Any]:
    """ACP `mcpServers` as app-server config overrides (`mcp_servers.<name>`, added to the user's own)."""

    def entry(server: McpServer, pairs: dict[str, str]) -> dict[str, Any]:
        if isinstance(server, McpServerStdio):
            return {"command": server.command, "args": list(server.args), **({"env": pairs} if pairs else {})}
        return {"url": server.url, **({"http_headers": pairs} if pairs else {})}

    return mcp_server_config(servers, entry, lambda name: f"mcp_servers.{name}")


def session_info(thread: Mapping[str, Any]) -> SessionInfo | None:
    thread_id, cwd = thread.get("id"), thread.get("cwd")
    if not isinstance(thread_id, str) or not isinstance(cwd, str):
        return None
    title = thread.get("name") or thread.get("preview")
    updated = thread.get("updatedAt")
    return SessionInfo(
        session_id=thread_id,
        cwd=cwd,
        title=title.strip().splitlines()[0][:120] if isinstance(title, str) and title.strip() else None,
        updated_at=(datetime.fromtimestamp(updated, UTC).isoformat().replace("+00:00", "Z")
                    if isinstance(updated, int | float) else None),
    )


def text_of(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def possibly_applied(observation: FailureObservation) -> FailureObservation:
    """A fork whose answer was lost may have been made."""
    return evolve(observation, mutation_possibly_applied=True)


def rollout_size(home: str, thread_id: str) -> int:
    """The size of the thread's rollout (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*-<id>.jsonl`),
    0 when it is not there (codex may keep it elsewhere: the budget is then the phase's own)."""
    for path in Path(home, "sessions").glob(f"*/*/*/rollout-*-{glob.escape(thread_id)}.jsonl"):
        with contextlib.suppress(OSError):
            return path.stat().st_size
    return 0


def not_found(exc: RpcError) -> bool:
    """Whether app-server's error says it has no such thread (or no rollout for it)."""
    return any(marker in exc.message.lower() for marker in NOT_FOUND_MARKERS)


async def call_in(server: AppServer, method: str, params: Any, phase: Phase, *,
                  missing: str | None = None) -> Any:
    """A request made in `phase` that submits nothing: a lost app-server and an error answer
    become that phase's failures; with `missing`, a thread app-server does not have is
    `SessionNotFound(missing)`."""
    try:
        return await server.call(method, params)
    except ConnectionClosed:
        raise PhaseFailed(transport_lost(phase.value, submitted=False)) from None
    except RpcError as exc:
        if missing is not None and not_found(exc):
            raise SessionNotFound(missing) from None
        raise PhaseFailed(rpc_error_observation(exc.code, exc.message, phase.value)) from None


def open_params(thread_id: str, cwd: str, config: Mapping[str, Any], roots: Sequence[str],
                policy: Mapping[str, str] | None, instructions: str | None = None) -> dict[str, Any]:
    """`thread/resume` and `thread/fork` fields: the roots are the complete list (ACP): none
    named means only `cwd`, whatever was stored. `instructions` (AIR's `customInstructions`) are
    the thread's developer instructions, as codex-acp starts a thread with them."""
    params: dict[str, Any] = {"threadId": thread_id, "cwd": cwd, "excludeTurns": True,
                              "runtimeWorkspaceRoots": [cwd, *roots]}
    if instructions:
        params["developerInstructions"] = instructions
    if policy is not None:
        params.update(policy)
    if config:
        params["config"] = dict(config)
    return params


async def pages(server: AppServer, thread_id: str) -> AsyncGenerator[tuple[list[Any], bool]]:
    """The thread's stored turns, a page at a time, and whether the page is the last."""
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"threadId": thread_id, "itemsView": "full", "sortDirection": "asc",
                                  "limit": TURNS_PAGE}
        if cursor:
            params["cursor"] = cursor
        page = await call_in(server, "thread/turns/list", params, Phase.READING)
        cursor = page.get("nextCursor")
        last = not isinstance(cursor, str) or not cursor
        yield list(page.get("data") or []), last
        if last:
            return


async def turn_holding(server: AppServer, thread_id: str, item_id: str) -> str | None:
    """The id of the stored turn that holds the item `item_id` (a message: its chunks' message
    id), None when no turn does."""
    async with contextlib.aclosing(pages(server, thread_id)) as stored:
        async for turns, _ in stored:
            for turn in turns:
                if not isinstance(turn, Mapping):
                    continue
                held = (item.get("id") for item in turn.get("items") or [] if isinstance(item, Mapping))
                if item_id in held and isinstance(turn.get("id"), str):
                    return str(turn["id"])
    return None


def list_params(cwd: str | None, cursor: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {"limit": LIST_PAGE, "sortKey": "updated_at"}
    if cwd:
        params["cwd"] = cwd
    if cursor:
        params["cursor"] = cursor
    return params


def listing(result: Mapping[str, Any]) -> SessionListing:
    """`thread/list`'s answer as a `session/list` page."""
    sessions = [info for info in (session_info(t) for t in result.get("data") or [] if isinstance(t, Mapping))
                if info is not None]
    next_cursor = result.get("nextCursor")
    return SessionListing(sessions, next_cursor if isinstance(next_cursor, str) and next_cursor else None)
