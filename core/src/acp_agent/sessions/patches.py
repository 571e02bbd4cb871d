"""AIR's `diffPatch`: an edit's diff as an exact git patch, for a client that declares it.

A provider that knows a file's exact change puts it on the tool call as a neutral
`acp.FilePatch` (never on the wire). For a client of `diffPatch` the core builds the git patch
and sends the diff as claude-agent-acp (`dist/diff.js`) and codex-acp (`GitPatch.ts`) do:
`{type: "diff", path, oldText: null, newText: "",
_meta.jetbrains.air: {version: 1, diffPatch: {version: 1, format: "git_patch", text}}}`, in
place of the tool call's standard diffs. Paths are git's: the absolute path without its leading
slash, `a/` and `b/` prefixes, quoted as git quotes them. A change that cannot have an exact
patch (binary, over 1 MiB, a hunk text that does not parse, an empty file, a pure rename) keeps
the standard diff, as in both anchors. Every other client gets the tool call unchanged.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

import attrs

from acp_agent.wire import acp

MAX_PATCH_BYTES = 1024 * 1024
CONTEXT_LINES = 3
NO_NEWLINE = "\\ No newline at end of file"
DIFF_PATCH = "diffPatch"
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_ESCAPES = {0x07: "a", 0x08: "b", 0x09: "t", 0x0A: "n", 0x0B: "v", 0x0C: "f", 0x0D: "r", 0x22: '"', 0x5C: "\\"}


def git_patch(patch: acp.FilePatch) -> str | None:
    """The git patch text of one file's change, or None when it cannot be exact."""
    if patch.change == "add":
        return _whole_file(patch.path, patch.new_text, added=True)
    if patch.change == "delete":
        return _whole_file(patch.path, patch.old_text, added=False)
    old_path = patch.old_path or patch.path
    if patch.hunks is not None:
        hunks = _checked_hunks(patch.hunks)
    elif patch.old_text is not None and patch.new_text is not None:
        hunks = unified_hunks(patch.old_text, patch.new_text)
    else:
        return None
    if not hunks or _binary(hunks):
        return None
    old_name, new_name = _git_name(old_path), _git_name(patch.path)
    lines = [f"diff --git {_quoted('a/', old_name)} {_quoted('b/', new_name)}"]
    if old_name != new_name:
        lines += [f"rename from {_quoted('', old_name)}", f"rename to {_quoted('', new_name)}"]
    lines += [_file_header("---", "a/", old_name), _file_header("+++", "b/", new_name)]
    return _limited("\n".join(lines) + "\n" + hunks)


def unified_hunks(old_text: str, new_text: str) -> str:
    """The `@@` hunks (3 lines of context) between two texts, with git's no-newline marker;
    "" when they are equal."""
    diff = difflib.unified_diff(old_text.splitlines(keepends=True), new_text.splitlines(keepends=True),
                                n=CONTEXT_LINES)
    lines = [line if line.endswith("\n") else f"{line}\n{NO_NEWLINE}\n" for line in diff]
    first = next((index for index, line in enumerate(lines) if line.startswith("@@")), len(lines))
    return "".join(lines[first:])  # difflib's own `---`/`+++` lines go: the patch has git's


def _whole_file(path: str, text: str | None, *, added: bool) -> str | None:
    if not text or _binary(text):
        return None
    lines = text.split("\n")
    terminated = lines[-1] == ""
    if terminated:
        lines.pop()
    name = _git_name(path)
    count = "1" if len(lines) == 1 else f"1,{len(lines)}"
    sign = "+" if added else "-"
    body = [
        f"diff --git {_quoted('a/', name)} {_quoted('b/', name)}",
        f"{'new' if added else 'deleted'} file mode 100644",
        "--- /dev/null" if added else _file_header("---", "a/", name),
        _file_header("+++", "b/", name) if added else "+++ /dev/null",
        f"@@ -0,0 +{count} @@" if added else f"@@ -{count} +0,0 @@",
        *(sign + line for line in lines),
        *([] if terminated else [NO_NEWLINE]),
        "",
    ]
    return _limited("\n".join(body))


def _checked_hunks(diff: str) -> str | None:
    """The `@@` hunks of a backend's unified diff (file header lines before them dropped), or
    None when a hunk's line counts do not add up."""
    lines = diff.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    first = next((index for index, line in enumerate(lines) if line.startswith("@@")), None)
    if first is None or not all(line == "" or line.startswith(("diff --git ", "index ", "--- ", "+++ "))
                                for line in lines[:first]):
        return None
    hunks = lines[first:]
    index = 0
    while index < len(hunks):
        header = _HUNK.match(hunks[index])
        if header is None:
            return None
        old = 1 if header[2] is None else int(header[2])
        new = 1 if header[4] is None else int(header[4])
        index += 1
        while old > 0 or new > 0:
            if index >= len(hunks):
                return None
            line = hunks[index]
            sign = line[:1]
            if sign in (" ", ""):
                old, new = old - 1, new - 1
            elif sign == "-":
                old -= 1
            elif sign == "+":
                new -= 1
            elif line != NO_NEWLINE:
                return None
            index += 1
        if old or new:
            return None
        while index < len(hunks) and hunks[index] == NO_NEWLINE:
            index += 1
    return "\n".join(hunks) + "\n"


def _binary(text: str) -> bool:
    return "\0" in text[:8000]


def _limited(text: str) -> str | None:
    return text if len(text.encode("utf-8", "surrogatepass")) <= MAX_PATCH_BYTES else None


def _git_name(path: str) -> str:
    """The path as git names it in a patch: forward slashes, no leading slash."""
    return path.replace("\\", "/").lstrip("/")


def _quoted(prefix: str, name: str) -> str:
    """`prefix + name` as git quotes it (`core.quotePath`): C escapes and octal UTF-8 bytes."""
    full = prefix + name
    quoted, needs = "", False
    for byte in full.encode("utf-8", "surrogatepass"):
        if byte in _ESCAPES:
            quoted, needs = quoted + "\\" + _ESCAPES[byte], True
        elif byte < 0x20 or byte >= 0x7F:
            quoted, needs = quoted + f"\\{byte:03o}", True
        else:
            quoted += chr(byte)
    return f'"{quoted}"' if needs else full


def _file_header(marker: str, prefix: str, name: str) -> str:
    quoted = _quoted(prefix, name)
    return f"{marker} {quoted}{chr(9) if ' ' in name and not quoted.startswith(chr(34)) else ''}"


def patch_diff(path: str, text: str) -> acp.ToolDiff:
    """A diff that carries its change as a git patch (the standard texts only satisfy ACP)."""
    return acp.ToolDiff(path=path, new_text="", old_text=None, meta={"jetbrains": {"air": {
        "version": 1, DIFF_PATCH: {"version": 1, "format": "git_patch", "text": text}}}})


def with_patches(update: Any) -> Any:
    """A tool call or update with patches as a `diffPatch` client gets it: the patch diffs take
    the place of its standard diffs, or, where it has none (a tool's result, whose text only
    confirms the edit), of its whole content, as claude-agent-acp's final Edit/Write update.
    Unchanged when it has no patches or one of them cannot be built."""
    patches = getattr(update, "patches", ())
    if not patches or not isinstance(update, acp.ToolCall | acp.ToolCallUpdate):
        return update
    built = [(patch.path, git_patch(patch)) for patch in patches]
    if any(text is None for _, text in built):
        return update
    content = update.content if isinstance(update.content, list) else []
    diffs: list[acp.ToolCallContent] = [patch_diff(path, text) for path, text in built if text]
    if not any(isinstance(item, acp.ToolDiff) for item in content):
        return attrs.evolve(update, content=diffs)
    return attrs.evolve(update, content=[*(item for item in content if not isinstance(item, acp.ToolDiff)), *diffs])


__all__ = ["DIFF_PATCH", "git_patch", "patch_diff", "unified_hunks", "with_patches"]
