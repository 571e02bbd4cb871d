"""Parsing Codex slash commands and the requests they become."""

from __future__ import annotations

import pytest

from acp_agent.wire.acp import ImageContent, TextContent
from acp_agent_codex import commands


@pytest.mark.parametrize(("text", "expected"), [
    ("/compact", ("compact", "")),
    ("  /Review  look at errors ", ("review", "look at errors")),
    ("/review-branch main", ("review-branch", "main")),
    ("/unknown thing", None),
    ("compact", None),
    ("/", None),
])
def test_parse(text: str, expected: tuple[str, str] | None) -> None:
    command = commands.parse([TextContent(text=text)])
    assert (None if command is None else (command.name, command.rest)) == expected


def test_only_a_leading_text_block_is_a_command() -> None:
    assert commands.parse([ImageContent(data="", mime_type="image/png"), TextContent(text="/compact")]) is None
    assert commands.parse([]) is None


@pytest.mark.parametrize(("text", "target"), [
    ("/review", {"type": "uncommittedChanges"}),
    ("/review check tests", {"type": "custom", "instructions": "check tests"}),
    ("/review-branch main", {"type": "baseBranch", "branch": "main"}),
    ("/review-commit abc123", {"type": "commit", "sha": "abc123", "title": None}),
])
def test_review_targets(text: str, target: dict[str, object]) -> None:
    command = commands.parse([TextContent(text=text)])
    assert command is not None
    assert commands.request(command, "t") == ("review/start", {"threadId": "t", "target": target, "delivery": "inline"})


def test_mcp_text_names_servers_state_and_tools() -> None:
    text = commands.mcp_text([{"name": "web", "runtimeStatus": "connected", "tools": {"echo": {"name": "echo"}}},
                              {"name": "broken", "tools": {}, "toolsError": "refused"}])
    assert "- `web` (connected): `echo`" in text
    assert "- `broken`: tools unavailable (refused)" in text
    assert commands.mcp_text([]) == "No MCP servers are configured for this session."
