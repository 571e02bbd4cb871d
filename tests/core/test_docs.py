"""Documentation that must stay true: every hookspec has a heading in docs/hooks.md; the plugin
guide's example is the tested package tests/example_provider."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

from acp_agent.backends import hookspecs

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_every_hookspec_has_a_heading_and_a_docstring_with_an_example() -> None:
    headings = {line[3:].strip() for line in (DOCS / "hooks.md").read_text().splitlines() if line.startswith("## ")}
    specs = [name for name, value in inspect.getmembers(hookspecs, inspect.isfunction) if name.startswith("acp_agent_")]
    assert specs
    for name in specs:
        assert name in headings, f"docs/hooks.md has no heading for {name}"
        doc = inspect.getdoc(getattr(hookspecs, name)) or ""
        assert "Example" in doc, f"{name} has no example in its docstring"


ROOT = DOCS.parent
GUIDE = DOCS / "plugin-guide.md"
EXAMPLE = ROOT / "tests" / "example_provider"
EXAMPLE_TEST = ROOT / "tests" / "example" / "test_example_conformance.py"
FILE_BLOCK = re.compile(r"<!-- file: (?P<path>[^ ]+) -->\n```[a-z]*\n(?P<body>.*?)\n```", re.DOTALL)
GUIDE_CONCEPTS = (
    "ProviderSpec", "RuntimeCapabilities", "RuntimeContext", "ProviderRuntime", "SessionStart", "check_backend",
    "SessionNotFound", "NotSupported", "PhaseFailed", "PhaseDeadlineExceeded", "TurnFailed", "TurnEnd",
    "record_failure", "adopt_turn_id", "request_permission", "emit", "cancel", "RetryProgress", "Notice",
    "SessionFailure", "HistoryFailure", "AttemptBoundary", "RuntimeReplaced", "AuthConfirmed", "open_child",
    "parent_death_argv", "write_launcher", "executable_problem", "program_unavailable", "TurnQueue",
    "RuntimeContract", "KitBackend", "SessionRouter",
)


def core_imports() -> set[str]:
    """The core names the guide's example provider (package and conformance test) imports."""
    names: set[str] = set()
    sources = [*sorted((EXAMPLE / "src").rglob("*.py")), EXAMPLE_TEST]
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "acp_agent":
                names.update(alias.name for alias in node.names)
    return names


def test_the_plugin_guide_shows_the_example_package_as_it_is() -> None:
    """The guide's example is a real, tested package: every file block is that file, verbatim."""
    blocks = {match["path"]: match["body"] for match in FILE_BLOCK.finditer(GUIDE.read_text())}
    assert {"tests/example_provider/pyproject.toml", "tests/example_provider/src/acp_agent_example/__init__.py",
            "tests/example_provider/src/acp_agent_example/runtime.py",
            "tests/example_provider/src/acp_agent_example/model.py",
            "tests/example/test_example_conformance.py"} <= set(blocks)
    for path, body in blocks.items():
        assert body == (ROOT / path).read_text().rstrip("\n"), f"docs/plugin-guide.md's copy of {path} is stale"


def test_the_plugin_guide_names_every_concept_and_every_core_name_the_example_imports() -> None:
    guide = GUIDE.read_text()
    prose = re.sub(r"```.*?```", "", guide, flags=re.DOTALL)  # the names must be explained, not only used
    spans = re.findall(r"`([^`\n]+)`", prose)
    missing = [name for name in (*GUIDE_CONCEPTS, *sorted(core_imports()))
               if not any(re.search(rf"\b{name}\b", span) for span in spans)]
    assert not missing, f"docs/plugin-guide.md does not explain {missing}"


def test_the_plugin_guide_says_how_many_core_names_a_provider_imports() -> None:
    count = len(core_imports())
    assert f"The example imports {count} names from the core" in GUIDE.read_text(), count
