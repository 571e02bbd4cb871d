"""Items, turns and history as pure functions, folded over real app-server 0.163.0 traffic."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest

from acp_agent.backends.events import (
    AttemptBoundary,
    AuthConfirmed,
    Compaction,
    HistoryFailure,
    Notice,
    RetryProgress,
    SessionTitle,
    TerminalExited,
    TerminalOutput,
    TerminalStarted,
    TurnEnd,
)
from acp_agent.failures.protocol import FailureKind, FailureObservation
from acp_agent.testing import HistoryContract
from acp_agent.wire.acp import (
    AgentMessageChunk,
    AgentThoughtChunk,
    EmbeddedResource,
    ImageContent,
    Plan,
    PlanEntry,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolCall,
    ToolCallUpdate,
    ToolContent,
    ToolDiff,
    ToolLocation,
    UsageUpdate,
    UserMessageChunk,
    parse_mcp_servers,
)
from acp_agent_codex import items, runtime
from acp_agent_codex.translate import TurnTranslator, fold_turn, turn_id_of
from tests.codex.fixture_lines import response, server_requests, turn


def texts(steps: list[Any], cls: type = AgentMessageChunk) -> str:
    return "".join(step.content.text for step in steps if isinstance(step, cls))


def kinds(steps: list[Any]) -> list[str]:
    return [type(step).__name__ for step in steps]


# --- turns folded ------------------------------------------------------------------------------------


def test_plain_answer_streams_thoughts_text_usage_and_ends() -> None:
    steps = fold_turn(turn("ok_reply_reasoning_usage"))
    assert texts(steps, AgentThoughtChunk) == "The user wants a greeting. Reply briefly."
    assert texts(steps) == "Hello! How can I help you today?"
    assert UsageUpdate(used=7929, size=258400) in steps
    assert steps[-2:] == [AuthConfirmed(), TurnEnd("end_turn")]
    assert not any(isinstance(step, AttemptBoundary) for step in steps)


def test_retries_then_success_end_the_incident_at_the_first_progress() -> None:
    steps = fold_turn(turn("error_500_500_then_ok"))
    assert steps[:3] == [RetryProgress("Reconnecting... 1/5", FailureKind.TRANSPORT_LOST),
                         RetryProgress("Reconnecting... 2/5", FailureKind.TRANSPORT_LOST), AttemptBoundary()]
    assert texts(steps) == "third time lucky"
    assert steps[-1] == TurnEnd("end_turn")


def test_stream_cut_then_ok_keeps_the_partial_text_and_marks_the_new_attempt() -> None:
    steps = fold_turn(turn("stream_cut_then_ok"))
    retry = steps.index(RetryProgress("Reconnecting... 1/5", FailureKind.TRANSPORT_LOST))
    assert texts(steps[:retry]) == "partial answer"
    assert steps[retry + 1] == AttemptBoundary()
    assert texts(steps[retry:]) == "recovered answer"
    assert steps.count(AttemptBoundary()) == 1


@pytest.mark.parametrize(("fixture", "kind", "retries"), [
    ("error_500_retries_exhausted", FailureKind.PROVIDER_ERROR, 5),
    ("error_401_unauthorized", FailureKind.AUTH_REQUIRED, 5),
    ("error_429_rate_limit", FailureKind.RATE_LIMITED, 5),
    ("stream_cut_retries_exhausted", FailureKind.PROVIDER_ERROR, 5),
    ("usage_limit_exceeded", FailureKind.QUOTA_EXHAUSTED, 0),
    ("context_window_exceeded", FailureKind.CONTEXT_EXHAUSTED, 0),
])
def test_failed_turns_record_the_terminal_error_once(fixture: str, kind: FailureKind, retries: int) -> None:
    translator = TurnTranslator()
    steps = [step for method, params in turn(fixture) for step in translator.feed(method, params)]
    failures = [step for step in steps if isinstance(step, FailureObservation)]
    assert len(failures) == 1 and failures[0].kind is kind
    assert sum(isinstance(step, RetryProgress) for step in steps) == retries
    done = steps[-1]
    assert type(done).__name__ == "TurnDone" and done.end is failures[0]


def test_interrupt_ends_the_turn_cancelled() -> None:
    steps = fold_turn(turn("turn_interrupt_slow_stream"))
    assert steps[-1] == TurnEnd("cancelled")
    assert texts(steps).startswith("word0 word1")


def test_plan_updates_become_acp_plans() -> None:
    plan = next(step for step in fold_turn(turn("turn_plan_updated")) if isinstance(step, Plan))
    assert plan.entries == [PlanEntry("Read the code", status="completed"),
                            PlanEntry("Write the fix", status="in_progress"), PlanEntry("Run tests", status="pending")]


def test_command_execution_is_a_terminal_whose_legacy_form_is_an_execute_tool_call_with_output() -> None:
    steps = fold_turn(turn("approval_command_accept"))
    started = next(step for step in steps if isinstance(step, TerminalStarted))
    call = started.call
    assert (call.tool_call_id, call.title, call.kind, call.status) == (
        "call_0000004dfake", "echo hi > /tmp/acp_fixture_outside.txt; echo done", "execute", "in_progress")
    assert started.cwd == "<CWD>"
    exited = next(step for step in steps if isinstance(step, TerminalExited))
    assert (exited.tool_call_id, exited.exit_code, exited.output) == ("call_0000004dfake", 0, "done\n")
    update = exited.update
    assert update is not None and (update.tool_call_id, update.status) == ("call_0000004dfake", "completed")
    assert update.content == [ToolContent(TextContent("done\n"))]
    assert update.raw_output == {"exitCode": 0, "output": "done\n"}


def test_command_output_deltas_carry_the_new_data_and_the_legacy_accumulated_text() -> None:
    translator = TurnTranslator()
    first = translator.feed("item/commandExecution/outputDelta", {"itemId": "c1", "delta": "one\n"})
    second = translator.feed("item/commandExecution/outputDelta", {"itemId": "c1", "delta": "two\n"})
    assert first == [TerminalOutput("c1", "one\n", legacy=items.command_output("c1", "one\n"))]
    assert second == [TerminalOutput("c1", "two\n", legacy=items.command_output("c1", "one\ntwo\n"))]


def test_declined_command_fails_its_tool_call() -> None:
    exited = next(step for step in fold_turn(turn("approval_command_decline")) if isinstance(step, TerminalExited))
    assert exited.update is not None and exited.update.status == "failed"


def test_file_change_is_an_edit_tool_call_with_its_diff() -> None:
    steps = fold_turn(turn("approval_file_change_accept"))
    call = next(step for step in steps if isinstance(step, ToolCall))
    assert (call.kind, call.title, call.status) == ("edit", "Add <OUTSIDE>/patched.txt", "in_progress")
    assert call.content == [ToolDiff(path="<OUTSIDE>/patched.txt", new_text="hello from apply_patch\n", old_text=None)]
    assert call.locations == [ToolLocation(path="<OUTSIDE>/patched.txt")]
    declined = fold_turn(turn("approval_file_change_decline"))
    assert next(step for step in declined if isinstance(step, ToolCallUpdate)).status == "failed"


def test_compaction_is_a_typed_event_and_the_heads_up_warning_stays() -> None:
    steps = fold_turn(turn("thread_compacted", 1))
    item_id = "01a228f7-c20f-7271-b6a7-6cc00ff5f213"
    assert [step for step in steps if isinstance(step, Compaction)] == [
        Compaction(item_id, "in_progress"), Compaction(item_id, "completed")]
    assert not any(isinstance(step, AgentMessageChunk) and "ompact" in step.content.text for step in steps)
    notice = next(step for step in steps if isinstance(step, Notice))
    assert notice.title.startswith("Heads up: Long threads")
    assert notice.legacy_text == f"Warning: {notice.title}\n\n"
    translator = TurnTranslator()
    assert translator.feed("thread/compacted", {"threadId": "t", "turnId": "u"}) == [
        Compaction("u:compaction", "completed")]
    assert translator.feed("thread/compacted", {"threadId": "t", "turnId": "u"}) == []


def test_thread_name_becomes_the_session_title() -> None:
    translator = TurnTranslator()
    assert translator.feed("thread/name/updated", {"threadId": "t", "threadName": "Fix the build"}) == [
        SessionTitle("Fix the build")]
    assert translator.feed("thread/name/updated", {"threadId": "t", "threadName": None}) == [SessionTitle(None)]


def test_a_message_without_deltas_is_sent_whole_once() -> None:
    translator = TurnTranslator()
    item = {"type": "agentMessage", "id": "m1", "text": "all at once"}
    assert translator.feed("item/completed", {"item": item}) == [AgentMessageChunk(TextContent("all at once"),
                                                                                        message_id="m1")]
    translator.feed("item/agentMessage/delta", {"itemId": "m2", "delta": "streamed"})
    assert translator.feed("item/completed", {"item": {**item, "id": "m2", "text": "streamed"}}) == []


def test_turn_ids() -> None:
    started, *_ = turn("ok_reply_reasoning_usage")
    assert turn_id_of(*started) == started[1]["turn"]["id"]
    assert turn_id_of("item/agentMessage/delta", {"turnId": "x"}) == "x"
    assert turn_id_of("warning", {"threadId": "t", "message": "m"}) is None


# --- items that the fixtures do not show (shapes from the 0.163 JSON schema) ------------------------------


def test_mcp_tool_call_and_web_search() -> None:
    mcp = {"type": "mcpToolCall", "id": "mcp1", "server": "docs", "tool": "lookup", "status": "inProgress",
           "arguments": {"q": "x"}, "result": None, "error": None}
    call = items.tool_call(mcp)
    assert call is not None and (call.title, call.kind, call.raw_input) == ("docs: lookup", "other", {"q": "x"})
    done = {**mcp, "status": "completed", "result": {"content": [{"type": "text", "text": "found"}]}}
    update = items.tool_call_update(done)
    assert update is not None and (update.status, update.content) == ("completed", [ToolContent(TextContent("found"))])
    failed = items.tool_call_update({**mcp, "status": "failed", "error": {"message": "server gone"}})
    assert failed is not None and failed.content == [ToolContent(TextContent("server gone"))]
    search = items.tool_call({"type": "webSearch", "id": "w1", "query": "acp schema", "action": None})
    assert search is not None and (search.title, search.kind) == ("Web search: acp schema", "fetch")
    assert items.tool_call_update({"type": "webSearch", "id": "w1", "query": "q"}) == ToolCallUpdate(
        tool_call_id="w1", status="completed")


def test_update_and_delete_diffs() -> None:
    diff = "@@ -1,3 +1,3 @@\n keep\n-old line\n+new line\n tail\n"
    assert items.split_unified_diff(diff) == ("keep\nold line\ntail\n", "keep\nnew line\ntail\n")
    changes = [{"path": "/w/a.py", "kind": {"type": "update", "move_path": None}, "diff": diff},
               {"path": "/w/b.py", "kind": {"type": "delete"}, "diff": "gone\n"}]
    assert items.file_diffs(changes) == [
        ToolDiff(path="/w/a.py", new_text="keep\nnew line\ntail\n", old_text="keep\nold line\ntail\n"),
        ToolDiff(path="/w/b.py", new_text="", old_text="gone\n")]


# --- approvals and prompts ----------------------------------------------------------------------------------


def test_command_approval_request_as_a_permission_question() -> None:
    params = server_requests("approval_command_accept", "item/commandExecution/requestApproval")[0]
    tool_call, options = items.approval_request("item/commandExecution/requestApproval", params, None)
    assert (tool_call.tool_call_id, tool_call.kind, tool_call.status, tool_call.title) == (
        "call_0000004dfake", "execute", "pending", "echo hi > /tmp/acp_fixture_outside.txt; echo done")
    assert tool_call.raw_input["reason"] == "Allow writing /tmp/acp_fixture_outside.txt outside the workspace?"
    assert [(o.option_id, o.kind) for o in options] == [
        ("accept", "allow_once"), ("acceptForSession", "allow_always"), ("decline", "reject_once")]


def test_file_change_approval_takes_its_paths_from_the_item() -> None:
    params = server_requests("approval_file_change_accept", "item/fileChange/requestApproval")[0]
    translator = TurnTranslator()
    for method, message in turn("approval_file_change_accept"):
        translator.feed(method, message)
    tool_call, _ = items.approval_request("item/fileChange/requestApproval", params,
                                          translator.items[params["itemId"]])
    assert (tool_call.kind, tool_call.title) == ("edit", "Add <OUTSIDE>/patched.txt")
    assert tool_call.content == [ToolDiff(path="<OUTSIDE>/patched.txt", new_text="hello from apply_patch\n")]


def test_prompt_blocks_become_user_inputs() -> None:
    blocks = [TextContent("look"), ImageContent(data="aGk=", mime_type="image/png"),
              ResourceLink(uri="file:///w/a.py", name="a.py"),
              EmbeddedResource(TextResourceContents(uri="file:///w/b.py", text="print(1)"))]
    assert items.prompt_input(blocks) == [
        {"type": "text", "text": "look", "text_elements": []},
        {"type": "image", "url": "data:image/png;base64,aGk="},
        {"type": "text", "text": "[@a.py](file:///w/a.py)", "text_elements": []},
        {"type": "text", "text": '<context ref="file:///w/b.py">\nprint(1)\n</context>', "text_elements": []},
    ]


# --- history ----------------------------------------------------------------------------------------------------

STORED_TURNS = response("thread_list_and_resume", "thread/turns/list", process=1)["data"]


def test_history_replay_of_a_stored_thread() -> None:
    replayed = items.history_events(STORED_TURNS, lambda text: text)
    # a command is a finished terminal (its legacy form: the one finished tool call, as before)
    [exited] = [e for e in replayed if isinstance(e, TerminalExited)]
    assert (exited.tool_call_id, exited.exit_code, exited.legacy) == ("call_0000008afake", 0, False)
    events = [e.call if isinstance(e, TerminalStarted) else e for e in replayed if not isinstance(e, TerminalExited)]
    shown = [(type(e).__name__, getattr(getattr(e, "content", None), "text", None)) for e in events]
    assert shown[:3] == [("UserMessageChunk", "first prompt"), ("AgentThoughtChunk", "Consider greeting"),
                         ("AgentMessageChunk", "Hello from turn one")]
    call = events[5]
    assert isinstance(call, ToolCall)
    assert (call.tool_call_id, call.title, call.kind, call.status) == (
        "call_0000008afake", "echo history", "execute", "completed")
    assert call.content is not None and "history\n" in call.content[0].content.text  # type: ignore[union-attr]
    failure = events[8]
    assert isinstance(failure, HistoryFailure)
    assert (failure.observation.kind, failure.observation.native_kind) == (FailureKind.PROVIDER_ERROR,
                                                                           "internalServerError")
    # the live failure's id is `<codex turn id>:error`, so the replay names the turn id
    assert (failure.message_id, failure.user_message_id, failure.active) == (
        "01a228f7-ba56-7441-a44b-7d880ccf277b", "01a228f7-ba56-7441-a44b-7d880ccf277b", False)
    assert failure.legacy_updates == (AgentMessageChunk(TextContent(
        "We’re currently experiencing high demand, which may cause temporary errors.")),)
    assert shown[7] == ("UserMessageChunk", "third prompt fails")
    assert shown[9:] == [("UserMessageChunk", "fourth prompt is interrupted"),
                         ("UserMessageChunk", "fifth prompt succeeds"), ("AgentMessageChunk", "after failure")]


def test_history_legacy_text_is_redacted() -> None:
    failed = [{"id": "t1", "status": "failed", "items": [],
               "error": {"message": "boom sk-secret-123456", "codexErrorInfo": "other"}}]
    (event,) = items.history_events(failed, lambda text: text.replace("sk-secret-123456", "[REDACTED]"))
    assert isinstance(event, HistoryFailure) and event.active
    assert event.legacy_updates == (AgentMessageChunk(TextContent("boom [REDACTED]")),)
    assert event.user_message_id == "t1"


def test_user_images_replay() -> None:
    turns = [{"id": "t", "status": "completed", "items": [
        {"type": "userMessage", "id": "u", "content": [{"type": "image", "url": "data:image/png;base64,aGk="}]}]}]
    assert items.history_events(turns, str) == [UserMessageChunk(ImageContent(data="aGk=", mime_type="image/png"),
                                                                         message_id="u")]


class TestHistoryRecognition(HistoryContract):
    history_cases: ClassVar[list[tuple[Any, list[tuple[str, str | None]]]]] = [
        (STORED_TURNS, [("01a228f7-ba56-7441-a44b-7d880ccf277b", "01a228f7-ba56-7441-a44b-7d880ccf277b")]),
        (STORED_TURNS[:2], []),
    ]

    def recognise(self, transcript: Any) -> list[tuple[str, str | None]]:
        return [(e.message_id, e.user_message_id) for e in items.history_events(transcript, str)
                if isinstance(e, HistoryFailure)]


# --- runtime helpers (pure) ----------------------------------------------------------------------------------


def test_modes_follow_the_sandbox_codex_reports() -> None:
    started = response("ok_reply_reasoning_usage", "thread/start")
    assert runtime.mode_of(started) == "auto"
    assert runtime.mode_of(response("mode_read_only_on_request", "thread/start")) == "read-only"
    assert runtime.mode_of(response("mode_full_access_never", "thread/start")) == "full-access"


@pytest.mark.parametrize(("config", "sets_policy"), [
    (None, False),
    ('model = "gpt-5.5"\n', False),
    ('sandbox_mode = "read-only"\n', True),
    ('approval_policy = "never"\n', True),
    ('profile = "work"\n[profiles.work]\nsandbox_mode = "danger-full-access"\n', True),
    ("this is = not toml [", True),
    (b'model = "caf\xe9"\n', True),  # not UTF-8: codex says what is wrong, we override nothing
])
def test_user_config_policy_is_honoured(tmp_path: Path, config: str | bytes | None, sets_policy: bool) -> None:
    if isinstance(config, bytes):
        (tmp_path / "config.toml").write_bytes(config)
    elif config is not None:
        (tmp_path / "config.toml").write_text(config)
    assert runtime.user_config_sets_policy({"CODEX_HOME": str(tmp_path)}) is sets_policy


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_config_that_is_no_regular_file_is_skipped_at_once(tmp_path: Path, kind: str) -> None:
    """A FIFO (or a link to /dev/zero) as config.toml: skipped with a log line, codex left to
    report it (no policy passed), never waited on nor read without end. In a process of its own
    with a deadline and a memory cap: before the fix the FIFO's open waited for good and
    /dev/zero was read until the machine ran out of memory."""
    path = tmp_path / "config.toml"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    probe = ("import logging, resource; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
             "logging.basicConfig(level=logging.WARNING); from acp_agent_codex import runtime; "
             f"print(runtime.user_config_sets_policy({{'CODEX_HOME': {str(tmp_path)!r}}}))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=30, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "True"), done.stderr[-2000:]
    assert f"{path} is not a regular file" in done.stderr


def test_without_a_config_file_the_toml_parser_is_not_loaded(tmp_path: Path) -> None:
    """The first session asks for the policy: a user without config.toml does not pay for tomllib."""
    probe = ("import sys; from acp_agent_codex import runtime; "
             f"print(runtime.user_config_sets_policy({{'CODEX_HOME': {str(tmp_path)!r}}}), 'tomllib' in sys.modules)")

    def run() -> str:
        return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                              check=True).stdout.strip()

    assert run() == "False False"
    (tmp_path / "config.toml").write_text('model = "gpt-5.5"\n')  # the control: a file to read
    assert run() == "False True"


def test_mcp_servers_become_config_overrides() -> None:
    servers = [{"name": "fs", "command": "/bin/mcp-fs", "args": ["--root", "/w"], "env": [{"name": "A", "value": "1"}]},
               {"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp", "headers": []}]
    assert runtime.mcp_config(parse_mcp_servers(servers)) == {
        "mcp_servers.fs": {"command": "/bin/mcp-fs", "args": ["--root", "/w"], "env": {"A": "1"}},
        "mcp_servers.web": {"url": "http://127.0.0.1:9/mcp"},
    }


def test_thread_list_entries_become_session_infos() -> None:
    listed = response("thread_list_and_resume", "thread/list", process=1)["data"][0]
    info = runtime.session_info(listed)
    assert info is not None
    assert (info.session_id, info.cwd, info.title) == (listed["id"], "<CWD>", "first prompt")
    assert isinstance(info.updated_at, str) and info.updated_at.endswith("Z")


def test_questions_map_to_forms_and_answers_back() -> None:
    from acp_agent.backends.questions import Answer, Choice, Question, QuestionField, UrlQuestion
    params = {"threadId": "t", "turnId": "u", "itemId": "call_1", "isBlocking": False, "questions": [
        {"id": "q1", "header": "Color", "question": "Which color?", "isOther": True,
         "options": [{"label": "Blue", "description": "cool"}, {"label": "Red", "description": ""}]}]}
    assert items.user_input_question(params) == Question("Which color?", (
        QuestionField("q1", "Which color?", "Color", (Choice("Blue", "cool"), Choice("Red"))),))
    assert items.user_input_result(Answer("accept", {"q1": ("Red",)})) == {"answers": {"q1": {"answers": ["Red"]}}}
    assert items.user_input_result(Answer("cancel")) == {"answers": {}}
    form = {"threadId": "t", "serverName": "db", "mode": "form", "message": "Log in",
            "requestedSchema": {"type": "object", "properties": {"user": {"type": "string"}}}}
    assert items.elicitation_question(form) == Question("Log in", schema=form["requestedSchema"])
    url = {"threadId": "t", "serverName": "db", "mode": "url", "message": "Authorize", "url": "https://x.test/a",
           "elicitationId": "e1"}
    assert items.elicitation_question(url) == UrlQuestion("Authorize", "https://x.test/a", "e1")
    assert items.elicitation_question({**form, "mode": "openai/form"}) is None
    assert items.elicitation_result(Answer("accept", content={"user": "me"})) == {
        "action": "accept", "content": {"user": "me"}, "_meta": None}
    assert items.elicitation_result(Answer("decline")) == {"action": "decline", "content": None, "_meta": None}


# codex 0.163's approval of an MCP tool call, as captured from the real binary
MCP_APPROVAL = {"threadId": "t", "turnId": "u", "serverName": "asker", "mode": "form",
                "_meta": {"codex_approval_kind": "mcp_tool_call", "persist": ["session", "always"],
                          "tool_description": "Ask the user for a color.", "tool_params": {},
                          "tool_params_display": []},
                "message": 'Allow the asker MCP server to run tool "ask"?',
                "requestedSchema": {"type": "object", "properties": {}}}


def test_an_mcp_tool_approval_is_a_permission_on_the_tool_call() -> None:
    from acp_agent.backends.questions import Question
    assert items.is_mcp_tool_approval(MCP_APPROVAL)
    assert not items.is_mcp_tool_approval({**MCP_APPROVAL, "_meta": None})
    assert not items.is_mcp_tool_approval({**MCP_APPROVAL, "requestedSchema": {
        "type": "object", "properties": {"color": {"type": "string"}}}})
    known = {"a": {"type": "mcpToolCall", "id": "a", "server": "asker", "tool": "ask", "status": "completed"},
             "b": {"type": "mcpToolCall", "id": "b", "server": "other", "tool": "x", "status": "inProgress"},
             "c": {"type": "mcpToolCall", "id": "c", "server": "asker", "tool": "ask", "status": "inProgress",
                   "arguments": {"mode": "form"}}}
    assert items.running_mcp_call(known, "asker") == "c"
    assert items.running_mcp_call(known, "nobody") is None
    call, options = items.mcp_approval_request(MCP_APPROVAL, "c", known["c"])
    assert (call.tool_call_id, call.title, call.status, call.raw_input) == ("c", "asker: ask", "pending", {"mode": "form"})
    assert [o.option_id for o in options] == ["allow", "allow_session", "allow_always", "cancel"]
    _, only_once = items.mcp_approval_request({**MCP_APPROVAL, "_meta": {"codex_approval_kind": "mcp_tool_call"}},
                                              "x", None)
    assert [o.option_id for o in only_once] == ["allow", "cancel"]
    assert items.mcp_approval_result("allow") == {"action": "accept", "content": None, "_meta": None}
    assert items.mcp_approval_result("allow_session")["_meta"] == {"persist": "session"}
    assert items.mcp_approval_result("allow_always")["_meta"] == {"persist": "always"}
    assert items.mcp_approval_result("cancel")["action"] == items.mcp_approval_result(None)["action"] == "cancel"
    form = {"mode": "form", "message": "Pick", "requestedSchema": {"type": "object", "properties": {}}}
    assert items.elicitation_question(form, "c") == Question("Pick", schema=form["requestedSchema"], tool_call_id="c")


def test_an_interrupted_turn_ends_the_terminals_of_its_abandoned_commands() -> None:
    translator = TurnTranslator()
    translator.feed("item/started", {"item": {"type": "commandExecution", "id": "c1", "command": "sleep 9",
                                              "status": "inProgress"}})
    translator.feed("item/started", {"item": {"type": "commandExecution", "id": "c2", "command": "true",
                                              "status": "inProgress"}})
    translator.feed("item/completed", {"item": {"type": "commandExecution", "id": "c2", "command": "true",
                                                "status": "completed", "exitCode": 0, "aggregatedOutput": ""}})
    steps = translator.feed("turn/completed", {"turn": {"id": "u", "status": "interrupted"}})
    assert steps[0] == TerminalExited("c1", ToolCallUpdate(tool_call_id="c1", status="failed"), None, legacy=False)
    assert len(steps) == 2 and steps[1].end == TurnEnd("cancelled")  # type: ignore[union-attr]
    running = TurnTranslator()
    running.feed("item/started", {"item": {"type": "commandExecution", "id": "c3", "status": "inProgress"}})
    assert [type(s).__name__ for s in running.feed("turn/completed", {"turn": {"id": "u", "status": "completed"}})] == [
        "AuthConfirmed", "TurnDone"]  # still running in the background after a normal end
