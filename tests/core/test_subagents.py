"""The child-session table (`acp_agent.sessions.subagents`): what each neutral subagent event
becomes for a client of AIR's draft, of ACP's `subagent_update`, and of neither."""

from __future__ import annotations

from acp_agent.backends.events import OfSubagent, SubagentFinished, SubagentLaunch, SubagentStarted
from acp_agent.sessions.presentation import ClientFeatures
from acp_agent.sessions.subagents import SubagentTable
from acp_agent.wire import acp

CALL = acp.ToolCall("a1", "Look around", kind="think", status="pending")
STARTED = SubagentStarted("agent-1", "Look around", "find files", prompt="find files", role="general-purpose",
                          tool_call_id="a1")
TEXT = acp.agent_text("found")
LEGACY = acp.ToolCallUpdate("a1", content=[acp.ToolContent(acp.TextContent("found"))])


def test_the_form_follows_claude_agent_acp() -> None:
    air = {"jetbrains": {"air": {"version": 1, "capabilities": ["nativeSubagentSessions"]}}}
    assert ClientFeatures.from_capabilities(air, None).subagent_form == "air"
    plain_air = {"jetbrains": {"air": {"version": 1}}}
    assert ClientFeatures.from_capabilities(plain_air, None, None, subagents={}).subagent_form == "air"
    assert ClientFeatures.from_capabilities(None, None, None, subagents={}).subagent_form == "rfd"
    assert ClientFeatures.from_capabilities({"jetbrains": {"air": {"version": 1}}}, None).subagent_form is None
    assert ClientFeatures.from_capabilities(None, None).subagent_form is None


def test_a_client_without_child_sessions_sees_the_legacy_rendering() -> None:
    table = SubagentTable()
    assert table.route(SubagentLaunch("a1", CALL), None) == [(None, CALL)]
    assert table.route(STARTED, None) == []
    assert table.route(OfSubagent("agent-1", (TEXT,), (LEGACY,)), None) == [(None, LEGACY)]
    assert table.route(SubagentFinished("agent-1", "completed"), None) == []


def test_air_hides_the_launch_and_routes_the_child() -> None:
    table = SubagentTable()
    assert table.route(SubagentLaunch("a1", CALL), "air") == []
    assert table.route(STARTED, "air") == [
        (None, acp.SubagentSpawned("agent-1", "Look around", "find files", prompt="find files"))]
    assert table.route(OfSubagent("agent-1", (TEXT,), (LEGACY,)), "air") == [("agent-1", TEXT)]
    assert table.route(SubagentLaunch("a1", acp.ToolCallUpdate("a1", status="completed")), "air") == []
    assert table.route(SubagentFinished("agent-1", "completed"), "air") == [
        (None, acp.SubagentStateUpdate("agent-1", "completed"))]
    # ended for good: a later update and a second end are dropped
    assert table.route(OfSubagent("agent-1", (TEXT,), (LEGACY,)), "air") == []
    assert table.route(SubagentFinished("agent-1", "failed"), "air") == []


def test_air_shows_a_launch_that_failed_before_any_child_as_one_failed_call() -> None:
    table = SubagentTable()
    table.route(SubagentLaunch("a1", CALL), "air")
    failed = acp.ToolCallUpdate("a1", status="failed", content=[acp.ToolContent(acp.TextContent("no agent"))])
    [(target, shown)] = table.route(SubagentLaunch("a1", failed), "air")
    assert target is None
    assert shown == acp.ToolCall("a1", "Look around", kind="think", status="failed", content=failed.content)


def test_a_cancelled_turn_ends_airs_running_children() -> None:
    table = SubagentTable()
    table.route(STARTED, "air")
    table.route(SubagentStarted("agent-2", "Other", "task"), "air")
    table.route(SubagentFinished("agent-2", "completed"), "air")
    assert table.cancelled("air") == [(None, acp.SubagentStateUpdate("agent-1", "cancelled"))]
    assert table.cancelled("air") == []
    assert SubagentTable().cancelled("rfd") == []


def test_subagent_update_announces_and_ends_the_child() -> None:
    table = SubagentTable()
    assert table.route(SubagentLaunch("a1", CALL), "rfd") == [(None, CALL)]
    assert table.route(STARTED, "rfd") == [(None, acp.SubagentUpdate(
        "agent-1", title="Look around", description="general-purpose", state={"state": "running"}))]
    assert table.route(OfSubagent("agent-1", (TEXT,), (LEGACY,)), "rfd") == [("agent-1", TEXT)]
    assert table.route(SubagentFinished("agent-1", "failed"), "rfd") == [
        (None, acp.SubagentUpdate("agent-1", state={"state": "idle", "stopReason": "error"}))]


def test_a_nested_child_is_announced_on_its_parent_child() -> None:
    table = SubagentTable()
    table.route(STARTED, "air")
    nested = SubagentStarted("agent-2", "Deeper", "dig", tool_call_id="a2", within="agent-1")
    assert table.route(SubagentLaunch("a2", acp.ToolCall("a2", "Deeper"), within="agent-1"), "air") == []
    assert table.route(nested, "air") == [("agent-1", acp.SubagentSpawned("agent-2", "Deeper", "dig"))]


def test_the_calls_of_a_child_the_client_is_not_shown_at_all_are_unseen() -> None:
    """A child with no rendering in the parent (Codex's): its calls' permission requests are not
    asked of a client without child sessions; a child shown there (Claude's) keeps them asked."""
    call = acp.ToolCall("c1", "ls", kind="execute", status="in_progress")
    table = SubagentTable()
    assert table.route(STARTED, None) == []
    assert table.route(OfSubagent("agent-1", (call,), ()), None) == []
    assert table.unseen == {"c1"}
    shown = SubagentTable()
    assert shown.route(OfSubagent("agent-1", (call,), (LEGACY,)), None) == [(None, LEGACY)]
    assert shown.unseen == set()
    air = SubagentTable()
    air.route(STARTED, "air")
    air.route(OfSubagent("agent-1", (call,), ()), "air")
    assert air.unseen == set() and air.running_owner("c1", "air") == "agent-1"
