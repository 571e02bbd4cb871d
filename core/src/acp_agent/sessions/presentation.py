"""How events whose wire form depends on the client become ACP updates: terminals, compaction,
titles.

A provider emits one neutral event (`events.Presented`); this module renders it for the client as
negotiated at `initialize` (`ClientFeatures`), following the reference adapters' conventions:
a client that declares `_meta.terminal_output` or `_meta.terminal_output_delta` sees a shell
command as a terminal (`_meta.terminal_info`, output chunks, `_meta.terminal_exit`), every other
client the provider's own rendering; compaction is a "Compact conversation" tool call for every
client (with `_meta.jetbrains.air.contextCompaction` for a client of the extension); a title is a
`session_info_update`. A client that declares `session.compaction` gets ACP's
`compaction_update` (`in_progress`, then exactly one terminal status, with the summary where the
backend has it) and `compaction_summary_chunk` instead of the tool call; a compaction still open
when its turn ends is `cancelled`. Knows nothing of providers or of the connection.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import attrs
from attrs import define, field

from acp_agent.backends.events import (
    Compaction,
    CompactionSummaryChunk,
    GoalSnapshot,
    Presented,
    SessionTitle,
    TerminalExited,
    TerminalOutput,
    TerminalStarted,
)
from acp_agent.wire import acp
from acp_agent.wire.convert import UNSET
from acp_agent.wire.records import frozen

COMPACTION_TITLE = "Compact conversation"
MAX_TITLE_LENGTH = 256
CONTEXT_COMPACTION_META_VERSION = 1
LOAD_REPLAY_END = "loadReplayEnd"
TRIGGERS = {"auto": "automatic", "automatic": "automatic", "manual": "manual", "idle": "idle"}
"""A backend's compaction trigger as AIR's `contextCompaction.trigger` names it."""


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
    compaction: bool = False
    """`session.compaction`: `compaction_update` and `compaction_summary_chunk`."""
    boolean_options: bool = False
    """`session.configOptions.boolean`: on/off options as booleans (`acp_agent.sessions.switches`)."""
    air: frozenset[str] = frozenset()
    """The AIR capabilities the client lists in `_meta.jetbrains.air.capabilities`."""

    @property
    def load_replay_end(self) -> bool:
        """AIR's `loadReplayEnd`: a `session_info_update` marks the end of a `session/load`
        replay."""
        return LOAD_REPLAY_END in self.air

    @property
    def file_change_report(self) -> bool:
        """AIR's `agentFileChangeReport`: a prompt may ask for the files its turn changed."""
        return "agentFileChangeReport" in self.air

    @property
    def diff_patch(self) -> bool:
        """AIR's `diffPatch`: edit diffs as exact git patches (`acp_agent.sessions.patches`)."""
        return "diffPatch" in self.air

    @property
    def recommended_value(self) -> bool:
        """AIR's `recommendedValue`: config options name the value the backend recommends."""
        return "recommendedValue" in self.air

    @property
    def goal(self) -> bool:
        """AIR's `goal`: `_session/goal` and the goal snapshot (`_meta.jetbrains.air.goal`)."""
        return "goal" in self.air

    @property
    def codex_hooks(self) -> bool:
        """AIR's `codexHooks`: `_codex/hooks/list` and `_codex/hooks/trust`."""
        return "codexHooks" in self.air

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
                   notices=isinstance(session.get("notices"), Mapping),
                   compaction=isinstance(session.get("compaction"), Mapping),
                   boolean_options=isinstance(_mapping(session.get("configOptions")).get("boolean"), Mapping),
                   air=frozenset(name for name in _air_capabilities(meta) if isinstance(name, str)))


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _air_capabilities(meta: Mapping[str, Any]) -> list[Any]:
    """The capabilities an AIR client lists in `_meta.jetbrains.air.capabilities`."""
    listed = _mapping(_mapping(meta.get("jetbrains")).get("air")).get("capabilities")
    return listed if isinstance(listed, list) else []


def replay_end() -> acp.SessionInfoUpdate:
    """The update after a `session/load` replay for a client of AIR's `loadReplayEnd` (no title or
    time: they would clear the client's)."""
    return acp.SessionInfoUpdate(meta={"jetbrains": {"air": {"version": 1, LOAD_REPLAY_END: True}}})


def client_title(title: str) -> str:
    """A title a client sets (`session/set_title`): white space folded; -32602 when it is empty or
    longer than a thread list shows."""
    from acp_agent.wire.rpc import INVALID_PARAMS, RpcError

    folded = " ".join(title.split())
    if not folded:
        raise RpcError(INVALID_PARAMS, "The title is empty", {"field": "title"})
    if len(folded) > MAX_TITLE_LENGTH:
        raise RpcError(INVALID_PARAMS, f"The title is longer than {MAX_TITLE_LENGTH} characters", {"field": "title"})
    return folded


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
    titled: bool = False
    title: str | None = None
    """The title last published."""
    open_compactions: dict[str, str] = field(factory=dict)
    """`session.compaction` clients: the compactions opened and not ended, with the summary
    text streamed for each."""
    ended_compactions: dict[str, str] = field(factory=dict)
    """`session.compaction` clients: the terminal status each ended compaction was sent with."""
    goal: Any = UNSET
    """The goal snapshot last published (UNSET: none yet; None: cleared)."""

    def render(self, event: Presented, features: ClientFeatures, capable: bool) -> list[acp.SessionUpdate]:
        if isinstance(event, GoalSnapshot):
            return self._goal(event.goal) if features.goal else []
        if isinstance(event, SessionTitle):
            title = session_title(event.title)
            if self.titled and title == self.title:
                return []  # the same name again (a rename the backend also announces)
            self.titled, self.title = True, title
            return [acp.SessionInfoUpdate(title=title, updated_at=event.updated_at or now_iso())]
        if isinstance(event, CompactionSummaryChunk):
            if not features.compaction or event.compaction_id not in self.open_compactions or not event.text:
                return []
            self.open_compactions[event.compaction_id] += event.text
            return [acp.CompactionSummaryChunk(event.compaction_id, acp.TextContent(event.text))]
        if isinstance(event, Compaction):
            if features.compaction:
                return self._compaction_update(event, capable)
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

    def _goal(self, goal: Mapping[str, Any] | None) -> list[acp.SessionUpdate]:
        """As codex-acp: a report that changes neither objective, status, budget nor creation
        (usage only, after each goal turn) is not sent again."""
        if self.goal is not UNSET and _same_goal(self.goal, goal):
            return []
        self.goal = None if goal is None else dict(goal)
        return [acp.SessionInfoUpdate(meta={"jetbrains": {"air": {"version": 1, "goal": self.goal}}})]

    @staticmethod
    def _legacy(event: TerminalStarted | TerminalOutput | TerminalExited) -> list[acp.SessionUpdate]:
        if isinstance(event, TerminalStarted):
            return [event.call]
        if isinstance(event, TerminalOutput):
            return [event.legacy] if event.legacy is not None else []
        return [event.update] if event.legacy else []

    def turn_ended(self, features: ClientFeatures) -> list[acp.SessionUpdate]:
        """A compaction its turn left open is `cancelled` (`session.compaction` clients)."""
        if not features.compaction:
            return []
        ended: list[acp.SessionUpdate] = [acp.CompactionUpdate(compaction_id, "cancelled")
                                          for compaction_id in self.open_compactions]
        self.compactions.update(self.open_compactions)
        self.open_compactions.clear()
        return ended

    def _compaction_update(self, event: Compaction, capable: bool) -> list[acp.SessionUpdate]:
        compaction_id = event.compaction_id
        updates: list[acp.SessionUpdate] = []
        if compaction_id in self.compactions and compaction_id not in self.open_compactions:
            # Ended already: exactly one terminal status. A later report of it with facts (Claude's
            # boundary after its result) patches AIR's facts in, as claude-agent-acp does.
            facts = _compaction_facts(event)
            facts.pop("error", None)
            if not capable or not facts or self.ended_compactions.get(compaction_id) != event.status:
                return []
            return [acp.CompactionUpdate(compaction_id, event.status, meta=_air_compaction(facts))]
        if compaction_id not in self.compactions:
            self.compactions.add(compaction_id)
            self.open_compactions[compaction_id] = ""
            updates.append(acp.CompactionUpdate(compaction_id, "in_progress", meta=_air_compaction({})
                                                if capable else UNSET))
        if event.status == "in_progress":
            return updates
        streamed = self.open_compactions.pop(compaction_id)
        self.ended_compactions[compaction_id] = event.status
        summary = event.summary if event.status == "completed" and event.summary else None
        facts = _compaction_facts(event)
        facts.pop("error", None)  # the update's own `error` carries it
        updates.append(acp.CompactionUpdate(
            compaction_id, event.status,
            summary=[acp.TextContent(summary)] if summary is not None and summary != streamed else UNSET,
            error=event.error if event.status == "failed" and event.error else UNSET,
            meta=_air_compaction(facts) if capable else UNSET))
        return updates

    def _compaction(self, event: Compaction, capable: bool) -> acp.SessionUpdate:
        facts = _compaction_facts(event, air=False)
        meta = _air_compaction(_compaction_facts(event)) if capable else UNSET
        content: list[acp.ToolCallContent] | Any = UNSET
        if event.status in ("failed", "cancelled") and event.error:  # a cancelled one shows failed
            content = [acp.ToolContent(acp.TextContent(f"Compaction failed: {event.error}"))]
        raw_output = facts if facts and not capable else UNSET
        status = "failed" if event.status == "cancelled" else event.status  # a tool call has no cancelled
        if event.compaction_id not in self.compactions:
            self.compactions.add(event.compaction_id)
            return acp.ToolCall(tool_call_id=event.compaction_id, title=COMPACTION_TITLE, kind="think",
                                status=status, content=content, raw_output=raw_output, meta=meta)
        return acp.ToolCallUpdate(tool_call_id=event.compaction_id, status=status, content=content,
                                  raw_output=raw_output, meta=meta)


def _same_goal(left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> bool:
    if left is None or right is None:
        return left is right
    return all(left.get(key) == right.get(key) for key in ("objective", "status", "tokenBudget", "createdAt"))


def _compaction_facts(event: Compaction, *, air: bool = True) -> dict[str, Any]:
    """A compaction's facts as claude-agent-acp names them in AIR's `contextCompaction` (`air`),
    else as the tool call's `rawOutput` always named them (the backend's trigger, no duration)."""
    facts: dict[str, Any] = {}
    named = ((("trigger", TRIGGERS.get(event.trigger or "")), ("preTokens", event.tokens_before),
              ("postTokens", event.tokens_after), ("durationMs", event.duration_ms)) if air else
             (("trigger", event.trigger), ("tokensBefore", event.tokens_before), ("tokensAfter", event.tokens_after)))
    for key, value in (*named, ("error", event.error)):
        if value is not None:
            facts[key] = value
    return facts


def _air_compaction(facts: Mapping[str, Any]) -> dict[str, Any]:
    return {"jetbrains": {"air": {"contextCompaction": {"version": CONTEXT_COMPACTION_META_VERSION, **facts}}}}


def _chunk(terminal_id: str, data: str, features: ClientFeatures) -> acp.ToolCallUpdate:
    key = "terminal_output_delta" if features.terminal_output_delta else "terminal_output"
    return acp.ToolCallUpdate(tool_call_id=terminal_id, meta={key: {"terminal_id": terminal_id, "data": data}})


__all__ = ["COMPACTION_TITLE", "ClientFeatures", "Presenter", "now_iso", "session_title"]
