"""`acp_agent.provider`: every name a provider needs, each the object defined where it lives,
loaded on first use."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from acp_agent import provider

ROOT = Path(__file__).resolve().parents[2]

PROVIDERS = [ROOT / "plugins" / name / "src" for name in ("claude", "codex", "muse")]
EXAMPLE = ROOT / "tests" / "example_provider" / "src"


def test_all_is_the_names_of_names() -> None:
    listed = [name for names in provider.NAMES.values() for name in names]
    assert len(listed) == len(set(listed)), "a name is listed under two modules"
    assert sorted(provider.__all__) == sorted(listed)


def test_the_type_checking_imports_are_the_names() -> None:
    """What type checkers see (the `if TYPE_CHECKING:` imports) is what `NAMES` hands out."""
    tree = ast.parse(Path(provider.__file__).read_text())
    seen: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module != "typing":
                    seen.setdefault(statement.module or "", set()).update(a.name for a in statement.names)
    assert seen == {module: set(names) for module, names in provider.NAMES.items()}


@pytest.mark.parametrize("name", provider.__all__)
def test_each_name_is_its_home_modules_object(name: str) -> None:
    home = next(module for module, names in provider.NAMES.items() if name in names)
    assert getattr(provider, name) is getattr(importlib.import_module(home), name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        provider.Nothing  # noqa: B018


def test_a_name_loads_its_module_only() -> None:
    """A plugin's `__init__` taking the contract does not load the session types or anyio."""
    code = ("import sys; from acp_agent.provider import ProviderSpec, RuntimeCapabilities; "
            "late = [m for m in ('acp_agent.wire.acp_session', 'acp_agent.backends.events', 'anyio', "
            "'acp_agent.backends.process') if m in sys.modules]; "
            "assert not late, late")
    subprocess.run([sys.executable, "-c", code], check=True)


def _core_imports(source: Path) -> set[tuple[str, str]]:
    found = set()
    for path in source.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "acp_agent":
                found.update((node.module or "", alias.name) for alias in node.names)
    return found


@pytest.mark.parametrize("source", [*PROVIDERS, EXAMPLE], ids=lambda path: path.parent.name)
def test_a_provider_takes_its_core_names_from_this_module(source: Path) -> None:
    """Every core name a provider imports comes from `acp_agent.provider`, but for what its
    early-start hook (`ProviderSpec.prestart`, loaded before the agent's imports) needs; none
    comes from the command line's start-up package."""
    others = sorted((module, name) for module, name in _core_imports(source)
                    if module not in ("acp_agent.provider", "acp_agent.backends.installed")
                    and (module, name) != ("acp_agent", "__version__"))
    assert not others, f"{source}: import these from acp_agent.provider: {others}"
