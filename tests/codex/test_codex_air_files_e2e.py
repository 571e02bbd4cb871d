"""AIR's `agentFileChangeReport` and `diffPatch` through `acp-agent --provider codex`: the real
codex app-server applies a patch (add, update, delete) scripted on the fake Responses API."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.codex.e2e_support import codex_agent, text, workspace, write_codex_home
from tests.e2e.air_files import DECLARED, advertised, air_client, patches, report_index, report_request, reports
from tests.fakes.responses_api import FakeResponsesAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]


def patch_script(work: Path) -> list[dict[str, str]]:
    (work / "m.txt").write_text("a\nb\nc\n")
    (work / "gone.txt").write_text("bye\n")
    patch = (f"*** Begin Patch\n*** Add File: {work / 'new.txt'}\n+hello\n"
             f"*** Update File: {work / 'm.txt'}\n@@\n a\n-b\n+B\n c\n"
             f"*** Delete File: {work / 'gone.txt'}\n*** End Patch\n")
    return [{"apply_patch": patch}, {"reply": "patched"}]


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "not-declared"])
async def test_a_patch_is_reported_and_shown_as_git_patches(tmp_path: Path, declared: bool) -> None:
    work = Path(workspace(tmp_path))
    capabilities = DECLARED if declared else ["sessionFailure"]
    with FakeResponsesAPI(patch_script(work)) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=False, meta=air_client(*capabilities)) as agent:
            agent.client.permission = lambda options: "accept"
            session = await agent.conn.new_session(cwd=str(work))
            outcome = await agent.conn.prompt(session_id=session.session_id, prompt=text("patch it"),
                                              jetbrains=report_request("r-1"))
    assert outcome.stop_reason == "end_turn"
    assert (work / "new.txt").read_text() == "hello\n" and (work / "m.txt").read_text() == "a\nB\nc\n"
    assert advertised(agent.initialized) == ["sessionFailure", "agentFileChangeReport", "recommendedValue",
                                             "diffPatch", "rawInputRendering", "planContentDelta",
                                             "nativeSubagentSessions", "codexHooks", "goal"]
    assert agent.frames.problems == []
    real = os.path.realpath(work)
    if not declared:  # today's frames: the standard diffs, no report
        assert reports(agent, session.session_id) == []
        assert patches(agent, session.session_id) == {}
        wire = json.dumps(agent.frames.updates())  # (initialize advertises them all the same)
        assert "diffPatch" not in wire and "agentFileChangeReport" not in wire
        call = next(u for u in agent.frames.updates(session.session_id) if u["sessionUpdate"] == "tool_call")
        assert {"type": "diff", "path": str(work / "new.txt"), "newText": "hello\n", "oldText": None} \
            in call["content"]
        return
    [report] = reports(agent, session.session_id)
    assert {**report, "paths": None} == {"version": 1, "requestId": "r-1", "status": "reported",
                                         "paths": None, "declaredComplete": False, "truncated": False}
    assert sorted(report["paths"]) == sorted(f"{real}/{name}" for name in ("new.txt", "m.txt", "gone.txt"))
    first, answer = report_index(agent)
    assert first < answer  # before the prompt's answer
    shown = patches(agent, session.session_id)
    git = str(work).lstrip("/")
    assert shown[str(work / "new.txt")] == (
        f"diff --git a/{git}/new.txt b/{git}/new.txt\nnew file mode 100644\n--- /dev/null\n"
        f"+++ b/{git}/new.txt\n@@ -0,0 +1 @@\n+hello\n")
    assert shown[str(work / "gone.txt")] == (
        f"diff --git a/{git}/gone.txt b/{git}/gone.txt\ndeleted file mode 100644\n--- a/{git}/gone.txt\n"
        f"+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n")
    assert shown[str(work / "m.txt")] == (
        f"diff --git a/{git}/m.txt b/{git}/m.txt\n--- a/{git}/m.txt\n+++ b/{git}/m.txt\n"
        "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n")


async def test_a_turn_without_edits_reports_no_paths_and_a_repeated_id_is_answered_once(tmp_path: Path) -> None:
    with FakeResponsesAPI([{"reply": "nothing to do"}, {"reply": "still nothing"}]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=False, meta=air_client(*DECLARED)) as agent:
            session = await agent.conn.new_session(cwd=workspace(tmp_path))
            for _ in range(2):
                outcome = await agent.conn.prompt(session_id=session.session_id, prompt=text("hi"),
                                                  jetbrains=report_request("same"))
                assert outcome.stop_reason == "end_turn"
    assert reports(agent, session.session_id) == [{"version": 1, "requestId": "same", "status": "reported",
                                                   "paths": [], "declaredComplete": False, "truncated": False}]
    assert agent.frames.problems == []


def session_new_result(agent: Any) -> dict[str, Any]:
    return next(frame["result"] for frame in agent.frames.incoming
                if isinstance(frame.get("result"), dict) and "sessionId" in frame["result"])


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "not-declared"])
async def test_config_options_name_codexs_recommended_values(tmp_path: Path, declared: bool) -> None:
    """`recommendedValue` as codex-acp: model/list's `isDefault` model and the model's
    `defaultReasoningEffort`, the options otherwise as offered."""
    capabilities = ["sessionFailure", "recommendedValue", "rawInputRendering"] if declared else ["sessionFailure"]
    with FakeResponsesAPI([]) as api:
        home = write_codex_home(api, tmp_path)
        async with codex_agent(home, tmp_path, capable=False, meta=air_client(*capabilities)) as agent:
            await agent.conn.new_session(cwd=workspace(tmp_path))
    assert advertised(agent.initialized) == ["sessionFailure", "agentFileChangeReport", "recommendedValue",
                                             "diffPatch", "rawInputRendering", "planContentDelta",
                                             "nativeSubagentSessions", "codexHooks", "goal"]
    options = {option["id"]: option for option in session_new_result(agent)["configOptions"]}
    assert agent.frames.problems == []
    if not declared:
        assert all("_meta" not in option for option in options.values())
        return
    # the same as codex-acp 2.6.0 on this CODEX_HOME (compared by hand)
    assert options["model"]["_meta"] == {"jetbrains": {"air": {"version": 1, "recommendedValue": "gpt-6.1-sol"}}}
    assert options["reasoning_effort"]["_meta"] == {"jetbrains": {"air": {"version": 1, "recommendedValue": "medium"}}}
    assert "_meta" not in options["fast-mode"]
    assert options["model"]["currentValue"] == "gpt-5.5"  # the session's model is unchanged
