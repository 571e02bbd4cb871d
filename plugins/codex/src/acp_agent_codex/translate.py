"""Pure per-turn state: one app-server turn's notifications, in wire order, → neutral steps.

The runtime feeds every notification of the prompt's own turn through a `TurnTranslator` and
carries out what comes back: events are emitted, a `FailureObservation` is recorded at once
(the first one wins), and `TurnDone` ends the prompt. Keeping this free of I/O lets the same
code be folded over real captured traffic in tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from attrs import define, field

from acp_agent.provider import (
    Attempts,
    AuthConfirmed,
    Compaction,
    Event,
    FailureObservation,
    RetryProgress,
    TerminalExited,
    TerminalOutput,
    TerminalStarted,
    ToolCallUpdate,
    TurnDone,
    TurnEnd,
    agent_text,
    fold_steps,
    json_int,
    json_object,
    json_text,
    thought_text,
)
from acp_agent_codex import items
from acp_agent_codex.classify import (
    NOTICE_METHODS,
    classify_error,
    notice_for,
    observe_failure,
    turn_error_observation,
)

Step = Event | FailureObservation | TurnDone

_PROGRESS_DELTAS = frozenset({
    "item/agentMessage/delta",
    "item/reasoning/summaryTextDelta",
    "item/reasoning/textDelta",
})


def turn_id_of(method: str, params: Mapping[str, Any]) -> str | None:
    """The app-server turn a notification belongs to (None: thread-wide)."""
    turn_id = params.get("turnId")
    if isinstance(turn_id, str):
        return turn_id
    if method in ("turn/started", "turn/completed"):
        turn = params.get("turn")
        if isinstance(turn, Mapping) and isinstance(turn.get("id"), str):
            return str(turn["id"])
    return None


Classifier = Callable[[Mapping[str, Any]], FailureObservation | None]


@define
class TurnTranslator(Attempts):
    """State of one turn: retry incidents, items seen (for approvals), streamed output.

    A failure (an `error` notification that ends the turn, a failed `turn/completed`) is classified
    from its params by `classify`: the runtime passes the core's failure hooks.
    """

    classify: Classifier = observe_failure
    failure: FailureObservation | None = None
    items: dict[str, Mapping[str, Any]] = field(factory=dict)
    streamed: set[str] = field(factory=set)
    plans: dict[str, str] = field(factory=dict)
    """Each plan item's text streamed so far (`item/plan/delta`)."""
    outputs: dict[str, str] = field(factory=dict)
    compaction_shown: bool = False
    usage_at_start: Mapping[str, Any] | None = None
    """The thread's `tokenUsage` when the turn began: the turn's own tokens are counted from it."""

    def feed(self, method: str, params: Mapping[str, Any]) -> list[Step]:
        if method == "error":
            result = classify_error(params)
            if isinstance(result, RetryProgress):
                self.retrying = True
                return [result]
            result = self.classify(params) or result
            if self.failure is None:
                self.failure = result
            return [result]
        if method in _PROGRESS_DELTAS:
            delta = params.get("delta")
            if not isinstance(delta, str) or not delta:
                return []
            self.streamed.add(str(params.get("itemId")))
            message_id = json_text(params.get("itemId")) or None
            chunk = (agent_text(delta, message_id) if method == "item/agentMessage/delta"
                     else thought_text(delta, message_id))
            return [*self.progress(), chunk]
        if method == "item/reasoning/summaryPartAdded":
            self.streamed.add(str(params.get("itemId")))
            index = params.get("summaryIndex")
            gap = thought_text("\n\n", json_text(params.get("itemId")) or None)
            return [*self.progress(), gap] if isinstance(index, int) and index > 0 else []
        if method == "item/started":
            return self._started(params.get("item"))
        if method == "item/completed":
            return self._completed(params.get("item"))
        if method == "item/plan/delta":
            item_id, delta = params.get("itemId"), params.get("delta")
            if not isinstance(item_id, str) or not isinstance(delta, str) or not delta:
                return []
            self.plans[item_id] = self.plans.get(item_id, "") + delta
            return [*self.progress(), items.plan_document(item_id, self.plans[item_id], completed=False)]
        if method == "item/commandExecution/outputDelta":
            item_id, delta = params.get("itemId"), params.get("delta")
            if not isinstance(item_id, str) or not isinstance(delta, str):
                return []
            self.outputs[item_id] = self.outputs.get(item_id, "") + delta
            return [TerminalOutput(item_id, delta, legacy=items.command_output(item_id, self.outputs[item_id]))]
        if method == "turn/plan/updated":
            return [*self.progress(), items.plan(params)]
        if method == "thread/tokenUsage/updated":
            steps: list[Step] = [update for update in (items.usage(params), items.turn_usage(self.usage_at_start, params))
                                 if update is not None]
            return steps
        if method == "thread/compacted":  # deprecated: 0.163 reports a `contextCompaction` item
            if self.compaction_shown:
                return []
            self.compaction_shown = True
            return [Compaction(f"{params.get('turnId')}:compaction", "completed")]
        if method == "thread/name/updated":
            return [items.session_title(params)]
        if method in ("thread/goal/updated", "thread/goal/cleared"):
            goal = items.goal_snapshot(method, params)
            return [goal] if goal is not None else []
        if method in NOTICE_METHODS:
            notice = notice_for(method, params)
            return [notice] if notice is not None else []
        if method == "turn/completed":
            return self._finished(params)
        return []

    def _started(self, item: Any) -> list[Step]:
        if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
            return []
        self.items[item["id"]] = item
        kind = item.get("type")
        if kind == "userMessage":
            return []
        if kind == "contextCompaction":
            self.compaction_shown = True
            return [*self.progress(), Compaction(item["id"], "in_progress")]
        call = items.tool_call(item)
        if call is not None and kind == "commandExecution":
            cwd = item.get("cwd")
            return [*self.progress(), TerminalStarted(call, cwd if isinstance(cwd, str) else None)]
        return [*self.progress(), *([call] if call is not None else [])]

    def _completed(self, item: Any) -> list[Step]:
        if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
            return []
        item_id = item["id"]
        self.items[item_id] = item
        kind = item.get("type")
        if kind == "userMessage":
            return []
        steps = self.progress()
        if kind in items.MESSAGE_KINDS:
            chunk = items.message_chunk(item)
            if item_id not in self.streamed and chunk is not None:
                steps.append(chunk)
        elif kind == "contextCompaction":
            self.compaction_shown = True
            steps.append(Compaction(item_id, "completed"))
        elif kind == "plan":  # the completed item is authoritative (app-server's schema says so)
            text = json_text(item.get("text")) or self.plans.get(item_id, "")
            if text:
                steps.append(items.plan_document(item_id, text, completed=True))
        elif kind == "commandExecution":
            update = items.tool_call_update(item)
            if update is not None:
                steps.append(TerminalExited(item_id, update, json_int(item.get("exitCode")),
                                            output=json_text(item.get("aggregatedOutput"))))
        else:
            update = items.tool_call_update(item)
            if update is not None:
                steps.append(update)
        return steps

    def _unfinished_terminals(self) -> list[Step]:
        """Commands an interrupted or failed turn left without `item/completed`: their terminals
        end, failed, with an unknown exit code. Clients without terminals see nothing new."""
        return [TerminalExited(item_id, ToolCallUpdate(tool_call_id=item_id, status="failed"), None, legacy=False)
                for item_id, item in self.items.items()
                if item.get("type") == "commandExecution" and item.get("status") == "inProgress"]

    def _finished(self, params: Mapping[str, Any]) -> list[Step]:
        turn = json_object(params.get("turn"))
        status = turn.get("status")
        if status == "interrupted":
            return [*self._unfinished_terminals(), TurnDone(TurnEnd("cancelled"))]
        if status == "failed":
            if self.failure is None:
                fallback = turn_error_observation(json_object(turn.get("error")))
                self.failure = self.classify(params) or fallback
            return [*self._unfinished_terminals(), TurnDone(self.failure)]
        # A command still running at a normal end keeps running in the background (unified exec).
        return [AuthConfirmed(), TurnDone(TurnEnd("end_turn"))]


def fold_turn(messages: Iterable[tuple[str, Mapping[str, Any]]]) -> list[Event | FailureObservation | TurnEnd]:
    """Fold one turn's notifications (in wire order) into the steps the runtime would carry out."""
    return fold_steps(TurnTranslator(), messages)
