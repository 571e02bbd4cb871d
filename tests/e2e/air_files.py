"""What the e2e tests of AIR's `agentFileChangeReport` and `diffPatch` share: the client's
declaration, the prompt's request, and the frames to read back."""

from __future__ import annotations

from typing import Any

from tests.e2e.harness import AgentProcess

DECLARED = ["sessionFailure", "agentFileChangeReport", "diffPatch"]


def air_client(*capabilities: str) -> dict[str, Any]:
    """`clientCapabilities._meta` of an AIR client that declares these capabilities."""
    return {"jetbrains": {"air": {"version": 1, "capabilities": list(capabilities)}}}


def report_request(request_id: str) -> dict[str, Any]:
    """The prompt's `_meta` keyword for the SDK client: `jetbrains=...`."""
    return {"air": {"agentFileChangeReportRequest": {"version": 1, "requestId": request_id}}}


def advertised(initialized: Any) -> list[str]:
    meta = getattr(initialized, "field_meta", None) or {}
    return list(meta.get("jetbrains", {}).get("air", {}).get("capabilities", []))


def reports(agent: AgentProcess, session_id: str) -> list[dict[str, Any]]:
    """Every `agentFileChangeReport` the session was sent, in order."""
    found = []
    for update in agent.frames.updates(session_id):
        air = (update.get("_meta") or {}).get("jetbrains", {}).get("air", {})
        if update["sessionUpdate"] == "session_info_update" and "agentFileChangeReport" in air:
            found.append(air["agentFileChangeReport"])
    return found


def report_index(agent: AgentProcess) -> tuple[int, int]:
    """Where the report and the prompt's answer are among the frames the agent wrote."""
    frames = agent.frames.incoming
    report = next(i for i, frame in enumerate(frames) if "agentFileChangeReport" in str(frame.get("params")))
    answer = next(i for i, frame in enumerate(frames) if "stopReason" in (frame.get("result") or {}))
    return report, answer


def patches(agent: AgentProcess, session_id: str) -> dict[str, str]:
    """The git patches of the session's diffs, by path (the last one of each path)."""
    found: dict[str, str] = {}
    for update in agent.frames.updates(session_id):
        if update["sessionUpdate"] not in ("tool_call", "tool_call_update"):
            continue
        for item in update.get("content") or []:
            air = (item.get("_meta") or {}).get("jetbrains", {}).get("air", {})
            if item.get("type") == "diff" and "diffPatch" in air:
                assert (item["oldText"], item["newText"], air["version"]) == (None, "", 1)
                assert set(air["diffPatch"]) == {"version", "format", "text"}
                assert (air["diffPatch"]["version"], air["diffPatch"]["format"]) == (1, "git_patch")
                found[item["path"]] = air["diffPatch"]["text"]
    return found
