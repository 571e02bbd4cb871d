"""The wire forms of terminals, compaction and titles, for each kind of client (pure)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from acp_agent.backends.events import (
    Compaction,
    CompactionSummaryChunk,
    PlanDocument,
    PlanFileCall,
    SessionTitle,
    TerminalExited,
    TerminalOutput,
    TerminalStarted,
)
from acp_agent.sessions.presentation import ClientFeatures, Presenter, plan_review_request
from acp_agent.wire import acp
from acp_agent.wire.convert import make_converter

CALL = acp.ToolCall(tool_call_id="c1", title="ls", kind="execute", status="in_progress")
LEGACY_OUT = acp.ToolCallUpdate("c1", content=[acp.ToolContent(acp.TextContent("a\n"))])
DONE = acp.ToolCallUpdate("c1", status="completed", content=[acp.ToolContent(acp.TextContent("a\nb\n"))],
                          raw_output={"exitCode": 0})
DELTA = ClientFeatures(terminal_output_delta=True)
ZED = ClientFeatures(terminal_output=True)
NONE = ClientFeatures()


def wire(updates: list[acp.SessionUpdate]) -> list[dict[str, object]]:
    converter = make_converter()
    return [converter.unstructure(update) for update in updates]


def test_features_come_from_the_meta_flags_and_elicitation() -> None:
    assert ClientFeatures.from_capabilities({"terminal_output": True}, None) == ZED
    assert ClientFeatures.from_capabilities({"terminal_output_delta": True}, {}) == DELTA
    assert ClientFeatures.from_capabilities({"terminal_output": "yes", "terminal_output_delta": 1}, None) == NONE
    assert ClientFeatures.from_capabilities(None, {"form": {}, "url": None}) == ClientFeatures(elicitation_form=True)
    assert ClientFeatures.from_capabilities(None, None, {"notices": {}, "compaction": {}}) == ClientFeatures(
        notices=True, compaction=True)
    assert ClientFeatures.from_capabilities(None, None, {"notices": True, "compaction": None}) == NONE


def test_a_client_without_terminals_gets_the_providers_own_updates() -> None:
    presenter = Presenter()
    events = [TerminalStarted(CALL, "/w"), TerminalOutput("c1", "a\n", legacy=LEGACY_OUT),
              TerminalOutput("c1", "b\n"), TerminalExited("c1", DONE, 0, "a\nb\n")]
    rendered = [update for event in events for update in presenter.render(event, NONE, capable=True)]
    assert rendered == [CALL, LEGACY_OUT, DONE]


def test_a_terminal_client_gets_info_chunks_and_the_exit() -> None:
    presenter = Presenter()
    start, = wire(presenter.render(TerminalStarted(CALL, "/w"), DELTA, capable=False))
    assert start["content"] == [{"type": "terminal", "terminalId": "c1"}]
    assert start["_meta"] == {"terminal_info": {"terminal_id": "c1", "cwd": "/w"}}
    chunk, = wire(presenter.render(TerminalOutput("c1", "a\n", legacy=LEGACY_OUT), DELTA, capable=False))
    assert chunk == {"toolCallId": "c1", "sessionUpdate": "tool_call_update",
                     "_meta": {"terminal_output_delta": {"terminal_id": "c1", "data": "a\n"}}}
    final, = wire(presenter.render(TerminalExited("c1", DONE, 0, "a\nb\n"), DELTA, capable=False))
    assert final["status"] == "completed" and "rawOutput" not in final
    assert final["content"] == [{"type": "terminal", "terminalId": "c1"}]
    assert final["_meta"] == {"terminal_exit": {"terminal_id": "c1", "exit_code": 0, "signal": None}}


def test_output_that_never_streamed_is_sent_once_before_the_exit() -> None:
    presenter = Presenter()
    chunk, final = wire(presenter.render(TerminalExited("c1", DONE, 2, "a\nb\n"), ZED, capable=False))
    assert chunk["_meta"] == {"terminal_output": {"terminal_id": "c1", "data": "a\nb\n"}}
    assert final["_meta"]["terminal_exit"]["exit_code"] == 2


def test_a_status_change_without_output_keeps_its_fields_but_not_the_text() -> None:
    presenter = Presenter()
    titled = acp.ToolCallUpdate("c1", title="ls -l", content=[acp.ToolContent(acp.TextContent("x"))])
    assert presenter.render(TerminalOutput("c1", "", legacy=titled), ZED, capable=False) == [
        acp.ToolCallUpdate("c1", title="ls -l")]
    assert presenter.render(TerminalOutput("c1", "", legacy=LEGACY_OUT), ZED, capable=False) == []


def test_compaction_is_one_tool_call_then_updates() -> None:
    presenter = Presenter()
    first, = wire(presenter.render(Compaction("k1", "in_progress", trigger="auto"), NONE, capable=False))
    assert first == {"toolCallId": "k1", "title": "Compact conversation", "kind": "think", "status": "in_progress",
                     "rawOutput": {"trigger": "auto"}, "sessionUpdate": "tool_call"}
    failed, = wire(presenter.render(Compaction("k1", "failed", error="too big"), NONE, capable=True))
    assert failed["sessionUpdate"] == "tool_call_update" and failed["status"] == "failed"
    assert failed["content"] == [{"type": "content", "content": {"type": "text", "text": "Compaction failed: too big"}}]
    assert failed["_meta"] == {"jetbrains": {"air": {"contextCompaction": {"version": 1, "error": "too big"}}}}
    assert "rawOutput" not in failed


def test_a_title_carries_updated_at() -> None:
    update, = wire(Presenter().render(SessionTitle("Fix the build"), NONE, capable=False))
    assert update["title"] == "Fix the build"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", str(update["updatedAt"]))
    one_line, = wire(Presenter().render(SessionTitle(" Fix  the\nbuild "), NONE, capable=False))
    assert one_line["title"] == "Fix the build"
    long, = wire(Presenter().render(SessionTitle("x" * 300), NONE, capable=False))
    assert long["title"] == "x" * 255 + "\u2026"
    cleared, = wire(Presenter().render(SessionTitle(None, "2026-01-01T00:00:00Z"), NONE, capable=False))
    assert cleared == {"title": None, "updatedAt": "2026-01-01T00:00:00Z", "sessionUpdate": "session_info_update"}


COMPACTING = ClientFeatures(compaction=True)


def test_a_compaction_client_gets_in_progress_chunks_then_one_terminal_with_the_summary() -> None:
    from tests import acp_schema

    presenter = Presenter()
    updates = [*presenter.render(Compaction("k1", "in_progress", trigger="auto", tokens_before=900), COMPACTING,
                                 capable=True),
               *presenter.render(CompactionSummaryChunk("k1", "Part one. "), COMPACTING, capable=True),
               *presenter.render(Compaction("k1", "completed", trigger="auto", tokens_before=900, tokens_after=90,
                                            duration_ms=1200, summary="The whole summary."), COMPACTING, capable=True),
               *presenter.render(Compaction("k1", "completed"), COMPACTING, capable=True),  # a repeat: ended
               *presenter.render(CompactionSummaryChunk("k1", "late"), COMPACTING, capable=True)]
    air = {"version": 1}
    assert wire(updates) == [
        {"compactionId": "k1", "status": "in_progress", "sessionUpdate": "compaction_update",
         "_meta": {"jetbrains": {"air": {"contextCompaction": air}}}},
        {"compactionId": "k1", "content": {"type": "text", "text": "Part one. "},
         "sessionUpdate": "compaction_summary_chunk"},
        {"compactionId": "k1", "status": "completed", "summary": [{"type": "text", "text": "The whole summary."}],
         "sessionUpdate": "compaction_update", "_meta": {"jetbrains": {"air": {"contextCompaction": {
             **air, "trigger": "automatic", "preTokens": 900, "postTokens": 90, "durationMs": 1200}}}}}]
    for update in wire(updates):
        acp_schema.check_notification({"method": "session/update", "params": {"sessionId": "s", "update": update}},
                                      variant="stable")
    assert presenter.turn_ended(COMPACTING) == []


def test_a_summary_that_streamed_whole_is_not_sent_again_and_a_failure_carries_its_error() -> None:
    presenter = Presenter()
    presenter.render(Compaction("k1", "in_progress"), COMPACTING, capable=False)
    presenter.render(CompactionSummaryChunk("k1", "All of it."), COMPACTING, capable=False)
    done, = wire(presenter.render(Compaction("k1", "completed", summary="All of it."), COMPACTING, capable=False))
    assert done == {"compactionId": "k1", "status": "completed", "sessionUpdate": "compaction_update"}
    opened, failed = wire(presenter.render(Compaction("k2", "failed", error="too big"), COMPACTING, capable=False))
    assert (opened["status"], failed["status"], failed["error"]) == ("in_progress", "failed", "too big")


def test_a_compaction_its_turn_left_open_is_cancelled() -> None:
    presenter = Presenter()
    presenter.render(Compaction("k1", "in_progress"), COMPACTING, capable=False)
    assert wire(presenter.turn_ended(COMPACTING)) == [
        {"compactionId": "k1", "status": "cancelled", "sessionUpdate": "compaction_update"}]
    assert presenter.render(Compaction("k1", "completed"), COMPACTING, capable=False) == []
    assert presenter.turn_ended(COMPACTING) == []
    legacy = Presenter()
    legacy.render(Compaction("k1", "in_progress"), NONE, capable=False)
    assert legacy.turn_ended(NONE) == []  # other clients keep today's tool call
    assert wire(legacy.render(Compaction("k1", "cancelled"), NONE, capable=False))[0]["status"] == "failed"


def test_a_cancelled_compaction_with_a_reason_shows_it_as_a_failed_one_did() -> None:
    """A provider that reports a cancel as `cancelled` (Muse did as `failed`) changes nothing for
    clients without `session.compaction`: the tool call fails with the reason as its content."""
    def legacy(status: Literal["failed", "cancelled"]) -> dict[str, object]:
        presenter = Presenter()
        presenter.render(Compaction("k1", "in_progress"), NONE, capable=False)
        [update] = wire(presenter.render(Compaction("k1", status, error="Stopped."), NONE, capable=False))
        return update

    assert legacy("cancelled") == legacy("failed")
    assert legacy("cancelled")["content"] == [{"type": "content", "content": {"type": "text",
                                                                               "text": "Compaction failed: Stopped."}}]


def test_facts_reported_after_the_terminal_status_patch_it_for_a_client_of_the_extension() -> None:
    """Claude ends a compaction with its result, then its boundary brings the token counts: the
    extension's client gets them as a patch of the same terminal status (as claude-agent-acp
    sends them); another client, a different status or a repeat without facts, nothing."""
    presenter, plain = Presenter(), Presenter()
    for target, capable in ((presenter, True), (plain, False)):
        target.render(Compaction("k1", "in_progress"), COMPACTING, capable=capable)
        target.render(Compaction("k1", "completed", summary="S."), COMPACTING, capable=capable)
    boundary = Compaction("k1", "completed", trigger="manual", tokens_before=900, tokens_after=90, duration_ms=5)
    assert wire(presenter.render(boundary, COMPACTING, capable=True)) == [
        {"compactionId": "k1", "status": "completed", "sessionUpdate": "compaction_update",
         "_meta": {"jetbrains": {"air": {"contextCompaction": {
             "version": 1, "trigger": "manual", "preTokens": 900, "postTokens": 90, "durationMs": 5}}}}}]
    assert presenter.render(Compaction("k1", "completed"), COMPACTING, capable=True) == []
    assert presenter.render(Compaction("k1", "failed", tokens_before=1), COMPACTING, capable=True) == []
    assert plain.render(boundary, COMPACTING, capable=False) == []


# --- plans --------------------------------------------------------------------------------------------

PLAN_AIR = {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure", "planFile"]}}}


def test_plan_features_come_from_the_plan_capability_and_the_air_list() -> None:
    features = ClientFeatures.from_capabilities(PLAN_AIR, None, None, {})
    assert (features.plan, features.air_client, features.plan_file) == (True, True, True)
    assert ClientFeatures.from_capabilities({"jetbrains": {"air": {"version": 1}}}, None).air_client
    assert ClientFeatures.from_capabilities(None, None, None, None) == NONE
    assert ClientFeatures.from_capabilities(None, None, None, True) == NONE  # only an object opts in


def test_a_plan_file_review_names_the_file_for_a_plan_file_client_only(tmp_path: Path) -> None:
    plan_file = tmp_path / "plan.md"
    plan_file.write_text("# Plan")
    tool_input = {"plan": "# Plan", "planFilePath": str(plan_file), "allowedPrompts": []}
    call = acp.ToolCall(tool_call_id="t1", title="ExitPlanMode", kind="switch_mode", raw_input=tool_input)
    result = acp.ToolCallUpdate("t1", status="completed")
    plan_file_client = ClientFeatures.from_capabilities(PLAN_AIR, None)
    named = {"allowedPrompts": [], "planFilePath": str(plan_file)}
    assert Presenter().render(PlanFileCall(call, tool_input, str(plan_file)), NONE, True) == [call]
    [shown] = Presenter().render(PlanFileCall(call, tool_input, str(plan_file)), plan_file_client, True)
    assert shown.raw_input == named
    done, clear = Presenter().render(PlanFileCall(result, tool_input, str(plan_file), released=True),
                                     plan_file_client, True)
    assert done.raw_input == named
    assert wire([clear]) == [{"toolCallId": "t1:plan-file-clear", "title": "Exited Plan Mode", "kind": "switch_mode",
                              "status": "completed", "content": [], "rawInput": {"planFilePath": ""},
                              "sessionUpdate": "tool_call"}]
    asked = plan_review_request(PlanFileCall(call, tool_input, str(plan_file), released=True), plan_file_client)
    assert isinstance(asked, acp.ToolCallUpdate) and asked.raw_input == named
    for missing in ("relative/plan.md", str(tmp_path / "gone.md"), str(tmp_path), None):
        assert Presenter().render(PlanFileCall(call, tool_input, missing, released=True), plan_file_client,
                                  True) == [call]


def test_an_approved_plan_is_a_markdown_plan_update_for_a_plan_client_only() -> None:
    document = PlanDocument("plan-mode", "# Plan", "t1")
    assert Presenter().render(document, NONE, True) == []
    assert wire(Presenter().render(document, ClientFeatures(plan=True), False)) == [
        {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "plan-mode", "content": "# Plan"}}]
    for air, capable in ((ClientFeatures(plan=True, air_client=True), False), (ClientFeatures(plan=True), True)):
        [update] = wire(Presenter().render(document, air, capable))
        assert update["plan"]["planId"] == "plan-mode:t1"  # joined to its approval card for AIR
    assert Presenter().render(PlanDocument("plan-mode", ""), ClientFeatures(plan=True), False) == []


def test_a_streamed_plan_is_sent_as_it_grows_as_new_text_only_for_plan_content_delta() -> None:
    text = acp.agent_text("# Plan\n- a", "p1")
    stream = [PlanDocument("p1", "# Plan", streamed=True), PlanDocument("p1", "# Plan", streamed=True),
              PlanDocument("p1", "# Plan\n- a", streamed=True, otherwise=text)]

    def sent(features: ClientFeatures) -> list[dict[str, object]]:
        presenter = Presenter()
        return [update for document in stream for update in wire(presenter.render(document, features, False))]

    whole = [{"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p1", "content": c}}
             for c in ("# Plan", "# Plan\n- a")]  # nothing for the unchanged repeat
    assert sent(ClientFeatures(plan=True)) == whole
    deltas = ClientFeatures(plan=True, air_client=True, air=frozenset({"planContentDelta"}))
    assert sent(deltas) == [whole[0], {
        "sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p1", "content": ""},
        "_meta": {"jetbrains": {"air": {"version": 1, "contentDelta": "\n- a"}}}}]
    assert sent(NONE) == wire([text])  # the completed plan as text for a client without `plan`


def test_a_partial_plan_sent_whole_is_throttled_and_its_final_text_always_sent() -> None:
    """A `plan` client (no `planContentDelta`) gets a streaming plan whole: at most every
    `PLAN_RESEND_S` while it is partial, and its final text at once; deltas are not throttled."""
    from acp_agent.sessions.presentation import PLAN_RESEND_S

    now = [100.0]
    texts = ["# P", "# P\n- a", "# P\n- a\n- b", "# P\n- a\n- b\n- c"]
    stream = [(0.0, PlanDocument("p1", texts[0], streamed=True, partial=True)),
              (0.01, PlanDocument("p1", texts[1], streamed=True, partial=True)),
              (PLAN_RESEND_S, PlanDocument("p1", texts[2], streamed=True, partial=True)),
              (0.01, PlanDocument("p1", texts[3], streamed=True))]

    def sent(features: ClientFeatures) -> list[dict[str, Any]]:
        presenter = Presenter(clock=lambda: now[0])
        out: list[dict[str, Any]] = []
        for step, document in stream:
            now[0] += step
            out.extend(wire(presenter.render(document, features, False)))
        return out

    assert [u["plan"]["content"] for u in sent(ClientFeatures(plan=True))] == [texts[0], texts[2], texts[3]]
    deltas = ClientFeatures(plan=True, air_client=True, air=frozenset({"planContentDelta"}))
    assert [u["_meta"]["jetbrains"]["air"]["contentDelta"] for u in sent(deltas)[1:]] == ["\n- a", "\n- b", "\n- c"]
