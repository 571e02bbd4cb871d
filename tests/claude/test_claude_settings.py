"""The Claude settings options and the agent's own `/mcp` answer, as pure functions."""

from __future__ import annotations

from acp_agent.acp import ImageContent, TextContent
from acp_agent_claude import commands, settings

MODELS = [
    {"value": "default", "displayName": "Default", "supportsEffort": True,
     "supportedEffortLevels": ["low", "xhigh"], "supportsFastMode": True, "supportsAutoMode": True},
    {"value": "haiku", "displayName": "Haiku", "supportsEffort": False},
]


def test_effort_and_fast_mode_follow_the_model() -> None:
    first = {o.id: o for o in settings.config_options(MODELS, None, "xhigh", True)}
    haiku = {o.id: o for o in settings.config_options(MODELS, "haiku", "xhigh", True)}
    assert list(first) == ["model", "effort", "fast-mode"]
    assert [(v.value, v.name) for v in first["effort"].options] == [
        ("default", "Default"), ("low", "Low"), ("xhigh", "Extra high")]
    assert first["effort"].current_value == "xhigh" and first["fast-mode"].current_value == "on"
    assert list(haiku) == ["model"]  # no effort levels, no fast mode
    assert settings.supports_auto_mode(MODELS, None) and not settings.supports_auto_mode(MODELS, "haiku")
    assert settings.config_options([], None, None) == []


def test_a_level_the_model_lacks_shows_as_default() -> None:
    [_, effort, _] = settings.config_options(MODELS, "default", "max")
    assert effort.current_value == "default"
    assert settings.effort_value("default") is None and settings.effort_value("low") == "low"


def test_only_a_bare_mcp_prompt_is_answered_by_the_agent() -> None:
    assert commands.local_command([TextContent(" /mcp\n")]) == "/mcp"
    assert commands.local_command([TextContent("/mcp reconnect web")]) is None
    assert commands.local_command([TextContent("/mcp"), ImageContent(data="", mime_type="image/png")]) is None
    assert commands.local_command([TextContent("/usage")]) is None


def test_the_mcp_answer_names_states_and_never_configuration() -> None:
    status = {"mcpServers": [
        {"name": "web", "status": "failed", "transport": "http", "error": "connection refused\nstack",
         "config": {"type": "http", "url": "https://x", "headers": {"Authorization": "Bearer secret-1"}}},
        {"name": "tools", "status": "connected", "transport": "stdio", "tools": [{"name": "a"}, {"name": "b"}],
         "config": {"command": "run", "env": {"TOKEN": "secret-2"}}},
    ]}
    text = commands.mcp_text(status)
    assert text == ("MCP servers (2):\n- web (http): failed (connection refused)\n"
                    "- tools (stdio): connected, 2 tools")
    assert "secret" not in text
    assert commands.mcp_text({"mcpServers": []}) == "No MCP servers are configured for this session."
