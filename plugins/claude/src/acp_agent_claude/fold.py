"""The per-turn fold: one turn's stream-json lines in, neutral events and the turn's outcome out.

Pure state machine (no I/O), so real CLI output replayed from fixtures drives it in tests exactly
as the live runtime does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from attrs import define, field

from acp_agent.acp import agent_text, thought_text
from acp_agent.events import AuthConfirmed, Event, TurnEnd
from acp_agent.failures import FailureKind, FailureObservation
from acp_agent_claude import classify, content

Outcome = TurnEnd | FailureObservation
Classifier = Callable[[Mapping[str, Any]], FailureObservation | None]


@define
class TurnFold:
    """Folds one turn. `feed` returns events to emit; `outcome` is set once the result arrives.

    A failed result is classified by `observe` from the CLI's own lines (`{"assistant": <the
    turn's last failing assistant line>, "result": <the result line>}`): the runtime passes the
    core's failure hooks, so any plugin may answer before this provider's own classification.
    """

    cwd: str | None = None
    cancel_requested: bool = False
    observe: Classifier = classify.observe_failure
    outcome: Outcome | None = None
    pending_error: dict[str, Any] | None = None
    refusal_text: str | None = None
    worker_shutting_down: bool = False
    streamed: set[str] = field(factory=set)
    streaming_id: str | None = None
    tools: dict[str, str] = field(factory=dict)
    answered_tools: set[str] = field(factory=set)

    @property
    def finished(self) -> bool:
        """Whether the turn's result arrived."""
        return self.outcome is not None

    def feed(self, message: Mapping[str, Any]) -> list[Event]:
        """One stream-json line of the CLI (a dict as it wrote it)."""
        kind = message.get("type")
        if kind == "stream_event":
            return self._stream_event(_mapping(message.get("event")))
        if kind == "assistant":
            return self._assistant(message)
        if kind == "user":
            return self._user(message)
        if kind == "system":
            return self._system(str(message.get("subtype") or ""), message)
        if kind == "result":
            self.outcome = self._result(message)
            events = self._usage(message)
            if self.outcome == TurnEnd("refusal") and self.refusal_text:
                events.insert(0, agent_text(self.refusal_text))
            if isinstance(self.outcome, TurnEnd) and not message.get("is_error"):
                events.append(AuthConfirmed())  # the API accepted the credentials for this turn
            return events
        return []

    def _stream_event(self, event: Mapping[str, Any]) -> list[Event]:
        if event.get("type") == "message_start":
            self.streaming_id = _mapping(event.get("message")).get("id")
            return []
        chunk = content.stream_delta(event)
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
                self.refusal_text = text
                return []
            if failing:
                self.pending_error = dict(line)
                return []
            return [agent_text(text)] if text else []
        if failing:
            self.pending_error = dict(line)
        events: list[Event] = []
        message_id = message.get("id")
        streamed = message_id in self.streamed if message_id else False
        for block in blocks if isinstance(blocks, list) else ():
            if not isinstance(block, Mapping):
                continue
            block_kind = block.get("type")
            if block_kind == "text" and not streamed and block.get("text"):
                events.append(agent_text(str(block["text"])))
            elif block_kind == "thinking" and not streamed and block.get("thinking"):
                events.append(thought_text(str(block["thinking"])))
            elif block_kind == "tool_use":
                tool_id, name, tool_input = str(block.get("id")), str(block.get("name")), block.get("input") or {}
                self.tools[tool_id] = name
                if name == "TodoWrite":
                    plan = content.plan_from_todos(tool_input)
                    if plan is not None:
                        events.append(plan)
                events.append(content.tool_call(tool_id, name, tool_input, self.cwd))
        if message.get("stop_reason") == "refusal":
            self.refusal_text = text or self.refusal_text
        return events

    def _user(self, line: Mapping[str, Any]) -> list[Event]:
        blocks = _mapping(line.get("message")).get("content")
        if not isinstance(blocks, list):
            return []
        events: list[Event] = []
        for block in blocks:
            if isinstance(block, Mapping) and block.get("type") == "tool_result":
                tool_id = str(block.get("tool_use_id"))
                self.answered_tools.add(tool_id)
                events.append(content.tool_result(tool_id, block.get("content"), block.get("is_error"),
                                                  self.tools.get(tool_id), line.get("tool_use_result")))
        return events

    def _system(self, subtype: str, data: Mapping[str, Any]) -> list[Event]:
        if subtype == "api_retry":
            # The content of the next attempt ends this incident: the core treats live model content so.
            return [classify.retry_progress(data)]
        if subtype == "model_refusal_fallback":
            notice = classify.fallback_notice(data)
            return [notice] if notice else []
        if subtype == "worker_shutting_down":
            self.worker_shutting_down = True
        return []

    def _usage(self, result: Mapping[str, Any]) -> list[Event]:
        update = content.usage_update(result.get("usage"), result.get("modelUsage"))
        return [update] if update is not None else []

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
        unanswered = set(self.tools) - self.answered_tools
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


def _mapping(value: Any) -> Mapping[str, Any]:
    # (dict, not the Mapping ABC: this runs for every streamed delta, and parsed JSON is dicts)
    return value if isinstance(value, dict) else {}
