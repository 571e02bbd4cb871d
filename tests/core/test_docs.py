"""Documentation that must stay true: every hookspec has a heading in docs/hooks.md."""

from __future__ import annotations

import inspect
from pathlib import Path

from acp_agent import hookspecs

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_every_hookspec_has_a_heading_and_a_docstring_with_an_example() -> None:
    headings = {line[3:].strip() for line in (DOCS / "hooks.md").read_text().splitlines() if line.startswith("## ")}
    specs = [name for name, value in inspect.getmembers(hookspecs, inspect.isfunction) if name.startswith("acp_agent_")]
    assert specs
    for name in specs:
        assert name in headings, f"docs/hooks.md has no heading for {name}"
        doc = inspect.getdoc(getattr(hookspecs, name)) or ""
        assert "Example" in doc, f"{name} has no example in its docstring"
