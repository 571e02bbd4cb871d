"""Pure per-turn state: one Muse turn's view notifications, in wire order, → neutral steps.

The runtime feeds every notification its session's host sends while a prompt runs through a
`TurnTranslator` (once `turn/start` acknowledged the turn id) and carries out what comes back:
events are emitted, a `FailureObservation` is recorded at once, and `TurnDone` ends the prompt.
Frames of another turn are dropped; deltas that arrive before their item are held until it does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from attrs import define, field

from acp_agent.provider import (
    Attempts,
    AuthConfirmed,
    Cost,
    Event,
    FailureObservation,
    RetryProgress,
    TerminalExited,
    TerminalOutput,
    TerminalStarted,
    TurnDone,
    TurnEnd,
    TurnUsage,
    UsageUpdate,
    fold_steps,
)
from acp_agent_muse import items
from acp_agent_muse.classify import classify_terminal, observe_failure, retry_progress, route_unserved_notice

Step = Event | FailureObservation | TurnDone
RETRY_METHODS = frozenset({"turn/retryScheduled", "turn/modelRetryScheduled"})
ITEM_METHODS = frozenset({"item/started", "item/updated", "item/completed"})


def turn_of(method: str, params: Mapping[str, Any]) -> str | None:
    """The Muse turn a notification names (None: it names none, like deltas and session facts)."""
    if method in ITEM_METHODS:
        item = params.get("item")
        turn_id = item.get("turnId") if isinstance(item, Mapping) else None
    else:
        turn_id = params.get("turnId")
    return turn_id if isinstance(turn_id, str) and turn_id else None


Classifier = Callable[[Mapping[str, Any]], FailureObservation | None]


@define
class TurnTranslator(Attempts):
    """State of one turn: its items, streamed text and output, held deltas, retry state.

    A failed turn's `turn/completed` is classified by `classify`: the runtime passes the core's
    failure hooks.
    """

    turn_id: str
    classify: Classifier = observe_failure
    items: dict[str, Mapping[str, Any]] = field(factory=dict)
    streamed: dict[str, str] = field(factory=dict)
    outputs: dict[str, str] = field(factory=dict)
    introduced: set[str] = field(factory=set)
    held: dict[str, list[tuple[str, str]]] = field(factory=dict)
    foreign: set[str] = field(factory=set)
    done: bool = False
    window: int | None = None
    """The context window's size as the host last reported it (kept by the session across turns)."""
    used: int | None = None
    """The tokens in context as the host last reported them."""
    turn_tokens: list[TurnUsage] = field(factory=list)
    """The turn's model calls' tokens, as `session/tokenUsage` reported them."""
    cost: float | None = None
    """What the session has cost so far (`session/tokenUsage`), in dollars."""
    cost_published: float | None = None

    def feed(self, method: str, params: Mapping[str, Any]) -> list[Step]:
        if self.done:
            return []
        named = turn_of(method, params)
        if named is not None and named != self.turn_id:
            if method in ITEM_METHODS:
                item = params.get("item")
                if isinstance(item, Mapping) and isinstance(item.get("itemId"), str):
                    self.foreign.add(item["itemId"])
                    self.held.pop(item["itemId"], None)
            return []
        if method in ITEM_METHODS:
            item = params.get("item")
            if not isinstance(item, Mapping) or not isinstance(item.get("itemId"), str):
                return []
            return self._item(method, item)
        if method == "item/delta":
            return self._delta(params)
        if method in RETRY_METHODS:
            self.retrying = True
            return [retry_progress(method, params)]
        if method == "session/todoListChanged":
            return [items.plan(params)]
        if method == "session/nameChanged":
            return [items.session_title(params)]
        if method == "session/modelRouteUnserved":
            notice = route_unserved_notice(params)
            return [notice] if notice is not None else []
        if method == "session/contextUsage":
            update = items.usage(params)
            if update is None:
                return []
            self.window, self.used = update.size, update.used
            return [self._costed(update)]
        if method == "session/tokenUsage":
            return self._token_usage(params)
        if method == "turn/completed":
            return self._finished(params)
        if method == "turn/unqueued":
            self.done = True
            return [TurnDone(TurnEnd("cancelled"))]
        return []

    # -- items ------------------------------------------------------------------------------------------

    def _item(self, method: str, item: Mapping[str, Any]) -> list[Step]:
        item_id = str(item["itemId"])
        previous = self.items.get(item_id)
        revision, seen = item.get("revision"), previous.get("revision") if previous else None
        if (method == "item/updated" and isinstance(revision, int) and isinstance(seen, int) and revision <= seen
                and previous is not None and previous.get("status") == item.get("status")):
            return []  # apply rule: replace iff higher
        self.items[item_id] = item
        kind = items.kind_of(item)
        if kind == "userMessage":
            self.held.pop(item_id, None)
            return []
        steps: list[Step] = []
        if kind in items.MESSAGE_KINDS:
            steps.extend(self._replay_held(item_id))
            if method == "item/completed":
                steps.extend(self._message_rest(item))
        elif kind == "compaction":
            steps.append(compaction := items.compaction(item))
            if compaction.status == "completed" and compaction.tokens_after is not None and self.window:
                # The context's new size, as soon as the host reports it (the next contextUsage may
                # come only with the next model call).
                steps.append(UsageUpdate(used=compaction.tokens_after, size=self.window))
        elif items.is_terminal(item):
            steps.extend(self._terminal(method, item))
        else:
            introduced = item_id in self.introduced
            self.introduced.add(item_id)
            output = self.outputs.get(item_id, "")
            if not introduced:
                steps.append(items.tool_call(item, output))
            elif method != "item/started":
                steps.append(items.tool_call_update(item, output))
            steps.extend(self._replay_held(item_id))
        return [*self.progress(), *steps] if steps or method == "item/completed" else steps

    def _terminal(self, method: str, item: Mapping[str, Any]) -> list[Step]:
        """A shell command: the tool call and updates for clients without terminals, carried
        in the terminal events the core renders for clients with them."""
        item_id = str(item["itemId"])
        introduced = item_id in self.introduced
        self.introduced.add(item_id)
        output = self.outputs.get(item_id, "")
        steps: list[Step] = []
        finished = items.tool_status(item) != "in_progress"
        if not introduced:
            steps.append(TerminalStarted(items.tool_call(item, output)))
        if finished and method != "item/started":
            steps.append(TerminalExited(item_id, items.tool_call_update(item, output), items.exit_code(item),
                                        output=items.tool_output(item, output), legacy=introduced))
        elif introduced and method != "item/started":
            steps.append(TerminalOutput(item_id, "", legacy=items.tool_call_update(item, output)))
        steps.extend(self._replay_held(item_id))
        return steps

    def _message_rest(self, item: Mapping[str, Any]) -> list[Step]:
        """What the completed message says beyond what was streamed (all of it when nothing was)."""
        item_id = str(item["itemId"])
        full = items.message_text(item)
        streamed = self.streamed.get(item_id, "")
        if not full or (streamed and not full.startswith(streamed)):
            return []
        rest = full[len(streamed):]
        self.streamed[item_id] = full
        return [items.message_chunk(item, rest)] if rest else []

    def _delta(self, params: Mapping[str, Any]) -> list[Step]:
        item_id, delta = params.get("itemId"), params.get("delta")
        if not isinstance(item_id, str) or not isinstance(delta, str) or not delta or item_id in self.foreign:
            return []
        path = params.get("field")
        path = path if isinstance(path, str) and path else "text"
        if item_id not in self.items:
            self.held.setdefault(item_id, []).append((path, delta))
            return []
        steps = self._apply_delta(item_id, path, delta)
        return [*self.progress(), *steps] if steps else []

    def _apply_delta(self, item_id: str, path: str, delta: str) -> list[Step]:
        item = self.items[item_id]
        kind = items.kind_of(item)
        if kind == "userMessage":
            return []
        if kind in items.MESSAGE_KINDS:
            if kind == "agentMessage" and path != "text":
                return []
            self.streamed[item_id] = self.streamed.get(item_id, "") + delta
            return [items.message_chunk(item, delta)]
        if path not in ("visibleOutput", "text", "output"):
            return []
        self.outputs[item_id] = self.outputs.get(item_id, "") + delta
        update = items.tool_output_update(item_id, self.outputs[item_id])
        if items.is_terminal(item):
            return [TerminalOutput(item_id, delta, legacy=update)]
        return [update]

    def _replay_held(self, item_id: str) -> list[Step]:
        steps: list[Step] = []
        for path, delta in self.held.pop(item_id, []):
            steps.extend(self._apply_delta(item_id, path, delta))
        return steps

    # -- the end ------------------------------------------------------------------------------------------

    def _token_usage(self, params: Mapping[str, Any]) -> list[Step]:
        """A model call's usage: the session's cost so far (on the next `usage_update`, or one at
        the turn's end), and the turn's tokens."""
        cost = items.session_cost(params)
        if cost is not None:
            self.cost = cost
        turn = items.turn_usage(params.get("usage"), params.get("totalTokens"))
        if turn is None:
            return []
        self.turn_tokens.append(turn)
        return [_summed(self.turn_tokens)]

    def _costed(self, update: UsageUpdate) -> UsageUpdate:
        if self.cost is None:
            return update
        self.cost_published = self.cost
        return UsageUpdate(used=update.used, size=update.size, cost=Cost(self.cost))

    def _cost_left(self) -> list[Step]:
        """The session's cost, when it changed after the turn's last `usage_update`."""
        if self.cost is None or self.cost == self.cost_published or not self.window or self.used is None:
            return []
        return [self._costed(UsageUpdate(used=self.used, size=self.window))]

    def _finished(self, params: Mapping[str, Any]) -> list[Step]:
        self.done = True
        steps = self._cost_left()
        if not self.turn_tokens:  # no per-call report: the turn's own counters
            usage = items.turn_usage(params.get("usage"))
            if usage is not None:
                self.turn_tokens.append(usage)
                steps.append(usage)
        return [*steps, *self._end(params)]

    def _end(self, params: Mapping[str, Any]) -> list[Step]:
        end = classify_terminal(params)
        if isinstance(end, FailureObservation):
            end = self.classify(params) or end
        if isinstance(end, TurnEnd) and end.stop_reason != "cancelled":
            return [AuthConfirmed(), TurnDone(end)]
        return [TurnDone(end)]


def _summed(reports: list[TurnUsage]) -> TurnUsage:
    """The turn's tokens: its model calls' counts added up (a count no call gave stays None)."""
    def total(name: str) -> int | None:
        values = [getattr(report, name) for report in reports if getattr(report, name) is not None]
        return sum(values) if values else None

    return TurnUsage(sum(r.input_tokens for r in reports), sum(r.output_tokens for r in reports),
                     total("thought_tokens"), total("cached_read_tokens"), total("cached_write_tokens"),
                     total("total_tokens") if all(r.total_tokens is not None for r in reports) else None)


def fold_turn(turn_id: str, messages: Iterable[tuple[str, Mapping[str, Any]]]
              ) -> list[Event | FailureObservation | TurnEnd]:
    """Fold one turn's notifications (in wire order) into the steps the runtime carries out."""
    return fold_steps(TurnTranslator(turn_id), messages)


__all__ = ["RetryProgress", "Step", "TurnDone", "TurnTranslator", "fold_turn", "turn_of"]
