"""The Claude settings options and the agent's own `/mcp` answer, as pure functions."""

from __future__ import annotations

from typing import Any

from acp_agent.wire.acp import ImageContent, TextContent
from acp_agent_claude import commands, history, settings

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


def test_the_initial_mode_follows_claude_agent_acp() -> None:
    offered = ["default", "acceptEdits", "plan", "auto"]
    assert settings.initial_mode(None, True, offered) == "auto"
    assert settings.initial_mode(None, False, offered) == "default"
    assert settings.initial_mode("plan", True, offered) == "plan"
    assert settings.initial_mode("auto", False, offered) == "acceptEdits"
    assert settings.initial_mode("bypassPermissions", True, offered) == "default"  # not offered (root)
    assert settings.initial_mode("nonsense", True, offered) == "default"


def test_settings_files_rank_managed_local_project_user(tmp_path: Any) -> None:
    import json

    config, work = tmp_path / "config", tmp_path / "work"
    (work / ".claude").mkdir(parents=True)
    config.mkdir()
    environ = {"CLAUDE_CONFIG_DIR": str(config), "HOME": str(tmp_path)}
    assert settings.configured(environ, str(work)) == (None, None)
    (config / "settings.json").write_text(json.dumps({"permissions": {"defaultMode": "plan"}, "model": "haiku"}))
    assert settings.configured(environ, str(work)) == ("plan", "haiku")
    (work / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"defaultMode": "bypassPermissions"}}))
    assert settings.configured(environ, str(work))[0] == "plan"  # a repository may not start sessions in bypass
    (work / ".claude" / "settings.local.json").write_text(json.dumps({"permissions": {"defaultMode": "acceptEdits"}}))
    assert settings.configured(environ, str(work))[0] == "acceptEdits"
    (config / "settings.json").write_text("{broken")
    assert settings.configured(environ, str(work)) == ("acceptEdits", None)
    models = [{"value": "default", "resolvedModel": "claude-opus-5-5"},
              {"value": "claude-haiku-4-5", "resolvedModel": "claude-haiku-4-5"}]
    assert settings.preferred_model(models, {"ANTHROPIC_MODEL": "claude-haiku-4-5"}, None) == "claude-haiku-4-5"
    assert settings.preferred_model(models, {}, "claude-opus-5-5") == "default"
    assert settings.preferred_model(models, {}, None) is None


def test_status_names_credential_sources_only() -> None:
    assert commands.credential_source({"tokenSource": "claude.ai", "apiKeySource": "none",
                                       "apiProvider": "firstParty"}) == "token from claude.ai (firstParty)"
    assert commands.credential_source({"tokenSource": "none", "apiKeySource": "none"}) == "not signed in"
    assert commands.credential_source(None) == "unknown"
    assert commands.local_command([TextContent(" /status ")]) == commands.STATUS
    offered = commands.with_status([{"name": "mcp"}])
    assert [c["name"] for c in offered] == ["mcp", "status"]
    assert commands.with_status([{"name": "status"}]) == [{"name": "status"}]
    text = commands.status_text(version="2.1.332", session_id="s", cwd="/w", directories=[], model="Opus",
                                mode="Auto", effort=None, fast=None, account={})
    assert text.splitlines() == ["Claude Code 2.1.332", "Session: s", "Working directory: /w", "Model: Opus",
                                 "Mode: Auto", "Effort: Claude Code default", "Credentials: not signed in"]


def test_a_transcripts_last_user_record_names_its_mode() -> None:
    import io
    import json

    lines = [json.dumps({"type": "user", "permissionMode": "plan", "message": {"content": "hi"}}),
             json.dumps({"type": "assistant", "message": {"content": '"permissionMode": "bypassPermissions"'}}),
             "{broken"]
    for text, mode in (("\n".join(lines), "plan"), ("", None)):
        reader = history.TranscriptReader(entries=False)
        reader.read(io.BytesIO(text.encode()), lambda batch: None)
        assert reader.mode == mode
    offered = ["default", "acceptEdits", "plan"]
    assert settings.initial_mode(None, True, offered, resumed="plan") == "plan"
    assert settings.initial_mode("acceptEdits", True, offered, resumed="auto") == "acceptEdits"  # not offered
