"""How events whose wire form depends on the client become ACP updates: terminals, compaction,
titles.

A provider emits one neutral event (`events.Presented`); this module renders it for the client as
negotiated at `initialize` (`ClientFeatures`), following the reference adapters' conventions:
a client that declares `_meta.terminal_output` or `_meta.terminal_output_delta` sees a shell
command as a terminal (`_meta.terminal_info`, output chunks, `_meta.terminal_exit`), every other
client the provider's own rendering; compaction is a "Compact conversation" tool call for every
client (with `_meta.jetbrains.air.contextCompaction` for a client of the extension); a title is a
`session_info_update`. Knows nothing of providers or of the connection.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import attrs
from attrs import define, field

from acp_agent.backends.events import Compaction, Presented, SessionTitle, TerminalExited, TerminalOutput, TerminalStarted
from acp_agent.wire import acp
from acp_agent.wire.convert import UNSET
from acp_agent.wire.records import frozen

COMPACTION_TITLE = "Compact conversation"
MAX_TITLE_LENGTH = 256
CONTEXT_COMPACTION_META_VERSION = 1


@frozen
class ClientFeatures:
    """What the client declared it renders, beyond the failure extension."""

    terminal_output: bool = False
    """`_meta.terminal_output`: terminals with output chunks (Zed's convention)."""
    terminal_output_delta: bool = False
    """`_meta.terminal_output_delta`: terminals whose chunks the client appends."""
    elicitation_form: bool = False
    elicitation_url: bool = False
    notices: bool = False
    """`session.notices`: live `notice` updates."""

    @property
    def terminals(self) -> bool:
        return self.terminal_output or self.terminal_output_delta

    @classmethod
    def from_capabilities(cls, meta: Any, elicitation: Any, session: Any = None) -> ClientFeatures:
        """From `clientCapabilities._meta` (only `true` opts in), `.elicitation` and `.session`
        (an object opts in)."""
        meta = meta if isinstance(meta, Mapping) else {}
        elicitation = elicitation if isinstance(elicitation, Mapping) else {}
        session = session if isinstance(session, Mapping) else {}
        return cls(terminal_output=meta.get("terminal_output") is True,
                   terminal_output_delta=meta.get("terminal_output_delta") is True,
                   elicitation_form=isinstance(elicitation.get("form"), Mapping),
                   elicitation_url=isinstance(elicitation.get("url"), Mapping),
                   notices=isinstance(session.get("notices"), Mapping))


def session_title(name: str | None) -> str | None:
    """A backend's session name as a thread-list title: one line, at most 256 characters."""
    title = " ".join((name or "").split())
    if len(title) > MAX_TITLE_LENGTH:
        title = title[:MAX_TITLE_LENGTH - 1].rstrip() + "\u2026"
    return title or None


def now_iso() -> str:
    """The current time as ISO 8601 UTC with milliseconds (`updatedAt`)."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"


@define
class Presenter:
    """One session's rendering state: which terminals streamed, which compactions are open."""

    streamed: set[str] = field(factory=set)
    compactions: set[str] = field(factory=set)

    def render(self, event: Presented, features: ClientFeatures, capable: bool) -> list[acp.SessionUpdate]:
        if isinstance(event, SessionTitle):
            return [acp.SessionInfoUpdate(title=session_title(event.title), updated_at=event.updated_at or now_iso())]
        if isinstance(event, Compaction):
            return [self._compaction(event, capable)]
        if not features.terminals:
            return self._legacy(event)
        if isinstance(event, TerminalStarted):
            call = event.call
            info: dict[str, Any] = {"terminal_id": call.tool_call_id}
            if event.cwd:
                info["cwd"] = event.cwd
            meta = {**(call.meta if isinstance(call.meta, dict) else {}), "terminal_info": info}
            return [attrs.evolve(call, content=[acp.ToolTerminal(call.tool_call_id)], meta=meta)]
        if isinstance(event, TerminalOutput):
            if event.data:
                self.streamed.add(event.tool_call_id)
                return [_chunk(event.tool_call_id, event.data, features)]
            if event.legacy is None:
                return []
            rest = attrs.evolve(event.legacy, content=UNSET)  # the terminal shows the output
            return [rest] if rest != acp.ToolCallUpdate(rest.tool_call_id) else []
        terminal_id = event.tool_call_id
        updates: list[acp.SessionUpdate] = []
        if terminal_id not in self.streamed and event.output:
            updates.append(_chunk(terminal_id, event.output, features))
        self.streamed.discard(terminal_id)
        exit_meta = {"terminal_exit": {"terminal_id": terminal_id, "exit_code": event.exit_code, "signal": None}}
        updates.append(attrs.evolve(event.update, content=[acp.ToolTerminal(terminal_id)], raw_output=UNSET,
                                    meta=exit_meta))
        return updates

    @staticmethod
    def _legacy(event: TerminalStarted | TerminalOutput | TerminalExited) -> list[acp.SessionUpdate]:
        if isinstance(event, TerminalStarted):
            return [event.call]
        if isinstance(event, TerminalOutput):
            return [event.legacy] if event.legacy is not None else []
        return [event.update] if event.legacy else []

    def _compaction(self, event: Compaction, capable: bool) -> acp.SessionUpdate:
        facts: dict[str, Any] = {}
        for key, value in (("trigger", event.trigger), ("tokensBefore", event.tokens_before),
                           ("tokensAfter", event.tokens_after), ("error", event.error)):
            if value is not None:
                facts[key] = value
        meta = ({"jetbrains": {"air": {"contextCompaction": {"version": CONTEXT_COMPACTION_META_VERSION, **facts}}}}
                if capable else UNSET)
        content: list[acp.ToolCallContent] | Any = UNSET
        if event.status == "failed" and event.error:
            content = [acp.ToolContent(acp.TextContent(f"Compaction failed: {event.error}"))]
        raw_output = facts if facts and not capable else UNSET
        if event.compaction_id not in self.compactions:
            self.compactions.add(event.compaction_id)
            return acp.ToolCall(tool_call_id=event.compaction_id, title=COMPACTION_TITLE, kind="think",
                                status=event.status, content=content, raw_output=raw_output, meta=meta)
        return acp.ToolCallUpdate(tool_call_id=event.compaction_id, status=event.status, content=content,
                                  raw_output=raw_output, meta=meta)


def _chunk(terminal_id: str, data: str, features: ClientFeatures) -> acp.ToolCallUpdate:
    key = "terminal_output_delta" if features.terminal_output_delta else "terminal_output"
    return acp.ToolCallUpdate(tool_call_id=terminal_id, meta={key: {"terminal_id": terminal_id, "data": data}})


__all__ = ["COMPACTION_TITLE", "ClientFeatures", "Presenter", "now_iso", "session_title"]
