"""AIR's `agentFileChangeReport`: which prompts ask for one, which tool calls count, and the
paths as the reference adapters normalise them (pure, plus a scratch directory)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from acp_agent.sessions.file_changes import ChangedFiles, normalized, report_update, requested_id
from acp_agent.wire import acp
from acp_agent.wire.convert import make_converter


def air(request: Any) -> dict[str, Any]:
    return {"jetbrains": {"air": {"agentFileChangeReportRequest": request}}}


REQUESTS = [
    ("valid", air({"version": 1, "requestId": "r-1.a:b_c"}), "r-1.a:b_c"),
    ("no meta", None, None),
    ("no request", {"jetbrains": {"air": {}}}, None),
    ("another version", air({"version": 2, "requestId": "r1"}), None),
    ("version true", air({"version": True, "requestId": "r1"}), None),
    ("no version", air({"requestId": "r1"}), None),
    ("an extra key", air({"version": 1, "requestId": "r1", "more": 1}), None),
    ("an id with a space", air({"version": 1, "requestId": "r 1"}), None),
    ("an id too long", air({"version": 1, "requestId": "r" * 129}), None),
    ("an id not a string", air({"version": 1, "requestId": 7}), None),
]


@pytest.mark.parametrize(("meta", "expected"), [row[1:] for row in REQUESTS], ids=[row[0] for row in REQUESTS])
def test_the_request_is_read_as_both_anchors_read_it(meta: Any, expected: str | None) -> None:
    assert requested_id(meta) == expected


def edit(tool_id: str, path: str, status: acp.ToolStatus = "pending", kind: acp.ToolKind = "edit") -> acp.ToolCall:
    return acp.ToolCall(tool_id, f"Edit {path}", kind=kind, status=status, locations=[acp.ToolLocation(path)])


def test_only_completed_edits_count() -> None:
    changes = ChangedFiles("r1")
    changes.take(edit("a", "/w/a.txt"))
    changes.take(acp.ToolCallUpdate("a", status="completed"))  # the kind and path come from the call
    changes.take(edit("b", "/w/b.txt"))
    changes.take(acp.ToolCallUpdate("b", status="failed"))
    changes.take(edit("c", "/w/c.txt", kind="execute"))
    changes.take(acp.ToolCallUpdate("c", status="completed"))
    changes.take(edit("d", "/w/d.txt", status="in_progress"))  # never finished
    changes.take(acp.ToolCall("e", "Add e", kind="edit", status="completed",
                              content=[acp.ToolDiff("/w/e.txt", "x", None)]))
    changes.take(acp.ToolCall("f", "Move", kind="move", status="in_progress",
                              patches=(acp.FilePatch("/w/new.txt", "update", hunks="", old_path="/w/old.txt"),)))
    changes.take(acp.ToolCallUpdate("f", status="completed"))
    changes.take(edit("a", "/w/a.txt", status="completed"))  # again: once
    assert list(changes.paths) == ["/w/a.txt", "/w/e.txt", "/w/new.txt", "/w/old.txt"]


def test_paths_are_absolute_canonical_and_inside_the_workspace(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    extra = tmp_path / "extra"
    extra.mkdir()
    link = tmp_path / "link"
    link.symlink_to(work)
    paths, truncated = normalized(
        ["src/a.py", str(work / "src" / "a.py"), str(link / "b.py"), str(extra / "c.py"),
         str(tmp_path / "outside.py"), str(work), "../escape.py", "bad\nname", "new/dir/d.py"],
        str(work), [str(extra)])
    real = os.path.realpath(work)
    assert paths == [f"{real}/src/a.py", f"{real}/b.py", f"{os.path.realpath(extra)}/c.py",
                     f"{real}/new/dir/d.py"]
    assert truncated is True
    assert normalized(["a.py"], str(work), []) == ([f"{real}/a.py"], False)


def test_the_report_and_its_update(tmp_path: Path) -> None:
    changes = ChangedFiles("r1")
    changes.take(edit("a", str(tmp_path / "a.txt"), status="completed"))
    report = changes.report(str(tmp_path), [])
    assert report == {"version": 1, "requestId": "r1", "status": "reported",
                      "paths": [os.path.realpath(tmp_path / "a.txt")], "declaredComplete": False,
                      "truncated": False}
    assert changes.unavailable("cancelled") == {"version": 1, "requestId": "r1", "status": "unavailable",
                                                "reason": "cancelled"}
    assert make_converter().unstructure(report_update(report)) == {
        "sessionUpdate": "session_info_update",
        "_meta": {"jetbrains": {"air": {"version": 1, "agentFileChangeReport": report}}}}
