"""`session/set_title` (unstable, `sessionCapabilities.title`) through `acp-agent --provider X`:
the real codex on the loopback fake and the fake Muse host rename the session in their own store,
an open session is told with one `session_info_update`, and `session/list` shows the title, also
from a fresh agent. A client that never renames sees nothing new but the capability."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import acp
import pytest

from tests.codex.e2e_support import codex_agent, workspace, write_codex_home
from tests.e2e.harness import AgentProcess
from tests.fakes.responses_api import FakeResponsesAPI
from tests.muse.e2e_support import muse_agent

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(120)]
Opened = Callable[[Path, str], AbstractAsyncContextManager[tuple[AgentProcess, Callable[[str], list[Any]], str]]]


@asynccontextmanager
async def codex(tmp_path: Path, name: str) -> AsyncIterator[tuple[AgentProcess, Callable[[str], list[Any]], str]]:
    from tests.codex.e2e_support import text

    with FakeResponsesAPI([{"reply": "hello"}]) as api:
        home = write_codex_home(api, tmp_path)
        env = {"ACP_AGENT_CODEX_TITLES": "0"}  # no generated title: only the one the client sets
        async with codex_agent(home, tmp_path, capable=False, env=env, log_name=name) as agent:
            yield agent, text, workspace(tmp_path)


@asynccontextmanager
async def muse(tmp_path: Path, name: str) -> AsyncIterator[tuple[AgentProcess, Callable[[str], list[Any]], str]]:
    from tests.muse.e2e_support import text

    async with muse_agent(tmp_path, capable=False) as agent:
        yield agent, text, str(tmp_path)


@asynccontextmanager
async def claude(tmp_path: Path, name: str) -> AsyncIterator[tuple[AgentProcess, Callable[[str], list[Any]], str]]:
    from tests.claude.e2e_support import claude_agent, text
    from tests.fakes.anthropic_api import FakeAnthropicAPI

    with FakeAnthropicAPI([{"reply": "hello"}]) as api:
        async with claude_agent(api, tmp_path, capable=False) as agent:
            yield agent, text, str(tmp_path)


PROVIDERS: dict[str, Opened] = {"claude": claude, "codex": codex, "muse": muse}


def titles(agent: AgentProcess, session_id: str) -> list[Any]:
    return [u["title"] for u in agent.frames.updates(session_id)
            if u["sessionUpdate"] == "session_info_update" and "title" in u]


def listed(result: dict[str, Any], session_id: str) -> Any:
    return next(row.get("title") for row in result["sessions"] if row["sessionId"] == session_id)


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
async def test_a_client_renames_a_session_and_every_listing_shows_it(tmp_path: Path, provider: str) -> None:
    opened = PROVIDERS[provider]
    async with opened(tmp_path, "first") as (agent, text, cwd):
        capabilities = agent.frames.incoming[0]["result"]["agentCapabilities"]["sessionCapabilities"]
        session = await agent.conn.new_session(cwd=cwd)
        sid = session.session_id
        await agent.conn.prompt(session_id=sid, prompt=text("hello"))
        renamed = await agent.conn._conn.send_request("session/set_title", {"sessionId": sid,
                                                                             "title": "  Refactor   the parser "})
        here = await agent.conn._conn.send_request("session/list", {"cwd": cwd})
        with pytest.raises(acp.RequestError) as empty:
            await agent.conn._conn.send_request("session/set_title", {"sessionId": sid, "title": "   "})
        with pytest.raises(acp.RequestError) as unknown:
            await agent.conn._conn.send_request("session/set_title", {"sessionId": "no-such-session-0000",
                                                                       "title": "x"})
        await agent.conn.close_session(session_id=sid)
        closed = await agent.conn._conn.send_request("session/set_title", {"sessionId": sid, "title": "Parser work"})
        live_titles = titles(agent, sid)
        problems = agent.frames.problems
    async with opened(tmp_path, "second") as (fresh, _, cwd):
        elsewhere = await fresh.conn._conn.send_request("session/list", {"cwd": cwd})
        fresh_problems = fresh.frames.problems
    assert capabilities["title"] == {}
    assert renamed == {"title": "Refactor the parser"}
    assert live_titles.count("Refactor the parser") == 1  # the backend's own announcement is not repeated
    assert listed(here, sid) == "Refactor the parser"
    assert empty.value.code == -32602
    assert unknown.value.code == -32002
    assert closed == {"title": "Parser work"}
    assert listed(elsewhere, sid) == "Parser work"
    assert problems == [] and fresh_problems == []
