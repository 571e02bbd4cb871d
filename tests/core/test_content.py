"""The content conversion every provider shares (`acp_agent.wire.content`, `prompt_payload`,
`question_form`, `fold_steps`, `Attempts`, `titled_classifier`), table-tested on what the real
backends sent: app-server 0.163's captured traffic and the MSP shapes the Muse tests use."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from attrs import define

from acp_agent.backends.events import AttemptBoundary, RetryProgress, TurnEnd
from acp_agent.backends.questions import Choice, Question, QuestionField, question_form
from acp_agent.backends.turns import Attempts, TurnDone, fold_steps
from acp_agent.failures.hooks import titled_classifier
from acp_agent.failures.protocol import FailureKind, FailureObservation
from acp_agent.wire.acp import ImageContent, TextContent, ToolContent, UsageUpdate, agent_text, parse_mcp_servers
from acp_agent.wire.content import (
    PLAN_STATUS,
    TOOL_STATUS,
    first_line,
    first_text,
    is_count,
    json_int,
    json_list,
    json_text,
    mcp_server_config,
    split_unified_diff,
    text_blocks,
    text_content,
    usage_update,
)
from acp_agent.wire.prompt import TextStyle, prompt_payload
from tests.codex.fixture_lines import entries, params_of


@pytest.mark.parametrize(("value", "text", "listed", "whole", "count"), [
    ("a", "a", [], None, False),
    ([1], "", [1], None, False),
    (3, "", [], 3, True),
    (-1, "", [], -1, False),
    (True, "", [], None, False),
    (None, "", [], None, False),
    ({"a": 1}, "", [], None, False),
    (1.5, "", [], None, False),
])
def test_a_field_of_another_type_counts_as_absent(value: Any, text: str, listed: list[Any], whole: int | None,
                                                   count: bool) -> None:
    assert (json_text(value), json_list(value), json_int(value), is_count(value)) == (text, listed, whole, count)


def test_usage_from_app_server_token_usage() -> None:
    """codex's `thread/tokenUsage/updated`: the last request's total against the model's window."""
    token_usage = params_of("ok_reply_reasoning_usage", "thread/tokenUsage/updated")[-1]["tokenUsage"]
    used, window = token_usage["last"]["totalTokens"], token_usage["modelContextWindow"]
    assert usage_update(used, window) == UsageUpdate(used=used, size=window)


@pytest.mark.parametrize(("used", "size", "expected"), [
    (10, 100, UsageUpdate(used=10, size=100)),  # MSP session/contextUsage
    (0, 100, UsageUpdate(used=0, size=100)),
    (10, 0, None),  # window not known yet
    (10, None, None),
    (True, 100, None),
    (-1, 100, None),
    ("10", 100, None),
])
def test_usage_only_for_counts_against_a_known_window(used: Any, size: Any, expected: UsageUpdate | None) -> None:
    assert usage_update(used, size) == expected


def test_text_blocks_of_an_mcp_result_and_an_anthropic_tool_result() -> None:
    mcp_result = {"content": [{"type": "text", "text": "found"}, {"type": "image", "data": "AA"},
                              {"type": "text", "text": 3}, "junk", {"type": "text", "text": "more"}]}
    assert text_blocks(mcp_result["content"]) == ["found", "more"]
    assert text_blocks({"type": "text", "text": "not a list"}) == []
    assert text_content("out") == [ToolContent(TextContent("out"))]
    assert text_content("") == []


def test_the_two_sides_of_an_app_server_file_change_diff() -> None:
    diff = "@@ -1,3 +1,3 @@\n keep\n-old line\n+new line\n tail\n"
    assert split_unified_diff(diff) == ("keep\nold line\ntail\n", "keep\nnew line\ntail\n")
    assert split_unified_diff("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n") == ("a\n", "b\n")
    assert split_unified_diff("") == ("", "")


def test_plan_and_tool_status_and_first_line() -> None:
    assert [PLAN_STATUS.get(s) for s in ("pending", "inProgress", "in_progress", "completed", "cancelled")] == [
        "pending", "in_progress", "in_progress", "completed", None]
    assert [TOOL_STATUS.get(s) for s in ("inProgress", "completed", "failed", "declined")] == [
        "in_progress", "completed", "failed", None]  # app-server's and MSP's; each adds its own failures
    assert first_line("\n  ls -la\nmore\n") == "ls -la"
    tool_input = {"file_path": "", "notebook_path": 3, "path": "/w/a.py"}  # a model's tool input
    assert (first_text(tool_input, "file_path", "notebook_path", "path"), first_text(tool_input, "x")) == ("/w/a.py", None)
    assert first_line("") == ""
    assert first_line("x" * 200, 10) == "x" * 9 + "…"


def test_mcp_servers_as_a_backends_configuration() -> None:
    servers = parse_mcp_servers([
        {"name": "fs", "command": "npx", "args": ["srv"], "env": [{"name": "K", "value": "v"}]},
        {"type": "http", "name": "web", "url": "https://x.test/mcp", "headers": []},
        {"type": "sse", "name": "old", "url": "https://x.test/sse", "headers": [{"name": "H", "value": "1"}]},
    ])

    def entry(server: Any, pairs: dict[str, str]) -> dict[str, Any] | None:
        return None if getattr(server, "type", "stdio") == "sse" else {"name": server.name, "pairs": pairs}

    assert mcp_server_config(servers, entry, lambda name: f"mcp_servers.{name}") == {
        "mcp_servers.fs": {"name": "fs", "pairs": {"K": "v"}},
        "mcp_servers.web": {"name": "web", "pairs": {}},
    }


def test_prompt_payload_maps_text_and_images_and_drops_audio() -> None:
    from acp_agent.wire.acp import AudioContent

    image = ImageContent(data="aGk=", mime_type="image/png")
    prompt = [TextContent("look"), image, AudioContent(data="AAAA", mime_type="audio/wav")]
    assert prompt_payload(prompt, TextStyle(), lambda text: {"text": text},
                          lambda part: {"image": part.mime_type}) == [{"text": "look"}, {"image": "image/png"}]


def test_question_form_from_codex_and_muse_questions() -> None:
    codex = [{"id": "q1", "header": "Color", "question": "Which color?", "isOther": True,
              "options": [{"label": "Blue", "description": "cool"}, {"label": "Red", "description": ""}]}]
    assert question_form(codex, "fallback") == Question("Which color?", (
        QuestionField("q1", "Which color?", "Color", (Choice("Blue", "cool"), Choice("Red"))),))
    muse = [{"header": "Pick", "id": "q1", "question": "Which file?", "options": [{"label": "a.py"}],
             "selection": {"mode": "single"}},
            {"header": "Tags", "id": "q2", "question": "Which tags?", "options": [{"label": "x", "description": "ex"}],
             "selection": {"mode": "multiple"}},
            {"question": "no id"}, "junk"]
    form = question_form(muse, "fallback", lambda entry: entry["selection"]["mode"] == "multiple")
    assert form == Question("fallback", (
        QuestionField("q1", "Which file?", "Pick", (Choice("a.py"),)),
        QuestionField("q2", "Which tags?", "Tags", (Choice("x", "ex"),), multiple=True)))
    assert question_form(None, "fallback") == Question("fallback")


@define
class _Retrying(Attempts):
    """A translator: a retry notice, text, and the end."""

    def feed(self, method: str, params: Mapping[str, Any]) -> list[Any]:
        if method == "retry":
            self.retrying = True
            return [RetryProgress("again", FailureKind.RATE_LIMITED)]
        if method == "text":
            return [*self.progress(), agent_text(params["text"])]
        return [TurnDone(TurnEnd("end_turn"))]


def test_fold_steps_ends_at_the_turns_end_and_attempts_open_once() -> None:
    steps = fold_steps(_Retrying(), [("retry", {}), ("text", {"text": "a"}), ("text", {"text": "b"}),
                                     ("end", {}), ("text", {"text": "after"})])
    assert steps == [RetryProgress("again", FailureKind.RATE_LIMITED), AttemptBoundary(), agent_text("a"),
                     agent_text("b"), TurnEnd("end_turn")]


def test_titled_classifier_titles_what_it_classifies() -> None:
    """codex's failed `turn/completed` shape: classified without a title, titled by its message."""
    _, logged = entries("error_401_unauthorized")
    native = next(entry["msg"]["params"] for entry in logged if entry["msg"].get("method") == "error")

    def classify(params: Mapping[str, Any]) -> FailureObservation | None:
        if "error" not in params:
            return None
        return FailureObservation(kind=FailureKind.AUTH_REQUIRED, native_kind="unauthorized", title=None,
                                  source="provider", outcome="failed", execution="possiblySubmitted", phase="running")

    observe = titled_classifier(classify, lambda params: params["error"]["message"])
    observed = observe(native)
    assert observed is not None and observed.title == native["error"]["message"] and observed.title
    assert observe({}) is None
