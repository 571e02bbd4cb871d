"""AIR's `agentFileChangeReport` and `diffPatch` through `acp-agent --provider claude`: the real
Claude Code CLI reads, edits and writes files as the fake Anthropic API scripts it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.claude.e2e_support import claude_agent, text
from tests.e2e.air_files import DECLARED, air_client, patches, report_index, report_request, reports
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]


def edit_script(work: Path) -> list[dict[str, object]]:
    (work / "m.txt").write_text("a\nb\nc\n")
    return [
        {"tool_use": {"name": "Read", "input": {"file_path": str(work / "m.txt")}}},
        {"tool_use": {"name": "Edit", "input": {"file_path": str(work / "m.txt"), "old_string": "b\n",
                                                "new_string": "B\n"}}},
        {"tool_use": {"name": "Write", "input": {"file_path": str(work / "new.txt"), "content": "hello\n"}}},
        {"tool_use": {"name": "Bash", "input": {"command": "echo hi > shell.txt", "description": "Write"}}},
        {"reply": "Done."},
    ]


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "not-declared"])
async def test_edits_are_reported_and_shown_as_git_patches(tmp_path: Path, declared: bool) -> None:
    work = tmp_path / "work"
    work.mkdir()
    capabilities = DECLARED if declared else ["sessionFailure"]
    with FakeAnthropicAPI(edit_script(work)) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=air_client(*capabilities)) as agent:
            initialized = agent.frames.incoming[0]["result"]
            session = await agent.conn.new_session(cwd=str(work))
            outcome = await agent.conn.prompt(session_id=session.session_id, prompt=text("edit them"),
                                              jetbrains=report_request("r-1"))
    assert outcome.stop_reason == "end_turn"
    assert (work / "m.txt").read_text() == "a\nB\nc\n" and (work / "new.txt").read_text() == "hello\n"
    advertised = initialized["_meta"]["jetbrains"]["air"]["capabilities"]
    assert advertised[0] == "sessionFailure" and {"agentFileChangeReport", "diffPatch"} <= set(advertised)
    assert agent.frames.problems == []
    if not declared:  # today's frames
        wire = json.dumps(agent.frames.updates())
        assert "diffPatch" not in wire and "agentFileChangeReport" not in wire
        write = next(u for u in agent.frames.updates() if u["sessionUpdate"] == "tool_call"
                     and u["title"] == "Write new.txt")
        assert write["content"] == [{"type": "diff", "path": str(work / "new.txt"), "newText": "hello\n",
                                     "oldText": None}]
        return
    real = os.path.realpath(work)
    [report] = reports(agent, session.session_id)
    # the shell command's file is not seen: the report never declares itself complete
    assert report == {"version": 1, "requestId": "r-1", "status": "reported",
                      "paths": [f"{real}/m.txt", f"{real}/new.txt"], "declaredComplete": False,
                      "truncated": False}
    first, answer = report_index(agent)
    assert first < answer
    git = str(work).lstrip("/")
    assert patches(agent, session.session_id) == {
        str(work / "m.txt"): f"diff --git a/{git}/m.txt b/{git}/m.txt\n--- a/{git}/m.txt\n+++ b/{git}/m.txt\n"
                             "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
        str(work / "new.txt"): f"diff --git a/{git}/new.txt b/{git}/new.txt\nnew file mode 100644\n"
                               f"--- /dev/null\n+++ b/{git}/new.txt\n@@ -0,0 +1 @@\n+hello\n",
    }


async def test_a_failed_turn_reports_unavailable(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    script = [{"status": 400, "error_type": "invalid_request_error", "message": "bad thing", "times": 6}]
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=False, meta=air_client(*DECLARED)) as agent:
            session = await agent.conn.new_session(cwd=str(work))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("fail"),
                                    jetbrains=report_request("r-2"))
    assert reports(agent, session.session_id) == [{"version": 1, "requestId": "r-2", "status": "unavailable",
                                                   "reason": "providerError"}]
    assert agent.frames.problems == []


async def test_a_v2_client_that_declares_diffpatch_gets_v2_diffs(tmp_path: Path) -> None:
    """ACP v2's diff carries its own git patch: `diffPatch` is neither advertised nor applied."""
    from tests.claude.e2e_support import claude_env
    from tests.e2e.raw import raw_agent
    from tests.e2e.test_v2_e2e import INITIALIZE, V2Client, idle

    target = tmp_path / "hello.py"
    script = [{"tool_use": {"name": "Write", "input": {"file_path": str(target), "content": "hi\n"}}},
              {"reply": "Done."}]
    initialize = {**INITIALIZE, "capabilities": {"_meta": air_client(*DECLARED)}}
    with FakeAnthropicAPI(script) as api:
        async with raw_agent("claude", tmp_path, claude_env(api, tmp_path, default_mode="acceptEdits")) as agent:
            client = V2Client(agent)
            answer = await client.result("initialize", initialize)
            session_id = (await client.result("session/new", {"cwd": str(tmp_path)}))["sessionId"]
            await client.result("session/prompt", {"sessionId": session_id,
                                                   "prompt": [{"type": "text", "text": "Write"}]})
            await client.until(idle, allow=True, deadline_s=90)
    assert "diffPatch" not in json.dumps(answer)
    diffs = [item for u in client.updates(session_id) if u["sessionUpdate"] == "tool_call_update"
             for item in u.get("content") or [] if item["type"] == "diff"]
    assert diffs and diffs[-1]["changes"] == [{"operation": "add", "path": str(target), "fileType": "text"}]
    assert "diffPatch" not in json.dumps(diffs)
    client.check_all()
