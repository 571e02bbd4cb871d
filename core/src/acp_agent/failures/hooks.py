"""The typed facade a runtime uses to call the three failure hooks (classify, title, history).

Owns how the hooks are called: in pluggy's order (tryfirst, then last registered first, then
trylast), keyword arguments only, stopping at the first answer of the right type; when no hook
answers, the provider's own function from its `ProviderSpec` (`classify_failure`, `failure_title`,
`recognise_history`) does. Each is called on its own, so one that raises or answers with the wrong
type is logged and skipped for that call and the next one (in the end the provider's own) answers:
one broken plugin cannot take a provider's failure handling down. Knows no provider.
"""

from __future__ import annotations

import logging
import pkgutil
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import pluggy

from acp_agent.failures.protocol import FailureKind, FailureObservation

if TYPE_CHECKING:  # history is replayed in sessions; registering providers does not need it
    from acp_agent.backends.events import HistoryFailure

log = logging.getLogger(__name__)

T = TypeVar("T")


class FailureHooks:
    """`acp_agent_classify_failure`, `acp_agent_failure_title`, `acp_agent_recognise_history`.

    Built from the agent's plugin manager, or from a function that builds it on first use
    (`acp_agent.backends.plugins.installed_hooks`).
    """

    def __init__(self, manager: pluggy.PluginManager | Callable[[], pluggy.PluginManager]) -> None:
        self._manager = manager if isinstance(manager, pluggy.PluginManager) else None
        self._factory = None if isinstance(manager, pluggy.PluginManager) else manager
        self._own: dict[tuple[str, str], Callable[..., Any] | None] = {}

    @property
    def manager(self) -> pluggy.PluginManager:
        if self._manager is None:
            assert self._factory is not None
            self._manager = self._factory()
        return self._manager

    def classify_failure(self, provider: str, native: Mapping[str, Any]) -> FailureObservation | None:
        """The failure `native` reports; one without a title of its own is titled by
        `acp_agent_failure_title` (None there: the core uses the kind's fallback title)."""
        observation = self._first("acp_agent_classify_failure", FailureObservation,
                                   provider=provider, native=native)
        if observation is None:
            observation = self._answer(provider, "classify_failure", FailureObservation, native)
        if observation is None or observation.title is not None:
            return observation
        title = self.failure_title(provider, native, observation.kind)
        return attrs.evolve(observation, title=title) if title is not None else observation

    def failure_title(self, provider: str, native: Mapping[str, Any], kind: FailureKind) -> str | None:
        title = self._first("acp_agent_failure_title", str, provider=provider, native=native, kind=kind)
        return title if title is not None else self._answer(provider, "failure_title", str, native, kind)

    def recognise_history(self, provider: str, entry: Mapping[str, Any],
                          user_message_id: str | None) -> HistoryFailure | None:
        from acp_agent.backends.events import HistoryFailure

        recognised = self._first("acp_agent_recognise_history", HistoryFailure,
                                 provider=provider, entry=entry, user_message_id=user_message_id)
        if recognised is not None:
            return recognised
        return self._answer(provider, "recognise_history", HistoryFailure, entry, user_message_id)

    def _answer(self, provider: str, role: str, expected: type[T], *args: Any) -> T | None:
        """The provider's own function for `role` (a `ProviderSpec` field), isolated like a hook."""
        function = self._function(provider, role)
        if function is None:
            return None
        try:
            result = function(*args)
        except Exception as exc:
            log.warning("provider %s: %s raised %s: %s", provider, role, type(exc).__name__, exc)
            return None
        if result is not None and not isinstance(result, expected):
            log.warning("provider %s: %s returned %s, not %s", provider, role,
                        type(result).__name__, expected.__name__)
            return None
        return result

    def _function(self, provider: str, role: str) -> Callable[..., Any] | None:
        """`role`'s function of the provider's spec, loaded on first use (None: it has none)."""
        key = (provider, role)
        if key not in self._own:
            self._own[key] = None
            for impl in self.manager.hook.acp_agent_providers.get_hookimpls():
                try:
                    specs: list[Any] = list(impl.function() or ())  # type: ignore[call-overload]
                except Exception:  # reported by the provider registry, which reads the same hook
                    continue
                reference = next((getattr(spec, role, None) for spec in specs
                                  if getattr(spec, "name", None) == provider), None)
                if isinstance(reference, str):
                    try:
                        self._own[key] = pkgutil.resolve_name(reference)
                    except (ImportError, AttributeError, ValueError) as exc:
                        log.warning("provider %s: %s %s cannot be loaded: %s", provider, role,
                                    reference, exc)
                    break
        return self._own[key]

    def _first(self, name: str, expected: type[T], **kwargs: Any) -> T | None:
        """pluggy's firstresult call, with each implementation isolated from the others."""
        caller: pluggy.HookCaller = getattr(self.manager.hook, name)
        for impl in reversed(caller.get_hookimpls()):  # the order pluggy's own call uses
            if impl.hookwrapper or impl.wrapper:
                log.warning("plugin %s wraps %s; wrappers of this hook are not called", impl.plugin_name, name)
                continue
            try:
                result = impl.function(**{arg: kwargs[arg] for arg in impl.argnames})
            except Exception as exc:
                log.warning("plugin %s: %s raised %s: %s; skipped for this call", impl.plugin_name, name,
                            type(exc).__name__, exc)
                continue
            if result is None:
                continue
            if not isinstance(result, expected):
                log.warning("plugin %s: %s returned %s, not %s; skipped", impl.plugin_name, name,
                            type(result).__name__, expected.__name__)
                continue
            return result
        return None


def bound(hooks: FailureHooks, provider: str) -> Callable[[Mapping[str, Any]], FailureObservation | None]:
    """`classify_failure` for one provider, as a pure fold takes it."""
    return lambda native: hooks.classify_failure(provider, native)


Classifier = Callable[[Mapping[str, Any]], FailureObservation | None]


def titled_classifier(classify: Classifier, title: Callable[[Mapping[str, Any]], str | None]) -> Classifier:
    """A provider's built-in answer alone, classified then titled (as `classify_failure` would
    with no other plugin): what a translator run without the hooks classifies with."""

    def observe(native: Mapping[str, Any]) -> FailureObservation | None:
        observation = classify(native)
        return None if observation is None else attrs.evolve(observation, title=title(native))

    return observe


def redact_legacy(failure: HistoryFailure, redact: Callable[[str], str], *,
                  active: bool | None = None) -> HistoryFailure:
    """A recognised history failure with the text a legacy client sees in its place redacted
    (and, given `active`, marked active or not).

    A history hook answers with the stored text as it is; the runtime that replays it redacts.
    """
    from acp_agent.wire.acp import AgentMessageChunk, TextContent, agent_text

    updates = tuple(agent_text(redact(update.content.text))
                    if isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContent) else update
                    for update in failure.legacy_updates)
    return attrs.evolve(failure, legacy_updates=updates, active=failure.active if active is None else active)
