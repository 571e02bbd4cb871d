"""Terminal sign-in in the core: which methods `initialize` offers, the command they run, and what
`authenticate` does afterwards (the vendor CLIs themselves are exercised in tests/e2e)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import attrs
import pytest

from acp_agent.backends.contract import TerminalLogin
from acp_agent.terminal_auth import agent_command, auth_methods, is_remote, vendor_logins
from acp_agent.testing import run_in_process
from acp_agent.wire import acp
from acp_agent.wire.convert import UNSET
from acp_agent.wire.rpc import RpcError
from acp_agent_scripted import make_spec
from tests.core.test_auth import MemoryKeyring
from tests.fakes.vendor_cli import write_executable

CWD = tempfile.gettempdir()
LOGINS = (
    TerminalLogin(id="browser", name="Browser", description="d", args=("login",), label="L", where="local"),
    TerminalLogin(id="device", name="Device", description="d", args=("login", "--device"), label="L",
                  where="remote"),
    TerminalLogin(id="anywhere", name="Anywhere", description="d", args=(), label="A"),
)


def spec_with_logins(**credentials: Any) -> Any:
    spec = make_spec({"turns": [[{"text": "ok"}], [{"text": "ok"}]]})
    return attrs.evolve(spec, credentials=attrs.evolve(spec.credentials, terminal_logins=LOGINS, **credentials))


@pytest.mark.parametrize(("environ", "remote"), [
    ({}, False), ({"SSH_CONNECTION": "a b c d"}, True), ({"SSH_CLIENT": "x"}, True), ({"SSH_TTY": "/dev/pts/1"}, True),
    ({"NO_BROWSER": "1"}, True), ({"NO_BROWSER": ""}, False), ({"DISPLAY": ":0"}, False)])
def test_remote_machines_get_the_sign_ins_that_need_no_local_browser(environ: dict[str, str], remote: bool) -> None:
    assert is_remote(environ) is remote
    ids = [login.id for login in vendor_logins(spec_with_logins(), environ)]
    assert ids == (["device", "anywhere"] if remote else ["browser", "anywhere"])


def test_the_agent_command_is_the_console_script_else_the_module(tmp_path: Path) -> None:
    script = tmp_path / "acp-agent"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert agent_command(str(script), "/py") == (str(script),)
    assert agent_command(str(tmp_path / "cli.py"), "/py") == ("/py", "-m", "acp_agent.cli")
    assert agent_command("", "/py") == ("/py", "-m", "acp_agent.cli")


def test_meta_command_only_for_clients_that_asked_for_it() -> None:
    spec = spec_with_logins()
    both = acp.ClientCapabilities(auth=acp.ClientAuthCapabilities(terminal=True), meta={"terminal-auth": True})
    plain = acp.ClientCapabilities(auth=acp.ClientAuthCapabilities(terminal=True))
    meta_only = acp.ClientCapabilities(meta={"terminal-auth": True})
    not_true = acp.ClientCapabilities(meta={"terminal-auth": 1})
    command = (sys.executable, "-m", "acp_agent.cli")
    with_meta = auth_methods(spec, both, {}, command)
    assert with_meta[2].meta == {"terminal-auth": {
        "command": sys.executable, "args": ["-m", "acp_agent.cli", "--provider", "scripted", "--cli", "login"],
        "label": "L"}}
    assert [m.id for m in auth_methods(spec, meta_only, {}, command)] == ["scripted", "scripted-terminal",
                                                                         "browser", "anywhere"]
    assert all(m.meta is UNSET for m in auth_methods(spec, plain, {}, command))
    assert [m.id for m in auth_methods(spec, not_true, {}, command)] == ["scripted"]


@pytest.mark.anyio
@pytest.mark.timeout(30)
async def test_a_key_stored_after_the_backend_started_reaches_the_next_session_after_authenticate() -> None:
    """Regression: the backend kept the environment it started with, so a key stored with the
    terminal method (`acp-agent auth set`) never reached it without restarting the agent."""
    memory = MemoryKeyring()
    seen: list[str | None] = []
    spec = make_spec({"turns": [[{"text": "ok"}], [{"text": "ok"}]]})
    original = spec.open_runtime

    def spying_open_runtime(context: Any) -> Any:
        seen.append(context.environ.get("SCRIPTED_API_KEY"))
        return original(context)

    spec = attrs.evolve(spec, open_runtime=spying_open_runtime)
    async with run_in_process(spec, keyring=memory) as client:
        await client.initialize(terminal_auth=True)
        first = await client.new_session(CWD)
        await client.request("session/close", {"sessionId": first})
        memory.set_password("acp-agent", "scripted", "sk-stored-later-0123456789")  # the terminal ran `auth set`
        await client.request("authenticate", {"methodId": "scripted-terminal"})
        second = await client.new_session(CWD)
        await client.prompt(second, "hi")
    assert seen == [None, "sk-stored-later-0123456789"]


@pytest.mark.anyio
@pytest.mark.timeout(30)
async def test_a_sign_in_without_a_status_command_is_judged_by_the_credential_evidence(tmp_path: Path) -> None:
    stored = tmp_path / "auth.json"
    spec = spec_with_logins(stored_files=lambda environ: [str(stored)])
    async with run_in_process(spec, environ={}) as client:
        await client.initialize(terminal_auth=True, meta={"scripted/authStatus": 1})
        with pytest.raises(RpcError) as before:
            await client.request("authenticate", {"methodId": "browser"})
        stored.write_text('{"token": "t"}')
        after = await client.request("authenticate", {"methodId": "browser"})
        with pytest.raises(RpcError) as remote_only:
            await client.request("authenticate", {"methodId": "device"})
    assert before.value.code == -32000
    assert before.value.message.startswith("Not signed in to Scripted: the sign-in (Browser) did not complete")
    assert after["_meta"]["scripted/authStatus"]["source"] == "stored"
    assert remote_only.value.code == -32602  # not offered on this machine


@pytest.mark.anyio
@pytest.mark.timeout(30)
async def test_a_vendor_cli_that_never_answers_cannot_hold_logout_or_authenticate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import acp_agent.agent
    import acp_agent.terminal_auth

    monkeypatch.setattr(acp_agent.agent, "LOGOUT_COMMAND_BUDGET_S", 0.5)
    monkeypatch.setattr(acp_agent.terminal_auth, "STATUS_BUDGET_S", 0.5)
    program = write_executable(tmp_path / "vendor")
    pids = tmp_path / "pids"
    environ = {"STANDIN_HANG": "1", "STANDIN_PID_FILE": str(pids), "STANDIN_CLI_LOG": str(tmp_path / "log"),
               "STANDIN_CREDENTIALS": str(tmp_path / "auth.json"), "PATH": os.environ.get("PATH", "")}
    spec = spec_with_logins(vendor_cli=lambda environ: str(program), logout_args=("logout",),
                            status_args=("auth", "status"))
    async with run_in_process(spec, environ=environ) as client:
        await client.initialize(terminal_auth=True)
        with pytest.raises(RpcError) as unanswered:
            await client.request("authenticate", {"methodId": "browser"})
        status_pid = int(pids.read_text())
        await client.request("logout", {})
        logout_pid = int(pids.read_text())
    assert unanswered.value.code == -32000  # no answer and no evidence: not signed in
    assert status_pid != logout_pid
    for pid in (status_pid, logout_pid):  # killed and reaped, not left behind
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.anyio
@pytest.mark.timeout(30)
async def test_a_sign_in_while_a_session_is_open_reaches_the_first_session_after_it_closed() -> None:
    """The open session keeps its backend; once no session uses it, the next one gets a new one."""
    memory = MemoryKeyring()
    seen: list[str | None] = []
    spec = make_spec({"turns": [[{"text": "ok"}], [{"text": "ok"}], [{"text": "ok"}]]})
    original = spec.open_runtime

    def spying_open_runtime(context: Any) -> Any:
        seen.append(context.environ.get("SCRIPTED_API_KEY"))
        return original(context)

    spec = attrs.evolve(spec, open_runtime=spying_open_runtime)
    async with run_in_process(spec, keyring=memory) as client:
        await client.initialize(terminal_auth=True)
        first = await client.new_session(CWD)
        memory.set_password("acp-agent", "scripted", "sk-stored-while-open-0123456789")
        await client.request("authenticate", {"methodId": "scripted-terminal"})
        await client.prompt(first, "still on the first backend")
        await client.request("session/close", {"sessionId": first})
        second = await client.new_session(CWD)
        await client.prompt(second, "on the new backend")
        third = await client.new_session(CWD)  # shares the new backend: no further restart
        await client.prompt(third, "same backend")
    assert seen == [None, "sk-stored-while-open-0123456789"]
