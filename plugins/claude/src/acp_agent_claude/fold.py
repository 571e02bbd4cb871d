"""The per-turn fold: one turn's stream-json lines in, neutral events and the turn's outcome out.

A pure state machine (no I/O). The CLI's lines are input like a client's: a field of the wrong
type is never forwarded and never raises; a block that cannot be shown (a tool call without an
id, text that is not a string) is logged, without its content, and skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from attrs import define, field

from acp_agent.provider import (
    AuthConfirmed,
    Event,
    FailureKind,
    FailureObservation,
    OfSubagent,
    TerminalExited,
    TerminalOutput,
    TerminalStarted,
    ToolCallUpdate,
    TurnEnd,
    TurnUsage,
    UsageUpdate,
    agent_text,
    thought_text,
)
from acp_agent_claude import classify, content, subagents
from acp_agent_claude.bash_tasks import BashTasks
from acp_agent_claude.compacting import CompactionFold
from acp_agent_claude.subagents import LAUNCH_TOOLS, Children, Launch
from acp_agent_claude.tasks import TASK_TOOLS, TaskPlan

log = logging.getLogger(__name__)

Outcome = TurnEnd | FailureObservation
Classifier = Callable[[Mapping[str, Any]], FailureObservation | None]


@define
class TurnFold:
    """Folds one turn. `feed` returns events to emit; `outcome` is set once the result arrives.
    A failed result is classified by `observe` (the runtime passes the core's failure hooks) from
    `{"assistant": <the turn's last failing assistant line>, "result": <the result line>}`."""

    cwd: str | None = None
    cancel_requested: bool = False
    observe: Classifier = classify.observe_failure
    outcome: Outcome | None = None
    pending_error: dict[str, Any] | None = None
    refusal_text: str | None = None
    refusal_id: str | None = None
    worker_shutting_down: bool = False
    streamed: set[str] = field(factory=set)
    streaming_id: str | None = None
    tools: dict[str, str] = field(factory=dict)
    inputs: dict[str, Mapping[str, Any]] = field(factory=dict)
    answered_tools: set[str] = field(factory=set)
    tasks: TaskPlan = field(factory=TaskPlan)  # the session's task list (TaskCreate and friends; the runtime's own)
    compaction: CompactionFold = field(factory=CompactionFold)
    window: content.ContextWindow = field(factory=content.ContextWindow)  # the session's (the runtime's own)
    compacted_used: int | None = None
    """The tokens a compaction kept, while no model answer since says more."""
    subagent_texts: dict[str, list[str]] = field(factory=dict)
    subagent_tools: set[str] = field(factory=set)
    children: Children = field(factory=Children)  # the session's subagents (the runtime's own)
    bash_tasks: BashTasks = field(factory=BashTasks)  # the session's background commands (the runtime's own)
    mcp: classify.McpWatch = field(factory=classify.McpWatch)
    """The client's MCP servers and which were told of (the runtime passes the session's own)."""
    usage: TurnUsage | None = None
    """The turn's tokens so far: its results' `usage` summed (steered messages end in results too)."""
    prompts: set[str] = field(factory=set)  # its user messages' uuids (none: the CLI's own turn)
    _parent: str | None = None

    @property
    def finished(self) -> bool:
        """Whether the turn's result arrived."""
        return self.outcome is not None

    def feed(self, message: Mapping[str, Any]) -> list[Event]:
        """One stream-json line of the CLI (a dict as it wrote it)."""
        parent = message.get("parent_tool_use_id")
        self._parent = parent if isinstance(parent, str) else None
        fold = _LINES.get(message.get("type"))
        return fold(self, message) if fold is not None else []

    def _end(self, message: Mapping[str, Any]) -> list[Event]:
        events = self.bash_tasks.turn_result()  # (at every result, as claude-agent-acp's releaseHeld)
        if self.prompts and subagents.autonomous(message, self.prompts):  # a cycle the CLI ran itself:
            return events + self._usage(message, turn=False)  # not a prompt's end (its own turn's is)
        self.outcome = self._result(message)
        events.extend(self._usage(message))
        if self.outcome == TurnEnd("refusal") and self.refusal_text:
            events.insert(0, agent_text(self.refusal_text, self.refusal_id))
        if isinstance(self.outcome, TurnEnd) and not message.get("is_error"):
            events.append(AuthConfirmed())  # the API accepted the credentials for this turn
        return events

    def _stream_event(self, line: Mapping[str, Any]) -> list[Event]:
        if self._parent is not None:
            return []  # a subagent's deltas: its whole message shows on its Agent call
        event = _mapping(line.get("event"))
        block = _mapping(event.get("content_block") if event.get("type") == "content_block_start"
                         else event.get("delta") if event.get("type") == "content_block_delta" else None)
        if block.get("type") in ("compaction", "compaction_delta"):
            return self.compaction.streamed(_string(line.get("uuid")) or "stream", block.get("content"))
        if event.get("type") == "message_start":
            self.streaming_id = _string(_mapping(event.get("message")).get("id"))
            return []
        chunk = content.stream_delta(event, self.streaming_id)
        if chunk is None:
            return []
        if self.streaming_id:
            self.streamed.add(self.streaming_id)
        return [chunk]

    def _assistant(self, line: Mapping[str, Any]) -> list[Event]:
        message = _mapping(line.get("message"))
        blocks = message.get("content")
        text = classify.assistant_text(line)
        failing = classify.assistant_failure_kind(line) is not None
        if message.get("model") == classify.SYNTHETIC_MODEL:
            if message.get("stop_reason") == "refusal":
                self.refusal_text, self.refusal_id = text, _string(message.get("id"))
                return []
            if failing:
                self.pending_error = dict(line)
                return []
            return [agent_text(text, _string(message.get("id")))] if text else []
        if failing:
            self.pending_error = dict(line)
        if self._parent is not None:
            return self._subagent(self._parent, blocks, _string(message.get("id")))
        self.compacted_used = None  # this answer's usage is the context now
        events: list[Event] = []
        message_id = _string(message.get("id"))
        streamed = message_id in self.streamed if message_id else False
        for block in blocks if isinstance(blocks, list) else ():
            if not isinstance(block, Mapping):
                continue
            block_kind = block.get("type")
            if block_kind == "text" and not streamed:
                said = _text(block, "text")
                if said:
                    events.append(agent_text(said, message_id))
            elif block_kind == "thinking" and not streamed:
                thought = _text(block, "thinking")
                if thought:
                    events.append(thought_text(thought, message_id))
            elif block_kind == "tool_use":
                events.extend(self._tool_use(block))
        if message.get("stop_reason") == "refusal":
            self.refusal_text = text or self.refusal_text
            self.refusal_id = message_id if text else self.refusal_id
        return events

    def _user(self, line: Mapping[str, Any]) -> list[Event]:
        blocks = _mapping(line.get("message")).get("content")
        if not isinstance(blocks, list):
            return []
        events: list[Event] = []
        for block in blocks:
            if isinstance(block, Mapping) and block.get("type") == "tool_result":
                events.extend(self._tool_result(block, line.get("tool_use_result")))
        return events

    def _tool_result(self, block: Mapping[str, Any], result: Any) -> list[Event]:
        tool_id = _string(block.get("tool_use_id"))
        if tool_id is None:
            log.warning("claude CLI wrote a malformed tool_result (tool_use_id is not a string): skipped")
            return []
        self.answered_tools.add(tool_id)
        name, body, is_error = self.tools.get(tool_id), block.get("content"), block.get("is_error") is True
        if name in TASK_TOOLS:
            plan = self.tasks.apply(name or "", self.inputs.get(tool_id, {}), body, result, bool(is_error))
            return [plan] if plan is not None else []
        update = content.tool_result(tool_id, body, is_error, name, result)
        if self._parent is not None:
            update = subagents.mark(update, self._parent)
        if name == "Bash":  # (its background task's updates on the session itself)
            exited = TerminalExited(tool_id, update, content.exit_code(body, is_error),
                                    content.shell_output(body, is_error, result))
            tasks, shown = self.bash_tasks.bash_result(exited, body, result, self.inputs.get(tool_id, {}), is_error)
            return tasks + self.children.own([shown], tool_id)
        if name == content.EXIT_PLAN_TOOL:
            return self.children.own(list(content.plan_reviewed(update, self.inputs.get(tool_id, {}), result,
                                                                  is_error, main=self._parent is None)), tool_id)
        return self.children.own([update], tool_id)

    def _progress(self, beat: Mapping[str, Any]) -> list[Event]:
        """A running tool's heartbeat (elapsed time only: stream-json carries no Bash output), as
        claude-agent-acp reports it: the call in progress, with the time in `_meta.claudeCode`.
        A beat under an id no call has (a hook's heartbeat) reports on its parent call."""
        tool_id = _string(beat.get("tool_use_id"))
        if tool_id not in self.tools:
            tool_id = _string(beat.get("parent_tool_use_id"))
        if not isinstance(tool_id, str) or tool_id not in self.tools or tool_id in self.answered_tools:
            return []  # unknown, or a beat that raced past the result: never reopen a finished call
        name = self.tools[tool_id]
        if name in TASK_TOOLS:
            return []
        elapsed = beat.get("elapsed_time_seconds")
        response = {"elapsedTimeSeconds": elapsed} if isinstance(elapsed, int | float) else {}
        update = ToolCallUpdate(tool_call_id=tool_id, status="in_progress",
                                meta={"claudeCode": {"toolName": name, "toolResponse": response}})
        return self.children.own([TerminalOutput(tool_id, "", update) if name == "Bash" else update], tool_id)

    def _subagent(self, parent: str, blocks: Any, message_id: str | None) -> list[Event]:
        """A subagent's message: its tool calls under its Agent call, its text on that call (its
        child session, where the client takes one, shows the text and thoughts as its own)."""
        events: list[Event] = []
        child = self.children.child_of(parent)
        for block in blocks if isinstance(blocks, list) else ():
            if not isinstance(block, Mapping):
                continue
            said = _text(block, "text") if block.get("type") == "text" else None
            if said:
                texts = self.subagent_texts.setdefault(parent, [])
                texts.append(said)
                shown = subagents.progress(parent, texts)
                events.append(OfSubagent(child, (agent_text(said, message_id),), (shown,)) if child else shown)
                if child:
                    self.children.said[child] = said
            elif block.get("type") == "thinking" and child and (thought := _text(block, "thinking")):
                events.append(OfSubagent(child, (thought_text(thought, message_id),), ()))
            elif block.get("type") == "tool_use":
                events.extend(self._tool_use(block))
        return events

    def _tool_use(self, block: Mapping[str, Any]) -> list[Event]:
        """A call (the turn's, or under the subagent's Agent call), kept until its result; a task
        tool shows as the plan once its result confirms the change."""
        use = _tool_use(block)
        if use is None:
            return []
        tool_id, name, tool_input = use
        self.tools[tool_id] = name
        self.inputs[tool_id] = tool_input
        within = self.children.child_of(self._parent)
        if self._parent is not None:
            self.subagent_tools.add(tool_id)  # its own loop answers it, maybe after this turn
        if name in LAUNCH_TOOLS:
            self.children.launches[tool_id] = Launch(tool_input, within)
        elif within is not None:
            self.children.owners[tool_id] = within
        plan = content.plan_from_todos(tool_input) if name == "TodoWrite" and self._parent is None else None
        if name in TASK_TOOLS:
            return [plan] if plan is not None else []
        call = content.tool_call(tool_id, name, tool_input, self.cwd)
        if self._parent is not None:
            call = subagents.mark(call, self._parent)
        shown: Event = (TerminalStarted(call, self.cwd) if name == "Bash"
                        else content.plan_review(call, tool_input) if name == content.EXIT_PLAN_TOOL else call)
        owned = self.children.own([shown], tool_id)
        return [plan, *owned] if plan is not None else owned

    def _system(self, data: Mapping[str, Any]) -> list[Event]:
        subtype = data.get("subtype")
        if subtype == "api_retry":
            # The content of the next attempt ends this incident: the core treats live model content so.
            return [classify.retry_progress(data)]
        if subtype == "model_refusal_fallback":
            notice = classify.fallback_notice(data)
            return [notice] if notice else []
        if subtype == "informational" and self._parent is None:
            notice = classify.informational_notice(data)
            return [notice] if notice else []
        if subtype == "init":
            return list(self.mcp.notices(data.get("mcp_servers")))
        if subtype == "worker_shutting_down":
            self.worker_shutting_down = True
        if subtype == "status":
            return self.compaction.status(data)
        if subtype == "compact_boundary":
            return self._compact_boundary(data)
        # a task's lines: a subagent's (and the CLI's state), also a background command's
        return [*self.children.system(data), *self.bash_tasks.line(data)]

    def _compact_boundary(self, data: Mapping[str, Any]) -> list[Event]:
        """The boundary's completed compaction, and the context's new size at once where the
        window is known (as claude-agent-acp does; the result of a `/compact` turn, which made no
        model call, reports it again)."""
        compaction = self.compaction.boundary(data)
        events: list[Event] = [compaction]
        kept = compaction.tokens_after
        if self._parent is None and kept is not None:
            self.compacted_used = kept
            if self.window.size:
                events.append(UsageUpdate(used=kept, size=self.window.size))
        return events

    def _usage(self, result: Mapping[str, Any], *, turn: bool = True) -> list[Event]:
        update = content.usage_update(result.get("usage"), result.get("modelUsage"), self.window,
                                      used=self.compacted_used, cost_usd=result.get("total_cost_usd"))
        events: list[Event] = [update] if update is not None else []
        usage = content.add_turn_usage(self.usage, result.get("usage")) if turn else None  # not a cycle's
        if usage is not None and usage != self.usage:
            self.usage = usage
            events.append(usage)
        return events

    def _result(self, result: Mapping[str, Any]) -> Outcome:
        subtype, is_error = result.get("subtype"), bool(result.get("is_error"))
        if self.cancel_requested and (subtype == "error_during_execution" or
                                      result.get("terminal_reason") in ("aborted_streaming", "aborted_tools")):
            return TurnEnd("cancelled")
        if result.get("stop_reason") == "refusal" or self.refusal_text is not None:
            return TurnEnd("refusal")
        if is_error:
            return self._failure(result)
        if subtype in classify.RESULT_LIMIT_KINDS:
            return TurnEnd("max_turn_requests")
        if subtype == "error_during_execution":
            return TurnEnd("end_turn")
        if result.get("stop_reason") == "max_tokens":
            return TurnEnd("max_tokens")
        if subtype != "success":
            return TurnEnd("end_turn")
        unanswered = set(self.tools) - self.answered_tools - self.subagent_tools
        if unanswered:
            return classify.failure(FailureKind.INTERNAL_ERROR, "internalError",
                                    "Claude ended the turn with a tool call still unanswered.", source="adapter")
        return TurnEnd("end_turn")

    def _failure(self, result: Mapping[str, Any]) -> FailureObservation:
        """The failed result, classified from the CLI's own lines through the failure hooks."""
        native: dict[str, Any] = {"result": dict(result)}
        if self.pending_error is not None:
            native["assistant"] = self.pending_error
        observation = self.observe(native)
        if observation is None:  # no plugin answered (none installed): the kind's fallback title
            return classify.failure(FailureKind.PROVIDER_ERROR, "unknown", None)
        return observation

    def finish_without_result(self) -> Outcome:
        """The stream ended before a result: the CLI died or closed its output."""
        if self.cancel_requested:
            return TurnEnd("cancelled")
        return classify.transport_lost(worker_shutting_down=self.worker_shutting_down)


_LINES: dict[Any, Callable[[TurnFold, Mapping[str, Any]], list[Event]]] = {
    "stream_event": TurnFold._stream_event, "assistant": TurnFold._assistant, "user": TurnFold._user,
    "system": TurnFold._system, "tool_progress": TurnFold._progress, "result": TurnFold._end,
}
"""How each kind of stream-json line is folded (others show nothing)."""


def _mapping(value: Any) -> Mapping[str, Any]:
    # (dict, not the Mapping ABC: this runs for every streamed delta, and parsed JSON is dicts)
    return value if isinstance(value, dict) else {}


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _text(block: Mapping[str, Any], key: str) -> str | None:
    """A text or thinking block's own text; one of another type is logged and skipped."""
    value = block.get(key)
    if value is None or isinstance(value, str):
        return value
    log.warning("claude CLI wrote a malformed %s block (%s is not a string): skipped", block.get("type"), key)
    return None


def _tool_use(block: Mapping[str, Any]) -> tuple[str, str, Mapping[str, Any]] | None:
    """A `tool_use` block's id, name and input; None (logged) when the id or name is not a
    non-empty string. An input that is not an object counts as empty (the call is still shown)."""
    tool_id, name, tool_input = block.get("id"), block.get("name"), block.get("input")
    if not (isinstance(tool_id, str) and tool_id and isinstance(name, str) and name):
        log.warning("claude CLI wrote a malformed tool_use block (id or name is not a string): skipped")
        return None
    if tool_input is not None and not isinstance(tool_input, dict):
        log.warning("claude CLI wrote a malformed tool_use block (input is not an object): input ignored")
    return tool_id, name, tool_input if isinstance(tool_input, dict) else {}
