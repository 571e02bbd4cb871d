"""Plugin discovery: real entry points, isolation of broken plugins, duplicate names."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acp_agent import hookimpl
from acp_agent.backends.plugins import discover
from acp_agent_scripted import make_spec


class DuplicatePlugin:
    @hookimpl
    def acp_agent_providers(self) -> list[Any]:
        return [make_spec({})]


class CrashingPlugin:
    @hookimpl
    def acp_agent_providers(self) -> list[Any]:
        raise RuntimeError("boom")


class WrongRecordPlugin:
    @hookimpl
    def acp_agent_providers(self) -> list[Any]:
        return [{"name": "dict"}]


class SecretsPlugin:
    @hookimpl
    def acp_agent_secret_env_vars(self) -> list[str]:
        return ["VENDOR_COOKIE"]


def test_real_entry_point_discovery_finds_the_installed_test_provider() -> None:
    registry = discover()
    loaded = registry.get("scripted")
    assert loaded is not None
    assert (loaded.distribution, loaded.version) == ("acp-agent-scripted-test", "0.0.1")


def test_in_process_plugins_and_their_failures_are_isolated() -> None:
    registry = discover(load_entry_points=False, plugins=[
        (DuplicatePlugin(), "first"), (DuplicatePlugin(), "second"), (CrashingPlugin(), "crash"),
        (WrongRecordPlugin(), "wrong"), (SecretsPlugin(), "secrets")])
    assert registry.names() == ["scripted"]
    reasons = {broken.plugin: broken.reason for broken in registry.broken}
    assert "duplicate provider name 'scripted'" in reasons["second"]
    assert reasons["crash"] == "RuntimeError: boom"
    assert "not a ProviderSpec" in reasons["wrong"]
    assert registry.secret_env_vars == ("VENDOR_COOKIE",)


@pytest.fixture
def broken_distribution(tmp_path: Path) -> Iterator[Path]:
    """A real installed distribution whose entry point names a module that does not import."""
    dist = tmp_path / "acp_agent_broken-9.9.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acp-agent-broken\nVersion: 9.9\n")
    (dist / "entry_points.txt").write_text("[acp_agent]\nbroken = acp_agent_broken_missing_module\n")
    sys.path.insert(0, str(tmp_path))
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))


def test_a_broken_entry_point_is_reported_and_skipped(broken_distribution: Path) -> None:
    registry = discover()
    assert registry.get("scripted") is not None
    [broken] = [b for b in registry.broken if b.plugin == "broken"]
    assert (broken.distribution, broken.version) == ("acp-agent-broken", "9.9")
    assert "ModuleNotFoundError" in broken.reason


def test_importing_the_package_builds_nothing() -> None:
    import subprocess

    code = ("import sys, acp_agent; "
            "assert not any(m.split('.')[0] in ('keyring', 'cattrs', 'anyio') for m in sys.modules), "
            "sorted(m for m in sys.modules if m.split('.')[0] in ('keyring', 'cattrs', 'anyio'))")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_registering_the_providers_loads_no_runtime_transcript_or_digest_module() -> None:
    """Every installed plugin registers on every start, whichever provider runs: registering
    imports the provider records only (issue 11). The transcript's types load with a runtime,
    the Claude CLI's locator when asked, and hashlib (OpenSSL) never on the way to a session."""
    import subprocess

    code = ("import sys, acp_agent_claude, acp_agent_codex, acp_agent_muse; "
            "from acp_agent.backends.plugins import discover; "
            "shipped = [(acp_agent_claude, 'claude'), (acp_agent_codex, 'codex'), (acp_agent_muse, 'muse')]; "
            "registry = discover(load_entry_points=False, plugins=shipped); "
            "assert registry.names() == ['claude', 'codex', 'muse'], registry.names(); "
            "late = ('acp_agent.backends.events', 'acp_agent.wire.acp_session', 'acp_agent_claude.locate', "
            "'acp_agent_claude.prestart', 'acp_agent_claude.runtime', 'acp_agent_codex.runtime', "
            "'acp_agent_codex.appserver', 'hashlib', 'getpass'); "
            "loaded = sorted(name for name in late if name in sys.modules); "
            "assert not loaded, loaded")
    subprocess.run([sys.executable, "-c", code], check=True)
