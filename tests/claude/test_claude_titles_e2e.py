"""A new Claude session shows its prompt as its title at once, replaced by the title the CLI
generates when it generates one (issue 25, item 10), for a client of the failure extension (AIR)
and a legacy one, through the real CLI and the fake Anthropic API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.claude.e2e_support import claude_agent, text, wait_for_requests
from tests.fakes.anthropic_api import SIDE_TITLE, FakeAnthropicAPI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.real_backend, pytest.mark.timeout(120)]
BOTH = pytest.mark.parametrize("capable", [True, False], ids=["air", "legacy"])


def titles(agent: Any, session_id: str) -> list[str]:
    return [u["title"] for u in agent.frames.updates(session_id) if u["sessionUpdate"] == "session_info_update"
            and "title" in u]


@BOTH
async def test_a_prompt_the_cli_gives_no_title_for_is_the_title(tmp_path: Path, capable: bool) -> None:
    """"hi" is too short for the CLI to title (it answers no title without asking the model): the
    prompt is the session's title, published before the prompt's answer, once."""
    with FakeAnthropicAPI([{"reply": "Hello."}, {"reply": "Bye."}]) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("  hi \n"))
            at_answer = titles(agent, session.session_id)
            await agent.conn.prompt(session_id=session.session_id, prompt=text("and bye"))
            after_second = titles(agent, session.session_id)
    assert at_answer == ["hi"]
    assert after_second == ["hi"]  # a later prompt is not published over it
    assert agent.frames.problems == []


@BOTH
async def test_the_prompt_is_the_title_until_the_generated_one_replaces_it(tmp_path: Path, capable: bool) -> None:
    """A long prompt of several lines: one line of at most 256 characters at once, then the
    title the CLI generates (the fake answers its side request with SIDE_TITLE)."""
    prompt = "Refactor the parser module\ninto a table-driven design, " + "keeping every test green " * 20
    with FakeAnthropicAPI([{"reply": "On it."}]) as api:
        async with claude_agent(api, tmp_path, capable=capable) as agent:
            generated = anyio.Event()
            agent.client.update_hook = lambda _sid, update: (
                generated.set() if getattr(update, "title", None) == SIDE_TITLE else None)
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text(prompt))
            at_answer = titles(agent, session.session_id)
            await wait_for_requests(api, 1, kind="side", finished=True)
            with anyio.fail_after(30):  # the CLI's answer reaches the agent after the fake sent it
                await generated.wait()
    shown = " ".join(prompt.split())
    assert at_answer == [shown[:255].rstrip() + "\u2026"]
    assert titles(agent, session.session_id) == [at_answer[0], SIDE_TITLE]
    assert agent.frames.problems == []


async def test_a_loaded_session_keeps_its_title(tmp_path: Path) -> None:
    """A session opened again (here: loaded) already has its title: its next prompt is not one."""
    with FakeAnthropicAPI([{"reply": "Hello."}, {"reply": "Again."}]) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            session = await agent.conn.new_session(cwd=str(tmp_path))
            await agent.conn.prompt(session_id=session.session_id, prompt=text("hi"))
            await agent.conn.close_session(session_id=session.session_id)
            await agent.conn.load_session(cwd=str(tmp_path), session_id=session.session_id, mcp_servers=[])
            await agent.conn.prompt(session_id=session.session_id, prompt=text("once more"))
    assert titles(agent, session.session_id) == ["hi"]
    assert agent.frames.problems == []
