"""The pure parts of a new Codex session's generated title (`acp_agent_codex.titles`)."""

from __future__ import annotations

from acp_agent.wire.acp import ImageContent, TextContent
from acp_agent_codex import titles


def test_the_title_request_and_its_answer() -> None:
    assert titles.source([TextContent(" Fix the"), ImageContent("AAAA", "image/png"), TextContent("login test ")]) == (
        "Fix the login test")
    assert len(titles.source([TextContent("x" * 9000)])) == titles.SOURCE_MAX_CHARS
    params = titles.turn_params("side", "Fix the login test", "gpt-5.6-luna")
    assert params["threadId"] == "side" and params["model"] == "gpt-5.6-luna"
    assert params["outputSchema"]["required"] == ["title"]
    assert params["input"][0]["text"].endswith("User's first message:\nFix the login test")
    assert "model" not in titles.turn_params("side", "x", None)
    assert titles.title_of('{"title": "  Fix the login test "}') == "Fix the login test"
    assert [titles.title_of(bad) for bad in (None, "", "not json", '{"title": ""}', '["title"]', '{"t": "x"}')] == [
        None] * 6


def test_the_title_model_is_codex_acps_where_offered() -> None:
    assert titles.model([{"model": "gpt-5.5"}, {"model": "gpt-5.6-luna"}], "gpt-5.5") == "gpt-5.6-luna"
    assert titles.model([{"model": "gpt-5.5"}], "gpt-5.5") == "gpt-5.5"
    assert titles.model([], None) is None


def test_titles_are_on_unless_turned_off() -> None:
    assert titles.enabled({}) and titles.enabled({titles.ENV: "1"})
    assert not any(titles.enabled({titles.ENV: value}) for value in ("0", "off", "false", "No"))


def test_the_collector_keeps_the_last_agent_message_until_the_turn_completes() -> None:
    collector = titles.Collector()
    collector.feed("item/completed", {"item": {"type": "reasoning", "text": "hm"}})
    collector.feed("item/completed", {"item": {"type": "agentMessage", "text": '{"title": "A"}'}})
    assert collector.answer == '{"title": "A"}' and not collector.done.is_set()
    collector.feed("turn/completed", {"turn": {"id": "t", "status": "completed"}})
    assert collector.done.is_set()
