"""Stored sessions: a transcript checked before it is read, replayed while the CLI starts
resuming it, forked, deleted and listed. claude-agent-sdk is imported only here and in `store`,
and only where the store's own reading cannot answer."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping
from contextlib import aclosing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.from_thread
import anyio.to_thread

from acp_agent.provider import (
    UNSET,
    Event,
    MessageNotFound,
    Phase,
    PhaseClock,
    SessionChannel,
    SessionInfo,
    SessionListing,
    SessionNotFound,
    SubagentLaunch,
    ToolCallUpdate,
    UnsafeFile,
    regular_file_stat,
)
from acp_agent_claude import history, store, subagent_history
from acp_agent_claude.clis import LiveCLIs
from acp_agent_claude.session import PROVIDER, ClaudeSession

log = logging.getLogger(__name__)

PAGE_SIZE = 50


class Children:
    """The subagents of a transcript being replayed (`acp_agent_claude.subagent_history`), read the
    first time a launch's result comes (a session without subagents reads nothing more)."""

    def __init__(self, transcript: Path, session: ClaudeSession, recogniser: Any) -> None:
        self.directory = transcript.parent / session.session_id / "subagents"
        self.cwd, self.recogniser = session.cwd, recogniser
        self.found: dict[str, tuple[str, Any]] | None = None

    async def replay(self, launch_id: str, inputs: Mapping[str, Mapping[str, Any]]) -> list[Event]:
        if self.found is None:
            self.found = await anyio.to_thread.run_sync(subagent_history.launches, self.directory)
        known = self.found.pop(launch_id, None) if self.found is not None else None
        if known is None:
            return []
        agent_id, meta = known
        return await anyio.to_thread.run_sync(subagent_history.replay, self.directory, agent_id, meta,
                                              inputs.get(launch_id, {}), launch_id, self.cwd, self.recogniser)


class Transcripts:
    """The store's side of opening sessions; `clis` starts the CLI that resumes one."""

    def __init__(self, clis: LiveCLIs) -> None:
        self._clis = clis

    @property
    def _clock(self) -> PhaseClock:
        return self._clis.context.clock

    async def _read(self, function: Any, *args: Any, label: str = "claude transcript", **kwargs: Any) -> Any:
        return await store.read(self._clock, function, *args, label=label, **kwargs)

    async def check(self, session_id: str, directory: str) -> None:
        """A stored transcript that is not a regular file (a FIFO, a link to a device) is no
        session: the SDK's reader would block on it. A regular file where the CLI writes it ends
        the check at once, without the store's search (which imports claude-agent-sdk)."""
        if await self._read(store.written_transcript, session_id, directory, label="claude store") is not None:
            return
        try:
            await self._read(store.check_transcript, session_id, directory, label="claude store")
        except UnsafeFile:
            raise SessionNotFound(session_id) from None

    async def found(self, session_id: str, directory: str) -> bool:
        """Whether the session has a transcript for `directory`: where the CLI writes it, or by
        claude-agent-sdk's search (its worktrees too)."""
        return (await self._read(store.written_transcript, session_id, directory) is not None
                or await store.stored(self._clock, session_id, directory))

    async def stored(self, session: ClaudeSession) -> bool:
        """Whether the CLI wrote this session's transcript (a CLI killed early never did)."""
        return await store.stored(self._clock, session.session_id, session.cwd)

    async def replay_and_resume(self, session: ClaudeSession, channel: SessionChannel, *, replay: bool,
                                read_mode: bool) -> None:
        """Replay the transcript while the CLI starts resuming it. It is read once, in a worker
        thread, each batch sent on as it comes under a deadline on progress (`PhaseClock.paced`);
        the stored permission mode comes from the same pass, and the CLI waits for it only before
        its settings are applied. Either side failing stops the other."""
        mode_known = anyio.Event()
        failures: list[BaseException] = []
        async with anyio.create_task_group() as tg:
            async def resume() -> None:
                try:
                    await self._clis.connect(session, resume=True, mode_known=mode_known)
                except Exception as exc:
                    failures.append(exc)
                    tg.cancel_scope.cancel()

            tg.start_soon(resume)
            try:
                if replay or read_mode:
                    mode = await self._stream(session, channel if replay else None)
                    session.resumed_mode = mode if read_mode else None
            except Exception as exc:
                failures.append(exc)
                tg.cancel_scope.cancel()
            mode_known.set()
        if failures:
            raise failures[0]

    def _recogniser(self) -> Any:
        return functools.partial(self._clis.context.hooks.recognise_history, PROVIDER)

    async def _stream(self, session: ClaudeSession, channel: SessionChannel | None) -> str | None:
        """Send the transcript's replay to `channel` (None: only read the mode); its stored mode."""
        path: Path | None = await self._read(store.find_transcript, session.session_id, session.cwd)
        if path is None:  # none found by the store's search: the SDK's whole-file reader decides
            return await self._replay_all(session, channel)
        reader = history.TranscriptReader(entries=channel is not None)
        replayer = history.Replayer(session.cwd, self._recogniser())
        send, receive = anyio.create_memory_object_stream[list[dict[str, Any]]](4)

        def read() -> None:
            def deliver(batch: list[dict[str, Any]]) -> None:
                anyio.from_thread.run(send.send, batch)

            with path.open("rb") as handle:
                reader.read(handle, deliver)

        async def produce() -> None:
            async with send:
                try:
                    await anyio.to_thread.run_sync(read, abandon_on_cancel=True)
                except OSError as exc:  # gone or unreadable: what was read is the replay (as the SDK's)
                    log.warning("could not read the transcript of session %s: %s", session.session_id,
                                type(exc).__name__)

        failures: list[Exception] = []
        async with anyio.create_task_group() as tg, receive:
            tg.start_soon(produce)
            try:
                await self._replay_batches(receive, channel, replayer, Children(path, session, self._recogniser()))
            except Exception as exc:  # raised below, not as a task group's exception group
                failures.append(exc)
                tg.cancel_scope.cancel()
        if failures:
            raise failures[0]
        return reader.mode

    async def _replay_batches(self, receive: anyio.abc.ObjectReceiveStream[list[dict[str, Any]]],
                              channel: SessionChannel | None, replayer: history.Replayer,
                              children: Children | None = None) -> None:
        batches = self._clock.paced(Phase.READING, receive, label="claude transcript")
        async with aclosing(batches):
            async for batch in batches:
                if channel is None:
                    continue
                for entry in batch:
                    for event in replayer.feed(entry):
                        await channel.emit(event)
                        if children is not None and isinstance(event, SubagentLaunch) and isinstance(
                                event.event, ToolCallUpdate):  # the launch's result: its subagent's history
                            for child in await children.replay(event.tool_call_id, replayer.inputs):
                                await channel.emit(child)
        if channel is not None:
            for event in replayer.finish():
                await channel.emit(event)

    async def _replay_all(self, session: ClaudeSession, channel: SessionChannel | None) -> str | None:
        from claude_agent_sdk import get_session_messages

        if channel is not None:
            messages = await self._read(get_session_messages, session.session_id, directory=session.cwd)
            entries = [{"type": m.type, "uuid": m.uuid, "sessionId": m.session_id, "message": m.message}
                       for m in messages]
            for event in history.replay(entries, session.session_id, session.cwd, self._recogniser()):
                await channel.emit(event)
        return None

    async def fork(self, session_id: str, directory: str, at: str | None = None) -> str:
        """A copy of the stored transcript under a new id (claude-agent-sdk's `fork_session`, as
        claude-agent-acp forks), up to and including the message `at` (an API message id or an
        entry's uuid; `MessageNotFound` for one it does not hold); the source stays as it was.
        The new id."""
        from claude_agent_sdk import fork_session

        await self.check(session_id, directory)
        up_to = await self._fork_point(session_id, directory, at) if at is not None else None
        try:
            forked = await self._read(fork_session, session_id, directory=directory, up_to_message_id=up_to)
        except (FileNotFoundError, ValueError):
            raise SessionNotFound(session_id) from None
        return str(forked.session_id)

    async def _fork_point(self, session_id: str, directory: str, at: str) -> str:
        def find() -> str | None:
            path = store.find_transcript(session_id, directory)
            if path is None:
                raise SessionNotFound(session_id)
            with path.open("rb") as handle:
                return history.fork_point(handle, at)

        found: str | None = await self._read(find)
        if found is None:
            raise MessageNotFound(at)
        return found

    async def rename(self, session_id: str, title: str, directory: str | None) -> bool:
        """Append `{"type": "custom-title", ...}` to the stored transcript, the line
        claude-agent-sdk's `rename_session` appends (the store's listing reads the last one);
        False when there is none. The project's directory is searched first, then every one."""
        line = json.dumps({"type": "custom-title", "customTitle": title, "sessionId": session_id},
                          separators=(",", ":")) + "\n"

        def append() -> bool:
            path = (store.find_transcript(session_id, directory) if directory is not None else None) \
                or store.transcript_path(session_id, None)
            if path is None:
                return False
            regular_file_stat(str(path))  # a FIFO or device is no transcript: never opened
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(line)
            return True

        try:
            return bool(await self._read(append, label="claude store"))
        except (UnsafeFile, FileNotFoundError):
            return False

    async def delete(self, session_id: str) -> bool:
        """Remove the stored transcript (and its subagents' transcripts) as claude-agent-sdk's
        `delete_session` does; False when there is none."""
        from claude_agent_sdk import delete_session

        try:
            await self._read(delete_session, session_id)
        except (FileNotFoundError, ValueError):
            return False
        return True

    async def listing(self, cwd: str | None, cursor: str | None) -> SessionListing:
        import claude_agent_sdk  # noqa: F401 (a slow import: before the reading deadline starts)

        offset = int(cursor) if cursor and cursor.isdigit() else 0
        found = await self._read(store.list_sessions, cwd, limit=PAGE_SIZE + 1, offset=offset,
                                 label="claude session list")
        infos = [SessionInfo(
            session_id=info.session_id, cwd=info.cwd or cwd or "",
            title=info.custom_title or info.summary or UNSET,
            updated_at=datetime.fromtimestamp(info.last_modified / 1000, UTC).isoformat().replace("+00:00", "Z")
            if info.last_modified else UNSET) for info in found[:PAGE_SIZE] if info.cwd or cwd]
        return SessionListing(infos, str(offset + PAGE_SIZE) if len(found) > PAGE_SIZE else None)
