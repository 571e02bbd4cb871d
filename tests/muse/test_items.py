"""Item, approval, prompt and history mapping, and the per-turn fold, as pure functions."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from acp_agent.backends.events import (
    AttemptBoundary,
    AuthConfirmed,
    Compaction,
    HistoryFailure,
    RetryProgress,
    SessionTitle,
    TerminalExited,
    TerminalOutput,
    TerminalStarted,
    TurnEnd,
)
from acp_agent.failures.protocol import FailureKind, FailureObservation
from acp_agent.wire.acp import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ImageContent,
    PermissionOption,
    Plan,
    PlanEntry,
    ResourceLink,
    TextContent,
    ToolCall,
    ToolCallUpdate,
    ToolContent,
    ToolLocation,
    UsageUpdate,
    UserMessageChunk,
    parse_mcp_servers,
)
from acp_agent_muse import items
from acp_agent_muse.ids import UuidV7Minter, is_uuid7
from acp_agent_muse.translate import TurnTranslator, fold_turn
from tests.muse import frames as f


def chunk(text: str, message_id: str | None = None) -> AgentMessageChunk:
    """Agent text; of the item `message_id` (its message id) when given."""
    return AgentMessageChunk(TextContent(text), message_id=message_id) if message_id else AgentMessageChunk(TextContent(text))


def thought(text: str, message_id: str) -> AgentThoughtChunk:
    return AgentThoughtChunk(TextContent(text), message_id=message_id)


# --- the per-turn fold --------------------------------------------------------------------------------------


def test_streamed_text_thoughts_tools_and_plan() -> None:
    tool = f.item("tool-1", "toolCall", tool="read_file", args=json.dumps({"path": "notes.md"}),
                  displayLabel={"active": "Reading notes.md", "done": "Read notes.md", "neutral": "Read notes.md"})
    steps = fold_turn(f.TURN, [
        ("session/todoListChanged", {**f.view(), "revision": 1, "sourceTool": "todo", "items": [
            {"status": "completed", "text": "Read"}, {"status": "inProgress", "text": "Think"},
            {"status": "cancelled", "text": "Dropped"}, {"status": "pending", "text": "Answer"}]}),
        f.started(f.item("think", "reasoning")),
        f.delta("think", "Hmm"),
        f.completed(f.item("think", "reasoning", "completed", 2, text="Hmm, yes")),
        f.started(tool),
        f.delta("tool-1", "# No", "visibleOutput"),
        f.completed({**tool, "status": "completed", "revision": 2, "visibleOutput": "# Notes\n"}),
        f.delta("answer", "Hel"),  # before its item: held
        f.started(f.item("answer", "agentMessage")),
        f.delta("answer", "lo"),
        f.completed(f.item("answer", "agentMessage", "completed", 2, text="Hello")),
        ("session/contextUsage", {**f.view(), "pressure": "normal", "usedTokens": 10, "windowTokens": 100}),
        f.turn_completed("completed"),
    ])
    assert steps == [
        Plan([PlanEntry("Read", status="completed"), PlanEntry("Think", status="in_progress"),
              PlanEntry("Answer", status="pending")]),
        thought("Hmm", "think"),
        thought(", yes", "think"),
        ToolCall("tool-1", "Reading notes.md", kind="read", status="in_progress", content=[],
                 locations=[ToolLocation("notes.md")], raw_input={"path": "notes.md"}),
        ToolCallUpdate("tool-1", content=[ToolContent(TextContent("# No"))]),
        ToolCallUpdate("tool-1", title="Read notes.md", status="completed", content=[ToolContent(TextContent("# Notes\n"))]),
        chunk("Hel", "answer"),
        chunk("lo", "answer"),
        UsageUpdate(used=10, size=100),
        AuthConfirmed(),
        TurnEnd("end_turn"),
    ]


def test_another_turns_frames_are_dropped_and_unstreamed_messages_come_whole() -> None:
    steps = fold_turn(f.TURN, [
        f.started(f.item("old", "agentMessage", turn=f.OTHER_TURN)),
        f.delta("old", "stale"),
        f.completed(f.item("old", "agentMessage", "completed", turn=f.OTHER_TURN, text="stale")),
        f.turn_completed("completed", turn=f.OTHER_TURN),
        f.completed(f.item("u", "userMessage", "completed", text="prompt")),
        f.completed(f.item("m", "agentMessage", "completed", text="Whole answer")),
        f.turn_completed("cancelled"),
    ])
    assert steps == [chunk("Whole answer", "m"), TurnEnd("cancelled")]


def test_retries_are_warnings_and_progress_is_an_attempt_boundary() -> None:
    steps = fold_turn(f.TURN, [
        f.retry_scheduled("Rate limited", errorKind="rateLimited"),
        f.started(f.item("m", "agentMessage")),
        f.delta("m", "ok"),
        f.completed(f.item("m", "agentMessage", "completed", 2, text="ok")),
        f.turn_completed("completed"),
    ])
    assert steps == [RetryProgress("Rate limited (retrying in 1s · attempt 2/3)", FailureKind.RATE_LIMITED),
                     AttemptBoundary(), chunk("ok", "m"), AuthConfirmed(), TurnEnd("end_turn")]


def test_a_failed_terminal_and_an_unqueued_turn() -> None:
    failed = fold_turn(f.TURN, [f.turn_completed("failed", f.turn_error("configError", "bad config"))])
    assert len(failed) == 1 and isinstance(failed[0], FailureObservation)
    assert failed[0].kind is FailureKind.BAD_REQUEST
    assert fold_turn(f.TURN, [("turn/unqueued", {**f.view(), "commandId": "c", "turnId": f.TURN})]) == [
        TurnEnd("cancelled")]


def test_stale_revisions_are_ignored_and_statuses_map() -> None:
    translator = TurnTranslator(f.TURN)
    tool = f.item("t", "toolCall", tool="shell", args=json.dumps({"command": ["ls", "-l"]}), revision=3)
    translator.feed(*f.started(tool))
    assert translator.feed(*f.updated({**tool, "revision": 2})) == []
    [exited] = translator.feed(*f.completed({**tool, "revision": 4, "status": "rejected",
                                             "failureReason": "Denied by policy."}))
    assert isinstance(exited, TerminalExited) and exited.legacy  # a shell command: a terminal
    update = exited.update
    assert (update.status, update.title) == ("failed", "shell: ls -l")
    assert update.content == [ToolContent(TextContent("Denied by policy."))]


@pytest.mark.parametrize(("entry", "kind", "title", "status"), [
    (f.item("a", "toolCall", tool="write_file", args='{"file_path": "a.py"}'), "edit", "write_file: a.py", "in_progress"),
    (f.item("a", "toolCall", "timedOut", tool="grep", args='{"pattern": "TODO"}'), "search", "grep: TODO", "failed"),
    (f.item("a", "userShell", "completed", commandText="make test"), "execute", "make test", "completed"),
    (f.item("a", "webSearch", "completed"), "fetch", "Web search", "completed"),
    (f.item("a", "compaction", "completed"), "other", "Compacted the conversation", "completed"),
    (f.item("a", "subagent", "inProgress", label="Review the diff"), "think", "Review the diff", "in_progress"),
    (f.item("a", "someFutureKind", "somethingNew"), "other", "someFutureKind", "completed"),
])
def test_tool_like_items(entry: dict[str, Any], kind: str, title: str, status: str) -> None:
    call = items.tool_call(entry)
    assert (call.kind, call.title, call.status) == (kind, title, status)


# --- approvals -----------------------------------------------------------------------------------------------


def test_permission_options_are_only_the_hosts_choices() -> None:
    assert items.permission_options(f.approval()) == [
        PermissionOption("allow-once", "Allow once", "allow_once"),
        PermissionOption("allow-session", "Allow for this session", "allow_always"),
        PermissionOption("always", "Always allow `rm`", "allow_always"),
        PermissionOption("deny", "Deny", "reject_once"),
        PermissionOption("never", "Never allow `rm`", "reject_always"),
        PermissionOption("abort", "Deny and stop", "reject_once"),
    ]  # "snooze" is a decision this version does not know: not offered


@pytest.mark.parametrize(("choices", "prefer_abort", "expected"), [
    (f.CHOICES, False, "deny"),
    (f.CHOICES, True, "abort"),
    ([c for c in f.CHOICES if c["decision"] != "denied"], False, "abort"),
    ([c for c in f.CHOICES if c["decision"] != "abort"], True, "deny"),
    ([c for c in f.CHOICES if c["decision"].startswith("approved")], False, None),
])
def test_an_unanswered_question_takes_the_hosts_deny_or_abort(choices: list[dict[str, Any]], prefer_abort: bool,
                                                              expected: str | None) -> None:
    assert items.refusal_choice(f.approval(choices), prefer_abort=prefer_abort) == expected


def test_approval_tool_call_and_decision() -> None:
    request = f.approval()
    call = items.approval_tool_call(request, None)
    assert (call.tool_call_id, call.title, call.kind, call.status) == ("tool-1", "rm -rf build", "execute", "pending")
    assert call.raw_input == {"toolName": "shell", "subject": {"kind": "shell", "command": "rm -rf build"},
                              "args": {"command": ["rm", "-rf", "build"]}}
    assert items.decide_params(request, "deny") == {"approvalId": "ap-1", "choiceId": "deny", "requirementId":
                                                    {"approvalId": "ap-1", "sourceIndex": 0}, "sessionId": f.SESSION}
    stage_two = f.approval(currentRequirementId={"approvalId": "ap-1", "sourceIndex": 1})
    assert items.approval_stage(request) != items.approval_stage(stage_two)


# --- prompts, configuration, listing, history ----------------------------------------------------------------


def test_prompt_blocks_become_turn_input_parts() -> None:
    from acp_agent.wire.acp import EmbeddedResource, TextResourceContents

    assert items.prompt_input([
        TextContent("Look at"), ResourceLink(uri="file:///w/a.py", name="a.py"),
        ResourceLink(uri="https://example.test/doc", name="doc"), ImageContent(data="AAAA", mime_type="image/png"),
        EmbeddedResource(TextResourceContents(uri="file:///w/b.py", text="print(1)")),
    ]) == [
        {"type": "text", "text": "Look at"}, {"type": "text", "text": "@/w/a.py"},
        {"type": "text", "text": "[@doc](https://example.test/doc)"},
        {"type": "image", "base64Data": "AAAA", "mediaType": "image/png"},
        {"type": "text", "text": '<context ref="file:///w/b.py">\nprint(1)\n</context>'},
    ]


def test_mcp_servers_become_session_config() -> None:
    assert items.mcp_servers(parse_mcp_servers([
        {"name": "db", "command": "db-mcp", "args": ["--ro"], "env": [{"name": "TOKEN", "value": "t"}]},
        {"type": "http", "name": "web", "url": "https://mcp.test", "headers": [{"name": "A", "value": "b"}]},
        {"type": "sse", "name": "old", "url": "https://sse.test", "headers": []},
    ])) == {"db": {"transport": "stdio", "command": "db-mcp", "args": ["--ro"], "env": {"TOKEN": "t"}},
           "web": {"transport": "streamableHttp", "url": "https://mcp.test", "headers": {"A": "b"}}}


def test_session_rows() -> None:
    row = {"sessionId": "s1", "workspaceRoot": "/w", "name": "Fix the build\nmore", "updatedAt": "2026-01-01T00:00:00Z"}
    info = items.session_info(row, None)
    assert info is not None
    assert (info.session_id, info.cwd, info.title, info.updated_at) == ("s1", "/w", "Fix the build",
                                                                         "2026-01-01T00:00:00Z")
    assert items.session_info({"sessionId": "s2", "workspaceRoot": None}, None) is None


def test_history_replays_items_and_the_failed_last_turn() -> None:
    result = {"history": {"mode": "inline", "snapshot": None, "items": [
        f.item("u1", "userMessage", "completed", text="clean up"),
        f.item("r1", "reasoning", "completed", summary=["First", "then"]),
        f.item("t1", "toolCall", "completed", tool="shell", args='{"command": "make clean"}', visibleOutput="ok"),
        f.item("m1", "agentMessage", "completed", text="Done"),
    ]}, "lastTurn": {"turnId": f.TURN, "terminal": "failed", "error": f.turn_error("modelError", "key sk-1234 bad")}}
    events = items.history_events(result, lambda text: text.replace("sk-1234", "[REDACTED]"))
    assert events[:2] == [UserMessageChunk(TextContent("clean up"), message_id="u1"),
                          thought("First\n\nthen", "r1")]
    started, exited = events[2:4]  # a shell command: a finished terminal, one tool call for other clients
    assert isinstance(started, TerminalStarted) and started.call.status == "completed"
    assert isinstance(exited, TerminalExited) and not exited.legacy and exited.output == "ok"
    assert events[4] == chunk("Done", "m1")
    failure = events[5]
    assert isinstance(failure, HistoryFailure)
    assert (failure.message_id, failure.user_message_id, failure.active) == (f.TURN, "u1", True)
    assert failure.legacy_updates == (chunk("key [REDACTED] bad"),)
    snapshot = {"history": {"mode": "snapshot", "items": None, "snapshot": {"schemaVersion": 1, "viewCursor": "v1",
                "state": {"items": [f.item("m", "agentMessage", "completed", text="from a snapshot")]}}}}
    assert items.history_events(snapshot, str) == [chunk("from a snapshot", "m")]


def test_command_ids_are_uuid7_and_increase() -> None:
    minter = UuidV7Minter(clock_ms=lambda: 1_700_000_000_000)
    ids = [minter() for _ in range(5)]
    assert all(is_uuid7(value) for value in ids)
    assert ids == sorted(ids) and len(set(ids)) == 5
    assert uuid.UUID(ids[0]).version == 7
    assert not is_uuid7(str(uuid.uuid4()))


# --- terminals, compaction, titles (issue 12) ------------------------------------------------------------


def test_a_shell_tool_is_a_terminal_carrying_todays_updates() -> None:
    translator = TurnTranslator(f.TURN)
    tool = f.item("s", "toolCall", tool="shell", args=json.dumps({"command": ["make"]}))
    [started] = translator.feed(*f.started(tool))
    assert started == TerminalStarted(items.tool_call(tool))
    [output] = translator.feed(*f.delta("s", "ok\n", "visibleOutput"))
    assert output == TerminalOutput("s", "ok\n", legacy=items.tool_output_update("s", "ok\n"))
    [relabel] = translator.feed(*f.updated({**tool, "revision": 2, "label": "make all"}))
    assert isinstance(relabel, TerminalOutput) and relabel.data == ""
    done = {**tool, "revision": 3, "status": "completed", "visibleOutput": "ok\n", "exitCode": 2}
    [exited] = translator.feed(*f.completed(done))
    assert exited == TerminalExited("s", items.tool_call_update(done, "ok\n"), 2, "ok\n")


def test_a_shell_tool_first_seen_finished_is_one_legacy_tool_call() -> None:
    done = f.item("s", "userShell", "completed", commandText="ls", visibleOutput="a\n", exitCode=0)
    started, exited = TurnTranslator(f.TURN).feed(*f.completed(done))
    assert started == TerminalStarted(items.tool_call(done))
    assert isinstance(exited, TerminalExited) and not exited.legacy and exited.output == "a\n"


def test_compaction_items_and_the_hosts_naming() -> None:
    translator = TurnTranslator(f.TURN)
    running = f.item("k", "compaction", trigger="manual", tokensBefore=9000)
    assert translator.feed(*f.started(running)) == [Compaction("k", "in_progress", trigger="manual",
                                                                tokens_before=9000)]
    failed = {**running, "status": "completed", "revision": 2, "outcome": "failed", "failureReason": "too big"}
    assert translator.feed(*f.completed(failed)) == [
        Compaction("k", "failed", trigger="manual", tokens_before=9000, error="too big")]
    named = {**f.view(), "name": "Fix  the\nbuild", "nameOrigin": "automatic"}
    assert translator.feed("session/nameChanged", named) == [SessionTitle("Fix  the\nbuild")]


def test_a_completed_compaction_reports_the_compacted_size_against_the_known_window() -> None:
    running = f.item("k", "compaction", trigger="auto", tokensBefore=9000)
    done = {**running, "status": "completed", "revision": 2, "outcome": "compacted", "tokensAfter": 1200}
    unknown = TurnTranslator(f.TURN)  # no window reported yet: nothing to say the size against
    unknown.feed(*f.started(running))
    assert [type(step) for step in unknown.feed(*f.completed(done))] == [Compaction]
    earlier = TurnTranslator(f.TURN, window=10000)  # the window an earlier turn reported
    earlier.feed(*f.started(running))
    assert earlier.feed(*f.completed(done))[1:] == [UsageUpdate(used=1200, size=10000)]
    this_turn = TurnTranslator(f.TURN)
    this_turn.feed("session/contextUsage", {**f.view(), "usedTokens": 9000, "windowTokens": 20000})
    assert this_turn.window == 20000
    this_turn.feed(*f.started(running))
    assert this_turn.feed(*f.completed(done))[1:] == [UsageUpdate(used=1200, size=20000)]
    failed = TurnTranslator(f.TURN, window=10000)
    failed.feed(*f.started(running))
    assert len(failed.feed(*f.completed({**done, "outcome": "failed"}))) == 1


def test_user_input_questions_and_answers() -> None:
    from acp_agent.backends.questions import Answer, Choice, Question, QuestionField
    params = {"userInputId": "t/q1", "questions": [
        {"header": "Pick", "id": "q1", "question": "Which file?", "options": [{"label": "a.py"}],
         "selection": {"mode": "single"}},
        {"header": "Tags", "id": "q2", "question": "Which tags?", "options": [{"label": "x", "description": "ex"}],
         "selection": {"mode": "multiple", "minSelections": 1}}]}
    question = items.user_input_question(params)
    assert question == Question(items.USER_INPUT_MESSAGE, (
        QuestionField("q1", "Which file?", "Pick", (Choice("a.py"),)),
        QuestionField("q2", "Which tags?", "Tags", (Choice("x", "ex"),), multiple=True)))
    assert items.user_input_answers(question, Answer("accept", {"q1": ("a.py",), "q2": ("x",)})) == [
        {"questionId": "q1", "selectedLabel": "a.py"}, {"questionId": "q2", "selectedLabels": ["x"]}]
    assert items.user_input_answers(question, Answer("accept", {"q1": ("b.py",), "q2": ("x",)}))[0] == {
        "questionId": "q1", "freeText": "b.py"}  # type: ignore[index]
    assert items.user_input_answers(question, Answer("accept", {"q1": ("a.py",)})) is None  # all or nothing
    assert items.user_input_answers(question, Answer("decline")) is None
