"""Where `bypassPermissions` is offered and how the CLI is started for it (issue 25, item 12): the
rule for every user, root or not, whichever user the tests run as (the e2e tests run as root)."""

from __future__ import annotations

import pytest

from acp_agent_claude import prestart, session


@pytest.mark.parametrize(("uid", "env", "allowed"), [
    (1000, {}, True),
    (1000, {"IS_SANDBOX": "yes"}, True),
    (0, {}, False),
    (0, {"IS_SANDBOX": "yes"}, False),  # the CLI wants exactly "1"
    (0, {"IS_SANDBOX": "true"}, False),
    (0, {"IS_SANDBOX": "1"}, True),
    (0, {"CLAUDE_CODE_BUBBLEWRAP": "1"}, True),
    (0, {"CLAUDE_CODE_BUBBLEWRAP": ""}, False),
])
def test_bypass_is_allowed_where_the_cli_allows_it(monkeypatch: pytest.MonkeyPatch, uid: int,
                                                   env: dict[str, str], allowed: bool) -> None:
    monkeypatch.setattr(prestart.os, "geteuid", lambda: uid)
    for name in ("IS_SANDBOX", "CLAUDE_CODE_BUBBLEWRAP"):
        monkeypatch.delenv(name, raising=False)
    assert prestart.bypass_allowed(env) is allowed
    offered = [mode[0] for mode in session.available_modes(env)]
    assert ("bypassPermissions" in offered) is allowed
    assert offered[:4] == ["default", "acceptEdits", "plan", "auto"]


def test_the_agents_own_environment_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CLI inherits the agent's environment: IS_SANDBOX=1 there allows the mode to root."""
    monkeypatch.setattr(prestart.os, "geteuid", lambda: 0)
    monkeypatch.setenv("IS_SANDBOX", "1")
    assert "bypassPermissions" in [mode[0] for mode in session.available_modes({})]
    monkeypatch.setenv("IS_SANDBOX", "0")
    assert "bypassPermissions" not in [mode[0] for mode in session.available_modes({})]


def test_a_cli_that_may_enter_bypass_is_started_so_it_can() -> None:
    argv = prestart.command("claude", session_id="s", resume=False, mode="default", model=None,
                            mcp_config=None, allow_bypass=True)
    assert argv[argv.index("--permission-mode") + 1] == "default"  # it starts in the session's mode
    assert "--allow-dangerously-skip-permissions" in argv
    assert "--dangerously-skip-permissions" not in argv
    plain = prestart.command("claude", session_id="s", resume=False, mode="default", model=None, mcp_config=None)
    assert "--allow-dangerously-skip-permissions" not in plain


@pytest.mark.parametrize("uid", [0, 1000])
def test_the_spare_is_started_as_a_session_would_be(monkeypatch: pytest.MonkeyPatch, uid: int) -> None:
    """The spare's command carries the flag exactly where a session's would (else none adopts it)."""
    monkeypatch.setattr(prestart.os, "geteuid", lambda: uid)
    monkeypatch.delenv("IS_SANDBOX", raising=False)
    monkeypatch.delenv("CLAUDE_CODE_BUBBLEWRAP", raising=False)
    wanted = prestart.spare({prestart.CLI_ENV: "/usr/bin/claude-standin"})
    assert wanted is not None
    assert ("--allow-dangerously-skip-permissions" in wanted[1]) is (uid != 0)
