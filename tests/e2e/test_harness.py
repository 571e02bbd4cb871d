"""The frame validator itself must be able to fail."""

from __future__ import annotations

from acp import schema

from tests.e2e.harness import check_payload


def test_valid_frames_pass() -> None:
    update = {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk",
                                           "content": {"type": "text", "text": "hi"}}}
    assert check_payload(schema.SessionNotification, update) == []
    info = {"sessionId": "s", "update": {"sessionUpdate": "session_info_update", "_meta": {"a": {"b": 1}}}}
    assert check_payload(schema.SessionNotification, info) == []


def test_invalid_frames_are_reported() -> None:
    assert check_payload(schema.SessionNotification, {"sessionId": "s", "update": {"sessionUpdate": "bogus"}})
    assert check_payload(schema.PromptResponse, {"stopReason": "exploded"})
    assert check_payload(schema.PromptResponse, {"stopReason": "end_turn", "extra": 1})
    tool = {"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x",
                                         "status": "nonsense"}}
    assert check_payload(schema.SessionNotification, tool)
