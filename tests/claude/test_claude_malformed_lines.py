"""The fold and the content functions on stream-json a Claude CLI should never write (issue 25,
item 3): wrong-typed fields are never forwarded and never raise; what cannot be shown is skipped.

Every update a case yields is checked against the ACP SDK's schema, as a client would read it;
the last table takes every captured CLI line with one field of a wrong type.
"""

from __future__ import annotations

from typing import Any

import pytest

from acp_agent.backends.events import TerminalExited, TerminalStarted, TurnEnd
from acp_agent.wire.acp import ToolCall, ToolCallUpdate, agent_text
from acp_agent_claude import classify, content
from acp_agent_claude.fold import TurnFold
from tests.claude.replay import FIXTURES, new_fold, raw_lines
from tests.malformed import acp_problems, mutations, shape


def stream(event: Any) -> dict[str, Any]:
    return {"type": "stream_event", "event": event, "parent_tool_use_id": None}


def delta(value: Any) -> dict[str, Any]:
    return stream({"type": "content_block_delta", "index": 0, "delta": value})


def assistant(blocks: Any, message_id: Any = "msg_1", parent: Any = None) -> dict[str, Any]:
    return {"type": "assistant", "parent_tool_use_id": parent,
            "message": {"id": message_id, "model": "claude-test", "content": blocks}}


def tool_result(block: dict[str, Any], result: Any = None) -> dict[str, Any]:
    return {"type": "user", "message": {"content": [{"type": "tool_result", **block}]}, "tool_use_result": result}


def use(tool_id: Any = "toolu_1", name: Any = "Edit", tool_input: Any = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def shown(events: list[Any]) -> list[Any]:
    """The ACP updates among the events (a terminal's as clients without terminals see it)."""
    updates = [event.call if isinstance(event, TerminalStarted) else
               event.update if isinstance(event, TerminalExited) else event for event in events]
    return [update for update in updates if hasattr(update, "session_update")]


# (case, lines fed in order, the updates expected from the last line)
CASES: list[tuple[str, list[Any], list[Any]]] = [
    ("text delta is a number", [delta({"type": "text_delta", "text": 5})], []),
    ("thinking delta is a list", [delta({"type": "thinking_delta", "thinking": ["x"]})], []),
    ("delta is a string", [delta("text_delta")], []),
    ("event is a list", [stream([1])], []),
    ("message_start id is a list", [stream({"type": "message_start", "message": {"id": [1]}}),
                                    delta({"type": "text_delta", "text": "ok"})], [agent_text("ok")]),
    ("assistant id is unhashable", [assistant([{"type": "text", "text": "ok"}], message_id={"a": 1})],
     [agent_text("ok")]),
    ("text block is an object", [assistant([{"type": "text", "text": {"t": 1}}])], []),
    ("thinking block is a number", [assistant([{"type": "thinking", "thinking": 3}])], []),
    ("content is a string of blocks", [assistant("not a list")], []),
    ("tool_use id null, name a number", [assistant([use(None, 5, "not an object")])], []),
    ("tool_use id empty", [assistant([use("", "Bash", {"command": "ls"})])], []),
    ("tool_use input a string", [assistant([use("toolu_1", "Edit", "x")])],
     [ToolCall(tool_call_id="toolu_1", title="Edit", kind="edit", status="pending", raw_input={})]),
    ("edit texts of the wrong type", [assistant([use("toolu_1", "Edit", {
        "file_path": "/w/a.py", "new_string": 7, "old_string": ["y"]})])],
     [ToolCall(tool_call_id="toolu_1", title="Edit /w/a.py", kind="edit", status="pending",
               locations=[content.ToolLocation("/w/a.py")],
               raw_input={"file_path": "/w/a.py", "new_string": 7, "old_string": ["y"]})]),
    ("title fields of the wrong type", [assistant([use("toolu_1", "Bash", {"command": {"rm": "-rf"}})])],
     [ToolCall(tool_call_id="toolu_1", title="Bash", kind="execute", status="pending",
               raw_input={"command": {"rm": "-rf"}})]),
    ("multi-edit entries of the wrong type", [assistant([use("toolu_1", "MultiEdit", {
        "file_path": 3, "edits": [{"new_string": 1}, "x"]})])],
     [ToolCall(tool_call_id="toolu_1", title="MultiEdit", kind="edit", status="pending",
               raw_input={"file_path": 3, "edits": [{"new_string": 1}, "x"]})]),
    ("subagent tool_use malformed", [assistant([use(None, None, None), {"type": "text", "text": 1}],
                                               parent="toolu_agent")], []),
    ("tool_result id a number", [tool_result({"tool_use_id": 5, "content": "x"})], []),
    ("tool_result of the wrong types", [assistant([use("toolu_1", "Read", {"file_path": "/w/a"})]),
                                        tool_result({"tool_use_id": "toolu_1", "content": [
                                            {"type": "text", "text": 4}], "is_error": "no"})],
     [ToolCallUpdate(tool_call_id="toolu_1", status="completed")]),
    ("bash output of the wrong types", [assistant([use("toolu_1", "Bash", {"command": "ls"})]),
                                        tool_result({"tool_use_id": "toolu_1", "content": 9},
                                                    {"stdout": 1, "stderr": ["e"]})],
     [ToolCallUpdate(tool_call_id="toolu_1", status="completed", raw_output={"stdout": 1, "stderr": ["e"]})]),
    ("progress ids unhashable", [{"type": "tool_progress", "tool_use_id": [1], "parent_tool_use_id": {}}], []),
    ("retry error unhashable", [{"type": "system", "subtype": "api_retry", "error": ["x"], "error_status": 500,
                                 "attempt": 1, "max_retries": 2}], None),
    ("compaction fields of the wrong type", [
        {"type": "system", "subtype": "status", "compact_result": "failed", "compact_error": {"e": 1}},
        {"type": "system", "subtype": "compact_boundary", "compact_metadata": {
            "trigger": ["auto"], "pre_tokens": "9", "post_tokens": -1}}], None),
    ("result usage of the wrong types", [{"type": "result", "subtype": "success", "usage": "lots",
                                          "modelUsage": {"m": {"contextWindow": "big"}}}], []),
    ("result usage counts of the wrong types", [{
        "type": "result", "subtype": "success", "usage": {"input_tokens": "9", "output_tokens": True},
        "modelUsage": "x"}], []),
]


@pytest.mark.parametrize(("lines", "expected"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_malformed_lines_are_skipped_not_forwarded(lines: list[Any], expected: list[Any] | None) -> None:
    fold = new_fold()
    events: list[Any] = []
    for line in lines:
        events = fold.feed(line)
        assert acp_problems(events) == []
    if expected is not None:
        assert shown(events) == expected


def test_a_skipped_tool_use_leaves_the_turn_ending_cleanly() -> None:
    """The call that was never shown is not one the turn waits for."""
    fold = new_fold()
    fold.feed(assistant([use(None, 5, {})]))
    fold.feed({"type": "result", "subtype": "success"})
    assert fold.outcome == TurnEnd("end_turn")


def test_malformed_lines_are_logged_without_their_content(caplog: pytest.LogCaptureFixture) -> None:
    fold = TurnFold()
    fold.feed(delta({"type": "text_delta", "text": 5123}))
    fold.feed(assistant([use(None, "sk-ant-secret-looking-name", {})]))
    assert "malformed text_delta" in caplog.text
    assert "malformed tool_use" in caplog.text
    assert "5123" not in caplog.text and "sk-ant" not in caplog.text


@pytest.mark.parametrize(("function", "args", "expected"), [
    (content.stream_delta, ({"type": "content_block_delta", "delta": None},), None),
    (content.tool_diffs, ("Edit", {"file_path": "/a", "new_string": "n", "old_string": 5}), []),
    (content.tool_diffs, ("Write", {"file_path": "", "content": "c"}), []),
    (content.tool_title, ("Grep", {"pattern": 5}), "Grep"),
    (content.tool_title, ("Agent", {"description": ["d"]}), "Agent"),
    (content.tool_locations, ({"file_path": ["/a"]},), []),
    (content.shell_output, ([{"type": "text", "text": None}], False, {"stdout": 5}), ""),
    (content.usage_update, ({"input_tokens": -4}, {"m": {"contextWindow": 100}}),
     content.UsageUpdate(used=0, size=100)),
    (classify.assistant_text, ({"message": {"content": [{"type": "text", "text": 5}, {"type": "text", "text": "a"}]}},),
     "a"),
])
def test_content_functions_take_wrong_types(function: Any, args: tuple[Any, ...], expected: Any) -> None:
    assert function(*args) == expected


def _fixture_mutations() -> list[tuple[str, list[dict[str, Any]], int, Any]]:
    """Every line of every captured CLI run, one field at a time of a wrong type (one row per
    kind of line and field), to be fed after the lines before it."""
    rows, seen = [], set()
    for path in sorted(FIXTURES.glob("*.jsonl")):
        _, lines = raw_lines(path.stem)
        lines = [line for line in lines if not str(line.get("type")).startswith("control_")]
        for index, line in enumerate(lines):
            event = line.get("event")
            kind = (line.get("type"), line.get("subtype"), event.get("type") if isinstance(event, dict) else None)
            for where, changed in mutations(line):
                if (kind, shape(where)) not in seen:
                    seen.add((kind, shape(where)))
                    rows.append((f"{path.stem}:{index}:{'.'.join(map(str, where))}", lines, index, changed))
    return rows


def test_no_wrong_typed_field_of_a_real_line_raises_or_reaches_the_client() -> None:
    """Table over the fixtures' lines (about 1,500 rows): each row's line with one field of
    another type, fed after the lines that came before it in that run."""
    rows = _fixture_mutations()
    assert len(rows) > 1000
    failures = []
    for name, lines, index, changed in rows:
        fold = new_fold()
        try:
            for line in lines[:index]:
                fold.feed(line)
            problems = acp_problems(fold.feed(changed))
        except Exception as exc:
            problems = [f"raised {type(exc).__name__}: {exc}"]
        failures.extend(f"{name}: {problem}" for problem in problems)
    assert failures == []
