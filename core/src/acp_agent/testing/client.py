"""An in-process ACP client for tests: drives an `Agent` over memory byte streams like an editor.

Every frame the agent writes is kept (`frames`), session updates are collected (`updates`), and
permission requests are answered by a callable the test chooses.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from attrs import define, field

from acp_agent.agent import Agent, AgentSettings
from acp_agent.backends.contract import ProviderSpec
from acp_agent.backends.phases import Deadlines, PhaseClock
from acp_agent.failures.auth_status import KeyringStore
from acp_agent.failures.redaction import Redactor
from acp_agent.wire.rpc import Connection, Methods

CAPABLE_META: Mapping[str, Any] = {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure"]}}}


class MemoryByteStream(anyio.abc.ByteReceiveStream, anyio.abc.ByteSendStream):
    """One direction of an in-memory pipe, with an optional tap on every chunk sent."""

    def __init__(self, tap: Callable[[bytes], None] | None = None) -> None:
        self._send: MemoryObjectSendStream[bytes]
        self._receive: MemoryObjectReceiveStream[bytes]
        self._send, self._receive = anyio.create_memory_object_stream[bytes](1024)
        self._tap = tap

    async def send(self, item: bytes) -> None:
        if self._tap is not None:
            self._tap(item)
        await self._send.send(item)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise anyio.EndOfStream from None

    async def aclose(self) -> None:
        await self._send.aclose()

    def close_input(self) -> None:
        self._send.close()


@define
class InProcessClient:
    """The client side. `permission` maps a `session/request_permission` params to an option id (or None)."""

    connection: Connection
    to_agent: MemoryByteStream
    frames: list[dict[str, Any]] = field(factory=list)
    updates: list[dict[str, Any]] = field(factory=list)
    permission: Callable[[dict[str, Any]], str | None] = lambda params: params["options"][0]["optionId"]
    permission_requests: list[dict[str, Any]] = field(factory=list)
    agent: Agent | None = None
    update_hook: Callable[[dict[str, Any]], None] | None = None
    """Called with every `session/update` params as it arrives (tests wait on it instead of polling)."""
    """The agent on the other end, for tests that inspect its internal state."""
    _partial: bytes = b""

    def _tap(self, chunk: bytes) -> None:
        data = self._partial + chunk
        *lines, self._partial = data.split(b"\n")
        for line in lines:
            if line.strip():
                self.frames.append(json.loads(line))

    async def request(self, method: str, params: Any = None, *, timeout_s: float = 30) -> Any:
        return await self.connection.request(method, params, timeout_s=timeout_s)

    async def notify(self, method: str, params: Any = None) -> None:
        await self.connection.notify(method, params)

    async def initialize(self, *, capable: bool = False, meta: Mapping[str, Any] | None = None,
                         terminal_auth: bool = False) -> Any:
        client_meta = dict(meta or {})
        if capable:
            client_meta.update(CAPABLE_META)
        capabilities: dict[str, Any] = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
        if terminal_auth:
            capabilities["auth"] = {"terminal": True}
        if client_meta:
            capabilities["_meta"] = client_meta
        return await self.request("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities,
                                                 "clientInfo": {"name": "in-process-test", "version": "0"}})

    async def new_session(self, cwd: str) -> str:
        result = await self.request("session/new", {"cwd": cwd, "mcpServers": []})
        return str(result["sessionId"])

    async def prompt(self, session_id: str, text: str, *, timeout_s: float = 60) -> Any:
        return await self.request("session/prompt", {
            "sessionId": session_id, "prompt": [{"type": "text", "text": text}]}, timeout_s=timeout_s)

    def session_updates(self, session_id: str) -> list[dict[str, Any]]:
        return [update["update"] for update in self.updates if update.get("sessionId") == session_id]

    def failure_records(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """Every sessionFailure record the agent wrote, on either carrier, in order."""
        records = []
        for frame in self.frames:
            params = frame.get("params") if "method" in frame else frame.get("result")
            if not isinstance(params, dict):
                continue
            if session_id is not None and "method" in frame and params.get("sessionId") != session_id:
                continue
            holder = params.get("update", params) if "method" in frame else params
            record = (holder.get("_meta") or {}).get("jetbrains", {}).get("air", {}).get("sessionFailure")
            if record is not None:
                records.append(record)
        return records


def default_settings(spec: ProviderSpec, environ: Mapping[str, str] | None = None,
                     deadlines: Deadlines | None = None, keyring: Any = None) -> AgentSettings:
    env = dict(environ or {})
    return AgentSettings(
        provider=spec,
        environ=env,
        clock=PhaseClock(deadlines or Deadlines(), spec.title),
        redact=Redactor.from_environment(env),
        keyring=KeyringStore(keyring) if keyring is not None else None,
        epoch=uuid.uuid4().hex[:8],
    )


@asynccontextmanager
async def run_in_process(
    spec: ProviderSpec, *, settings: AgentSettings | None = None, environ: Mapping[str, str] | None = None,
    deadlines: Deadlines | None = None, keyring: Any = None,
) -> AsyncIterator[InProcessClient]:
    """Start an agent for `spec` in this event loop and yield a client connected to it."""
    agent = Agent(settings or default_settings(spec, environ, deadlines, keyring))
    client_holder: list[InProcessClient] = []
    to_client = MemoryByteStream(tap=lambda chunk: client_holder[0]._tap(chunk))  # noqa: PLW0108
    to_agent = MemoryByteStream()

    async def on_update(params: Any) -> None:
        client = client_holder[0]
        client.updates.append(params)
        if client.update_hook is not None:
            client.update_hook(params)

    async def on_permission(params: Any) -> Any:
        client = client_holder[0]
        client.permission_requests.append(params)
        choice = client.permission(params)
        if choice is None:
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": choice}}

    connection = Connection(to_client, to_agent, Methods(
        requests={"session/request_permission": on_permission}, notifications={"session/update": on_update},
        ordered=frozenset({"session/update"})))
    client = InProcessClient(connection, to_agent, agent=agent)
    client_holder.append(client)
    agent_done = anyio.Event()

    async def serve_agent() -> None:
        try:
            await agent.serve(to_agent, to_client)
        finally:
            agent_done.set()

    async with anyio.create_task_group() as task_group:
        task_group.start_soon(serve_agent)
        task_group.start_soon(connection.serve)
        try:
            yield client
        finally:
            to_agent.close_input()
            with anyio.move_on_after(10, shield=True):
                await agent_done.wait()
            task_group.cancel_scope.cancel()
