"""The failure hooks as the core calls them: pluggy's order, first answer wins, each plugin isolated."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from acp_agent import hookimpl
from acp_agent.events import HistoryFailure
from acp_agent.failure_hooks import FailureHooks
from acp_agent.failures import FailureKind, FailureObservation
from acp_agent.plugins import discover, make_plugin_manager
from tests.e2e.harness import agent_executable

pytestmark = pytest.mark.timeout(60)

BUILT_IN = FailureObservation(FailureKind.RATE_LIMITED, "rate_limit")


class BuiltIn:
    """Stands in for a provider's own answers: registered trylast, answers everything for "vendor"."""

    @hookimpl(trylast=True)
    def acp_agent_classify_failure(self, provider: str, native: Mapping[str, Any]) -> FailureObservation | None:
        return BUILT_IN if provider == "vendor" else None

    @hookimpl(trylast=True)
    def acp_agent_failure_title(self, provider: str, native: Mapping[str, Any], kind: FailureKind) -> str | None:
        return f"vendor text for {kind}" if provider == "vendor" else None

    @hookimpl(trylast=True)
    def acp_agent_recognise_history(self, provider: str, entry: Mapping[str, Any],
                                    user_message_id: str | None) -> HistoryFailure | None:
        return HistoryFailure(BUILT_IN, str(entry.get("uuid")), user_message_id) if provider == "vendor" else None


class Gateway:
    """A third-party plugin for every provider; it answers only for its marker and needs only `native`."""

    @hookimpl
    def acp_agent_classify_failure(self, native: Mapping[str, Any]) -> FailureObservation | None:
        if native.get("text") == "GATEWAY":
            return FailureObservation(FailureKind.ACCESS_DENIED, "gateway")
        return None


class Raising:
    @hookimpl(tryfirst=True)
    def acp_agent_classify_failure(self, provider: str, native: Mapping[str, Any]) -> FailureObservation | None:
        raise RuntimeError("plugin bug")

    @hookimpl(tryfirst=True)
    def acp_agent_failure_title(self, provider: str, native: Mapping[str, Any], kind: FailureKind) -> str | None:
        return 42  # type: ignore[return-value]  # the wrong type: skipped like a raise

    @hookimpl(tryfirst=True)
    def acp_agent_recognise_history(self, provider: str, entry: Mapping[str, Any],
                                    user_message_id: str | None) -> HistoryFailure | None:
        raise KeyError("uuid")


def hooks(*plugins: object) -> FailureHooks:
    pm, broken, _ = make_plugin_manager(load_entry_points=False,
                                        plugins=[(plugin, type(plugin).__name__) for plugin in plugins])
    assert broken == []
    return FailureHooks(pm)


def test_a_third_party_answer_comes_before_the_built_in_and_none_falls_through() -> None:
    facade = hooks(BuiltIn(), Gateway())
    gateway = facade.classify_failure("vendor", {"text": "GATEWAY"})
    assert gateway is not None and (gateway.kind, gateway.native_kind) == (FailureKind.ACCESS_DENIED, "gateway")
    assert gateway.title == "vendor text for access_denied"  # untitled: the title hook words it
    assert facade.classify_failure("vendor", {"text": "other"}) == FailureObservation(
        FailureKind.RATE_LIMITED, "rate_limit", title="vendor text for rate_limited")
    assert facade.classify_failure("nobody", {"text": "other"}) is None


def test_an_observation_with_its_own_title_keeps_it() -> None:
    class Titled:
        @hookimpl
        def acp_agent_classify_failure(self, native: Mapping[str, Any]) -> FailureObservation:
            return FailureObservation(FailureKind.ACCESS_DENIED, "gateway", title="Denied by the gateway.")

    observation = hooks(BuiltIn(), Titled()).classify_failure("vendor", {})
    assert observation is not None and observation.title == "Denied by the gateway."


def test_a_raising_or_wrongly_typed_hook_is_logged_and_skipped_and_the_built_in_answer_stands(
        caplog: pytest.LogCaptureFixture) -> None:
    facade = hooks(BuiltIn(), Raising())
    with caplog.at_level(logging.WARNING, logger="acp_agent.failure_hooks"):
        observation = facade.classify_failure("vendor", {"text": "x"})
        replayed = facade.recognise_history("vendor", {"uuid": "m1"}, "u1")
    assert observation == FailureObservation(FailureKind.RATE_LIMITED, "rate_limit",
                                             title="vendor text for rate_limited")
    assert replayed == HistoryFailure(BUILT_IN, "m1", "u1")
    logged = caplog.text
    assert "Raising: acp_agent_classify_failure raised RuntimeError: plugin bug; skipped" in logged
    assert "Raising: acp_agent_failure_title returned int, not str; skipped" in logged
    assert "Raising: acp_agent_recognise_history raised KeyError" in logged


def test_the_built_in_providers_answer_through_the_installed_hooks() -> None:
    facade = discover().hooks
    native = {"result": {"type": "result", "subtype": "success", "is_error": True, "api_error_status": 429,
                         "result": "API Error: Request rejected (429)"}}
    observation = facade.classify_failure("claude", native)
    assert observation is not None
    assert (observation.kind, observation.title) == (FailureKind.RATE_LIMITED, "API Error: Request rejected (429)")


MISSPELLED = '''
from acp_agent import hookimpl

@hookimpl
def acp_agent_clasify_failure(provider, native):
    return None
'''


def test_providers_reports_a_misspelled_hook_name(tmp_path: Path) -> None:
    """A hook no spec declares is never called: `check_pending` finds it and `providers` says so."""
    (tmp_path / "acp_agent_typo.py").write_text(MISSPELLED)
    dist = tmp_path / "acp_agent_typo-1.2.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acp-agent-typo\nVersion: 1.2\n")
    (dist / "entry_points.txt").write_text("[acp_agent]\ntypo = acp_agent_typo\n")
    env = {key: value for key, value in os.environ.items() if not key.startswith("ACP_AGENT_")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), *sys.path])
    result = subprocess.run([agent_executable(), "providers"], capture_output=True, text=True, env=env,
                            timeout=30, check=False)
    assert result.returncode == 0, result.stderr
    assert ("broken     typo (acp-agent-typo 1.2): unknown hook 'acp_agent_clasify_failure'"
            in result.stdout), result.stdout
    assert "scripted" in result.stdout  # everything else still loads
