"""A test-only provider that plays a script of neutral events, turn by turn.

The script is JSON, from the file named by ACP_AGENT_SCRIPTED_SCRIPT (or handed in directly by
in-process tests). Each prompt consumes the next entry of "turns"; with no script left, the turn
echoes the prompt's text. Step forms are documented in `_play_step`.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread

from acp_agent import hookimpl
from acp_agent.backends.contract import (
    ProviderRuntime,
    ProviderSpec,
    RuntimeCapabilities,
    RuntimeContext,
    SessionChannel,
    SessionListing,
    SessionNotFound,
    SessionStart,
    TurnChannel,
    TurnFailed,
)
from acp_agent.backends.events import (
    AttemptBoundary,
    AuthConfirmed,
    HistoryFailure,
    Notice,
    RetryProgress,
    RuntimeReplaced,
    SessionFailure,
    TurnEnd,
    TurnUsage,
)
from acp_agent.backends.phases import Phase
from acp_agent.failures.protocol import FailureKind, FailureObservation
from acp_agent.wire.acp import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ConfigOption,
    ConfigOptionUpdate,
    ConfigOptionValue,
    ContentBlock,
    CurrentModeUpdate,
    McpServer,
    PermissionOption,
    SessionMode,
    SessionModeState,
    TextContent,
    ToolCall,
    ToolCallUpdate,
    UserMessageChunk,
)
from acp_agent.wire.convert import UNSET


def observation(spec: dict[str, Any]) -> FailureObservation:
    return FailureObservation(
        kind=FailureKind(spec.get("kind", "provider_error")),
        native_kind=spec.get("native_kind", spec.get("kind", "provider_error")),
        title=spec.get("title"),
        source=spec.get("source", "provider"),
        outcome=spec.get("outcome", "failed"),
        execution=spec.get("execution"),
        retryable=spec.get("retryable"),
        native_data=spec.get("native_data", {}),
    )


SIGNALS: dict[str, type[AttemptBoundary | RuntimeReplaced | AuthConfirmed]] = {
    "attempt_boundary": AttemptBoundary, "runtime_replaced": RuntimeReplaced, "auth_confirmed": AuthConfirmed}


class ScriptedRuntime(ProviderRuntime):
    def __init__(self, script: dict[str, Any], context: RuntimeContext, readers: anyio.abc.TaskGroup) -> None:
        self.readers = readers
        for title in script.get("startup_notices", []):  # found while the backend started
            context.router.keep_notice(Notice(title))
        """Where the runtime's "backend reader" tasks run (they emit between turns)."""
        self.after_prompt: list[tuple[str, list[dict[str, Any]]]] = []
        self.turns: list[list[dict[str, Any]]] = list(script.get("turns", []))
        self.script = script
        self.context = context
        self.sessions: dict[str, str] = {}
        self.cancelled: dict[str, anyio.Event] = {}
        self.cancel_calls: list[str] = []
        """Every `cancel` the core made, by session id (tests check that an early end reaches it)."""
        self.prompt_ends: list[str] = []
        """How each prompt ended: its stop reason, `failed`, or `forced` (cancelled by the core's scope)."""
        self.prompt_ended = anyio.Event()
        """Set when the first prompt is over."""
        self.counter = 0
        self.creation_channels: list[SessionChannel] = []
        self.mcp_servers: list[list[McpServer]] = []
        """The MCP servers each new/load/fork handed in, as the core parsed them."""
        self.settings_calls: list[tuple[str, ...]] = []
        """Every `set_mode` and `set_config_option` that reached the runtime."""
        self.model: str | None = None
        self.running: dict[str, TurnChannel] = {}
        self.steers: dict[str, list[str]] = {}
        """Every steered prompt's text that reached a running turn, by session id."""
        self.steered: dict[str, anyio.Event] = {}
        self.prompts: list[str] = []
        """Every prompt's text, in the order the turns started."""
        self.loading = 0
        self.most_loading = 0
        """Loads under way now, and the most at once (script `load_gate`: an event loads wait for)."""

    def _setup(self, session_id: str) -> SessionStart:
        """Script keys `modes` (ids, the first current) and `models` (values of the "model" option)."""
        modes = self.script.get("modes")
        models = self.script.get("models")
        return SessionStart(
            session_id,
            modes=SessionModeState(modes[0], [SessionMode(mode, mode.title()) for mode in modes]) if modes else None,
            config_options=self._model_options() if models else None,
        )

    def _model_options(self) -> list[ConfigOption]:
        models = self.script.get("models") or []
        current = self.model or models[0]
        return [ConfigOption("model", "Model", current, [ConfigOptionValue(model, model) for model in models])]

    async def set_mode(self, session_id: str, mode_id: str) -> None:
        self.settings_calls.append(("mode", session_id, mode_id))

    async def set_config_option(self, session_id: str, config_id: str, value: str) -> Sequence[ConfigOption]:
        self.settings_calls.append(("option", session_id, config_id, value))
        self.model = value
        if "models_after_set" in self.script:  # the runtime may change what it offers
            self.script["models"] = self.script.pop("models_after_set")
        return self._model_options()

    async def new_session(
        self, cwd: str, mcp_servers: Sequence[McpServer], channel: SessionChannel
    ) -> SessionStart:
        self.mcp_servers.append(list(mcp_servers))
        async with self.context.clock.phase(Phase.PREPARING):
            if self.script.get("hang_new_session"):
                await anyio.sleep_forever()
        self.counter += 1
        session_id = f"scripted-{self.counter}"
        self.sessions[session_id] = cwd
        self.creation_channels.append(channel)
        for notice in self.script.get("session_notices", []):
            await channel.emit(Notice(notice["title"], notice.get("details"), notice.get("legacy")))
        for index, title in enumerate(self.script.get("creation_burst", [])):
            # Alternately on the creation channel and by id through the router, as a backend
            # reader does for a session it already knows the id of.
            if index % 2:
                await self.context.router.emit(session_id, Notice(title))
            else:
                await channel.emit(Notice(title))
        return self._setup(session_id)

    async def load_session(
        self,
        session_id: str,
        cwd: str,
        mcp_servers: Sequence[McpServer],
        channel: SessionChannel,
        *,
        replay: bool,
    ) -> SessionStart:
        self.mcp_servers.append(list(mcp_servers))
        history = self.script.get("history", {}).get(session_id)
        if history is None:
            raise SessionNotFound(session_id)
        self.loading += 1
        self.most_loading = max(self.most_loading, self.loading)
        try:
            gate = self.script.get("load_gate")
            if gate is not None:
                await gate.wait()
        finally:
            self.loading -= 1
        self.sessions[session_id] = cwd
        for title in self.script.get("load_emits", []):
            await self.context.router.emit(session_id, Notice(title))  # by id, before the history
        if replay:
            for entry in history:
                if "user" in entry:
                    await channel.emit(UserMessageChunk(TextContent(entry["user"])))
                elif "agent" in entry:
                    await channel.emit(AgentMessageChunk(TextContent(entry["agent"])))
                elif "failure" in entry:
                    await channel.emit(
                        HistoryFailure(
                            observation(entry["failure"]),
                            entry["message_id"],
                            entry.get("user_message_id"),
                            active=entry.get("active", False),
                            legacy_updates=(
                                AgentMessageChunk(TextContent(entry["failure"].get("title", ""))),
                            ),
                        )
                    )
        return self._setup(session_id)

    async def fork_session(self, session_id: str, cwd: str, mcp_servers: Sequence[McpServer],
                           channel: SessionChannel) -> SessionStart:
        self.mcp_servers.append(list(mcp_servers))
        if session_id not in self.sessions:
            raise SessionNotFound(session_id)
        self.counter += 1
        forked = f"scripted-{self.counter}"
        self.sessions[forked] = cwd
        return self._setup(forked)

    async def list_sessions(self, cwd: str | None, cursor: str | None) -> SessionListing:
        from acp_agent.wire.acp import SessionInfo

        return SessionListing(
            [SessionInfo(session_id=sid, cwd=path) for sid, path in self.sessions.items()]
        )

    async def cancel(self, session_id: str) -> None:
        self.cancel_calls.append(session_id)
        event = self.cancelled.get(session_id)
        if event is not None:
            event.set()

    async def prompt(
        self, session_id: str, prompt: Sequence[ContentBlock], turn: TurnChannel
    ) -> TurnEnd:
        if session_id not in self.sessions:
            raise SessionNotFound(session_id)
        self.cancelled[session_id] = anyio.Event()
        self.steered[session_id] = anyio.Event()
        self.running[session_id] = turn
        self.prompts.append(_text(prompt))
        steps = (
            self.turns.pop(0)
            if self.turns
            else [
                {"text": " ".join(block.text for block in prompt if isinstance(block, TextContent))}
            ]
        )
        outcome = "failed"
        try:
            for step in steps:
                end = await self._play_step(session_id, step, turn)
                if end is not None:
                    outcome = end.stop_reason
                    return end
            outcome = "end_turn"
            return TurnEnd("end_turn")
        except anyio.get_cancelled_exc_class():
            outcome = "forced"
            raise
        finally:
            self.running.pop(session_id, None)
            self.prompt_ends.append(outcome)
            self.prompt_ended.set()
            for later in self.after_prompt:
                self.readers.start_soon(self._read_between_turns, *later)
            self.after_prompt.clear()

    async def _read_between_turns(self, session_id: str, events: list[dict[str, Any]]) -> None:
        for event in events:
            if "session_failure" in event:
                await self.context.router.emit(session_id, SessionFailure(observation(event["session_failure"])))
            else:
                await self.context.router.emit(session_id, Notice(event["notice"]))

    async def steer(self, session_id: str, prompt: Sequence[ContentBlock], turn: TurnChannel) -> bool:
        if self.running.get(session_id) is not turn:
            return False
        self.steers.setdefault(session_id, []).append(_text(prompt))
        self.steered[session_id].set()
        return True

    async def _play_step(
        self, session_id: str, step: dict[str, Any], turn: TurnChannel
    ) -> TurnEnd | None:
        """Steps: text, thought, deltas (count), retry (title, kind), notice (title, details, legacy),
        fail (observation), record_fail (observation, then keep going), session_failure (observation),
        offer_models (new values of the "model" option, announced with config_option_update),
        switch_mode (a mode the backend switched to itself, announced with current_mode_update),
        stop (stop reason), wait_cancel, wait_steer (held until steered, then `steered: <text>`),
        wait_fifo (path: held until a line is written to that named pipe), permission (title),
        tool (title), hang_submit, crash,
        signal (attempt_boundary, runtime_replaced or auth_confirmed: recovery evidence),
        between_turns (events a reader task emits through the router once the prompt returned)."""
        if "text" in step:
            await turn.emit(AgentMessageChunk(TextContent(step["text"]), message_id=step.get("message_id", UNSET)))
        elif "thought" in step:
            await turn.emit(AgentThoughtChunk(TextContent(step["thought"]), message_id=step.get("message_id", UNSET)))
        elif "deltas" in step:
            for index in range(int(step["deltas"])):
                await turn.emit(AgentMessageChunk(TextContent(f"{index} ")))
        elif "retry" in step:
            await turn.emit(
                RetryProgress(step["retry"], FailureKind(step.get("kind", "provider_error")))
            )
        elif "notice" in step:
            await turn.emit(Notice(step["notice"], step.get("details"), step.get("legacy")))
        elif "usage" in step:
            await turn.emit(TurnUsage(**step["usage"]))
        elif "fail" in step:
            raise TurnFailed(observation(step["fail"]))
        elif "record_fail" in step:
            turn.record_failure(observation(step["record_fail"]))
        elif "session_failure" in step:
            await turn.emit(SessionFailure(observation(step["session_failure"])))
        elif "stop" in step:
            return TurnEnd(step["stop"])
        elif "wait_steer" in step:
            # Held until a steer arrives (or a cancel); the steered text then shows in this turn.
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as group:
                    async def cancelled() -> None:
                        await self.cancelled[session_id].wait()
                        scope.cancel()
                    group.start_soon(cancelled)
                    await self.steered[session_id].wait()
                    group.cancel_scope.cancel()
            if scope.cancelled_caught:
                return TurnEnd("cancelled")
            for text in self.steers.get(session_id, []):
                await turn.emit(AgentMessageChunk(TextContent(f"steered: {text}")))
        elif "wait_fifo" in step:
            # Held until the test writes a line to the named pipe (a subprocess test's release).
            path = step["wait_fifo"]
            await anyio.to_thread.run_sync(_read_line, path, abandon_on_cancel=True)
        elif "wait_cancel" in step:
            await self.cancelled[session_id].wait()
            return TurnEnd("cancelled")
        elif "tool" in step:
            await turn.emit(
                ToolCall(
                    tool_call_id=step.get("id", "tool-1"),
                    title=step["tool"],
                    kind="execute",
                    status="pending",
                )
            )
        elif "permission" in step:
            options = [
                PermissionOption("allow", "Allow once", "allow_once"),
                PermissionOption("reject", "Reject", "reject_once"),
            ]
            choice = await turn.request_permission(
                ToolCallUpdate("tool-1", title=step["permission"]), options
            )
            await turn.emit(AgentMessageChunk(TextContent(f"permission: {choice}")))
        elif "between_turns" in step:
            # A reader's events after this prompt: awaited one by one through the router, by id.
            self.after_prompt.append((session_id, step["between_turns"]))
        elif "late_notice" in step:
            await self.creation_channels[0].emit(Notice(step["late_notice"]))
        elif "offer_models" in step:
            self.script["models"] = step["offer_models"]
            await turn.emit(ConfigOptionUpdate(self._model_options()))
        elif "switch_mode" in step:
            await turn.emit(CurrentModeUpdate(current_mode_id=step["switch_mode"]))
        elif "signal" in step:
            await turn.emit(SIGNALS[step["signal"]]())
        elif "adopt" in step:
            turn.adopt_turn_id(step["adopt"])
        elif "hang_submit" in step:
            async with self.context.clock.phase(Phase.SUBMITTING):
                await anyio.sleep_forever()
        elif "crash" in step:
            raise RuntimeError(
                "secret crash detail " + self.context.environ.get("SCRIPTED_API_KEY", "")
            )
        return None


def _read_line(path: str) -> str:
    with open(path, encoding="utf-8") as pipe:
        return pipe.readline()


def _text(prompt: Sequence[ContentBlock]) -> str:
    return " ".join(block.text for block in prompt if isinstance(block, TextContent))


def load_script() -> dict[str, Any]:
    path = os.environ.get("ACP_AGENT_SCRIPTED_SCRIPT")
    if not path:
        return {}
    with open(path, encoding="utf-8") as handle:
        loaded: dict[str, Any] = json.load(handle)
        return loaded


def make_spec(script: dict[str, Any] | None = None) -> ProviderSpec:
    """The scripted provider; in-process tests pass the script directly."""
    from acp_agent.backends.contract import CredentialSpec

    script = script if script is not None else load_script()

    @asynccontextmanager
    async def open_runtime(context: RuntimeContext) -> AsyncIterator[ProviderRuntime]:
        async with anyio.create_task_group() as readers:
            yield ScriptedRuntime(script, context, readers)
            readers.cancel_scope.cancel()

    return ProviderSpec(
        name="scripted",
        title="Scripted",
        open_runtime=open_runtime,
        credentials=CredentialSpec(
            env_vars=("SCRIPTED_API_KEY",), keyring_env_var="SCRIPTED_API_KEY"
        ),
        capabilities=RuntimeCapabilities(
            load_session=True,
            list_sessions=True,
            resume_session=True,
            fork_session=True,
            image=True,
            embedded_context=True,
            steering=bool(script.get("steering")),
        ),
    )


@hookimpl
def acp_agent_providers() -> list[ProviderSpec]:
    return [make_spec()]
