"""The fold's translation of real Claude Code 2.1.332 output: task tools as a plan, Bash as a
terminal, compaction, subagent progress (fixtures captured from the bundled CLI)."""

from __future__ import annotations

from typing import Any

from acp_agent.backends.events import (
    Compaction,
    OfSubagent,
    SubagentFinished,
    SubagentLaunch,
    SubagentStarted,
    TerminalExited,
    TerminalOutput,
    TerminalStarted,
)
from acp_agent.wire.acp import Plan, PlanEntry, TextContent, ToolCall, ToolCallUpdate, ToolContent, UsageUpdate
from acp_agent_claude.content import ContextWindow
from acp_agent_claude.tasks import TaskPlan
from tests.claude.replay import fold_turns, messages, new_fold


def _of(events: list[Any], kind: type) -> list[Any]:
    """The events of `kind` a client without child sessions sees (a subagent's as before)."""
    return [event for event in _legacy(events) if isinstance(event, kind)]


def _legacy(events: list[Any]) -> list[Any]:
    out: list[Any] = []
    for event in events:
        if isinstance(event, SubagentLaunch):
            out.append(event.event)
        elif isinstance(event, OfSubagent):
            out.extend(event.legacy)
        elif not isinstance(event, SubagentStarted | SubagentFinished):
            out.append(event)
    return out


def test_task_tools_become_the_plan_and_are_not_tool_calls() -> None:
    [(events, _)] = fold_turns("task_plan_tools")
    assert _of(events, Plan) == [
        Plan([PlanEntry("Write the parser")]),
        Plan([PlanEntry("Write the parser"), PlanEntry("Test the parser")]),
        Plan([PlanEntry("Writing the parser", status="in_progress"), PlanEntry("Test the parser")]),
        Plan([PlanEntry("Writing the parser", status="in_progress"), PlanEntry("Test the parser")]),
    ]
    shown = [e.call.title if isinstance(e, TerminalStarted) else e.title for e in events
             if isinstance(e, (ToolCall, TerminalStarted))]
    assert shown == ["`echo one; sleep 3; echo two`"]
    assert not [e for e in _of(events, ToolCallUpdate) if e.tool_call_id != "toolu_fake00000014"]


def test_the_task_list_outlives_the_turn() -> None:
    """A later turn's TaskUpdate changes the list the earlier turn created (the session keeps it)."""
    tasks = TaskPlan()
    lines = messages("task_plan_tools")
    first = new_fold()
    first.tasks = tasks
    for line in lines[:7]:  # init, then both TaskCreate calls and their results
        first.feed(line)
    later = new_fold()
    later.tasks = tasks
    events = [event for line in lines[7:10] for event in later.feed(line)]
    assert _of(events, Plan) == [Plan([PlanEntry("Writing the parser", status="in_progress"),
                                       PlanEntry("Test the parser")])]


def test_task_results_parsed_from_text_as_older_clis_wrote_them() -> None:
    tasks = TaskPlan()
    tasks.apply("TaskCreate", {"subject": "A"}, "Task #7 created successfully: A", None, False)
    assert tasks.apply("TaskList", {}, "#7 [completed] A\n#8 [pending] B [blocked by #7]", None, False) == Plan(
        [PlanEntry("A", status="completed"), PlanEntry("B")])
    assert tasks.apply("TaskUpdate", {"taskId": "8", "status": "deleted"}, "Updated task #8", None, False) == Plan(
        [PlanEntry("A", status="completed")])
    # a failed or unconfirmed change changes nothing
    assert tasks.apply("TaskUpdate", {"taskId": "7", "status": "pending"}, "x",
                       {"success": False, "taskId": "7", "updatedFields": []}, False) is None
    assert tasks.apply("TaskCreate", {"subject": "C"}, "boom", None, True) is None


def test_bash_is_a_terminal_with_its_output_and_exit_code() -> None:
    [(events, _)] = fold_turns("task_plan_tools")
    [started] = _of(events, TerminalStarted)
    [exited] = _of(events, TerminalExited)
    assert started.call.kind == "execute" and started.call.tool_call_id == exited.tool_call_id
    assert (exited.exit_code, exited.output) == (0, "one\ntwo")
    # clients without terminals get exactly today's update
    assert exited.update.content == [ToolContent(TextContent("```\none\ntwo\n```"))]
    assert exited.update.status == "completed" and exited.legacy


def test_compact_is_one_compaction_event_with_its_numbers() -> None:
    turns = fold_turns("bash_agent_compact")
    compact_events = turns[1][0]
    compactions = _of(compact_events, Compaction)
    ids = {event.compaction_id for event in compactions}
    assert len(ids) == 1
    assert [event.status for event in compactions] == ["in_progress", "completed", "completed"]
    assert (compactions[-1].trigger, compactions[-1].tokens_before, compactions[-1].tokens_after) == ("manual", 3537, 2692)


def test_subagent_text_shows_on_its_agent_call_not_as_the_agents_answer() -> None:
    [(events, _), *_] = fold_turns("bash_agent_compact")
    texts = [e.content.text for e in events if getattr(e, "session_update", None) == "agent_message_chunk"]
    assert "subagent report" not in texts
    on_call = [e for e in _of(events, ToolCallUpdate) if e.tool_call_id == "toolu_fake00000005" and e.content]
    assert on_call[-1].content == [ToolContent(TextContent("subagent report"))]


def test_failed_bash_carries_its_exit_code() -> None:
    fold = new_fold()
    fold.feed({"type": "assistant", "message": {"id": "m", "content": [
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "false"}}]}})
    [exited] = fold.feed({"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": "Exit code 3\nbad"}]}})
    assert isinstance(exited, TerminalExited) and exited.exit_code == 3 and exited.update.status == "failed"


# tool_progress lines in the shapes Claude Code 2.1.332 writes them (from its own source: the
# CLI emits them only for remote calls, spend-capped accounts and hook heartbeats, which the
# fake cannot provoke); session_id/uuid omitted.
BASH_BEAT = {"type": "tool_progress", "tool_use_id": "t1", "tool_name": "Bash", "parent_tool_use_id": None,
             "elapsed_time_seconds": 4, "task_id": "b1"}
HOOK_BEAT = {"type": "tool_progress", "tool_use_id": "hook-PreToolUse-t1-heartbeat-0", "tool_name": "PreToolUse",
             "parent_tool_use_id": "t1", "elapsed_time_seconds": 2}


def test_tool_progress_reports_the_running_bash_call() -> None:
    fold = new_fold()
    fold.feed({"type": "assistant", "message": {"id": "m", "content": [
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "sleep 9"}}]}})
    for beat, elapsed in ((BASH_BEAT, 4), (HOOK_BEAT, 2)):
        [progress] = fold.feed(beat)
        assert isinstance(progress, TerminalOutput) and progress.data == ""
        assert progress.legacy == ToolCallUpdate(tool_call_id="t1", status="in_progress", meta={
            "claudeCode": {"toolName": "Bash", "toolResponse": {"elapsedTimeSeconds": elapsed}}})
    fold.feed({"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "done"}]}})
    assert fold.feed(BASH_BEAT) == []  # a beat after the result never reopens the call
    assert new_fold().feed(BASH_BEAT) == []  # nor one for a call this turn never showed


def test_automatic_compaction_is_the_same_event() -> None:
    [_, (events, outcome)] = fold_turns("auto_compact")
    compactions = _of(events, Compaction)
    assert len({event.compaction_id for event in compactions}) == 1
    assert [event.status for event in compactions] == ["in_progress", "completed", "completed"]
    assert (compactions[-1].trigger, compactions[-1].tokens_before) == ("auto", 990009)
    assert outcome.stop_reason == "end_turn"


def test_a_subagents_calls_are_marked_and_may_outlive_the_turn() -> None:
    from acp_agent.backends.events import TurnEnd

    fold = new_fold()
    fold.feed({"type": "assistant", "message": {"id": "m1", "content": [
        {"type": "tool_use", "id": "a1", "name": "Agent", "input": {"description": "Look", "prompt": "p"}}]}})
    [started] = fold.feed({"type": "assistant", "parent_tool_use_id": "a1", "message": {"id": "m2", "content": [
        {"type": "tool_use", "id": "s1", "name": "Bash", "input": {"command": "sleep 9"}}]}})
    assert isinstance(started, TerminalStarted) and started.call.meta == {"claudeCode": {"parentToolUseId": "a1"}}
    [beat] = fold.feed({**BASH_BEAT, "tool_use_id": "s1", "parent_tool_use_id": "a1"})
    assert isinstance(beat, TerminalOutput) and beat.tool_call_id == "s1"
    fold.feed({"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "a1", "content": "Async agent launched successfully."}]}})
    # the background subagent's Bash call is still running when the main loop ends the turn
    fold.feed({"type": "result", "subtype": "success", "is_error": False, "stop_reason": "end_turn"})
    assert fold.outcome == TurnEnd("end_turn")


def _session_turns(name: str) -> list[list[Any]]:
    """Each turn's events, with one context window kept across turns as the runtime keeps it."""
    window, turns, events = ContextWindow(), [], []
    fold = new_fold()
    fold.window = window
    for message in messages(name):
        events.extend(fold.feed(message))
        if fold.outcome is not None:
            turns.append(events)
            fold, events = new_fold(), []
            fold.window = window
    return turns


def test_compact_publishes_the_context_kept() -> None:
    """`/compact` makes no model call: the boundary's post_tokens is the context now, at once
    and in the turn's result (whose usage is all zeros), against the window learnt earlier."""
    first, compacted, after = _session_turns("bash_agent_compact")[:3]
    [size] = {u.size for u in _of(first, UsageUpdate)}
    assert size > 0
    assert [(u.used, u.size) for u in _of(compacted, UsageUpdate)] == [(2692, size), (2692, size)]
    boundary = next(i for i, e in enumerate(compacted) if isinstance(e, Compaction) and e.tokens_after)
    assert isinstance(compacted[boundary + 1], UsageUpdate)  # right after the compaction's numbers
    assert [u.used for u in _of(after, UsageUpdate)] == [3222 + 7]  # the next answer's own usage


def test_automatic_compaction_publishes_the_context_kept() -> None:
    _, compacted = _session_turns("auto_compact")
    used = [u.used for u in _of(compacted, UsageUpdate)]
    assert used == [2595, 2981 + 7]  # at the boundary, then the answer after it
