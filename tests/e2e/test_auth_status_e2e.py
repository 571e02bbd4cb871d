"""ACP's unstable `auth/status` and `auth/status_update` through `acp-agent --provider X`, on the
real Claude Code CLI and codex (loopback fake APIs) and the fake Muse host.

`initialize` advertises `agentCapabilities.auth.status`. A client that asks `auth/status` is
answered from the agent's own credentials and is then told, by `auth/status_update`, when a turn
the backend refused for its credentials makes it `unauthenticated` and when a later turn it
accepted makes it `authenticated` again. A client that never asks gets no such frame. Every
frame is checked against the JSON schema of `@agentclientprotocol/sdk` (tests/acp_schema.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest

from tests.claude.e2e_support import claude_agent
from tests.codex.e2e_support import codex_agent, workspace, write_codex_home
from tests.e2e.harness import AgentProcess
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.fakes.responses_api import FakeResponsesAPI
from tests.muse.e2e_support import muse_agent

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(120)]

ENV_ACCOUNT = [{"label": "API key from the environment", "active": True}]


@asynccontextmanager
async def claude(tmp_path: Path) -> AsyncIterator[tuple[AgentProcess, Callable[[str], list[Any]], str]]:
    from tests.claude.e2e_support import text

    script = [{"status": 401, "error_type": "authentication_error", "message": "invalid x-api-key", "times": 2},
              {"reply": "welcome back"}]
    with FakeAnthropicAPI(script) as api:
        async with claude_agent(api, tmp_path, capable=False, retries=1) as agent:
            yield agent, text, str(tmp_path)


@asynccontextmanager
async def codex(tmp_path: Path) -> AsyncIterator[tuple[AgentProcess, Callable[[str], list[Any]], str]]:
    from tests.codex.e2e_support import text

    with FakeResponsesAPI([{"status": 401}, {"status": 401}, {"reply": "welcome back"}]) as api:
        home = write_codex_home(api, tmp_path, retries=1)
        env = {"OPENAI_API_KEY": "sk-env-openai-key-7777777777",
               "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
        async with codex_agent(home, tmp_path, capable=False, env=env) as agent:
            yield agent, text, workspace(tmp_path)


@asynccontextmanager
async def muse(tmp_path: Path) -> AsyncIterator[tuple[AgentProcess, Callable[[str], list[Any]], str]]:
    from tests.muse.e2e_support import text

    async with muse_agent(tmp_path, capable=False,
                          MUSE_FAKE_ERROR_MESSAGE="Your Meta token was rejected; run `muse login`.") as agent:
        yield agent, text, str(tmp_path)


PROVIDERS: dict[str, Callable[[Path], AbstractAsyncContextManager[tuple[AgentProcess, Callable[[str], list[Any]],
                                                                        str]]]] = {
    "claude": claude, "codex": codex, "muse": muse}
FAILING_PROMPT = {"claude": "first", "codex": "first", "muse": "turn:fail:authRequired first"}


async def outcome(agent: AgentProcess, session_id: str, prompt: list[Any]) -> Any:
    try:
        return await agent.conn.prompt(session_id=session_id, prompt=prompt)
    except acp.RequestError as error:
        return error


@pytest.mark.parametrize("asks", [True, False], ids=["asks", "never-asks"])
@pytest.mark.parametrize("provider", sorted(PROVIDERS))
async def test_auth_status_follows_the_turns_the_backend_refused_and_accepted(
        tmp_path: Path, provider: str, asks: bool) -> None:
    async with PROVIDERS[provider](tmp_path) as (agent, text, cwd):
        advertised = agent.frames.incoming[0]["result"]["agentCapabilities"]["auth"]
        status = await agent.conn._conn.send_request("auth/status", {}) if asks else None
        session = await agent.conn.new_session(cwd=cwd)
        refused = await outcome(agent, session.session_id, text(FAILING_PROMPT[provider]))
        accepted = await outcome(agent, session.session_id, text("second"))
        frames = list(agent.frames.incoming)
        problems = agent.frames.problems
    assert advertised == {"logout": {}, "status": {}}
    assert isinstance(refused, acp.RequestError) and refused.code == -32000
    assert accepted.stop_reason == "end_turn"
    updates = [(index, frame["params"]) for index, frame in enumerate(frames)
               if frame.get("method") == "auth/status_update"]
    if asks:
        assert status == {"state": "authenticated", "accounts": ENV_ACCOUNT}
        assert [params for _, params in updates] == [{"state": "unauthenticated", "accounts": ENV_ACCOUNT},
                                                     {"state": "authenticated", "accounts": ENV_ACCOUNT}]
        answers = [index for index, frame in enumerate(frames) if "id" in frame and "method" not in frame]
        refused_answer, accepted_answer = answers[-2:]  # the two prompts' answers, in order
        assert updates[0][0] < refused_answer < updates[1][0] < accepted_answer  # each before its answer
    else:
        assert updates == []
    assert problems == []


async def test_a_sign_out_is_pushed_to_a_client_that_asked(tmp_path: Path) -> None:
    """Muse signed in (a stored login, no key): `logout` signs it out and the client that asked
    `auth/status` is told at once."""
    (tmp_path / "config" / "muse").mkdir(parents=True)
    (tmp_path / "config" / "muse" / "auth.json").write_text('{"token": "signed-in-0123456789"}')
    async with muse_agent(tmp_path, capable=False, key=None) as agent:
        before = await agent.conn._conn.send_request("auth/status", {})
        await agent.conn._conn.send_request("logout", {})
        after = await agent.conn._conn.send_request("auth/status", {})
        frames = list(agent.frames.incoming)
        problems = agent.frames.problems
    assert before == {"state": "authenticated", "accounts": [{"label": "Signed-in account", "active": True}]}
    assert after == {"state": "unauthenticated"}
    assert [frame["params"] for frame in frames if frame.get("method") == "auth/status_update"] == [
        {"state": "unauthenticated"}]
    assert problems == []


@pytest.mark.parametrize("air", [True, False], ids=["air", "plain"])
async def test_an_air_client_is_pushed_the_agents_sign_in_as_the_reference_adapters_push_it(
        tmp_path: Path, air: bool) -> None:
    """`_auth/status_update {authStatus: {kind, label, detail?}}` (claude-agent-acp, codex-acp)
    with the `agentCapabilities._meta.authStatus` marker, for a client of the AIR extension only:
    once after `initialize`, and again when a sign-out changes it. Never a secret."""
    from acp_agent.failures.auth_status import CredentialState, air_auth_status

    key = air_auth_status(CredentialState(True, "environment", None), "Codex", ("OPENAI_API_KEY",),
                          {"OPENAI_API_KEY": "sk-secret-0123456789"})
    assert key == {"kind": "api_key", "label": "Codex API key", "detail": "OPENAI_API_KEY"}
    (tmp_path / "config" / "muse").mkdir(parents=True)
    (tmp_path / "config" / "muse" / "auth.json").write_text('{"token": "signed-in-0123456789"}')
    async with muse_agent(tmp_path, capable=air, key=None) as agent:  # signed in by a stored login only
        pushes: list[tuple[str, Any]] = []
        first = anyio.Event()

        async def ext_notification(method: str, params: dict[str, Any]) -> None:
            pushes.append((method, params))
            first.set()

        agent.client.ext_notification = ext_notification  # type: ignore[method-assign]
        session = await agent.conn.new_session(cwd=str(tmp_path))
        if air:
            with anyio.fail_after(30):
                await first.wait()  # the push after `initialize`, before the sign-out
        await agent.conn._conn.send_request("logout", {})
        await agent.conn._conn.send_request("auth/status", {})  # a round trip: the logout's push is out
        frames = list(agent.frames.incoming)
        problems = agent.frames.problems
    marker = frames[0]["result"]["agentCapabilities"].get("_meta", {}).get("authStatus")
    pushed = [frame["params"] for frame in frames if frame.get("method") == "_auth/status_update"]
    assert session.session_id
    if air:
        assert marker == {}
        assert pushed == [{"authStatus": {"kind": "account", "label": "Muse Code account"}},
                          {"authStatus": {"kind": "none", "label": "Not logged in"}}]
    else:
        assert marker is None and pushed == []
    assert problems == []
