"""Where an installed package's files are, found without importing it.

A package's `__init__` may import what the caller must not wait for (the command line runs a
provider's early-start hook before the agent's own imports), so these ask `importlib.util` where
the package is and build paths from there.
"""

from __future__ import annotations

import os


def package_dir(name: str) -> str | None:
    """The directory of the installed top-level package `name` (the first, for a namespace
    package); None if there is no such package."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return next(iter(spec.submodule_search_locations), None)


def module_file(module: str) -> str | None:
    """The source file of the installed module `module` ("package.sub.name"), without importing
    the package; None when there is none (or `module` is not a dotted path of identifiers)."""
    parts = module.split(".")
    if len(parts) < 2 or not all(part.isidentifier() for part in parts):
        return None
    package = package_dir(parts[0])
    if package is None:
        return None
    base = os.path.join(package, *parts[1:])
    for path in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(path):
            return path
    return None


def valid_reference(reference: str) -> bool:
    """Whether `reference` names a function in a package's module: "package.module:function"."""
    module, colon, function = reference.partition(":")
    parts = module.split(".")
    return bool(colon) and function.isidentifier() and len(parts) >= 2 and all(
        part.isidentifier() for part in parts)
