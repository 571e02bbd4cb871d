"""The session's title: Claude Code names a session from its first prompt and stores it in the
transcript (an `ai-title` entry) without telling stream-json. As claude-agent-acp does, the agent
asks for it with the `generate_session_title` control request (the CLI answers with the title it
stored or is generating, so this makes no second model call) and publishes it. Until then a new
session shows its first prompt (`provisional`)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from acp_agent.provider import ChildGone, ContentBlock, Event, SessionTitle, TextContent, now_iso
from acp_agent_claude.transport import ClaudeCLI, ControlError

log = logging.getLogger(__name__)
TITLE_TIMEOUT_S = 60.0
MAX_DESCRIPTION = 1000  # the CLI titles from the last 1000 characters, as claude-agent-acp sends
PROVISIONAL_SCAN = 4096  # a title is the prompt's start: a prompt of megabytes is not read further


def description(prompt: Sequence[ContentBlock]) -> str:
    """The prompt's own text, which the CLI titles the session from."""
    text = "\n".join(block.text for block in prompt if isinstance(block, TextContent)).strip()
    return text[-MAX_DESCRIPTION:]


def provisional(prompt: Sequence[ContentBlock]) -> str | None:
    """The prompt's start, the title a new session shows until the CLI names it (the core's
    `session_title` makes it one line of at most 256 characters); None for a prompt of no text."""
    text = " ".join(block.text for block in prompt if isinstance(block, TextContent)).lstrip()
    return text[:PROVISIONAL_SCAN].rstrip() or None


async def publish(cli: ClaudeCLI, text: str, emit: Callable[[Event], Awaitable[None]]) -> bool:
    """Ask the CLI for the session's title and publish it; False when it gave none (ask again later)."""
    try:
        answer = await cli.request("generate_session_title", timeout_s=TITLE_TIMEOUT_S, description=text,
                                   persist=True)
    except (ChildGone, ControlError) as exc:
        log.info("no session title from the claude CLI: %s", exc)
        return False
    title = answer.get("title")
    if not isinstance(title, str) or not title.strip():
        return False
    await emit(SessionTitle(title, now_iso()))
    return True
