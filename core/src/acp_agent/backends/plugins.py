"""Building the plugin manager and discovering providers, one entry point at a time.

pluggy's own loader stops at the first broken plugin; here each entry point is loaded in its own
try/except and reported with its distribution and version, and duplicate provider names are
rejected. `check_pending` runs once the manager is built: a hook name no spec knows (a typo such
as `acp_agent_clasify_failure`) is reported like a broken plugin. Business code reads providers
through `ProviderRegistry` and calls the failure hooks through `FailureHooks`, never `pm.hook`.
The entry points are read by `acp_agent.startup.entry_points`, which spares `initialize` the import of
`importlib.metadata` on an ordinary installation.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import pluggy
from attrs import field

from acp_agent.backends import hookspecs
from acp_agent.backends.contract import ProviderSpec
from acp_agent.failures.hooks import FailureHooks
from acp_agent.startup import entry_points
from acp_agent.wire.records import frozen

log = logging.getLogger(__name__)
ENTRY_POINT_GROUP = hookspecs.PROJECT


@frozen
class LoadedProvider:
    spec: ProviderSpec
    plugin: str
    distribution: str
    version: str


@frozen
class BrokenPlugin:
    plugin: str
    distribution: str
    version: str
    reason: str


@frozen
class HookPlugin:
    """A loaded plugin that answers failure hooks (for any provider), as `acp-agent providers` lists it."""

    plugin: str
    distribution: str
    version: str
    hooks: tuple[str, ...]


FAILURE_HOOKS = ("acp_agent_classify_failure", "acp_agent_failure_title", "acp_agent_recognise_history")


def installed_hooks() -> FailureHooks:
    """The failure hooks of the installed plugins, their manager built on first use: for a runtime
    started without an agent (tests, the conformance kit)."""
    return FailureHooks(lambda: make_plugin_manager()[0])


@frozen
class ProviderRegistry:
    """The typed facade over the plugin manager's hooks."""

    providers: dict[str, LoadedProvider] = field(factory=dict)
    broken: list[BrokenPlugin] = field(factory=list)
    secret_env_vars: tuple[str, ...] = ()
    hooks: FailureHooks = field(factory=installed_hooks)
    hook_plugins: list[HookPlugin] = field(factory=list)

    def get(self, name: str) -> LoadedProvider | None:
        return self.providers.get(name)

    def names(self) -> list[str]:
        return sorted(self.providers)


def make_plugin_manager(
    *, load_entry_points: bool = True, plugins: Iterable[tuple[Any, str]] = ()
) -> tuple[pluggy.PluginManager, list[BrokenPlugin], dict[str, tuple[str, str]]]:
    """A fresh plugin manager with the hookspecs, the given in-process plugins and entry points.

    Returns the manager, the plugins that failed to load, and the distribution of each loaded one.
    """
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    broken: list[BrokenPlugin] = []
    origins: dict[str, tuple[str, str]] = {}
    for plugin, name in plugins:
        pm.register(plugin, name=name)
        origins[name] = ("in-process", "-")
    if load_entry_points:
        for entry_point in entry_points.entry_points(ENTRY_POINT_GROUP):
            distribution, version = entry_point.distribution()
            if pm.has_plugin(entry_point.name) or entry_point.name in origins:
                broken.append(BrokenPlugin(entry_point.name, distribution, version,
                                           f"a plugin named {entry_point.name!r} is already registered"))
                continue
            try:
                plugin = entry_point.load()
                pm.register(plugin, name=entry_point.name)
            except Exception as exc:
                log.warning("plugin %s from %s %s failed to load: %s", entry_point.name, distribution, version, exc)
                broken.append(BrokenPlugin(entry_point.name, distribution, version, f"{type(exc).__name__}: {exc}"))
                continue
            origins[entry_point.name] = (distribution, version)
    broken.extend(unknown_hooks(pm, origins))
    return pm, broken, origins


def unknown_hooks(pm: pluggy.PluginManager, origins: dict[str, tuple[str, str]]) -> list[BrokenPlugin]:
    """Every implementation of a hook no spec declares (pluggy's `check_pending` names only the first).

    The plugin stays registered: its other hooks work; the misnamed one is never called.
    """
    try:
        pm.check_pending()
        return []
    except pluggy.PluginValidationError:
        pass
    found = []
    for name, caller in sorted(vars(pm.hook).items()):
        if name.startswith("_") or not isinstance(caller, pluggy.HookCaller) or caller.has_spec():
            continue
        for impl in caller.get_hookimpls():
            if impl.optionalhook:
                continue
            distribution, version = origins.get(impl.plugin_name, ("unknown", "unknown"))
            log.warning("plugin %s from %s %s implements unknown hook %s", impl.plugin_name, distribution,
                        version, name)
            found.append(BrokenPlugin(impl.plugin_name, distribution, version,
                                      f"unknown hook {name!r} (no such hook; it is never called)"))
    return found


def discover(
    *, load_entry_points: bool = True, plugins: Iterable[tuple[Any, str]] = ()
) -> ProviderRegistry:
    """Ask every plugin for its providers, each call isolated; duplicates and bad records are reported."""
    pm, broken, origins = make_plugin_manager(load_entry_points=load_entry_points, plugins=plugins)
    providers: dict[str, LoadedProvider] = {}
    secrets: list[str] = []
    for impl in pm.hook.acp_agent_providers.get_hookimpls():
        distribution, version = origins.get(impl.plugin_name, ("unknown", "unknown"))
        try:
            specs: list[Any] = list(impl.function() or ())  # type: ignore[call-overload]
        except Exception as exc:
            broken.append(BrokenPlugin(impl.plugin_name, distribution, version, f"{type(exc).__name__}: {exc}"))
            continue
        for spec in specs:
            if not isinstance(spec, ProviderSpec):
                broken.append(BrokenPlugin(impl.plugin_name, distribution, version,
                                           f"returned {type(spec).__name__}, not a ProviderSpec"))
                continue
            if spec.name in providers:
                other = providers[spec.name]
                broken.append(BrokenPlugin(impl.plugin_name, distribution, version,
                                           f"duplicate provider name {spec.name!r} (already provided by "
                                           f"{other.distribution} {other.version})"))
                continue
            providers[spec.name] = LoadedProvider(spec, impl.plugin_name, distribution, version)
    for impl in pm.hook.acp_agent_secret_env_vars.get_hookimpls():
        try:
            secrets.extend(str(name) for name in impl.function() or ())  # type: ignore[attr-defined]
        except Exception as exc:
            log.warning("plugin %s failed to name its secret variables: %s", impl.plugin_name, exc)
    owners = {loaded.plugin for loaded in providers.values()}
    hook_plugins = []
    for name, plugin in sorted(pm.list_name_plugin()):
        implemented = tuple(hook for hook in FAILURE_HOOKS
                            if any(impl.plugin is plugin for impl in getattr(pm.hook, hook).get_hookimpls()))
        if implemented and name not in owners:
            distribution, version = origins.get(name, ("unknown", "unknown"))
            hook_plugins.append(HookPlugin(name, distribution, version, implemented))
    return ProviderRegistry(providers, broken, tuple(secrets), FailureHooks(pm), hook_plugins)
