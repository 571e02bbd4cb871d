"""AIR's `diffPatch`: the git patch of a file's change, as the reference adapters write it, and
proof that git applies it (pure, plus `git apply` in a scratch repository)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from acp_agent.sessions.patches import git_patch, unified_hunks, with_patches
from acp_agent.wire import acp
from acp_agent.wire.convert import make_converter

P = acp.FilePatch
TABLE = [
    ("create", P("/w/new.txt", "add", new_text="one\ntwo\n"),
     "diff --git a/w/new.txt b/w/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/w/new.txt\n"
     "@@ -0,0 +1,2 @@\n+one\n+two\n"),
    ("create one line without newline", P("/w/n.txt", "add", new_text="x"),
     "diff --git a/w/n.txt b/w/n.txt\nnew file mode 100644\n--- /dev/null\n+++ b/w/n.txt\n"
     "@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n"),
    ("delete", P("/w/old.txt", "delete", old_text="gone\n"),
     "diff --git a/w/old.txt b/w/old.txt\ndeleted file mode 100644\n--- a/w/old.txt\n+++ /dev/null\n"
     "@@ -1 +0,0 @@\n-gone\n"),
    ("modify from whole texts", P("/w/m.txt", "update", old_text="a\nb\nc\n", new_text="a\nB\nc\n"),
     "diff --git a/w/m.txt b/w/m.txt\n--- a/w/m.txt\n+++ b/w/m.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"),
    ("modify from the backend's hunks", P("/w/m.txt", "update", hunks="@@ -1,2 +1,2 @@\n a\n-b\n+B\n"),
     "diff --git a/w/m.txt b/w/m.txt\n--- a/w/m.txt\n+++ b/w/m.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n"),
    ("rename with a change", P("/w/b.txt", "update", hunks="--- a/w/a.txt\n+++ b/w/b.txt\n@@ -1 +1 @@\n-a\n+b\n",
                               old_path="/w/a.txt"),
     "diff --git a/w/a.txt b/w/b.txt\nrename from w/a.txt\nrename to w/b.txt\n--- a/w/a.txt\n+++ b/w/b.txt\n"
     "@@ -1 +1 @@\n-a\n+b\n"),
    ("a name with a space", P("/w/a b.txt", "add", new_text="x\n"),
     "diff --git a/w/a b.txt b/w/a b.txt\nnew file mode 100644\n--- /dev/null\n+++ b/w/a b.txt\t\n"
     "@@ -0,0 +1 @@\n+x\n"),
    ("a name git quotes", P("/w/caf\u00e9.txt", "delete", old_text="x\n"),
     'diff --git "a/w/caf\\303\\251.txt" "b/w/caf\\303\\251.txt"\ndeleted file mode 100644\n'
     '--- "a/w/caf\\303\\251.txt"\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n'),
]


@pytest.mark.parametrize(("patch", "expected"), [row[1:] for row in TABLE], ids=[row[0] for row in TABLE])
def test_the_git_patch_of_each_kind_of_change(patch: acp.FilePatch, expected: str) -> None:
    assert git_patch(patch) == expected


DECLINED = [
    ("an empty new file", P("/w/e", "add", new_text="")),
    ("a binary file", P("/w/b", "add", new_text="a\0b")),
    ("a pure rename", P("/w/b", "update", hunks="", old_path="/w/a")),
    ("hunks whose counts do not add up", P("/w/m", "update", hunks="@@ -1,3 +1,3 @@\n a\n-b\n+B\n")),
    ("not a unified diff", P("/w/m", "update", hunks="just text\n")),
    ("an update without its texts", P("/w/m", "update", new_text="x")),
    ("an update that changes nothing", P("/w/m", "update", old_text="x\n", new_text="x\n")),
    ("larger than 1 MiB", P("/w/big", "add", new_text="x\n" * 600_000)),
]


@pytest.mark.parametrize("patch", [row[1] for row in DECLINED], ids=[row[0] for row in DECLINED])
def test_a_change_that_cannot_have_an_exact_patch_gets_none(patch: acp.FilePatch) -> None:
    assert git_patch(patch) is None


APPLIED = [
    ("middle line", "a\nb\nc\nd\ne\nf\ng\nh\n", "a\nb\nc\nD\ne\nf\ng\nh\n"),
    ("two distant hunks", "".join(f"{i}\n" for i in range(30)),
     "".join(f"{i}\n" for i in range(30)).replace("2\n", "two\n", 1).replace("27\n", "x\ny\n")),
    ("newline removed at the end", "a\nb\n", "a\nb"),
    ("newline added at the end", "a\nb", "a\nb\n"),
    ("everything replaced", "old\n", "new\nlines\n"),
]


@pytest.mark.parametrize(("old", "new"), [row[1:] for row in APPLIED], ids=[row[0] for row in APPLIED])
def test_git_applies_the_patch_of_two_whole_texts(tmp_path: Path, old: str, new: str) -> None:
    """The patch built with difflib is exact: `git apply` turns the old file into the new."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=30)
    target = tmp_path / "w" / "f.txt"
    target.parent.mkdir()
    target.write_text(old)
    text = git_patch(P("w/f.txt", "update", old_text=old, new_text=new))
    assert text is not None
    subprocess.run(["git", "apply", "-"], input=text.encode(), cwd=tmp_path, check=True, timeout=30)
    assert target.read_text() == new


def test_git_applies_a_created_and_a_deleted_file(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=30)
    (tmp_path / "gone.txt").write_text("bye\nnow")
    for patch in (P("made.txt", "add", new_text="hi\nthere\n"), P("gone.txt", "delete", old_text="bye\nnow")):
        text = git_patch(patch)
        assert text is not None
        subprocess.run(["git", "apply", "-"], input=text.encode(), cwd=tmp_path, check=True, timeout=30)
    assert (tmp_path / "made.txt").read_text() == "hi\nthere\n"
    assert not (tmp_path / "gone.txt").exists()


def test_unified_hunks_of_equal_texts_are_empty() -> None:
    assert unified_hunks("a\n", "a\n") == ""


def test_a_diffpatch_client_gets_the_patch_in_place_of_the_standard_diffs() -> None:
    patch = P("/w/m.txt", "update", old_text="a\n", new_text="b\n")
    call = acp.ToolCall("t1", "Edit m.txt", kind="edit", status="in_progress",
                        content=[acp.ToolDiff("/w/m.txt", "b\n", "a\n")], patches=(patch,))
    converter = make_converter()
    assert converter.unstructure(call)["content"] == [
        {"type": "diff", "path": "/w/m.txt", "oldText": "a\n", "newText": "b\n"}]  # the neutral field stays off
    shown = converter.unstructure(with_patches(call))
    assert shown["content"] == [{"type": "diff", "path": "/w/m.txt", "oldText": None, "newText": "", "_meta": {
        "jetbrains": {"air": {"version": 1, "diffPatch": {
            "version": 1, "format": "git_patch",
            "text": "diff --git a/w/m.txt b/w/m.txt\n--- a/w/m.txt\n+++ b/w/m.txt\n@@ -1 +1 @@\n-a\n+b\n"}}}}}]
    assert "patches" not in shown


def test_a_result_with_a_patch_shows_the_patch_in_place_of_its_text() -> None:
    """As claude-agent-acp's final Edit/Write update: the patch, not the confirmation text."""
    text = acp.ToolContent(acp.TextContent("The file was updated."))
    update = acp.ToolCallUpdate("t1", status="completed", content=[text],
                                patches=(P("/w/n.txt", "add", new_text="x\n"),))
    [shown] = with_patches(update).content
    assert isinstance(shown, acp.ToolDiff) and (shown.path, shown.new_text) == ("/w/n.txt", "")
    other = acp.ToolContent(acp.TextContent("note"))
    call = acp.ToolCall("t2", "Edit", content=[other, acp.ToolDiff("/w/n.txt", "x\n", None)],
                        patches=(P("/w/n.txt", "add", new_text="x\n"),))
    assert with_patches(call).content[0] == other  # beside standard diffs, other content stays


def test_a_call_whose_patch_cannot_be_built_stays_as_it_is() -> None:
    call = acp.ToolCall("t1", "Add e", kind="edit", content=[acp.ToolDiff("/w/e", "", None)],
                        patches=(P("/w/e", "add", new_text=""),))
    assert with_patches(call) is call
    plain = acp.ToolCall("t2", "ls", kind="execute")
    assert with_patches(plain) is plain
