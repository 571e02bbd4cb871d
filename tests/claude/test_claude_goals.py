"""`acp_agent_claude.goals`: the goal snapshots a session's `/goal` commands and the CLI's
`active_goal` lines make (the e2e tests drive the real CLI; these pin the cases it does not show
on the fake API: a failed command, a report older than the command, a refused condition)."""

from __future__ import annotations

from acp_agent.provider import GoalSnapshot, TextContent
from acp_agent_claude.goals import CONTROL_METHOD, Goals, requested

ACTIVE = {"objective": "ship it", "status": "active", "controlMethod": CONTROL_METHOD}


def prompt(text: str) -> list[TextContent]:
    return [TextContent(text)]


def test_only_a_goal_command_with_an_argument_changes_the_goal() -> None:
    assert requested(prompt("/goal  ship it \n")) == (True, ACTIVE)
    assert requested(prompt("/goal Clear")) == (True, None)
    assert requested(prompt("/goal")) == (False, None)  # shows the goal
    assert requested(prompt("/goals ship it")) == (False, None)
    assert requested(prompt("please /goal ship it")) == (False, None)
    assert requested(prompt("/goal " + "x" * 4001)) == (False, None)  # Claude Code refuses it


def test_a_failed_command_puts_the_previous_goal_back() -> None:
    goals = Goals()
    assert goals.submitted(prompt("/goal ship it"), "m-1") == [GoalSnapshot(ACTIVE)]
    assert goals.submitted(prompt("/goal clear"), "m-2") == [GoalSnapshot(None)]
    assert goals.line({"type": "command_lifecycle", "command_uuid": "m-2", "state": "started"}) == []
    assert goals.line({"type": "result", "is_error": True}) == [GoalSnapshot(ACTIVE)]
    assert goals.pending is None and goals.published == ACTIVE


def test_reports_older_than_the_command_are_dropped_until_its_result() -> None:
    goals = Goals()
    goals.submitted(prompt("/goal ship it"), "m-1")
    assert goals.line({"type": "active_goal", "value": {"condition": "old goal", "iterations": 3,
                                                        "set_at": 1, "tokens_at_start": 0}}) == []
    reported = {"condition": "ship it", "iterations": 0, "set_at": 1_800_000_000_000, "tokens_at_start": 0}
    assert goals.line({"type": "active_goal", "value": reported}) == [GoalSnapshot(
        {"objective": "ship it", "status": "active", "iterations": 0, "lastReason": None,
         "createdAt": 1_800_000_000_000, "controlMethod": CONTROL_METHOD})]
    assert goals.line({"type": "active_goal", "value": None}) == [GoalSnapshot(None)]  # met
    assert goals.line({"type": "active_goal", "value": "bogus"}) == []


def test_a_report_of_no_goal_before_any_goal_is_not_news() -> None:
    goals = Goals()
    assert goals.line({"type": "active_goal", "value": None}) == []
    assert goals.line({"type": "result", "is_error": False}) == []
