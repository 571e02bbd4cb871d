"""The Muse translator and item mapping on host frames with fields of the wrong type (issue 25,
item 3): never raised, never forwarded as an update that is not ACP.

Each table row is one frame with one field (at any depth) of another type: items of every kind
(fed after the item's start and a streamed delta), the session facts of a turn, a resumed
session's history and the requests the runtime asks the client about.
"""

from __future__ import annotations

import json
from typing import Any

from acp_agent_muse import items
from acp_agent_muse.translate import TurnTranslator
from tests.malformed import problems_of
from tests.muse import frames as f

TOOL = f.item("tool-1", "toolCall", tool="read_file", args=json.dumps({"path": "notes.md"}), visibleOutput="o",
              failureReason="r", truncated=True, exitCode=1, displayLabel={"active": "A", "done": "D", "neutral": "N"},
              commandText="ls", label="l", summary=["s"])
ITEMS = [
    TOOL,
    f.item("sh-1", "userShell", "completed", commandText="ls", exitCode=0, visibleOutput="o"),
    f.item("think", "reasoning", "completed", 2, text="", summary=["a", "b"]),
    f.item("answer", "agentMessage", "completed", 2, text="Hello"),
    f.item("c", "compaction", "completed", outcome="failed", tokensBefore=5, tokensAfter=3, trigger="auto",
           failureReason="x"),
]
FACTS = [
    ("session/todoListChanged", {"items": [{"status": "completed", "text": "Read"}]}),
    ("session/nameChanged", {"name": "n"}),
    ("session/contextUsage", {"usedTokens": 1, "windowTokens": 5}),
    f.turn_completed("failed", f.turn_error("x", "m")),
    f.retry_scheduled("r"),
    f.model_retry_scheduled(),
    ("turn/unqueued", {"turnId": f.TURN}),
]


def test_items_of_every_kind_with_a_wrong_typed_field() -> None:
    found = []
    for item in ITEMS:
        for frame in (f.started, f.updated, f.completed):
            method, params = frame(item)

            def run(changed: Any, method: str = method, item: dict[str, Any] = item) -> list[Any]:
                translator = TurnTranslator(f.TURN, window=100)
                translator.feed(*f.started({**item, "status": "inProgress", "revision": 0}))
                translator.feed(*f.delta(item["itemId"], "x", "visibleOutput"))
                return translator.feed(method, changed)

            found.extend(problems_of(f"{method} {item['kind']}", params, run))
    assert found == []


def test_session_facts_and_history_with_a_wrong_typed_field() -> None:
    found = []
    for method, params in FACTS:
        found.extend(problems_of(method, params, lambda changed, method=method: TurnTranslator(f.TURN).feed(
            method, changed)))
    history = {"history": {"items": [f.item("u", "userMessage", text="hi"), *ITEMS]},
               "lastTurn": {"turnId": f.TURN, "terminal": "failed", "error": f.turn_error("x", "m")}}
    found.extend(problems_of("history", history, lambda result: items.history_events(result, str)))
    assert found == []


def test_requests_to_the_client_with_a_wrong_typed_field() -> None:
    def approval(params: Any) -> list[Any]:
        items.permission_options(params)
        items.refusal_choice(params, prefer_abort=True)
        items.decide_params(params, "allow-once")
        return [items.approval_tool_call(params, TOOL)]

    found = [
        *problems_of("approval", f.approval(), approval),
        *problems_of("user input", {"questions": [{"id": "q", "question": "?", "header": "h", "selection": {
            "mode": "multiple"}, "options": [{"label": "l", "description": "d"}]}]},
            lambda params: [items.user_input_question(params)]),
    ]
    assert found == []
