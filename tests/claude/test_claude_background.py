"""`bash_tasks.BashTasks`: Claude Code's task lines as AIR's `asyncTasks` updates, in the cases the
e2e tests do not drive (a subagent's task, a task without its tool call, a stop that races the
CLI's own report)."""

from __future__ import annotations

from typing import Any

from acp_agent.provider import UNSET, AsyncTask, Notice
from acp_agent_claude.bash_tasks import BashTasks


def _wire(events: list[Any]) -> list[tuple[str, str, Any]]:
    return [(e.update.session_update, e.update.async_task_id, getattr(e.update, "state", None))
            if isinstance(e, AsyncTask) else ("notice", e.title, None) for e in events]


def test_a_subagents_task_is_not_a_background_task() -> None:
    tasks = BashTasks()
    assert tasks.started({"task_id": "a1", "task_type": "local_agent", "subagent_type": "general-purpose",
                          "tool_use_id": "toolu_1", "is_backgrounded": True}) == []
    assert tasks.notification({"task_id": "a1", "status": "completed", "tool_use_id": "toolu_1"}) == []
    assert not tasks.known("a1") and not tasks.running()


def test_a_task_without_its_tool_call_is_announced_at_the_turns_result() -> None:
    tasks = BashTasks()
    assert tasks.started({"task_id": "b1", "task_type": "local_bash", "is_backgrounded": True,
                          "description": "serve"}) == []
    [spawned] = tasks.turn_result()
    assert isinstance(spawned, AsyncTask) and spawned.update.session_update == "async_task_spawned"
    assert spawned.update.name == "serve" and spawned.update.tool_call_id is UNSET
    assert tasks.running()


def test_the_output_path_comes_from_the_calls_result_text() -> None:
    tasks = BashTasks()
    tasks.started({"task_id": "b2", "task_type": "local_bash", "is_backgrounded": True, "tool_use_id": "toolu_2"})
    body = [{"type": "text", "text": "Command running in background with ID: b2. Output is being written to: "
                                     "/tmp/x y/tasks/b2.output. You will be notified."}]
    events, backgrounded = tasks.tool_result("toolu_2", body, {"backgroundTaskId": "b2"}, {}, False)
    assert backgrounded
    [progress] = events
    assert isinstance(progress, AsyncTask) and progress.update.output_file_path == "/tmp/x y/tasks/b2.output"
    # a foreground call is not marked
    assert tasks.tool_result("toolu_3", "done", {}, {"command": "ls"}, False) == ([], False)


def test_a_stop_and_the_clis_own_report_end_the_task_once() -> None:
    tasks = BashTasks()
    tasks.started({"task_id": "b3", "task_type": "local_bash", "is_backgrounded": True, "tool_use_id": "toolu_4"})
    assert tasks.claim_stop("b3") is not None
    assert tasks.claim_stop("b3") is None  # a stop under way
    assert _wire(tasks.updated({"task_id": "b3", "patch": {"status": "killed"}})) == [
        ("async_task_state_update", "b3", "stopped")]
    stopped = tasks.stopped("b3")
    assert _wire(stopped) == [("notice", "Task stopped by user", None)]
    assert isinstance(stopped[0], Notice) and stopped[0].severity == "info"
    assert tasks.notification({"task_id": "b3", "status": "stopped"}) == []
    assert tasks.claim_stop("b3") is None and not tasks.running()
