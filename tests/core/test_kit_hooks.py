"""The kit's check that a provider's failure hooks answer only for their own provider."""

from __future__ import annotations

from typing import Any

import pluggy

from acp_agent import hookimpl
from acp_agent.backends import hookspecs
from acp_agent.failures.protocol import FailureKind, FailureObservation
from acp_agent.testing.conformance import hooks_answering_for_others


class Greedy:
    """Classifies every failure, whichever provider it came from."""

    @hookimpl
    def acp_agent_classify_failure(self, provider: str, native: Any) -> FailureObservation | None:
        return FailureObservation(FailureKind.PROVIDER_ERROR, "greedy", "Greedy saw it.")


class Own:
    """Titles only its own provider's failures."""

    @hookimpl
    def acp_agent_failure_title(self, provider: str, native: Any, kind: FailureKind) -> str | None:
        return "Own title." if provider == "own" else None


def manager(**plugins: object) -> pluggy.PluginManager:
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for name, plugin in plugins.items():
        pm.register(plugin, name=name)
    return pm


def test_a_hook_that_answers_for_every_provider_is_named() -> None:
    answered = hooks_answering_for_others("greedy", manager=manager(greedy=Greedy(), own=Own()))
    assert answered and all(line.startswith("acp_agent_classify_failure(provider='kit-another-provider'")
                            for line in answered)


def test_hooks_that_answer_only_for_their_provider_pass() -> None:
    assert hooks_answering_for_others("own", manager=manager(greedy=Greedy(), own=Own())) == []
