"""The per-turn fold: one turn's SDK messages in, neutral events and the turn's outcome out.

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

    def feed(self, message: Any) -> list[Event]:
        kind = type(message).__name__
        if kind == "StreamEvent":
            return self._stream_event(message.event)
        if kind == "AssistantMessage":
            return self._assistant(message)
        if kind == "UserMessage":
            return self._user(message)
        if kind == "SystemMessage":
            return self._system(message.subtype, message.data)
        if kind == "ResultMessage":
            self.outcome = self._result(message)
            events = self._usage(message)
            if self.outcome == TurnEnd("refusal") and self.refusal_text:
                events.insert(0, agent_text(self.refusal_text))
            if isinstance(self.outcome, TurnEnd) and not message.is_error:
                events.append(AuthConfirmed())  # the API accepted the credentials for this turn
            return events
        return []

    def _stream_event(self, event: dict[str, Any]) -> list[Event]:
        if event.get("type") == "message_start":
            self.streaming_id = (event.get("message") or {}).get("id")
            return []
        chunk = content.stream_delta(event)
        if chunk is None:
            return []
        if self.streaming_id:
            self.streamed.add(self.streaming_id)
        return [chunk]

    def _assistant(self, message: Any) -> list[Event]:
        text = classify.message_text(message.content)
        line = classify.native_assistant(message)
        failing = classify.assistant_failure_kind(line) is not None
        if message.model == classify.SYNTHETIC_MODEL:
            if message.stop_reason == "refusal":
                self.refusal_text = text
                return []
            if failing:
                self.pending_error = line
                return []
            return [agent_text(text)] if text else []
        if failing:
            self.pending_error = line
        events: list[Event] = []
        streamed = message.message_id in self.streamed if message.message_id else False
        for block in message.content:
            block_kind = type(block).__name__
            if block_kind == "TextBlock" and not streamed and block.text:
                events.append(agent_text(block.text))
            elif block_kind == "ThinkingBlock" and not streamed and block.thinking:
                events.append(thought_text(block.thinking))
            elif block_kind == "ToolUseBlock":
                self.tools[block.id] = block.name
                if block.name == "TodoWrite":
                    plan = content.plan_from_todos(block.input)
                    if plan is not None:
                        events.append(plan)
                events.append(content.tool_call(block.id, block.name, block.input, self.cwd))
        if message.stop_reason == "refusal":
            self.refusal_text = text or self.refusal_text
        return events

    def _user(self, message: Any) -> list[Event]:
        if isinstance(message.content, str):
            return []
        events: list[Event] = []
        for block in message.content:
            if type(block).__name__ == "ToolResultBlock":
                self.answered_tools.add(block.tool_use_id)
                events.append(content.tool_result(block.tool_use_id, block.content, block.is_error,
                                                  self.tools.get(block.tool_use_id), message.tool_use_result))
        return events

    def _system(self, subtype: str, data: dict[str, Any]) -> list[Event]:
        if subtype == "api_retry":
            # The content of the next attempt ends this incident: the core treats live model content so.
            return [classify.retry_progress(data)]
        if subtype == "model_refusal_fallback":
            notice = classify.fallback_notice(data)
            return [notice] if notice else []
        if subtype == "worker_shutting_down":
            self.worker_shutting_down = True
        return []

    def _usage(self, result: Any) -> list[Event]:
        update = content.usage_update(result.usage, result.model_usage)
        return [update] if update is not None else []

    def _result(self, result: Any) -> Outcome:
        subtype, is_error = result.subtype, bool(result.is_error)
        if self.cancel_requested and (subtype == "error_during_execution" or
                                      result.terminal_reason in ("aborted_streaming", "aborted_tools")):
            return TurnEnd("cancelled")
        if result.stop_reason == "refusal" or self.refusal_text is not None:
            return TurnEnd("refusal")
        if is_error:
            return self._failure(result)
        if subtype in classify.RESULT_LIMIT_KINDS:
            return TurnEnd("max_turn_requests")
        if subtype == "error_during_execution":
            return TurnEnd("end_turn")
        if result.stop_reason == "max_tokens":
            return TurnEnd("max_tokens")
        if subtype != "success":
            return TurnEnd("end_turn")
        unanswered = set(self.tools) - self.answered_tools
        if unanswered:
            return classify.failure(FailureKind.INTERNAL_ERROR, "internalError",
                                    "Claude ended the turn with a tool call still unanswered.", source="adapter")
        return TurnEnd("end_turn")

    def _failure(self, result: Any) -> FailureObservation:
        """The failed result, classified from the CLI's lines through `classify`."""
        native: dict[str, Any] = {"result": classify.native_result(result)}
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
