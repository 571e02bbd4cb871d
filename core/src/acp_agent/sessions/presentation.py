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
when its turn ends is `cancelled`. A client that declares ACP's unstable `plan` gets a markdown
plan (an approved plan, a plan the backend streams) as `plan_update`, a streamed one's new text
alone for a client of AIR's `planContentDelta`; a client of AIR's `planFile` sees a plan review's
`rawInput` name the plan file instead of holding the plan (claude-agent-acp's `exit-plan.js` and
`planFile`). Knows nothing of providers or of the connection.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal

import attrs
from attrs import define, field

from acp_agent.backends.events import (
    AsyncTask,
    BackgroundedCall,
    Compaction,
    CompactionSummaryChunk,
    GoalSnapshot,
    PlanDocument,
    PlanFileCall,
    Presented,
    SessionTitle,
    TerminalExited,
    TerminalOutput,
    TerminalStarted,
)
from acp_agent.failures.protocol import declared_air
from acp_agent.wire import acp
from acp_agent.wire.convert import UNSET
from acp_agent.wire.records import frozen

COMPACTION_TITLE = "Compact conversation"
MAX_TITLE_LENGTH = 256
CONTEXT_COMPACTION_META_VERSION = 1
LOAD_REPLAY_END = "loadReplayEnd"
PLAN_FILE = "planFile"
PLAN_FILE_CLEAR_SUFFIX = ":plan-file-clear"
"""The id of the call that clears a released plan file (claude-agent-acp's)."""
PLAN_FILE_RELEASED_TITLE = "Exited Plan Mode"
PLAN_CONTENT_DELTA = "planContentDelta"
PLAN_CONTENT_DELTA_META = "contentDelta"
"""The key of a streamed plan's new text in `plan_update`'s `_meta.jetbrains.air`."""
PLAN_RESEND_S = 0.15
"""A client sent a streaming plan whole again gets it at most this often (codex-acp's throttle),
and its final text always."""
NATIVE_SUBAGENT_SESSIONS = "nativeSubagentSessions"
BACKGROUND_SUBAGENTS = "backgroundSubagents"
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
    plan: bool = False
    """ACP's unstable `plan`: `plan_update` (and `plan_removed`)."""
    air_client: bool = False
    """The client declares `_meta.jetbrains.air` (JetBrains AIR), whatever it lists."""
    air: frozenset[str] = frozenset()
    """The AIR capabilities the client lists in `_meta.jetbrains.air.capabilities`."""
    subagents: bool = False
    """ACP's unstable `subagents: {}`: child sessions as `subagent_update`."""

    @property
    def subagent_form(self) -> Literal["air", "rfd"] | None:
        """How the client takes a subagent's child session, as claude-agent-acp decides it: AIR's
        draft (`subagent_spawned`, `subagent_state_update`) for an AIR client that declares
        `nativeSubagentSessions` or `subagents`, ACP's `subagent_update` for another client that
        declares `subagents`; None: the launching tool call, as before."""
        if self.air_client and (NATIVE_SUBAGENT_SESSIONS in self.air or self.subagents):
            return "air"
        return "rfd" if self.subagents else None

    @property
    def background_subagents(self) -> bool:
        """AIR's `backgroundSubagents`: a turn answers at its result while subagents it started
        in the background still run; they stream on after the answer. Otherwise the runtime
        holds the answer until they end (`backends.contract.background_subagents`)."""
        return BACKGROUND_SUBAGENTS in self.air

    @property
    def plan_file(self) -> bool:
        """AIR's `planFile`: a plan review names the plan file (`rawInput.planFilePath`)."""
        return PLAN_FILE in self.air

    @property
    def plan_content_delta(self) -> bool:
        """AIR's `planContentDelta`: a streamed plan's `plan_update` carries only its new text."""
        return PLAN_CONTENT_DELTA in self.air

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
    def async_tasks(self) -> bool:
        """AIR's `asyncTasks`: background tasks as `async_task_*` updates, stopped with
        `_session/async_task/stop`."""
        return "asyncTasks" in self.air

    @property
    def codex_hooks(self) -> bool:
        """AIR's `codexHooks`: `_codex/hooks/list` and `_codex/hooks/trust`."""
        return "codexHooks" in self.air

    @property
    def terminals(self) -> bool:
        return self.terminal_output or self.terminal_output_delta

    @classmethod
    def from_capabilities(cls, meta: Any, elicitation: Any, session: Any = None, plan: Any = None,
                          subagents: Any = None) -> ClientFeatures:
        """From `clientCapabilities._meta` (only `true` opts in), `.elicitation`, `.session`,
        `.plan` and `.subagents` (an object opts in)."""
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
                   plan=isinstance(plan, Mapping),
                   air_client=isinstance(_mapping(meta.get("jetbrains")).get("air"), Mapping),
                   air=declared_air(meta),
                   subagents=isinstance(subagents, Mapping))


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}




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
    plans: dict[str, str] = field(factory=dict)
    """`plan` clients: the text each streamed plan was last sent with."""
    plans_sent_at: dict[str, float] = field(factory=dict)
    clock: Callable[[], float] = time.monotonic

    def render(self, event: Presented, features: ClientFeatures, capable: bool) -> list[acp.SessionUpdate]:
        if isinstance(event, GoalSnapshot):
            return self._goal(event.goal) if features.goal else []
        if isinstance(event, AsyncTask):
            return [event.update] if features.async_tasks else []
        if isinstance(event, BackgroundedCall):
            return self._backgrounded(event, features, capable)
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
        if isinstance(event, PlanFileCall):
            return _plan_file_call(event, features)
        if isinstance(event, PlanDocument):
            if not features.plan:
                return [event.otherwise] if event.otherwise is not None else []
            if not event.text:
                return []
            air = features.air_client or capable
            plan_id = f"{event.plan_id}:{event.review_call_id}" if air and event.review_call_id else event.plan_id
            if event.streamed:
                return self._plan_update(plan_id, event.text, features.plan_content_delta, event.partial)
            return [acp.PlanUpdate(acp.MarkdownPlan(plan_id, event.text))]
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

    def _plan_update(self, plan_id: str, text: str, deltas: bool, partial: bool) -> list[acp.SessionUpdate]:
        """A streamed plan's next `plan_update`: none when the client has this text; only the new
        text (AIR's `contentDelta`) for a client of `planContentDelta` when it extends what the
        client has; else the whole plan, a `partial` one at most every `PLAN_RESEND_S` (so a long
        plan's bytes do not grow with the square of its length)."""
        reported = self.plans.get(plan_id)
        if reported == text:
            return []
        extends = bool(reported) and text.startswith(reported or "")
        now = self.clock()
        if partial and not (deltas and extends) and now - self.plans_sent_at.get(plan_id, -PLAN_RESEND_S) < PLAN_RESEND_S:
            return []
        self.plans[plan_id], self.plans_sent_at[plan_id] = text, now
        if deltas and extends:
            meta = {"jetbrains": {"air": {"version": 1, PLAN_CONTENT_DELTA_META: text[len(reported or ""):]}}}
            return [acp.PlanUpdate(acp.MarkdownPlan(plan_id, ""), meta=meta)]
        return [acp.PlanUpdate(acp.MarkdownPlan(plan_id, text))]

    def _backgrounded(self, event: BackgroundedCall, features: ClientFeatures,
                      capable: bool) -> list[acp.SessionUpdate]:
        """The call's result as the client sees it; for a client of `asyncTasks` its update marked
        backgrounded, as claude-agent-acp marks it (`tool-calls/background.js`)."""
        inner = event.event
        updates: list[acp.SessionUpdate] = (self.render(inner, features, capable)
                                            if isinstance(inner, TerminalExited) else [inner])
        if not features.async_tasks:
            return updates
        marked: list[acp.SessionUpdate] = []
        for update in updates:
            if isinstance(update, acp.ToolCallUpdate) and update.tool_call_id == event.tool_call_id:
                meta = dict(update.meta) if isinstance(update.meta, dict) else {}
                jetbrains = dict(meta.get("jetbrains") or {})
                air = {**(jetbrains.get("air") or {}), "version": 1, "asyncTasks": {"backgrounded": True}}
                meta["jetbrains"] = {**jetbrains, "air": air}
                marked.append(attrs.evolve(update, meta=meta))
            else:
                marked.append(update)
        return marked

    def _goal(self, goal: Mapping[str, Any] | None) -> list[acp.SessionUpdate]:
        """As codex-acp: a report that changes neither objective, status, budget nor creation
        (usage only, after each goal turn) is not sent again; Claude's `iterations` and
        `lastReason` (each evaluation the goal failed) are changes."""
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


def plan_review_request(event: PlanFileCall, features: ClientFeatures) -> acp.ToolCallUpdate:
    """The tool call of a plan review's `session/request_permission`, as the client sees plan
    reviews (`planFile`: the file, not the plan's text)."""
    shown = _plan_file_call(attrs.evolve(event, released=False), features)[0]
    if isinstance(shown, acp.ToolCallUpdate):
        return shown
    return acp.ToolCallUpdate(**{a.name: getattr(shown, a.name) for a in attrs.fields(acp.ToolCallFields)})


def _plan_file_call(event: PlanFileCall, features: ClientFeatures) -> list[acp.SessionUpdate]:
    """A plan review as the client sees it: unchanged, or for a `planFile` client (when the file
    is there to read) with `rawInput` naming the file in place of the plan's text, and once the
    plan is released a call of its own with a blank path (AIR's signal to drop the file; the
    review's own card keeps it)."""
    path = event.path
    if not features.plan_file or not path or not os.path.isabs(path) or not os.path.isfile(path):
        return [event.update]
    raw_input = {key: value for key, value in event.tool_input.items() if key != "plan"}
    raw_input["planFilePath"] = path
    updates: list[acp.SessionUpdate] = [attrs.evolve(event.update, raw_input=raw_input)]
    if event.released:
        updates.append(acp.ToolCall(tool_call_id=event.update.tool_call_id + PLAN_FILE_CLEAR_SUFFIX,
                                    title=PLAN_FILE_RELEASED_TITLE, kind="switch_mode", status="completed",
                                    raw_input={"planFilePath": ""}, content=[]))
    return updates


def _same_goal(left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> bool:
    if left is None or right is None:
        return left is right
    return all(left.get(key) == right.get(key)
               for key in ("objective", "status", "tokenBudget", "createdAt", "iterations", "lastReason"))


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


__all__ = ["COMPACTION_TITLE", "ClientFeatures", "Presenter", "now_iso", "plan_review_request", "session_title"]
