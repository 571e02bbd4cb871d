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
from acp_agent.backends.events import HistoryFailure
from acp_agent.backends.plugins import discover, make_plugin_manager
from acp_agent.failures.hooks import FailureHooks
from acp_agent.failures.protocol import FailureKind, FailureObservation
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
    with caplog.at_level(logging.WARNING, logger="acp_agent.failures.hooks"):
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
    codex = facade.classify_failure("codex", {"error": {"message": "Quota exceeded.", "codexErrorInfo":
                                                        "usageLimitExceeded"}, "willRetry": False})
    assert codex is not None and (codex.kind, codex.title) == (FailureKind.QUOTA_EXHAUSTED, "Quota exceeded.")
    assert facade.classify_failure("codex", {"error": {"message": "Reconnecting... 1/5"}, "willRetry": True}) is None
    failed = {"threadId": "t", "turn": {"id": "x", "status": "failed", "error": {"message": "Too long.",
                                                                             "codexErrorInfo": "contextWindowExceeded"}}}
    codex_turn = facade.classify_failure("codex", failed)
    assert codex_turn is not None and (codex_turn.kind, codex_turn.title) == (FailureKind.CONTEXT_EXHAUSTED, "Too long.")
    muse = facade.classify_failure("muse", {"terminal": "failed", "error": {"kind": "authRequired",
                                                                            "message": "Sign in."}})
    assert muse is not None and (muse.kind, muse.title) == (FailureKind.AUTH_REQUIRED, "Sign in.")
    assert facade.classify_failure("muse", {"terminal": "completed"}) is None


def test_the_corp_rules_plugin_reaches_the_codex_and_muse_turns() -> None:
    """The installed hook-only plugin classifies its gateway's refusal in every provider's turn."""
    from acp_agent_corp_rules import NATIVE_KIND, TITLE

    from acp_agent.failures.hooks import bound
    from acp_agent_codex.translate import TurnTranslator as CodexTranslator
    from acp_agent_codex.translate import fold_turn as codex_turn
    from acp_agent_muse.translate import TurnTranslator as MuseTranslator

    facade = discover().hooks
    denial = {"message": "CORP-GATEWAY-DENIED: not on the allow list", "codexErrorInfo": "other"}
    codex = CodexTranslator(classify=bound(facade, "codex"))
    [failure] = codex.feed("error", {"threadId": "t", "turnId": "x", "error": denial, "willRetry": False})
    assert isinstance(failure, FailureObservation)
    assert (failure.kind, failure.native_kind, failure.title) == (FailureKind.ACCESS_DENIED, NATIVE_KIND, TITLE)
    # without the marker, Codex's own classification stands
    plain = codex_turn([("error", {"threadId": "t", "turnId": "x", "willRetry": False,
                                   "error": {"message": "Boom.", "codexErrorInfo": "other"}})])
    assert isinstance(plain[0], FailureObservation) and plain[0].kind is FailureKind.PROVIDER_ERROR
    muse = MuseTranslator("x", classify=bound(facade, "muse"))
    steps = muse.feed("turn/completed", {"turnId": "x", "terminal": "failed",
                                         "error": {"kind": "modelError", "message": denial["message"]}})
    [outcome] = [step.end for step in steps if hasattr(step, "end")]
    assert isinstance(outcome, FailureObservation)
    assert (outcome.kind, outcome.native_kind, outcome.title) == (FailureKind.ACCESS_DENIED, NATIVE_KIND, TITLE)


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
    assert "hooks      typo" not in result.stdout  # its one hook is never called


def test_providers_lists_a_plugin_that_only_answers_failure_hooks() -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("ACP_AGENT_")}
    result = subprocess.run([agent_executable(), "providers"], capture_output=True, text=True, env=env,
                            timeout=30, check=False)
    assert ("hooks      corp-rules (acp-agent-corp-rules 0.0.1): acp_agent_classify_failure, "
            "acp_agent_failure_title, acp_agent_recognise_history") in result.stdout, result.stdout
    assert "hooks      claude" not in result.stdout  # a provider's own hooks are not listed apart


def test_a_history_hook_reaches_codex_and_muse_replay_and_legacy_text_is_redacted() -> None:
    """A plugin's history hook answers before Codex's and Muse's own; what it hands a legacy client
    is redacted by the replaying runtime like the built-in answer's text."""
    import functools

    import acp_agent_codex
    import acp_agent_muse
    from acp_agent.wire.acp import agent_text
    from acp_agent_codex import items as codex_items
    from acp_agent_muse import items as muse_items

    class Stored:
        @hookimpl
        def acp_agent_recognise_history(self, entry: Mapping[str, Any],
                                        user_message_id: str | None) -> HistoryFailure | None:
            text = str(entry.get("error", {}).get("message", ""))
            if "GATEWAY" not in text:
                return None
            observation = FailureObservation(FailureKind.ACCESS_DENIED, "gateway", title="Gateway said no.")
            return HistoryFailure(observation, "m", user_message_id, legacy_updates=(agent_text(text),))

    pm, broken, _ = make_plugin_manager(load_entry_points=False, plugins=[
        (acp_agent_codex, "codex"), (acp_agent_muse, "muse"), (Stored(), "stored")])
    assert broken == []
    facade = FailureHooks(pm)

    def redact(text: str) -> str:
        return text.replace("sk-secret-1", "[REDACTED]")

    turns = [{"id": "t1", "status": "failed", "items": [], "error": {"message": "GATEWAY sk-secret-1"}},
             {"id": "t2", "status": "failed", "items": [], "error": {"message": "boom", "codexErrorInfo": "other"}}]
    first, second = codex_items.history_events(turns, redact, functools.partial(facade.recognise_history, "codex"))
    assert isinstance(first, HistoryFailure) and isinstance(second, HistoryFailure)
    assert (first.observation.kind, first.active) == (FailureKind.ACCESS_DENIED, False)
    assert first.legacy_updates == (agent_text("GATEWAY [REDACTED]"),)
    assert (second.observation.kind, second.observation.native_kind, second.active) == (
        FailureKind.PROVIDER_ERROR, "other", True)  # Codex's own answer, through the hook
    stored = {"history": {"items": []}, "lastTurn": {"turnId": "t9", "terminal": "failed",
                                                     "error": {"kind": "modelError", "message": "GATEWAY"}}}
    [muse] = muse_items.history_events(stored, redact, functools.partial(facade.recognise_history, "muse"))
    assert isinstance(muse, HistoryFailure) and (muse.observation.kind, muse.active) == (FailureKind.ACCESS_DENIED, True)
    stored["lastTurn"]["error"] = {"kind": "authRequired", "message": "Sign in."}  # type: ignore[index]
    [own] = muse_items.history_events(stored, redact, functools.partial(facade.recognise_history, "muse"))
    assert isinstance(own, HistoryFailure) and own.observation.kind is FailureKind.AUTH_REQUIRED


def own_classify(native: Mapping[str, Any]) -> FailureObservation | None:
    """A provider's own classification, handed to its `ProviderSpec` by reference."""
    return FailureObservation(FailureKind.CONTEXT_EXHAUSTED, "own") if native.get("text") == "full" else None


def own_title(native: Mapping[str, Any], kind: FailureKind) -> str | None:
    return f"own title for {kind}"


def own_history(entry: Mapping[str, Any], user_message_id: str | None) -> HistoryFailure | None:
    return HistoryFailure(BUILT_IN, str(entry.get("uuid")), user_message_id) if entry.get("failed") else None


class OwnProvider:
    """A provider that hands its three functions to its spec and implements none of the hooks."""

    def __init__(self, classify: str = f"{__name__}:own_classify") -> None:
        self.classify = classify

    @hookimpl
    def acp_agent_providers(self) -> list[Any]:
        from acp_agent.backends.contract import ProviderSpec

        return [ProviderSpec(name="own", title="Own", open_runtime=None,  # type: ignore[arg-type]
                             classify_failure=self.classify, failure_title=f"{__name__}:own_title",
                             recognise_history=f"{__name__}:own_history")]


def test_a_providers_own_functions_answer_for_it_alone_after_every_hook() -> None:
    facade = hooks(OwnProvider(), Gateway())
    own = facade.classify_failure("own", {"text": "full"})
    assert own is not None and (own.kind, own.native_kind, own.title) == (
        FailureKind.CONTEXT_EXHAUSTED, "own", "own title for context_exhausted")
    gateway = facade.classify_failure("own", {"text": "GATEWAY"})  # a hook answers first
    assert gateway is not None and (gateway.native_kind, gateway.title) == ("gateway", "own title for access_denied")
    assert facade.classify_failure("another", {"text": "full"}) is None  # not another provider's
    assert facade.failure_title("another", {}, FailureKind.PROVIDER_ERROR) is None
    recognised = facade.recognise_history("own", {"uuid": "u1", "failed": True}, "m1")
    assert recognised is not None and (recognised.message_id, recognised.user_message_id) == ("u1", "m1")
    assert facade.recognise_history("another", {"uuid": "u1", "failed": True}, "m1") is None


def test_a_providers_function_that_cannot_load_is_logged_and_answers_nothing(
        caplog: pytest.LogCaptureFixture) -> None:
    facade = hooks(OwnProvider(classify="acp_agent_no_such_module.classify:classify"))
    with caplog.at_level(logging.WARNING):
        assert facade.classify_failure("own", {"text": "full"}) is None
        assert facade.classify_failure("own", {"text": "full"}) is None  # looked up once
    assert [record.getMessage() for record in caplog.records if "cannot be loaded" in record.getMessage()] == [
        "provider own: classify_failure acp_agent_no_such_module.classify:classify cannot be loaded: "
        "No module named 'acp_agent_no_such_module'"]


def test_a_spec_refuses_a_function_reference_that_is_not_module_colon_function() -> None:
    from acp_agent.backends.contract import ProviderSpec

    with pytest.raises(ValueError, match=r"classify_failure must be 'package\.module:function'"):
        ProviderSpec(name="own", title="Own", open_runtime=None,  # type: ignore[arg-type]
                     classify_failure="classify_failure")
