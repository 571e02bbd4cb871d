"""The `acp-agent` command as a person uses it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.harness import agent_executable, run_command_script

pytestmark = pytest.mark.timeout(60)


def run(*args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {key: value for key, value in os.environ.items() if not key.startswith("ACP_AGENT_")}
    full_env.update(env or {})
    return subprocess.run([agent_executable(), *args], capture_output=True, text=True, env=full_env, input=stdin,
                          timeout=30, check=False)


def test_providers_lists_installed_providers() -> None:
    result = run("providers")
    assert result.returncode == 0
    assert "scripted" in result.stdout
    assert "acp-agent-scripted-test 0.0.1" in result.stdout


def test_unknown_provider_exits_2_and_lists_installed() -> None:
    result = run("--provider", "nope")
    assert result.returncode == 2
    assert "unknown provider 'nope'" in result.stderr
    assert "scripted" in result.stderr
    assert result.stdout == ""


def test_without_a_provider_it_serves_every_installed_one() -> None:
    """Issue 29: `acp-agent` alone (as `--provider all`) is one agent for every installed provider
    whose backend can run; it used to exit 2 asking for --provider."""
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
    for args in ((), ("--provider", "all")):
        result = run(*args, stdin=request + "\n")
        assert result.returncode == 0, result.stderr
        (frame,) = [json.loads(line) for line in result.stdout.splitlines()]
        answer = frame["result"]
        assert answer["agentInfo"]["name"] == "acp-agent"
        assert "scripted" in answer["agentInfo"]["title"].lower()
        assert any(method["id"].startswith("scripted:") for method in answer["authMethods"])


def test_a_default_provider_that_is_not_served_exits_2() -> None:
    result = run("--default-provider", "nope", stdin="")
    assert result.returncode == 2
    assert "--default-provider 'nope' is not one of the providers served here" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(("name", "value"), [("ACP_AGENT_STARTUP_TIMEOUT_MS", "0"),
                                             ("ACP_AGENT_SUBMIT_TIMEOUT_MS", "ten")])
def test_bad_deadline_stops_start_up(name: str, value: str) -> None:
    result = run("--provider", "scripted", env={name: value}, stdin="")
    assert result.returncode == 2
    assert name in result.stderr
    assert "1 to 2147483647" in result.stderr
    assert result.stdout == ""


def test_stdin_eof_exits_zero_with_nothing_but_frames_on_stdout() -> None:
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
    result = run("--provider", "scripted", stdin=request + "\n")
    assert result.returncode == 0
    frames = [json.loads(line) for line in result.stdout.splitlines()]
    assert frames[0]["id"] == 1
    assert frames[0]["result"]["protocolVersion"] == 1


def test_once_served_the_command_leaves_without_waiting_on_what_the_interpreter_would_tear_down() -> None:
    """Issue 11, target 5: after stdin EOF the command exits without the interpreter's teardown.
    Logging is still shut down (a handler that buffers, a plugin's, writes what it holds); a thread
    somebody left blocked (a plugin's, a library's) no longer holds the process after its work is
    done (it did: the interpreter joins every such thread before it exits)."""
    script = ("import logging, logging.handlers, sys, threading\n"
              "threading.Thread(target=threading.Event().wait, name='left-behind').start()\n"
              "buffered = logging.handlers.MemoryHandler(1000, target=logging.StreamHandler(sys.stderr))\n"
              "plugin = logging.getLogger('a-plugin')\n"
              "plugin.addHandler(buffered)\n"
              "plugin.propagate = False\n"
              "plugin.warning('held until logging shuts down')\n"
              "sys.argv = ['acp-agent', '--provider', 'scripted']\n"
              "from acp_agent.cli import command\n"
              "command()\n")
    result = run_command_script(script)
    assert result.returncode == 0
    assert "held until logging shuts down" in result.stderr
    assert [json.loads(line)["id"] for line in result.stdout.splitlines()] == [1]


def test_the_command_keeps_the_exit_status_main_gives() -> None:
    result = subprocess.run([sys.executable, "-m", "acp_agent.cli", "--provider", "nope"], capture_output=True,
                            text=True, timeout=30, check=False)
    assert result.returncode == 2
    assert "unknown provider 'nope'" in result.stderr


def test_a_terminal_gets_told_how_an_editor_runs_it() -> None:
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # child: stdin is the terminal
        os.execv(agent_executable(), [agent_executable(), "--provider", "scripted"])
    output = b""
    try:
        while b"editor" not in output:
            output += os.read(fd, 4096)
        os.write(fd, b"\x04")
    finally:
        _, status = os.waitpid(pid, 0)
    assert b"Agent Client Protocol" in output
    assert f'"command": "{agent_executable()}"'.encode() in output  # absolute: issue 25, item 14
    assert os.waitstatus_to_exitcode(status) == 0


def keyring_env(tmp_path: Path, backend: str = "keyrings.alt.file.PlaintextKeyring") -> dict[str, str]:
    return {"PYTHON_KEYRING_BACKEND": backend, "XDG_DATA_HOME": str(tmp_path), "HOME": str(tmp_path)}


def test_auth_set_status_clear_with_a_real_keyring_backend(tmp_path: Path) -> None:
    env = keyring_env(tmp_path)
    secret = "sk-test-keyring-0123456789"
    assert run("auth", "status", "--provider", "scripted", env=env).stdout.strip() == (
        "provider scripted: configured=false source=none")
    stored = run("auth", "set", "--provider", "scripted", "--stdin", env=env, stdin=secret + "\n")
    assert stored.returncode == 0, stored.stderr
    assert secret not in stored.stdout + stored.stderr
    status = run("auth", "status", "--provider", "scripted", env=env)
    assert status.stdout.strip() == "provider scripted: configured=true source=keyring"
    assert secret not in status.stdout
    env_status = run("auth", "status", "--provider", "scripted", env={**env, "SCRIPTED_API_KEY": "sk-env-12345"})
    assert "source=environment" in env_status.stdout
    cleared = run("auth", "clear", "--provider", "scripted", env=env)
    assert "Deleted" in cleared.stdout
    assert "source=none" in run("auth", "status", "--provider", "scripted", env=env).stdout


def test_auth_without_a_keyring_backend_says_so_plainly(tmp_path: Path) -> None:
    env = keyring_env(tmp_path, "keyring.backends.fail.Keyring")
    stored = run("auth", "set", "--provider", "scripted", "--stdin", env=env, stdin="sk-x-123456\n")
    assert stored.returncode == 1
    assert "no keyring backend" in stored.stderr
    assert "Traceback" not in stored.stderr
    status = run("auth", "status", "--provider", "scripted", env=env)
    assert status.returncode == 0
    assert "configured=false source=none (keyring unavailable" in status.stdout


def test_version_and_help() -> None:
    assert run("--version").stdout.startswith("acp-agent ")
    assert "--provider" in run("--help").stdout


def test_module_import_is_fast_path_safe() -> None:
    subprocess.run([sys.executable, "-c", "import acp_agent.cli"], check=True)


def test_cli_passthrough_without_a_vendor_cli_says_so() -> None:
    result = run("--provider", "scripted", "--cli", "login")
    assert result.returncode == 2
    assert "it has no command of its own" in result.stderr
    assert result.stdout == ""


def test_auth_set_with_a_keyring_that_forgets_says_so_and_fails(tmp_path: Path) -> None:
    """keyring's null backend accepts a password and keeps nothing: the key must be read back."""
    env = keyring_env(tmp_path, "keyring.backends.null.Keyring")
    secret = "sk-test-null-keyring-0123456789"
    stored = run("auth", "set", "--provider", "scripted", "--stdin", env=env, stdin=secret + "\n")
    assert stored.returncode == 1
    assert stored.stdout == ""
    assert "did not keep the key" in stored.stderr
    assert "keyring.backends.null.Keyring" in stored.stderr
    assert "SCRIPTED_API_KEY" in stored.stderr
    assert "Traceback" not in stored.stderr
    assert secret not in stored.stdout + stored.stderr
    status = run("auth", "status", "--provider", "scripted", env=env)
    assert status.stdout.strip() == "provider scripted: configured=false source=none"


@pytest.mark.parametrize("command", [("auth",), ("auth", "set"), ("auth", "status"), ("auth", "clear"),
                                     ("login",), ("providers",)])
def test_every_command_prints_its_own_help(command: tuple[str, ...]) -> None:
    result = run(*command, "--help")
    assert result.returncode == 0
    assert result.stdout.startswith(f"usage: acp-agent {' '.join(command)} ")
    assert "--log-level" not in result.stdout  # its own help, not the agent's


def test_auth_alone_prints_its_usage_not_unknown_command() -> None:
    result = run("auth")
    assert result.returncode == 2
    assert result.stderr.startswith("usage: acp-agent auth ")
    for action in ("set", "status", "clear"):
        assert action in result.stderr
    assert "unknown command" not in result.stderr
    assert result.stdout == ""


def test_the_provider_may_come_before_the_auth_command(tmp_path: Path) -> None:
    """`initialize` offers `acp-agent --provider X auth set --provider X`: both places must work."""
    env = keyring_env(tmp_path, "keyring.backends.fail.Keyring")
    before = run("--provider", "scripted", "auth", "status", env=env)
    after = run("auth", "status", "--provider", "scripted", env=env)
    assert before.returncode == after.returncode == 0
    assert before.stdout == after.stdout
    assert before.stdout.startswith("provider scripted: configured=false source=none")


def test_login_for_a_provider_without_a_sign_in_of_its_own_says_what_to_do() -> None:
    result = run("login", "--provider", "scripted")
    assert result.returncode == 2
    assert "acp-agent auth set --provider scripted" in result.stderr
    assert result.stdout == ""


def test_help_says_that_the_provider_alone_serves_acp_on_stdio() -> None:
    """Issue 25, item 15: a newcomer learns from `--help` how an editor runs the agent."""
    text = " ".join(run("--help").stdout.split())
    assert "`acp-agent --provider NAME` with no command serves ACP" in text
    assert "on stdin/stdout" in text


def test_login_help_lists_each_providers_sign_in_method_ids() -> None:
    """Issue 25, item 15: the method ids come from `login --help`, not from an error."""
    result = run("login", "--help")
    assert result.returncode == 0
    assert result.stdout.startswith("usage: acp-agent login ")
    assert "sign-in methods (--method ID):" in result.stdout
    assert "scripted: none of its own; store a key with `acp-agent auth set --provider scripted`" in result.stdout


def test_editor_config_prints_an_entry_that_starts_the_agent_by_its_absolute_path() -> None:
    """Issue 25, item 14: the README's venv install does not put `acp-agent` on an editor's PATH."""
    result = run("editor-config", "--provider", "scripted")
    assert result.returncode == 0, result.stderr
    servers = json.loads(result.stdout)["agent_servers"]
    (entry,) = servers.values()
    assert os.path.isabs(entry["command"]) and os.access(entry["command"], os.X_OK)
    assert entry["args"][-2:] == ["--provider", "scripted"]
    started = subprocess.run([entry["command"], *entry["args"]], input="", capture_output=True, text=True,
                             env={"PATH": "/nonexistent"}, timeout=30, check=False)
    assert started.returncode == 0, started.stderr
    assert started.stdout == ""


def test_editor_config_without_a_provider_prints_the_entry_for_every_provider() -> None:
    """Issue 29: one entry starts one agent for every installed provider (it used to ask for one)."""
    result = run("editor-config")
    assert result.returncode == 0, result.stderr
    servers = json.loads(result.stdout)["agent_servers"]
    assert list(servers) == ["acp-agent"]
    assert "--provider" not in servers["acp-agent"]["args"]


def test_editor_config_for_an_unknown_provider_says_which_are_installed() -> None:
    result = run("editor-config", "--provider", "nope")
    assert result.returncode == 2
    assert "Installed providers:" in result.stderr
