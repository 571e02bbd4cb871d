"""Sign-in and sign-out from the editor, for every provider, through `acp-agent --provider X`.

`initialize` offers terminal auth methods only to clients that run them (ACP `auth.terminal`, or
`_meta["terminal-auth"]: true`, which also gets the command line in `_meta`), and the sign-in
that needs no local browser over SSH or with NO_BROWSER. The advertised command is run as the
editor's terminal would run it; it reaches the vendor CLI (a stand-in that records its arguments
and writes or deletes the credential file where the real CLI keeps it), and `authenticate` then
asks the CLI's status. `--cli --version` runs the real bundled Claude Code CLI and codex.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import acp
import attrs
import pytest
from acp import schema

from tests.e2e.harness import agent_executable, spawn_agent
from tests.fakes.vendor_cli import write_executable
from tests.muse.e2e_support import write_wrapper

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.timeout(120)]

REMOTE_VARS = ("SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY", "NO_BROWSER")
SECRET_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY",
               "CODEX_API_KEY", "META_API_KEY")


@attrs.frozen
class Vendor:
    """How one provider finds its CLI and where that CLI keeps its sign-in."""

    bin_var: str
    stored: str  # relative to tmp_path
    local: tuple[tuple[str, tuple[str, ...], str], ...]  # (method id, vendor args, terminal label)
    remote: tuple[tuple[str, tuple[str, ...], str], ...]
    logout: tuple[str, ...]
    status: tuple[str, ...] | None
    title: str


VENDORS = {
    "claude": Vendor("ACP_AGENT_CLAUDE_CLI", "claude-config/.credentials.json",
                     (("claude-ai-login", ("auth", "login", "--claudeai"), "Claude Login"),
                      ("console-login", ("auth", "login", "--console"), "Anthropic Console Login")),
                     (("claude-login", (), "Claude Login"),),
                     ("auth", "logout"), ("auth", "status"), "Claude Code"),
    "codex": Vendor("ACP_AGENT_CODEX_BIN", "codex-home/auth.json",
                    (("chatgpt-login", ("login",), "ChatGPT Login"),),
                    (("chatgpt-device-login", ("login", "--device-auth"), "ChatGPT Login"),),
                    ("logout",), ("login", "status"), "Codex"),
    "muse": Vendor("MUSE_CODE_EXECUTABLE", "config/muse/auth.json",
                   (("muse-login", ("login",), "Muse Code Login"),),
                   (("muse-login", ("login",), "Muse Code Login"),),
                   ("logout",), None, "Muse Code"),
}


def environment(tmp_path: Path, provider: str, *, stand_in: bool = True, **extra: str) -> dict[str, str]:
    """No credentials anywhere, a local machine, the vendor CLI replaced by the recording stand-in."""
    vendor = VENDORS[provider]
    (tmp_path / "home").mkdir(exist_ok=True)
    env = dict.fromkeys((*SECRET_VARS, *REMOTE_VARS, "ACP_AGENT_CLAUDE_CLI", "ACP_AGENT_CODEX_BIN",
                         "MUSE_CODE_EXECUTABLE"), "")
    env.update({
        "HOME": str(tmp_path / "home"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"),
        "CODEX_HOME": str(tmp_path / "codex-home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "PYTHON_KEYRING_BACKEND": "keyrings.alt.file.PlaintextKeyring",
        "STANDIN_CLI_LOG": str(tmp_path / "vendor-cli.jsonl"),
        "STANDIN_CREDENTIALS": str(tmp_path / vendor.stored),
    })
    if stand_in:
        env[vendor.bin_var] = str(write_executable(tmp_path / "bin" / provider))
    env.update(extra)
    return env


def label_of_key(provider: str) -> str:
    return f"{VENDORS[provider].title} API key"


def subprocess_env(env: dict[str, str]) -> dict[str, str]:
    merged = {key: value for key, value in os.environ.items() if not key.startswith("ACP_AGENT_")}
    merged.update(env)
    return {key: value for key, value in merged.items() if value != ""}


def cli_runs(tmp_path: Path) -> list[list[str]]:
    """The stand-in's sign-in commands; Codex's backend (`app-server`) and Claude's spare session
    CLI (`--output-format stream-json ...`), both started as the agent starts, are the same
    program and are left out."""
    log = tmp_path / "vendor-cli.jsonl"
    runs = [json.loads(line)["argv"] for line in log.read_text().splitlines()] if log.exists() else []
    return [argv for argv in runs if argv[:1] not in (["app-server"], ["--output-format"])]


async def initialize(agent: Any, *, acp_terminal: bool = False, meta_terminal: bool = False,
                     provider: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if meta_terminal:
        meta["terminal-auth"] = True
    if provider:
        meta[f"{provider}/authStatus"] = 1
    capabilities = schema.ClientCapabilities(auth=schema.AuthCapabilities(terminal=acp_terminal),
                                             field_meta=meta or None)
    await agent.conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=capabilities)
    result: dict[str, Any] = agent.frames.incoming[0]["result"]
    return result


CLIENTS = {
    "legacy": ({}, {}),
    "acp": ({"acp_terminal": True}, {}),
    "meta": ({"meta_terminal": True}, {}),
    "acp+meta over ssh": ({"acp_terminal": True, "meta_terminal": True}, {"SSH_CONNECTION": "10.0.0.1 22 10.0.0.2 22"}),
    "acp with NO_BROWSER": ({"acp_terminal": True}, {"NO_BROWSER": "1"}),
}


@pytest.mark.parametrize("provider", sorted(VENDORS))
@pytest.mark.parametrize("client", sorted(CLIENTS))
async def test_initialize_offers_the_vendor_sign_ins_to_clients_that_run_terminal_auth(
        tmp_path: Path, provider: str, client: str) -> None:
    vendor = VENDORS[provider]
    flags, machine = CLIENTS[client]
    async with spawn_agent(provider, tmp_path, environment(tmp_path, provider, **machine)) as agent:
        methods = (await initialize(agent, **flags))["authMethods"]
        legacy_refused = None
        if client == "legacy":
            with pytest.raises(acp.RequestError) as caught:
                await agent.conn.authenticate(method_id=vendor.local[0][0])
            legacy_refused = caught.value.code
        problems = agent.frames.problems
    assert problems == []
    if client == "legacy":  # exactly what such a client got before terminal sign-in existed
        assert [set(method) for method in methods] == [{"id", "name", "description"}]
        assert methods[0]["id"] == provider
        assert legacy_refused == -32602
        return
    logins = vendor.remote if machine else vendor.local
    assert [method["id"] for method in methods] == [provider, f"{provider}-terminal", *(m[0] for m in logins)]
    key_method, vendor_methods = methods[1], methods[2:]
    assert (key_method["type"], key_method["args"]) == ("terminal", ["auth", "set", "--provider", provider])
    for method, (_, args, label) in zip(vendor_methods, logins, strict=True):
        assert (method["type"], method["args"]) == ("terminal", ["--provider", provider, "--cli", *args])
        if flags.get("meta_terminal"):
            assert method["_meta"]["terminal-auth"] == {
                "command": agent_executable(), "args": ["--provider", provider, "--cli", *args], "label": label}
        else:
            assert "_meta" not in method
    if flags.get("meta_terminal"):
        assert key_method["_meta"]["terminal-auth"] == {
            "command": agent_executable(), "args": ["auth", "set", "--provider", provider], "label": label_of_key(provider)}


@pytest.mark.parametrize("provider", sorted(VENDORS))
@pytest.mark.parametrize("outcome", ["signed-in", "cancelled"])
async def test_the_advertised_sign_in_command_then_authenticate(tmp_path: Path, provider: str, outcome: str) -> None:
    """The editor runs the method's `_meta["terminal-auth"]` command, then calls `authenticate`."""
    vendor = VENDORS[provider]
    env = environment(tmp_path, provider, STANDIN_LOGIN_FAIL="1" if outcome == "cancelled" else "")
    method_id, login_args, _ = vendor.local[0]
    async with spawn_agent(provider, tmp_path, env) as agent:
        methods = (await initialize(agent, meta_terminal=True, provider=provider))["authMethods"]
        [terminal] = [method["_meta"]["terminal-auth"] for method in methods if method["id"] == method_id]
        login = subprocess.run([terminal["command"], *terminal["args"]], env=subprocess_env(env), text=True,
                               capture_output=True, timeout=60, check=False)
        if outcome == "signed-in":
            response = await agent.conn.authenticate(method_id=method_id)
            status = response.field_meta[f"{provider}/authStatus"]
        else:
            with pytest.raises(acp.RequestError) as caught:
                await agent.conn.authenticate(method_id=method_id)
        problems = agent.frames.problems
    assert problems == []
    expected_runs = [list(login_args)] + ([list(vendor.status)] if vendor.status else [])
    assert cli_runs(tmp_path) == expected_runs
    if outcome == "signed-in":
        assert (login.returncode, login.stdout.strip()) == (0, "Signed in.")
        assert status == {"configured": True, "source": "stored", "verification": "unknown", "identity": "unknown"}
    else:
        assert login.returncode == 1  # the CLI's own status, through acp-agent
        assert caught.value.code == -32000
        assert str(caught.value).startswith(f"Not signed in to {vendor.title}: the sign-in")
        assert not (tmp_path / vendor.stored).exists()


@pytest.mark.parametrize("provider", sorted(VENDORS))
async def test_logout_signs_out_of_the_vendor_cli_and_the_status_says_so(tmp_path: Path, provider: str) -> None:
    vendor = VENDORS[provider]
    stored = tmp_path / vendor.stored
    stored.parent.mkdir(parents=True)
    stored.write_text('{"token": "signed-in-before-logout"}')
    async with spawn_agent(provider, tmp_path, environment(tmp_path, provider)) as agent:
        before = (await initialize(agent, acp_terminal=True, provider=provider))["_meta"][f"{provider}/authStatus"]
        response = await agent.conn._conn.send_request("logout", {})
        problems = agent.frames.problems
    assert problems == []
    assert (before["configured"], before["source"]) == (True, "stored")
    assert cli_runs(tmp_path) == [list(vendor.logout)]
    assert not stored.exists()
    assert response["_meta"][f"{provider}/authStatus"] == {
        "configured": False, "source": "none", "verification": "unknown", "identity": "unknown"}


def bundled(provider: str) -> str:
    if provider == "claude":
        from acp_agent_claude.locate import bundled_cli

        path = bundled_cli()
    else:
        from acp_agent_codex import find_codex

        path = find_codex({})
    assert path, f"the {provider} wheel's CLI is not installed"
    return path


@pytest.mark.parametrize(("provider", "pattern"), [("claude", r"\d+\.\d+\.\d+ \(Claude Code\)"),
                                                   ("codex", r"codex-cli \d+\.\d+\.\d+"),
                                                   ("muse", r"muse 0\.0\.0-fake .*")])
def test_cli_version_runs_the_providers_own_cli(tmp_path: Path, provider: str, pattern: str) -> None:
    """Claude and Codex: the real bundled binaries; Muse (on no registry): the fake host tests use."""
    env = environment(tmp_path, provider, stand_in=False)
    if provider == "muse":
        env["MUSE_CODE_EXECUTABLE"] = str(write_wrapper(tmp_path / "bin"))
    result = subprocess.run([agent_executable(), "--provider", provider, "--cli", "--version"],
                            env=subprocess_env(env), text=True, capture_output=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(pattern, result.stdout.strip())
    if provider != "muse":  # the same program the agent runs, not some other one on PATH
        own = subprocess.run([bundled(provider), "--version"], env=subprocess_env(env), text=True,
                             capture_output=True, timeout=60, check=False)
        assert result.stdout == own.stdout


@pytest.mark.parametrize("provider", sorted(VENDORS))
def test_cli_gets_the_keyring_key_as_the_agent_passes_it_and_exits_with_the_clis_status(
        tmp_path: Path, provider: str) -> None:
    env = subprocess_env(environment(tmp_path, provider))
    secret = f"sk-{provider}-keyring-0123456789"
    stored = subprocess.run([agent_executable(), "auth", "set", "--provider", provider, "--stdin"], env=env,
                            input=secret + "\n", text=True, capture_output=True, timeout=60, check=False)
    assert stored.returncode == 0, stored.stderr
    result = subprocess.run([agent_executable(), "--provider", provider, "--cli", "no-such-command"], env=env,
                            text=True, capture_output=True, timeout=60, check=False)
    assert result.returncode == 3  # the stand-in's own exit status
    [run] = [json.loads(line) for line in (tmp_path / "vendor-cli.jsonl").read_text().splitlines()]
    variable = {"claude": "ANTHROPIC_API_KEY", "codex": "OPENAI_API_KEY", "muse": "META_API_KEY"}[provider]
    assert run["argv"] == ["no-such-command"]
    assert run["env"][variable] is True
    assert secret not in result.stdout + result.stderr


@pytest.mark.parametrize(("provider", "remote"), [(p, r) for p in sorted(VENDORS) for r in (False, True)])
def test_login_runs_the_vendor_sign_in_that_suits_the_machine(tmp_path: Path, provider: str, remote: bool) -> None:
    vendor = VENDORS[provider]
    env = subprocess_env(environment(tmp_path, provider, NO_BROWSER="1" if remote else ""))
    result = subprocess.run([agent_executable(), "login", "--provider", provider], env=env, text=True,
                            capture_output=True, timeout=60, check=False)
    assert (result.returncode, result.stdout.strip()) == (0, "Signed in.")
    expected = (vendor.remote if remote else vendor.local)[0][1]
    assert cli_runs(tmp_path) == [list(expected)]
    assert (tmp_path / vendor.stored).exists()


def test_login_method_picks_one_sign_in_and_names_the_choices_for_an_unknown_one(tmp_path: Path) -> None:
    env = subprocess_env(environment(tmp_path, "claude"))
    console = subprocess.run([agent_executable(), "login", "--provider", "claude", "--method", "console-login"],
                             env=env, text=True, capture_output=True, timeout=60, check=False)
    remote_only = subprocess.run([agent_executable(), "login", "--provider", "claude", "--method", "claude-login"],
                                 env=env, text=True, capture_output=True, timeout=60, check=False)
    assert console.returncode == 0, console.stderr
    assert cli_runs(tmp_path) == [["auth", "login", "--console"]]
    assert remote_only.returncode == 2
    assert "choose one of: claude-ai-login, console-login" in remote_only.stderr
