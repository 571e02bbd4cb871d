"""Claude Code's background commands as AIR's `asyncTasks` (claude-agent-acp's async-tasks.js).

A Bash call with `run_in_background: true` returns at once; the CLI reports its command as a task:
`system/task_started` (`task_type: local_bash`, `is_backgrounded`, the call's `tool_use_id`),
maybe `task_progress`, then `task_updated {patch: {status}}` and `task_notification {status,
output_file, summary}` when it ends, often after the turn's result. The CLI then starts a turn
of its own to tell the model (`Autonomous`). `BashTasks` is one session's registry across its
turns: each line in, the `AsyncTask` events out (`async_task_spawned`, `async_task_progress`,
`async_task_state_update`, the fields as claude-agent-acp sends them). A subagent's task is not
one of them (the subagent machinery shows it). The core sends them only to a client of
`asyncTasks`.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Literal

from attrs import define, field

from acp_agent.provider import (
    UNSET,
    AsyncTask,
    AsyncTaskProgress,
    AsyncTaskSpawned,
    AsyncTaskStateUpdate,
    BackgroundedCall,
    Event,
    Notice,
    TerminalExited,
)

State = Literal["running", "paused", "completed", "failed", "stopped"]
_STATES: dict[Any, State] = {
    "pending": "running", "running": "running", "paused": "paused", "completed": "completed",
    "failed": "failed", "killed": "stopped", "cancelled": "stopped", "stopped": "stopped"}
_TERMINAL = frozenset({"completed", "failed", "stopped"})
_TYPES = {"local_bash": "shell", "local_workflow": "workflow", "local_monitor": "monitor", "mcp": "monitor"}
_OUTPUT_PATH = re.compile(r"[/\\]tasks[/\\][^\s/\\]+?\.output(?=\.(?!\w)|\s|$)")
MAX_RESULT_PATHS = 500


@define
class BashTask:
    task_id: str
    name: str = "Background task"
    task_type: str = "task"
    description: str = "Background task"
    show_in_transcript: bool = True
    monitor: bool = False
    tool_call_id: str | None = None
    output_file_path: str | None = None
    state: State = "running"
    summary: str | None = None
    announced: bool = False
    held: bool = False
    """Backgrounded, waiting for its tool call id (its spawn names the call)."""
    ignored: bool = False
    stopping: bool = False
    stop_announced: bool = False
    autonomous: bool = False
    """It stands for a turn the CLI started on its own (a stop interrupts that turn)."""
    published: dict[str, Any] = field(factory=dict)


@define
class BashTasks:
    """One session's background tasks (a background command outlives its turn)."""

    tasks: dict[str, BashTask] = field(factory=dict)
    result_paths: dict[str, list[str]] = field(factory=dict)
    """The task output paths in each tool result's text, by tool call (the newest kept)."""
    own_turn: BashTask | None = None
    last_summary: str | None = None

    # -- what the CLI reports -------------------------------------------------------------------

    def line(self, data: Mapping[str, Any]) -> list[Event]:
        """A `system` line of a task (`task_started`, `task_updated`, `task_progress`,
        `task_notification`); any other line: nothing."""
        fold = _LINES.get(data.get("subtype"))
        return fold(self, data) if fold is not None else []

    def bash_result(self, exited: TerminalExited, body: Any, result: Any, tool_input: Mapping[str, Any],
                    is_error: bool) -> tuple[list[Event], TerminalExited | BackgroundedCall]:
        """A Bash call's result (`exited`): its background task's updates, and the result as
        shown, marked when the command went on in the background."""
        tool_id = exited.tool_call_id
        events, backgrounded = self.tool_result(tool_id, body, result, tool_input, is_error)
        return events, BackgroundedCall(tool_id, exited) if backgrounded else exited

    def started(self, data: Mapping[str, Any]) -> list[Event]:
        """`task_started` (or a Bash result naming its background task)."""
        task = self._task(data)
        if task is None:
            return []
        if _subagent(data):
            self._ignore(task)
            return []
        raw_type = data.get("task_type")
        if isinstance(raw_type, str):
            task.task_type = _TYPES.get(raw_type, raw_type.strip() or "task")
            task.monitor = task.monitor or raw_type == "local_monitor"
        description = _text(data.get("description"))
        if description:
            task.description = description
        elif task.description == "Background task" and task.task_type != "task":
            task.description = task.task_type.capitalize()
        task.name = _text(data.get("workflow_name")) or task.description
        if isinstance(data.get("skip_transcript"), bool):
            task.show_in_transcript = not data["skip_transcript"]
        self._merge(task, data)
        backgrounded = data.get("is_backgrounded")
        if backgrounded is True or (backgrounded is None and raw_type not in ("local_bash", "local_agent")) \
                or task.held:
            return self._announce(task)
        return []

    def updated(self, data: Mapping[str, Any]) -> list[Event]:
        """`task_updated {task_id, patch}`: a foreground command sent to the background, a new
        state, an output path."""
        task, patch = self._task(data), data.get("patch")
        if task is None or not isinstance(patch, Mapping) or task.ignored:
            return []
        before = task.output_file_path
        description = _text(patch.get("description"))
        if description:
            task.description = task.name = description
        self._merge(task, patch)
        events = self._announce(task) if patch.get("is_backgrounded") is True else []
        state = _STATES.get(patch.get("status"))
        if state is None or (state in ("running", "paused") and (task.state in _TERMINAL or task.state == state)):
            if task.announced and task.output_file_path != before:
                events.extend(self._metadata(task))
            return events
        if state in ("running", "paused"):
            task.state = state
            return events + (self._state(task, state, _text(patch.get("error"))) if task.announced else [])
        return events + self._finish(task, state, _text(patch.get("error")))

    def progress(self, data: Mapping[str, Any]) -> list[Event]:
        """`task_progress`: what a running task says of itself."""
        task = self.tasks.get(_text(data.get("task_id")) or "")
        if task is None or task.ignored or not (task.announced or task.held):
            return []
        before = (task.output_file_path, task.tool_call_id)
        self._merge(task, data)
        if task.state in _TERMINAL:
            return self._metadata(task) if task.output_file_path != before[0] else []
        changed = {"description": _text(data.get("description")), "summary": _text(data.get("summary")),
                   "output_file_path": task.output_file_path if task.output_file_path != before[0] else None,
                   "tool_call_id": task.tool_call_id if task.tool_call_id != before[1] else None}
        events = self._announce(task) if task.held and task.tool_call_id else []
        return events + self._progress(task, changed) if task.announced else events

    def notification(self, data: Mapping[str, Any]) -> list[Event]:
        """`task_notification`: the task ended (its state, summary, output file)."""
        state = _STATES.get(data.get("status"))
        task = self._task(data)
        if task is None or state is None or state in ("running", "paused"):
            return []
        self.last_summary = _text(data.get("summary")) or self.last_summary
        before = task.output_file_path
        self._merge(task, data)
        was_terminal = task.state in _TERMINAL
        events = self._finish(task, state, _text(data.get("summary")))
        if was_terminal and task.announced and task.output_file_path != before:
            events.extend(self._metadata(task))
        return events

    def tool_result(self, tool_id: str, body: Any, result: Any, tool_input: Mapping[str, Any],
                    is_error: bool) -> tuple[list[Event], bool]:
        """A Bash call's result: the task it names (`backgroundTaskId`), the output path its
        text gives, and whether the call went to the background (its update is marked so)."""
        events: list[Event] = []
        task_id = _text(result.get("backgroundTaskId")) if isinstance(result, Mapping) else None
        text = _text_of(body)
        paths = _output_paths(text) if text else []
        if paths:
            self.result_paths.pop(tool_id, None)
            self.result_paths[tool_id] = paths
            if len(self.result_paths) > MAX_RESULT_PATHS:
                self.result_paths.pop(next(iter(self.result_paths)))
        if task_id is not None:
            known = self.tasks.get(task_id)
            if known is None or not known.announced:
                events.extend(self.started({
                    "task_id": task_id, "task_type": "local_bash", "is_backgrounded": True,
                    "description": _text(tool_input.get("command")), "tool_use_id": tool_id}))
        for task in self.tasks.values():
            if (task.tool_call_id == tool_id and not task.ignored and task.output_file_path is None
                    and self._path_from_result(task) is not None and task.announced):
                events.extend(self._metadata(task))
        backgrounded = (task_id is not None or any(
            task.tool_call_id == tool_id and not task.ignored and (task.announced or task.held)
            for task in self.tasks.values()) or (tool_input.get("run_in_background") is True and not is_error))
        return events, backgrounded

    def turn_result(self) -> list[Event]:
        """The turn's result: a task still held for its tool call id is announced without it."""
        events: list[Event] = []
        for task in list(self.tasks.values()):
            if task.held:
                events.extend(self._announce(task, without_call=True))
        return events

    def own_turn_started(self) -> list[Event]:
        """The CLI started a turn with no prompt open (to tell the model a task ended): a task
        of its own ("Claude is working"), so the client sees the agent work."""
        if self.own_turn is not None:
            return []
        task = BashTask(f"autonomous-turn-{uuid.uuid4()}", name="Claude is working", task_type="turn",
                        description=self.last_summary or "Claude Code started a turn without a prompt.",
                        show_in_transcript=False, autonomous=True)
        self.tasks[task.task_id] = task
        self.own_turn, self.last_summary = task, None
        return self._announce(task, without_call=True)

    def own_turn_ended(self, failed: bool) -> list[Event]:
        task, self.own_turn = self.own_turn, None
        return self._finish(task, "failed" if failed else "completed", None) if task is not None else []

    def finish_all(self) -> list[Event]:
        """The CLI is gone: what it ran in the background went with it."""
        self.own_turn = None
        events: list[Event] = []
        for task in self.tasks.values():
            if (task.announced or task.held) and not task.ignored and task.state not in _TERMINAL:
                events.extend(self._finish(task, "stopped", None))
        return events

    def running(self) -> bool:
        """Whether a background command is still running (the CLI must stay for it)."""
        return any(task.announced and not task.autonomous and task.state not in _TERMINAL
                   for task in self.tasks.values())

    # -- stopping -------------------------------------------------------------------------------

    def known(self, task_id: str) -> bool:
        task = self.tasks.get(task_id)
        return task is not None and task.announced

    def claim_stop(self, task_id: str) -> BashTask | None:
        """The task, marked as being stopped, when the client may stop it now."""
        task = self.tasks.get(task_id)
        if task is None or not task.announced or task.monitor or task.ignored or task.stopping \
                or task.state in _TERMINAL:
            return None
        task.stopping = True
        return task

    def release_stop(self, task_id: str) -> None:
        task = self.tasks.get(task_id)
        if task is not None and task.state not in _TERMINAL:
            task.stopping = False

    def stopped(self, task_id: str) -> list[Event]:
        """The CLI stopped the task the user asked to stop: its end (unless the CLI's own report
        came first) and one acknowledgement, as claude-agent-acp gives it."""
        task = self.tasks.get(task_id)
        if task is None or not task.announced or task.stop_announced:
            return []
        task.stop_announced = True
        if self.own_turn is task:
            self.own_turn = None
        title, description = "Task stopped by user", f"{task.name}."
        return [*self._finish(task, "stopped", None),
                Notice(title, description, legacy_text=f"**{title}:** {description}", severity="info")]

    # -- the wire ---------------------------------------------------------------------------------

    def _task(self, data: Mapping[str, Any]) -> BashTask | None:
        task_id = _text(data.get("task_id"))
        if task_id is None:
            return None
        return self.tasks.setdefault(task_id, BashTask(task_id))

    @staticmethod
    def _ignore(task: BashTask) -> None:
        if not task.announced:
            task.ignored, task.held = True, False

    def _merge(self, task: BashTask, data: Mapping[str, Any]) -> None:
        path = _text(data.get("output_file"))
        if path:
            task.output_file_path = path
        task.tool_call_id = task.tool_call_id or _text(data.get("tool_use_id"))
        self._path_from_result(task)

    def _path_from_result(self, task: BashTask) -> str | None:
        """The output path its call's result gave, where nothing else gave one (the path found)."""
        if task.output_file_path is None and task.tool_call_id is not None:
            for path in self.result_paths.get(task.tool_call_id, ()):
                if path.endswith((f"/tasks/{task.task_id}.output", f"\\tasks\\{task.task_id}.output")):
                    task.output_file_path = path
                    return path
        return None

    def _announce(self, task: BashTask, *, without_call: bool = False) -> list[Event]:
        if task.announced or task.ignored:
            return []
        if task.tool_call_id is None and not without_call and task.state not in _TERMINAL:
            task.held = True
            return []
        task.announced, task.held = True, False
        events: list[Event] = [AsyncTask(AsyncTaskSpawned(
            task.task_id, task.name, task.task_type, task.description, task.show_in_transcript,
            not task.monitor, output_file_path=task.output_file_path or UNSET,
            tool_call_id=task.tool_call_id or UNSET))]
        task.published.update({"description": task.description, "output_file_path": task.output_file_path,
                               "tool_call_id": task.tool_call_id})
        if task.state in _TERMINAL:
            events.extend(self._state(task, task.state, task.summary))
        return events

    def _finish(self, task: BashTask, state: State, summary: str | None) -> list[Event]:
        if task.ignored or task.state in _TERMINAL:
            return []
        task.state, task.summary = state, summary
        if task.announced:
            return self._state(task, state, summary)
        return self._announce(task) if task.held else []

    def _metadata(self, task: BashTask) -> list[Event]:
        if task.state in _TERMINAL:
            return self._state(task, task.state, task.summary)
        return self._progress(task, {"output_file_path": task.output_file_path, "tool_call_id": task.tool_call_id})

    def _changed(self, task: BashTask, fields: Mapping[str, Any]) -> dict[str, Any]:
        changed = {key: value for key, value in fields.items()
                   if value is not None and task.published.get(key) != value}
        task.published.update(changed)
        return changed

    def _progress(self, task: BashTask, fields: Mapping[str, Any]) -> list[Event]:
        changed = self._changed(task, fields)
        return [AsyncTask(AsyncTaskProgress(task.task_id, **changed))] if changed else []

    def _state(self, task: BashTask, state: State, summary: str | None) -> list[Event]:
        changed = self._changed(task, {"output_file_path": task.output_file_path, "tool_call_id": task.tool_call_id})
        return [AsyncTask(AsyncTaskStateUpdate(task.task_id, state, summary=summary or UNSET, **changed))]


_LINES: dict[Any, Callable[[BashTasks, Mapping[str, Any]], list[Event]]] = {
    "task_started": BashTasks.started, "task_updated": BashTasks.updated, "task_progress": BashTasks.progress,
    "task_notification": BashTasks.notification}


def _subagent(data: Mapping[str, Any]) -> bool:
    return data.get("subagent_type") is not None or data.get("task_type") == "local_agent"


def _output_paths(text: str) -> list[str]:
    """The task output paths in a tool result's text: absolute paths ending `tasks/<id>.output`,
    each after the `": "` nearest before it on its line (as claude-agent-acp reads them)."""
    paths: list[str] = []
    previous_end = 0
    for match in _OUTPUT_PATH.finditer(text):
        start = -1
        for i in range(match.start() - 1, previous_end - 1, -1):
            if text[i] in "\r\n":
                break
            if text[i] == ":" and text[i + 1:i + 2] == " ":
                start = i + 2
                break
        previous_end = match.end()
        if start >= 0:
            path = text[start:match.end()]
            if re.match(r"^(?:/|[A-Za-z]:[\\/]|\\\\)", path):
                paths.append(path)
    return paths


def _text_of(value: Any, depth: int = 0) -> str | None:
    """A tool result's text (a string, text blocks, or a block's `content`)."""
    if isinstance(value, str):
        return value
    if depth > 8:
        return None
    if isinstance(value, list):
        parts = [part for part in (_text_of(item, depth + 1) for item in value) if part is not None]
        return "".join(parts) if parts else None
    if isinstance(value, Mapping):
        if isinstance(value.get("text"), str):
            return str(value["text"])
        return _text_of(value.get("content"), depth + 1)
    return None


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None
