"""Claude Code's task tools (TaskCreate / TaskUpdate / TaskList / TaskGet) as an ACP plan.

Claude Code carries the plan with these tools instead of TodoWrite. The session keeps the task
list, each confirmed change from a tool's result updates it, and the whole list goes out as one
`plan` update (as claude-agent-acp's `publishTaskPlan`); the task calls are not shown.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from attrs import define, field

from acp_agent.provider import Plan, PlanEntry

TASK_TOOLS = frozenset({"TaskCreate", "TaskUpdate", "TaskList", "TaskGet"})
Status = Literal["pending", "in_progress", "completed"]
STATUSES: frozenset[str] = frozenset({"pending", "in_progress", "completed"})
_CREATED = re.compile(r"^Task #(\S+) created successfully: (.+)$")
_LISTED = re.compile(r"^#(\S+) \[(pending|in_progress|completed)\] (.+)$")


@define
class Task:
    subject: str
    status: Status = "pending"
    active_form: str | None = None


@define
class TaskPlan:
    """One session's task list, in creation order (it outlives a turn)."""

    tasks: dict[str, Task] = field(factory=dict)

    def plan(self) -> Plan:
        return Plan([PlanEntry(content=task.active_form if task.status == "in_progress" and task.active_form
                               else task.subject, status=task.status) for task in self.tasks.values()])

    def apply(self, name: str, tool_input: Mapping[str, Any], content: Any, result: Any,
              is_error: bool) -> Plan | None:
        """A task tool's result; the new plan when it changed the list (None: nothing to show)."""
        if is_error:
            return None
        if name == "TaskCreate":
            created = _created(result) or _created_text(content)
            if created is None:
                return None
            task_id, subject = created
            active, asked = tool_input.get("activeForm"), tool_input.get("subject")
            self.tasks[task_id] = Task(subject or (asked if isinstance(asked, str) else ""),
                                       active_form=active if isinstance(active, str) else None)
            return self.plan()
        if name == "TaskUpdate":
            return self._update(tool_input, result)
        if name == "TaskList":
            listed = _listed(result) if isinstance(result, Mapping) else None
            listed = listed if listed is not None else _listed_text(content)
            if listed is None:
                return None
            previous, self.tasks = self.tasks, {}
            for task_id, subject, status in listed:
                old = previous.get(task_id)
                self.tasks[task_id] = Task(subject, status, old.active_form if old else None)
            return self.plan()
        return None

    def _update(self, tool_input: Mapping[str, Any], result: Any) -> Plan | None:
        task_id = tool_input.get("taskId")
        if not isinstance(task_id, str):
            return None
        confirmed = not isinstance(result, Mapping) or "success" not in result or (
            result.get("success") is True and result.get("taskId") == task_id)
        if not confirmed:  # only a change the CLI confirms (older CLIs confirm nothing)
            return None
        status = tool_input.get("status")
        if status == "deleted":
            self.tasks.pop(task_id, None)
            return self.plan()
        existing = self.tasks.get(task_id)
        subject = tool_input.get("subject") or (existing.subject if existing else None)
        if not isinstance(subject, str) or not subject:
            return None
        active = tool_input.get("activeForm")
        self.tasks[task_id] = Task(
            subject,
            status if status in STATUSES else (existing.status if existing else "pending"),
            active if isinstance(active, str) else (existing.active_form if existing else None))
        return self.plan()


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [part["text"] for part in content
                if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)]
    return []


def _parsed(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def _created(result: Any) -> tuple[str, str] | None:
    task = _parsed(result).get("task") if isinstance(_parsed(result), Mapping) else None
    if isinstance(task, Mapping) and isinstance(task.get("id"), str):
        return task["id"], task["subject"] if isinstance(task.get("subject"), str) else ""
    return None


def _created_text(content: Any) -> tuple[str, str] | None:
    for text in _texts(content):
        match = _CREATED.match(text.strip())
        if match:
            return match[1], match[2]
    return None


def _listed(result: Mapping[str, Any]) -> list[tuple[str, str, Status]] | None:
    tasks = result.get("tasks")
    if not isinstance(tasks, list):
        return None
    listed: list[tuple[str, str, Status]] = []
    for task in tasks:
        if not (isinstance(task, Mapping) and isinstance(task.get("id"), str)
                and isinstance(task.get("subject"), str) and task.get("status") in STATUSES):
            return None
        listed.append((task["id"], task["subject"], task["status"]))
    return listed


def _listed_text(content: Any) -> list[tuple[str, str, Status]] | None:
    for text in _texts(content):
        if text.strip() == "No tasks found":
            return []
        listed: list[tuple[str, str, Status]] = []
        for line in text.strip().splitlines():
            match = _LISTED.match(line)
            if match is None:
                break
            subject = re.sub(r" \[blocked by #[^\]]+\]$", "", match[3])
            listed.append((match[1], subject, match[2]))  # type: ignore[arg-type]
        else:
            if listed:
                return listed
    return None
